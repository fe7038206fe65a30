from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.module_utils.nodes import is_schedulable, nodes_report


def node(name, ready="True", unschedulable=False, taints=None, zone=None):
    labels = {"topology.kubernetes.io/zone": zone} if zone else {}
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {"unschedulable": unschedulable, "taints": taints or []},
        "status": {"conditions": [{"type": "Ready", "status": ready}], "nodeInfo": {"kubeletVersion": "v1.35.4"}},
    }


def test_cordoned_tainted_or_not_ready_nodes_are_not_schedulable():
    assert is_schedulable(node("a"))
    assert not is_schedulable(node("a", unschedulable=True))
    assert not is_schedulable(node("a", ready="Unknown"))
    assert not is_schedulable(node("a", taints=[{"key": "x", "effect": "NoExecute"}]))
    assert is_schedulable(node("a", taints=[{"key": "x", "effect": "PreferNoSchedule"}]))


def test_report_is_sorted_and_counts_ready_and_schedulable():
    summaries, counts = nodes_report([node("b", unschedulable=True, zone="z1"), node("a"), node("c", ready="False")])
    assert [summary["name"] for summary in summaries] == ["a", "b", "c"]
    assert summaries[1]["zone"] == "z1" and summaries[1]["unschedulable"] is True
    assert summaries[0]["kubelet_version"] == "v1.35.4"
    assert counts == {"nodes": 3, "ready": 2, "schedulable": 1}
