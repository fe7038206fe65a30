from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.module_utils.model.cluster_api import (
    annotated_machine,
    machines_by_node,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.retirement import (
    LEFT,
    MACHINE,
    NODE_CLAIM,
    NODE_OBJECT,
    planned_retirement,
    retirement,
)
from builders import node

CLAIM = {"metadata": {"name": "general-x7k2p"}, "status": {"nodeName": "n1"}}
MACHINE_OBJECT = {"metadata": {"name": "workers-abc", "namespace": "capi"}, "status": {"nodeRef": {"name": "n1"}}}


def test_a_karpenter_node_is_retired_by_its_nodeclaim_and_a_cluster_api_node_by_its_machine():
    assert retirement(node("n1"), {"n1": CLAIM}, {})[:2] == (NODE_CLAIM, "general-x7k2p")
    assert retirement(node("n1"), {}, machines_by_node([MACHINE_OBJECT]))[:2] == (MACHINE, "capi/workers-abc")
    # A NodeClaim wins: Karpenter manages the instance.
    assert retirement(node("n1"), {"n1": CLAIM}, {"n1": MACHINE_OBJECT}).by == NODE_CLAIM


def test_a_node_without_owner_is_left_unless_its_node_object_is_asked_for_by_name():
    left = retirement(node("n1"), {}, {})
    assert left.by == LEFT
    assert "no NodeClaim or Cluster API Machine owns it" in left.text and "retire: tasks" in left.text
    assert retirement(node("n1"), {}, {}, delete_node_without_owner=True)[:2] == (NODE_OBJECT, "n1")


def test_a_machine_named_by_the_nodes_annotations_but_not_here_is_said_so():
    annotated = node("n1", annotations={"cluster.x-k8s.io/machine": "workers-abc",
                                        "cluster.x-k8s.io/cluster-namespace": "capi"})
    assert annotated_machine(annotated) == "capi/workers-abc"
    found = retirement(annotated, {}, {})
    assert found.by == LEFT and "its Machine capi/workers-abc is not in this cluster" in found.text


def test_the_plan_says_what_each_mode_does():
    assert planned_retirement(node("n1"), "leave", {"n1": CLAIM}, {}) == "left cordoned and drained (retire: leave)"
    assert planned_retirement(node("n1"), "tasks", {}, {}) == "your retire tasks run for it (retire: tasks)"
    assert planned_retirement(node("n1"), "delete", {"n1": CLAIM}, {}).startswith("delete its NodeClaim general-x7k2p")
    assert planned_retirement(node("n1"), "delete_node", {}, {}).startswith("delete the Node object only")
    assert machines_by_node([{"metadata": {"name": "m", "namespace": "x"}, "status": {}}]) == {}
