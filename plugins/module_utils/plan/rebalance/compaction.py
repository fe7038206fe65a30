# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Strategy ``compaction``: empty the nodes used below a threshold onto the fullest nodes that take their pods, so
that an autoscaler (Karpenter's consolidation, a node group's scale-down) can remove them; the reverse of
spreading, and the Descheduler's HighNodeUtilization. A node is emptied whole or not at all: moving half of a
node's pods frees no node and only makes them move. A node that received pods is not emptied after (no pod
moves twice)."""

from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.module_utils.model.keys import DO_NOT_DISRUPT
from ansible_collections.kubeops.rotation.plugins.module_utils.model.patches import guarded
from ansible_collections.kubeops.rotation.plugins.module_utils.model.pods import moved_to, pod_key
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.filters import goes_with_its_node
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.rebalance.spread import room_utilization


# While a pass fills a node, autoscalers leave it alone (Karpenter's and cluster-autoscaler's node annotations):
# a node consolidated away meanwhile would send the pods it took moving again. Ours lists the annotations the pass
# added, so that only those are taken off, by the pass or, after a kill, by the next one.
FILLED_BY_PASS = "kubeops.io/filled-by-rebalance"
KEEP_NODE = {DO_NOT_DISRUPT[0]: "true", "cluster-autoscaler.kubernetes.io/scale-down-disabled": "true"}


def is_kept_by_pass(node):
    return FILLED_BY_PASS in ((node.get("metadata") or {}).get("annotations") or {})


def keep_node_patch(node, keep):
    """The guarded JSON patch that adds the KEEP_NODE annotations the node lacks (``keep``) or takes off those a
    pass added (not ``keep``); [] when there is nothing to do."""
    annotations = dict((node.get("metadata") or {}).get("annotations") or {})
    if keep == is_kept_by_pass(node):
        return []
    if keep:
        added = [key for key in sorted(KEEP_NODE) if key not in annotations]
        annotations.update({key: KEEP_NODE[key] for key in added})
        annotations[FILLED_BY_PASS] = ",".join(added)
    else:
        for key in annotations.pop(FILLED_BY_PASS).split(","):
            annotations.pop(key, None)
    return guarded(node, [{"op": "add", "path": "/metadata/annotations", "value": annotations}])


def empty_nodes(nodes, pods):
    """The names of ``nodes`` that run no pod but DaemonSet and static ones (which an autoscaler does not count):
    what an autoscaler may remove."""
    busy = {pod["spec"].get("nodeName") for pod in pods if not goes_with_its_node(pod)}
    return sorted(node["metadata"]["name"] for node in nodes if node["metadata"]["name"] not in busy)


def balance(planner):
    """The nodes below ``compaction_threshold`` percent (the most used of cpu, memory and pods), the emptiest
    first, each emptied onto the other nodes, the fullest first, when all its pods fit there."""
    room = planner.room
    threshold = planner.settings.compaction_threshold
    names = sorted(room.nodes)
    used = {name: room_utilization(room, name) for name in names}
    candidates = [name for name in sorted(names, key=lambda n: (used[n], n))
                  if used[name] < threshold and any(not goes_with_its_node(pod) for pod in room.pods_by_node[name])]
    emptied, received = [], set()
    for source in candidates:
        if source in received:
            continue
        receivers = sorted((name for name in names if name != source and name not in emptied),
                           key=lambda name: (name in candidates and name not in received,
                                             -room_utilization(room, name), name))
        placed = _empty(planner, source, receivers, "%s uses %.0f%%, below %.0f%%" % (source, used[source], threshold))
        if placed:
            emptied.append(source)
            received.update(placed)
    planner.emptied = emptied


def _empty(planner, source, receivers, reason):
    """Place every pod of ``source`` on ``receivers`` (in order) and record the moves; the nodes that received
    them, or None (nothing recorded, the PlacementSimulator as it was) when a pod may not move or fits nowhere."""
    room = planner.room
    leaving = sorted((pod for pod in room.pods_by_node[source] if not goes_with_its_node(pod)),
                     key=lambda pod: (-room.requests(pod)["cpu"], -room.requests(pod)["memory"], pod_key(pod)))
    selected = [pod for pod in leaving if pod_key(pod) in planner.pods_by_key]
    movable, reasons = planner.movable(selected) if len(selected) == len(leaving) else ([], [])
    if len(movable) == len(leaving):
        reasons = planner.budget.spent_by(movable)
    if len(movable) != len(leaving) or reasons:
        planner.record_stuck("compaction", source, None, reasons or ["it runs pods the pass may not move"])
        return None
    placed = []
    for pod in movable:
        room.remove(pod, source)
        target = next((name for name in receivers if planner.why_not_move(pod, name) is None), None)
        if target is None:
            room.add(pod, source)
            for moved, original, name in reversed(placed):
                room.remove(moved, name)
                room.add(original, source)
            planner.record_stuck("compaction", source, None, ["%s fits on no other node" % pod_key(pod)])
            return None
        moved = moved_to(pod, target)
        room.add(moved, target)
        placed.append((moved, pod, target))
    for _moved, pod, target in placed:
        planner.note_move(pod, source, target, "compaction", reason)
    return {target for _moved, _pod, target in placed}
