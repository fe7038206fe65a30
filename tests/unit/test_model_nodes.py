from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.module_utils.model.nodes import (
    condition_status,
    is_schedulable,
    node_condition,
    node_summary,
    nodes_report,
)
from builders import node


def test_cordoned_tainted_or_not_ready_nodes_are_not_schedulable():
    assert is_schedulable(node("a"))
    assert not is_schedulable(node("a", unschedulable=True))
    assert not is_schedulable(node("a", ready="Unknown"))
    assert not is_schedulable(node("a", taints=[{"key": "x", "effect": "NoExecute"}]))
    assert not is_schedulable(node("a", taints=[{"key": "x", "effect": "NoSchedule"}]))
    assert is_schedulable(node("a", taints=[{"key": "x", "effect": "PreferNoSchedule"}]))


def test_a_missing_condition_has_no_status_and_the_node_is_not_ready():
    bare = {"metadata": {"name": "a"}}
    assert condition_status(bare, "Ready") is None
    assert condition_status(node("a", ready="False"), "Ready") == "False"
    assert node_condition(bare, "Ready") is None
    assert node_condition(node("a", ready="False"), "Ready")["status"] == "False"
    assert node_summary(bare) == {"name": "a", "ready": False, "unschedulable": False, "schedulable": False,
                                  "taints": [], "zone": None, "kubelet_version": None, "created": None, "labels": {}}


def test_report_is_sorted_and_counts_ready_and_schedulable():
    summaries, counts = nodes_report([node("b", unschedulable=True, zone="z1"), node("a"), node("c", ready="False")])
    assert [summary["name"] for summary in summaries] == ["a", "b", "c"]
    assert summaries[1]["zone"] == "z1" and summaries[1]["unschedulable"] is True
    assert summaries[0]["kubelet_version"] == "v1.35.4"
    assert counts == {"nodes": 3, "ready": 2, "schedulable": 1}
