# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Pure facts about Node objects, given as the API's JSON (plain dicts)."""

from __future__ import annotations

ZONE_LABEL = "topology.kubernetes.io/zone"


def annotation_path(key):
    """The JSON patch path of annotation ``key`` ("/" and "~" escaped as JSON pointers want)."""
    return "/metadata/annotations/" + key.replace("~", "~0").replace("/", "~1")


def guarded(node, operations):
    """``operations`` led by a test of the node's resourceVersion, so that the patch fails (422)
    when the node changed since it was read; [] stays []."""
    if not operations:
        return []
    return [{"op": "test", "path": "/metadata/resourceVersion",
             "value": (node.get("metadata") or {}).get("resourceVersion")}] + list(operations)


def condition_status(node, condition_type):
    """The status ("True", "False", "Unknown") of a node condition, or None when absent."""
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition.get("type") == condition_type:
            return condition.get("status")
    return None


def is_ready(node):
    return condition_status(node, "Ready") == "True"


def is_schedulable(node):
    """Ready, not cordoned, and without a NoSchedule or NoExecute taint."""
    spec = node.get("spec") or {}
    if spec.get("unschedulable"):
        return False
    if any(taint.get("effect") in ("NoSchedule", "NoExecute") for taint in spec.get("taints") or []):
        return False
    return is_ready(node)


def node_summary(node):
    """The short description of a node that results report."""
    metadata = node.get("metadata") or {}
    spec = node.get("spec") or {}
    return {
        "name": metadata.get("name"),
        "ready": is_ready(node),
        "unschedulable": bool(spec.get("unschedulable")),
        "schedulable": is_schedulable(node),
        "taints": spec.get("taints") or [],
        "zone": (metadata.get("labels") or {}).get(ZONE_LABEL),
        "kubelet_version": ((node.get("status") or {}).get("nodeInfo") or {}).get("kubeletVersion"),
        "created": metadata.get("creationTimestamp"),
        "labels": metadata.get("labels") or {},
    }


def nodes_report(nodes):
    """Per-node summaries sorted by name, and the counts of ready and schedulable nodes."""
    summaries = sorted((node_summary(node) for node in nodes), key=lambda summary: summary["name"])
    counts = {
        "nodes": len(summaries),
        "ready": sum(1 for summary in summaries if summary["ready"]),
        "schedulable": sum(1 for summary in summaries if summary["schedulable"]),
    }
    return summaries, counts
