from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.module_utils.plan.steering import (
    closed_zones,
    each_placed,
    is_steered,
    new_node_effect,
    steering_patch,
    steering_while_moving_effects,
    strict_when_warmed,
    with_room,
    without_steering,
)
from builders import node, pod

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


def test_while_pods_move_the_nodes_to_avoid_are_closed_and_the_other_zones_only_less_preferred():
    nodes = [node("later-a", zone="a"), node("later-b", zone="b"), node("stay-a", zone="a"), node("stay-b", zone="b"),
             node("no-zone"), node("cordoned", zone="b", unschedulable=True), node("down", zone="b", ready="False"),
             node("leaving", zone="a", unschedulable=True)]
    avoid = ["later-a", "later-b", "cordoned", "down"]
    assert steering_while_moving_effects(nodes, avoid, ["leaving"]) == {
        "later-a": "NoSchedule", "later-b": "NoSchedule", "stay-b": "PreferNoSchedule"}
    assert steering_while_moving_effects(nodes, avoid) == {"later-a": "NoSchedule", "later-b": "NoSchedule"}
    assert steering_while_moving_effects(nodes, (), ["leaving", "no-zone", "gone"]) == {
        "later-b": "PreferNoSchedule", "stay-b": "PreferNoSchedule"}
    # Pods leaving nodes of every zone, or of none: no zone is another's.
    assert steering_while_moving_effects(nodes, (), ["stay-a", "stay-b"]) == {}
    assert steering_while_moving_effects(nodes, (), ["no-zone"]) == {}


def test_only_nodes_with_room_are_steered_counting_the_room_the_leaving_pods_free():
    nodes = [node("full", cpu="1"), node("roomy", cpu="1")]
    pods = [pod("old-%d" % index, node_name="full", cpu="250m") for index in range(4)]
    effects = {"full": "NoSchedule", "roomy": "NoSchedule"}
    request = {"cpu": 0.25, "memory": 0.0, "pods": 1}
    assert with_room(effects, nodes, pods, request) == {"roomy": "NoSchedule"}
    # A restart replaces old-0 wherever it runs: its room on the full node opens while the new pods are placed.
    assert with_room(effects, nodes, pods, request, leaving=["ns/old-0"]) == effects
    assert with_room(effects, nodes, pods, dict(request, cpu=0.5), leaving=["ns/old-0"]) == {"roomy": "NoSchedule"}


def test_a_node_whose_room_a_placeholder_holds_is_steered_since_the_scheduler_would_preempt_it():
    nodes = [node("warm", cpu="1"), node("busy", cpu="1")]
    pods = [pod("warm-0", "warm", labels={"kubeops.io/warm-set": "rotation-r1"}, cpu="1"),
            pod("web-0", "busy", cpu="1")]
    effects = {"warm": "NoSchedule", "busy": "NoSchedule"}
    assert with_room(effects, nodes, pods, {"cpu": 0.25, "memory": 0.0, "pods": 1}) == {"warm": "NoSchedule"}


def test_other_zones_are_closed_when_the_zone_the_pods_leave_is_warmed_with_room_for_them():
    nodes = [node("old-b", zone="b"), node("warm-b", zone="b", cpu="4"), node("spare-a", zone="a")]
    placeholder = pod("warm-0", "warm-b", labels={"kubeops.io/warm-set": "rotation-r1"}, cpu="100m")
    leaving = [pod("web-1", "old-b", cpu="1"), pod("web-2", "old-b", cpu="1")]
    effects = {"spare-a": "PreferNoSchedule"}
    needs = {"cpu": 2.0, "memory": 0.0, "pods": 2.0}
    assert strict_when_warmed(effects, nodes, [placeholder] + leaving, ["old-b"], needs) == {"spare-a": "NoSchedule"}
    # Not warmed (no placeholder of its own), or too little room there: only a preference, as before.
    assert strict_when_warmed(effects, nodes, leaving, ["old-b"], needs) == effects
    # A warm step saw its placeholder there, though the pods followed do not show it bound yet.
    assert strict_when_warmed(effects, nodes, leaving, ["old-b"], needs, warm_hosts={"warm-b"}) == \
        {"spare-a": "NoSchedule"}
    assert strict_when_warmed(effects, nodes, [placeholder] + leaving, ["old-b"], dict(needs, cpu=4.0)) == \
        {"spare-a": "NoSchedule"}, "the placeholder's room counts: it is preempted"
    assert strict_when_warmed(effects, nodes, [placeholder] + leaving, ["old-b"], dict(needs, cpu=4.5)) == effects
    assert strict_when_warmed(effects, nodes, [placeholder] + leaving, ["old-b"], None) == effects


APART = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "db"}}}]}}


def test_other_zones_stay_open_when_two_pods_that_repel_each_other_have_one_warm_node_in_their_zone():
    """Two db pods that keep apart by hostname leave zone b, whose one warm node has room for both by requests: with
    the other zones closed, the second would stay Pending and an autoscaler would launch a node for it."""
    nodes = [node("old-b", zone="b"), node("old-b2", zone="b"), node("warm-b", zone="b", cpu="4"),
             node("spare-a", zone="a")]
    placeholder = pod("warm-0", "warm-b", labels={"kubeops.io/warm-set": "rotation-r1"}, cpu="100m")
    apart = [pod("db-%d" % index, source, app="db", cpu="1", affinity=APART)
             for index, source in enumerate(("old-b", "old-b2"), start=1)]
    effects = {"spare-a": "PreferNoSchedule"}
    needs = {"cpu": 2.0, "memory": 0.0, "pods": 2.0}
    every = [placeholder] + apart
    assert strict_when_warmed(effects, nodes, every, ["old-b", "old-b2"], needs) == {"spare-a": "NoSchedule"}, \
        "without the pods, only their summed requests count"
    assert strict_when_warmed(effects, nodes, every, ["old-b", "old-b2"], needs, moving_pods=apart) == effects
    plain = [pod("web-1", "old-b", cpu="1"), pod("web-2", "old-b2", cpu="1")]
    assert strict_when_warmed(effects, nodes, [placeholder] + plain, ["old-b", "old-b2"], needs,
                              moving_pods=plain) == {"spare-a": "NoSchedule"}
    # A second warm node in the zone takes the second db pod.
    nodes.append(node("warm-b2", zone="b", cpu="4"))
    assert strict_when_warmed(effects, nodes, every, ["old-b", "old-b2"], needs, moving_pods=apart) == \
        {"spare-a": "NoSchedule"}


def test_each_pod_is_placed_in_its_own_zone_on_one_node_with_room_and_under_the_residents_rules():
    zones = {"old-a": "a", "old-b": "b"}
    warm = [node("warm-a", zone="a", cpu="2"), node("warm-b", zone="b", cpu="2")]
    leaving_a = [pod("web-%d" % index, "old-a", cpu="1") for index in range(2)]
    assert each_placed(warm, [], leaving_a, zones)
    assert not each_placed(warm, [], leaving_a + [pod("web-2", "old-a", cpu="1")], zones), \
        "zone b's room is not zone a's"
    assert each_placed(warm, [], leaving_a + [pod("web-2", "elsewhere", cpu="1")], zones), "a pod of no known zone"
    assert not each_placed(warm, [], [pod("big", "old-a", cpu="3")], zones), "two half rooms do not hold one pod"
    resident = pod("db-0", "warm-a", app="db", cpu="100m", affinity=APART)
    assert not each_placed(warm, [resident], [pod("db-1", "old-a", app="db", cpu="1")], zones), \
        "a resident's anti-affinity keeps the pod off, though the pod has no rule of its own"
    assert each_placed(warm, [resident], [pod("web-9", "old-a", cpu="1")], zones)


def test_other_zones_stay_open_when_the_warmed_zone_lacks_a_resource_the_pods_ask_for():
    nodes = [node("old-b", zone="b"), node("warm-b", zone="b"), node("spare-a", zone="a")]
    placeholder = pod("warm-0", "warm-b", labels={"kubeops.io/warm-set": "rotation-r1"})
    effects = {"spare-a": "PreferNoSchedule"}
    needs = {"cpu": 1.0, "memory": 0.0, "pods": 1.0, "example.com/gpu": 1.0}
    assert strict_when_warmed(effects, nodes, [placeholder], ["old-b"], needs) == effects
    nodes[1]["status"]["allocatable"]["example.com/gpu"] = "1"
    assert strict_when_warmed(effects, nodes, [placeholder], ["old-b"], needs) == {"spare-a": "NoSchedule"}


def test_the_zones_closed_to_the_pods_that_move_are_those_their_steering_gives_an_effect_outside_the_nodes_avoided():
    nodes = [node("later-a", zone="a"), node("spare-b", zone="b"), node("full-b", zone="b"), node("spare-c", zone="c"),
             node("no-zone")]
    effects = {"later-a": "NoSchedule", "spare-b": "PreferNoSchedule", "spare-c": "NoSchedule", "no-zone": "NoSchedule"}
    assert closed_zones(nodes, effects, ["later-a"]) == {"b": "PreferNoSchedule", "c": "NoSchedule"}
    assert closed_zones(nodes, {}, ()) == {}


def test_a_node_that_comes_up_gets_its_closed_zones_effect_unless_known_cordoned_or_steered_already():
    closed = {"b": "NoSchedule"}
    assert new_node_effect(node("new-b", zone="b"), closed, {"old-b"}) == "NoSchedule"
    assert new_node_effect(node("old-b", zone="b"), closed, {"old-b"}) is None
    assert new_node_effect(node("new-a", zone="a"), closed, ()) is None
    assert new_node_effect(node("bare"), closed, ()) is None
    assert new_node_effect(node("off-b", zone="b", unschedulable=True), closed, ()) is None
    assert new_node_effect(node("done-b", zone="b", taints=[STEERING]), closed, ()) is None
