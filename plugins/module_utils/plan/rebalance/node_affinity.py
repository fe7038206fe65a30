# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Strategy ``node_affinity``: pods whose node no longer satisfies their node selector or required node affinity
(a label changed after they landed), and pods with a preferred node affinity that another node they fit on
satisfies better (the Descheduler's RemovePodsViolatingNodeAffinity, required and preferred)."""

from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.module_utils.model.nodes import node_labels, node_name
from ansible_collections.kubeops.rotation.plugins.module_utils.model.pods import node_of, pod_key
from ansible_collections.kubeops.rotation.plugins.module_utils.model.selectors import node_selector_term_matches
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.filters import goes_with_its_node
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.placement import matches_node_affinity


def preferred_terms(pod):
    return (((pod.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}).get(
        "preferredDuringSchedulingIgnoredDuringExecution") or []


def preferred_score(pod, node):
    """The weights of the pod's preferred node affinity terms that ``node`` satisfies, summed, as the
    scheduler's NodeAffinity score counts them."""
    labels, fields = node_labels(node), {"metadata.name": node_name(node)}
    return sum(term.get("weight", 0) for term in preferred_terms(pod)
               if node_selector_term_matches(term.get("preference") or {}, labels, fields))


def violations(nodes, pods):
    """Pod key -> the node whose labels no longer satisfy the pod's node selector or required node affinity;
    DaemonSet and static pods aside, which stay with their node."""
    by_name = {node["metadata"]["name"]: node for node in nodes}
    return {pod_key(pod): node_of(pod) for pod in pods if node_of(pod) in by_name and not goes_with_its_node(pod)
            and not matches_node_affinity(pod, by_name[node_of(pod)])}


def balance(planner):
    """A pod its node's labels no longer select moves to a node they do; a pod with preferred terms moves
    only to a node that scores higher than its own, the highest first."""
    for pod in sorted(planner.pods, key=pod_key):
        if goes_with_its_node(pod):
            continue
        source = node_of(pod)
        node = planner.room.nodes[source]
        if not matches_node_affinity(pod, node):
            planner.relocate(pod, "node_affinity", "%s no longer matches its node selector or required node "
                                                   "affinity" % source)
        elif preferred_terms(pod):
            here = preferred_score(pod, node)
            better = {name: preferred_score(pod, planner.room.nodes[name]) for name in planner.room.accepting(pod)}
            better = {name: score for name, score in better.items() if score > here}
            if better:
                planner.relocate(pod, "node_affinity", "%s scores %d for its preferred node affinity, other nodes "
                                                       "up to %d" % (source, here, max(better.values())),
                                 candidates=better, first=lambda name: -better[name], quiet=True)
