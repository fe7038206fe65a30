# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Pure fit checks: whether a pod may run on a node, as the scheduler's filters would decide.

Requests against allocatable, node selectors and required node affinity,
taints and tolerations, required hostname pod anti-affinity, and the pod's
own DoNotSchedule topology spread constraints. Both the rotation plan and the
rebalance plan place pods through ``Room``, so both agree on what fits.
"""

from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.module_utils.model.keys import HOSTNAME_LABEL
from ansible_collections.kubeops.rotation.plugins.module_utils.model.nodes import (
    node_labels,
    node_name,
    taints_of,
    zone_of,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.model.pods import claim_names, node_of, pod_key
from ansible_collections.kubeops.rotation.plugins.module_utils.model.quantities import (
    RESOURCES,
    pod_requests,
    resource_amounts,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.model.selectors import (
    labels_match,
    node_selector_term_matches,
    selector_matches,
)


def tolerates(pod, taint):
    """Whether a toleration of the pod tolerates ``taint``: its effect (when given) is the taint's, and
    its key and value match, or it has no key and the operator Exists."""
    for toleration in (pod.get("spec") or {}).get("tolerations") or []:
        if toleration.get("effect") and toleration.get("effect") != taint.get("effect"):
            continue
        if toleration.get("operator") == "Exists" and not toleration.get("key"):
            return True
        if toleration.get("key") != taint.get("key"):
            continue
        if toleration.get("operator") == "Exists" or toleration.get("value") == taint.get("value"):
            return True
    return False


def matches_node_affinity(pod, node):
    """The pod's node selector and required node affinity (any of its terms, matchExpressions and
    matchFields) select ``node``."""
    labels = node_labels(node)
    spec = pod.get("spec") or {}
    if not labels_match(spec.get("nodeSelector"), labels):
        return False
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution") or {}
    terms = required.get("nodeSelectorTerms") or []
    fields = {"metadata.name": node_name(node)}
    return not terms or any(node_selector_term_matches(term, labels, fields) for term in terms)


def node_accepts(pod, node):
    """Whether the pod's node selector, required node affinity and tolerations let it run on ``node``,
    resources aside."""
    if not matches_node_affinity(pod, node):
        return False
    taints = [taint for taint in taints_of(node) if taint.get("effect") in ("NoSchedule", "NoExecute")]
    return all(tolerates(pod, taint) for taint in taints)


def bound_volume(pod, claim_zones):
    """(claim, zones) of the first PersistentVolumeClaim of the pod whose volume is bound to zones
    ("a" or "a,b", from ``claim_zones``, "namespace/claim" -> zones), or None."""
    for claim in claim_names(pod):
        zones = claim_zones.get("%s/%s" % (pod["metadata"]["namespace"], claim))
        if zones:
            return claim, zones
    return None


def in_zones(node, zones):
    """Whether ``node`` is in one of ``zones`` ("a" or "a,b")."""
    return zone_of(node) in zones.split(",")


def hostname_anti_affinity_selectors(pod):
    terms = (((pod.get("spec") or {}).get("affinity") or {}).get("podAntiAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution") or []
    return [term.get("labelSelector") or {} for term in terms if term.get("topologyKey") == HOSTNAME_LABEL]


def hard_spread_constraints(pod):
    return [constraint for constraint in (pod.get("spec") or {}).get("topologySpreadConstraints") or []
            if constraint.get("whenUnsatisfiable", "DoNotSchedule") == "DoNotSchedule"]


def domain_counts(pod, constraint, nodes, pods_by_node):
    """Pods matching ``constraint``'s selector in the pod's namespace, per value of its topology key,
    over the nodes whose labels the pod's node affinity selects (the scheduler's default policy)."""
    namespace = pod["metadata"]["namespace"]
    key = constraint.get("topologyKey")
    counts = {}
    for node in nodes:
        domain = node_labels(node).get(key)
        if domain is None or not matches_node_affinity(pod, node):
            continue
        counts.setdefault(domain, 0)
        counts[domain] += sum(1 for other in pods_by_node.get(node["metadata"]["name"], ())
                              if other["metadata"]["namespace"] == namespace
                              and selector_matches(constraint.get("labelSelector"), other["metadata"].get("labels")))
    return counts


class Room:
    """What the nodes have free and who runs there, as pods are placed on them or taken off. Pure.

    ``nodes`` are the nodes pods may be placed on; ``resident_pods`` are the
    pods already on them.
    """

    def __init__(self, nodes, resident_pods):
        self.nodes = {node["metadata"]["name"]: node for node in nodes}
        self.allocatable = {}
        self.pods_by_node = {name: [] for name in self.nodes}
        for name, node in self.nodes.items():
            self.allocatable[name] = resource_amounts((node.get("status") or {}).get("allocatable"))
        self.free = {name: dict(allocatable) for name, allocatable in self.allocatable.items()}
        for pod in resident_pods:
            name = node_of(pod)
            if name in self.nodes:
                self.add(pod, name)

    def add(self, pod, name):
        for resource, value in pod_requests(pod).items():
            self.free[name][resource] -= value
        self.pods_by_node[name].append(pod)

    def remove(self, pod, name):
        for resource, value in pod_requests(pod).items():
            self.free[name][resource] += value
        key = pod_key(pod)
        self.pods_by_node[name] = [other for other in self.pods_by_node[name] if pod_key(other) != key]

    def why_not(self, pod, name):
        """None when ``pod`` may go to node ``name`` now; otherwise the reason it may not."""
        node = self.nodes[name]
        if not node_accepts(pod, node):
            return "no node matches its node selector, affinity or tolerations"
        labels_here = [other["metadata"].get("labels") or {} for other in self.pods_by_node[name]]
        if any(selector_matches(selector, labels) for selector in hostname_anti_affinity_selectors(pod)
               for labels in labels_here):
            return "hostname anti-affinity leaves no node"
        requests = pod_requests(pod)
        if any(self.free[name][resource] + 1e-9 < requests[resource] for resource in RESOURCES):
            return "no node has room for its requests (cpu %g, memory %g)" % (requests["cpu"], requests["memory"])
        for constraint in hard_spread_constraints(pod):
            counts = domain_counts(pod, constraint, self.nodes.values(), self.pods_by_node)
            domain = node_labels(node).get(constraint.get("topologyKey"))
            if domain is None or (counts and counts[domain] + 1 - min(counts.values()) > constraint.get("maxSkew", 1)):
                return "its topology spread constraint on %s would be broken" % constraint.get("topologyKey")
        return None


def fit(pods, nodes, resident_pods, preference=None, bystanders=()):
    """Place ``pods`` on ``nodes`` by requests, first fit in decreasing cpu order. Pure.

    ``resident_pods`` are already on those nodes (or on ``bystanders``, nodes
    that take no pod but whose pods count for topology spread, as the
    scheduler counts them) and stay. ``preference(pod, node)``, when given,
    orders the nodes for each pod (lowest first; ties keep the order of
    ``nodes``). Returns (placement pod key -> node name, unplaced [{pod, reason}]).
    """
    room = Room(list(nodes) + list(bystanders), resident_pods)
    placement, unplaced = {}, []
    for pod in sorted(pods, key=lambda p: (-pod_requests(p)["cpu"], -pod_requests(p)["memory"], pod_key(p))):
        reason = "no node matches its node selector, affinity or tolerations"
        for node in sorted(nodes, key=lambda n: preference(pod, n)) if preference else nodes:
            name = node["metadata"]["name"]
            why = room.why_not(pod, name)
            if why is None:
                room.add(pod, name)
                placement[pod_key(pod)] = name
                break
            if not why.startswith("no node matches"):
                reason = why
        else:
            unplaced.append({"pod": pod_key(pod), "reason": reason})
    return placement, unplaced
