from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.module_utils.plan.rebalance.steering import (
    is_steered,
    steering_patch,
    without_steering,
)
from builders import node

OTHER = {"key": "gpu", "effect": "NoSchedule"}
STEERING = {"key": "kubeops.io/rebalancing", "value": "true", "effect": "PreferNoSchedule"}


def test_a_node_is_steered_while_it_has_the_rebalancing_taint_whatever_its_effect():
    assert is_steered(node(taints=[OTHER, STEERING]))
    assert is_steered(node(taints=[dict(STEERING, effect="NoSchedule")]))
    assert not is_steered(node(taints=[OTHER])) and not is_steered({"metadata": {"name": "bare"}})


def test_without_steering_is_a_copy_without_the_taint_only():
    steered = node(taints=[OTHER, STEERING], unschedulable=True)
    plain = without_steering(steered)
    assert plain["spec"] == {"unschedulable": True, "taints": [OTHER]}
    assert plain["metadata"] == steered["metadata"]
    assert steered["spec"]["taints"] == [OTHER, STEERING], "the node itself keeps its taint"
    assert without_steering({"metadata": {"name": "bare"}})["spec"] == {"taints": []}


def test_steering_patch_adds_and_removes_only_its_own_taint_guarded_by_the_resource_version():
    plain = node("n", taints=[OTHER], resource_version="7")
    added = steering_patch(plain, "PreferNoSchedule")
    assert added[0] == {"op": "test", "path": "/metadata/resourceVersion", "value": "7"}
    steered = [OTHER, STEERING]
    assert added[1] == {"op": "add", "path": "/spec/taints", "value": steered}
    tainted = node("n", taints=steered, resource_version="7")
    assert steering_patch(tainted, "PreferNoSchedule") == []
    assert steering_patch(tainted, None)[1]["value"] == [OTHER]
    assert steering_patch(plain, None) == []


def test_steering_patch_changes_the_effect_of_an_existing_steering_taint():
    hard = steering_patch(node(taints=[STEERING, OTHER]), "NoSchedule")
    assert hard[1] == {"op": "add", "path": "/spec/taints", "value": [OTHER, dict(STEERING, effect="NoSchedule")]}
