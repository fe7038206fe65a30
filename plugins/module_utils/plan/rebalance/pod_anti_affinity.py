# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Strategy ``pod_anti_affinity``: pods that run in the topology domain (their node, their zone, ... by each term's
key) of a pod their required pod anti-affinity excludes (the Descheduler's RemovePodsViolatingInterPodAntiAffinity,
which looks at any topology key too), as a rotation or a scale-up with soft rules, or a pod created before its
anti-affinity, leaves them. Of two such pods one moves, the other then keeps to the rule where it is."""

from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.module_utils.model.nodes import node_labels, node_name
from ansible_collections.kubeops.rotation.plugins.module_utils.model.pods import node_of, pod_key
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.filters import goes_with_its_node
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.placement import (
    required_pod_terms,
    term_selects,
)


def excluded_near(pod, labels_of, pods_in_domain):
    """The first pod that ``pod``'s required anti-affinity excludes from the domain it runs in, or None.
    ``labels_of(node name)`` gives a node's labels; ``pods_in_domain(key, value)`` the pods on the nodes whose
    label ``key`` is ``value``."""
    here = labels_of(node_of(pod))
    for term in required_pod_terms(pod, "podAntiAffinity"):
        domain = here.get(term.topology_key)
        if domain is None:
            continue
        for other in pods_in_domain(term.topology_key, domain):
            if pod_key(other) != pod_key(pod) and term_selects(term, other):
                return other
    return None


class _Domains:
    """The pods of ``nodes`` by topology domain, indexed once per key asked for."""

    def __init__(self, labels_by_node, pods_by_node):
        self.labels_by_node = labels_by_node
        self.pods_by_node = pods_by_node
        self._by_key = {}

    def labels_of(self, name):
        return self.labels_by_node.get(name) or {}

    def pods_in(self, key, value):
        index = self._by_key.get(key)
        if index is None:
            index = self._by_key[key] = {}
            for name, labels in self.labels_by_node.items():
                if key in labels:
                    index.setdefault(labels[key], []).append(name)
        return [pod for name in index.get(value, ()) for pod in self.pods_by_node.get(name, ())]


def violations(nodes, pods):
    """Pod key -> "node: the pod it excludes" of each of ``pods`` that runs on one of ``nodes`` in the domain of
    such a pod (among ``pods`` on ``nodes``); DaemonSet and static pods aside, which stay with their node."""
    by_node = {}
    for pod in pods:
        by_node.setdefault(node_of(pod), []).append(pod)
    domains = _Domains({node_name(node): node_labels(node) for node in nodes}, by_node)
    found = {}
    for pod in pods:
        if node_of(pod) in domains.labels_by_node and not goes_with_its_node(pod):
            other = excluded_near(pod, domains.labels_of, domains.pods_in)
            if other is not None:
                found[pod_key(pod)] = "%s: %s" % (node_of(pod), pod_key(other))
    return found


def balance(planner):
    """Each selected pod that runs in the domain of a pod it excludes moves, in the order of their keys, to a node
    where neither its own anti-affinity nor that of a pod already there is broken (PlacementSimulator.why_not, as the scheduler
    checks both, on every topology key)."""
    room = planner.room
    domains = _Domains({name: node_labels(node) for name, node in room.nodes.items()}, room.pods_by_node)
    for pod in sorted(planner.pods, key=pod_key):
        if pod_key(pod) in planner.moved or goes_with_its_node(pod) or \
                not required_pod_terms(pod, "podAntiAffinity"):
            continue
        other = excluded_near(pod, domains.labels_of, domains.pods_in)
        if other is None:
            continue
        planner.relocate(pod, "pod_anti_affinity", _reason(pod, other))


def _reason(pod, other):
    """Why ``pod`` moves: the pod ``other`` its anti-affinity excludes, on its node or on another of its domain
    (the pods in the PlacementSimulator are where they are planned to be)."""
    there = node_of(other)
    if there == node_of(pod):
        return "%s also runs %s, which its anti-affinity excludes" % (node_of(pod), pod_key(other))
    return "%s runs on %s, in the same domain as %s, which its anti-affinity excludes" % (
        pod_key(other), there, node_of(pod))
