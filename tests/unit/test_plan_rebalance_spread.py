from __future__ import annotations

import pytest

from ansible_collections.kubeops.rotation.plugins.module_utils.plan.filters import FilterOptions
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.placement import PlacementSimulator
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.rebalance.spread import (
    constraints_of,
    held_skew,
    in_scope,
    live_pods,
    owner_groups,
    room_utilization,
    selection,
    skew,
    spread,
)
from builders import node, pod, zone_spread

OWNERS = {("ns", "web-rs"): "web"}
ZONE_SPREAD = zone_spread()


def keys(pods):
    return [p["metadata"]["name"] for p in pods]


def test_in_scope_keeps_ready_schedulable_nodes_by_name_and_says_why_the_others_are_out():
    kept, left_out = in_scope([node("b"), node("cordoned", unschedulable=True), node("a"),
                               node("down", ready="Unknown")])
    assert [n["metadata"]["name"] for n in kept] == ["a", "b"]
    assert left_out == [{"name": "cordoned", "reason": "cordoned"}, {"name": "down", "reason": "not Ready"}]


def test_live_pods_are_those_running_on_the_nodes_and_not_on_their_way_out():
    pods = [pod("here", "n1"), pod("elsewhere", "n9"), pod("pending", None, phase="Pending"),
            pod("done", "n1", phase="Succeeded"), pod("going", "n1", deleting=True)]
    assert keys(live_pods(pods, {"n1"})) == ["here"]


def test_skew_is_max_minus_min_and_nothing_has_none():
    assert skew({"a": 3, "b": 1, "c": 2}) == 2
    assert skew({"a": 1}) == 0 and skew({}) == 0


def test_held_skew_is_the_skew_with_a_zero_on_every_feasible_node_that_holds_none():
    assert held_skew({"n1": 3, "n2": 1}, {"n1": None, "n2": None, "n3": None}) == 3
    assert held_skew({"n1": 3, "n2": 1}, {"n1": None, "n2": None}) == 2 == skew({"n1": 3, "n2": 1})
    assert held_skew({"elsewhere": 2}, {}) == 0 and held_skew({}, {"n1": None}) == 0 and held_skew({}, {}) == 0


def test_owner_groups_resolve_deployments_and_leave_out_daemonsets_and_bare_pods():
    pods = [pod("web-1"), pod("web-2"), pod("db-0", kind="StatefulSet", owner="db"),
            pod("agent", kind="DaemonSet", owner="agent"), pod("bare", kind=None)]
    groups = owner_groups(pods, OWNERS)
    assert {key: keys(members) for key, members in groups.items()} == {
        "ns/Deployment/web": ["web-1", "web-2"], "ns/StatefulSet/db": ["db-0"]}


def test_selection_keeps_the_selected_pods_of_the_options_namespaces():
    pods = [pod("a"), pod("b"), pod("c", namespace="other")]
    assert keys(selection(pods, FilterOptions())) == ["a", "b", "c"]
    assert keys(selection(pods, FilterOptions(), selected={"ns/b", "other/c"})) == ["b", "c"]
    assert keys(selection(pods, FilterOptions(exclude_namespaces=("other",)))) == ["a", "b"]
    assert keys(selection(pods, FilterOptions(namespaces=("other",)), selected={"ns/a"})) == []


def test_constraints_of_are_distinct_hard_constraints_each_with_a_pod_that_has_it():
    soft = zone_spread(when="ScheduleAnyway")
    pods = [pod("w1", topologySpreadConstraints=[ZONE_SPREAD]), pod("w2", topologySpreadConstraints=[ZONE_SPREAD]),
            pod("w3", namespace="other", topologySpreadConstraints=[ZONE_SPREAD]),
            pod("w4", topologySpreadConstraints=[zone_spread(max_skew=2), soft])]
    found = constraints_of(pods)
    assert {key: pod_and_constraint[0]["metadata"]["name"] for key, pod_and_constraint in found.items()} == {
        'ns topology.kubernetes.io/zone {"matchLabels": {"app": "web"}} maxSkew=1': "w1",
        'other topology.kubernetes.io/zone {"matchLabels": {"app": "web"}} maxSkew=1': "w3",
        'ns topology.kubernetes.io/zone {"matchLabels": {"app": "web"}} maxSkew=2': "w4"}


def test_utilization_is_the_most_used_resource_in_percent():
    room = PlacementSimulator([node("n1", cpu="4", memory="8Gi", pods="10"), node("empty", cpu="0", memory="0", pods="0")],
                              [pod("a", cpu="1", memory="6Gi"), pod("b", cpu="1", memory="0")])
    assert room_utilization(room, "n1") == pytest.approx(75.0), "memory 6 of 8 Gi beats cpu 2 of 4 and pods 2 of 10"
    assert room_utilization(room, "empty") == 0.0


def test_spread_counts_an_owner_on_every_node_it_may_use_and_per_zone():
    nodes = [node("a-0", zone="a"), node("a-1", zone="a"), node("b-0", zone="b"),
             node("gpu", zone="b", taints=[{"key": "gpu", "effect": "NoSchedule"}])]
    pods = [pod("w1", "a-0", topologySpreadConstraints=[ZONE_SPREAD]), pod("w2", "a-0"), pod("w3", "a-1"),
            pod("agent", "a-0", app="agent", kind="DaemonSet"), pod("lost", "gone")]
    report = spread(nodes, pods, OWNERS)
    assert report["owners"] == {"ns/Deployment/web": {"pods": 3, "nodes": {"a-0": 2, "a-1": 1, "b-0": 0},
                                                      "skew": 2, "zones": {"a": 3, "b": 0}, "zone_skew": 3}}
    assert report["max_skew"] == 2 and report["max_zone_skew"] == 3
    assert report["constraints"] == [{"constraint": 'ns topology.kubernetes.io/zone {"matchLabels": {"app": "web"}} '
                                                    'maxSkew=1', "max_skew": 1, "domains": {"a": 3, "b": 0},
                                      "skew": 3}]
    assert report["utilization"] == {"a-0": 7.5, "a-1": 2.5, "b-0": 0.0, "gpu": 0.0}, "cpu 100m per pod of 4"
    assert report["utilization_spread"] == 7.5


def test_spread_of_nothing_is_even():
    assert spread([], [], {}) == {"owners": {}, "max_skew": 0, "max_zone_skew": 0, "constraints": [],
                                  "utilization": {}, "utilization_spread": 0}
