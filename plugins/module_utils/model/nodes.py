# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Pure facts about Node objects, given as the API's JSON (plain dicts)."""

from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.module_utils.model.keys import ZONE_LABEL

# The taint effects that keep off every pod that does not tolerate them (PreferNoSchedule only discourages).
BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")


def node_name(node):
    return node["metadata"]["name"]


def node_labels(node):
    return (node.get("metadata") or {}).get("labels") or {}


def zone_of(node):
    return node_labels(node).get(ZONE_LABEL)


def taints_of(node):
    return (node.get("spec") or {}).get("taints") or []


def blocking_taints(node):
    """The node's NoSchedule and NoExecute taints."""
    return [taint for taint in taints_of(node) if taint.get("effect") in BLOCKING_EFFECTS]


def taint_text(taint):
    """A taint as kubectl writes it: key=value:effect (key:effect without a value)."""
    return "%s%s:%s" % (taint.get("key"), "=%s" % taint["value"] if taint.get("value") else "", taint.get("effect"))


def node_condition(node, condition_type):
    """A node condition (its type, status, lastTransitionTime, ...), or None when absent."""
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition.get("type") == condition_type:
            return condition
    return None


def condition_status(node, condition_type):
    """The status ("True", "False", "Unknown") of a node condition, or None when absent."""
    return (node_condition(node, condition_type) or {}).get("status")


def is_ready(node):
    return condition_status(node, "Ready") == "True"


def is_cordoned(node):
    return bool((node.get("spec") or {}).get("unschedulable"))


def is_schedulable(node):
    """Ready, not cordoned, and without a NoSchedule or NoExecute taint."""
    if is_cordoned(node):
        return False
    if blocking_taints(node):
        return False
    return is_ready(node)


def node_summary(node):
    """The short description of a node that results report."""
    metadata = node.get("metadata") or {}
    return {
        "name": metadata.get("name"),
        "ready": is_ready(node),
        "unschedulable": is_cordoned(node),
        "schedulable": is_schedulable(node),
        "taints": taints_of(node),
        "zone": zone_of(node),
        "kubelet_version": ((node.get("status") or {}).get("nodeInfo") or {}).get("kubeletVersion"),
        "created": metadata.get("creationTimestamp"),
        "labels": node_labels(node),
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
