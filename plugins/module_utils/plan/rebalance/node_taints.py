# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Strategy ``node_taints``: pods on a node that gained a NoSchedule taint they do not tolerate (the Descheduler's
RemovePodsViolatingNodeTaints) go to a node whose taints they tolerate."""

from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.module_utils.model.nodes import taint_text, taints_of
from ansible_collections.kubeops.rotation.plugins.module_utils.model.pods import node_of, pod_key
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.filters import goes_with_its_node
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.placement import tolerates

# Taints a cordon or this collection's own steps put on: the pods under them are a drain's or a rotation's
# business, not a rebalance's.
MANAGED_TAINT_PREFIXES = ("node.kubernetes.io/unschedulable", "kubeops.io/")


def untolerated(pod, node):
    """The first NoSchedule taint of ``node`` that ``pod`` does not tolerate, managed taints aside, or None.
    NoExecute is left to Kubernetes' taint manager, which evicts such pods itself."""
    for taint in taints_of(node):
        if taint.get("effect") == "NoSchedule" and not str(taint.get("key", "")).startswith(MANAGED_TAINT_PREFIXES) \
                and not tolerates(pod, taint):
            return taint
    return None


def violations(nodes, pods):
    """Pod key -> "node: taint" of each pod on one of ``nodes`` under a NoSchedule taint it does not tolerate;
    DaemonSet and static pods aside, which stay with their node."""
    by_name = {node["metadata"]["name"]: node for node in nodes}
    found = {}
    for pod in pods:
        node = by_name.get(node_of(pod)) if not goes_with_its_node(pod) else None
        taint = untolerated(pod, node) if node else None
        if taint:
            found[pod_key(pod)] = "%s: %s" % (node_of(pod), taint_text(taint))
    return found


def balance(planner):
    """Each selected pod under a taint it does not tolerate moves to the node the planner ranks first among
    those it fits on."""
    for pod in sorted(planner.pods, key=pod_key):
        if goes_with_its_node(pod):
            continue
        source = node_of(pod)
        taint = untolerated(pod, planner.room.nodes[source])
        if taint is not None:
            planner.relocate(pod, "node_taints", "%s has the taint %s, not tolerated" % (source, taint_text(taint)))
