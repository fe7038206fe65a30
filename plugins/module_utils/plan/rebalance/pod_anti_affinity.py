# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Strategy ``pod_anti_affinity``: pods that share a node with a pod their required hostname pod anti-affinity
excludes (the Descheduler's RemovePodsViolatingInterPodAntiAffinity), as a rotation or a scale-up with soft rules,
or a pod created before its anti-affinity, leaves them. Of two such pods one moves, the other then keeps to the
rule where it is."""

from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.module_utils.model.pods import node_of, pod_key
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.filters import goes_with_its_node
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.placement import (
    anti_affinity_hit,
    hostname_anti_affinity_terms,
)


def excluded_beside(pod, others):
    """The first of ``others`` (pods on the pod's node) that the pod's required hostname anti-affinity excludes."""
    terms = hostname_anti_affinity_terms(pod)
    if not terms:
        return None
    return next((other for other in others if pod_key(other) != pod_key(pod) and anti_affinity_hit(terms, [other])),
                None)


def violations(nodes, pods):
    """Pod key -> "node: the pod it excludes" of each of ``pods`` that shares one of ``nodes`` with such a pod;
    DaemonSet and static pods aside, which stay with their node."""
    names = {node["metadata"]["name"] for node in nodes}
    by_node = {}
    for pod in pods:
        by_node.setdefault(node_of(pod), []).append(pod)
    found = {}
    for pod in pods:
        if node_of(pod) in names and not goes_with_its_node(pod):
            other = excluded_beside(pod, by_node[node_of(pod)])
            if other is not None:
                found[pod_key(pod)] = "%s: %s" % (node_of(pod), pod_key(other))
    return found


def balance(planner):
    """Each selected pod that shares its node with a pod it excludes moves, in the order of their keys, to a
    node where neither its own anti-affinity nor that of a pod already there (as the scheduler checks both)
    is broken."""
    room = planner.room
    for pod in sorted(planner.pods, key=pod_key):
        if pod_key(pod) in planner.moved or goes_with_its_node(pod):
            continue
        source = node_of(pod)
        other = excluded_beside(pod, room.pods_by_node[source])
        if other is None:
            continue
        welcome = [name for name in room.accepting(pod)
                   if not any(excluded_beside(resident, [pod]) for resident in room.pods_by_node[name])]
        planner.relocate(pod, "pod_anti_affinity", "%s also runs %s, which its anti-affinity excludes" % (
            source, pod_key(other)), candidates=welcome)
