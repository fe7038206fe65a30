from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.module_utils.pods import FilterOptions
from ansible_collections.kubeops.rotation.plugins.module_utils.rebalancing import (
    RebalanceSettings,
    landings,
    plan_rebalance,
    spread,
)

OWNERS = {("ns", "web-rs"): "web", ("ns", "api-rs"): "api", ("ns", "db-rs"): "db"}


def node(name, zone="a", cpu="4", pods="110", labels=None, unschedulable=False, ready="True"):
    return {"metadata": {"name": name, "labels": dict({"topology.kubernetes.io/zone": zone,
                                                       "kubernetes.io/hostname": name}, **(labels or {}))},
            "spec": {"unschedulable": unschedulable},
            "status": {"allocatable": {"cpu": cpu, "memory": "16Gi", "pods": pods},
                       "conditions": [{"type": "Ready", "status": ready}]}}


def pod(name, node_name, app="web", cpu="100m", annotations=None, **spec):
    return {"metadata": {"name": name, "namespace": "ns", "uid": "uid-" + name, "labels": {"app": app},
                         "annotations": annotations or {},
                         "ownerReferences": [{"kind": "ReplicaSet", "name": app + "-rs", "controller": True}]},
            "spec": dict({"nodeName": node_name, "containers": [{"name": "c", "resources": {
                "requests": {"cpu": cpu, "memory": "64Mi"}}}]}, **spec),
            "status": {"phase": "Running"}}


def piled(apps=("web", "api", "db"), nodes=("old-0", "old-1", "old-2"), per_node=2, **extra):
    return [pod("%s-%s-%d" % (app, name, index), name, app, **extra)
            for app in apps for name in nodes for index in range(per_node)]


OLD = [node("old-0", "a"), node("old-1", "b"), node("old-2", "c")]
NEW = [node("new-0", "a"), node("new-1", "b"), node("new-2", "c")]


def test_three_owners_piled_on_three_nodes_spread_onto_three_new_nodes_in_nine_moves():
    plan = plan_rebalance(OLD + NEW, piled(), OWNERS, RebalanceSettings())
    assert plan["before"]["max_skew"] == 2
    assert plan["predicted"]["max_skew"] == 0
    assert len(plan["moves"]) == 9, "the fewest moves: one per owner and old node"
    assert all(move["from"].startswith("old-") and move["to"].startswith("new-") for move in plan["moves"])
    assert plan["predicted"]["owners"]["ns/Deployment/web"]["nodes"] == {name: 1 for name in
                                                                         ["old-0", "old-1", "old-2",
                                                                          "new-0", "new-1", "new-2"]}
    assert plan["stuck"] == []


def test_a_balanced_cluster_plans_nothing():
    plan = plan_rebalance(OLD, piled(), OWNERS, RebalanceSettings())
    assert plan["moves"] == [] and plan["stuck"] == [] and plan["before"]["max_skew"] == 0


def test_nodes_without_room_take_nothing_and_the_plan_says_why():
    small = [node("new-%d" % index, zone, cpu="50m") for index, zone in enumerate("abc")]
    plan = plan_rebalance(OLD + small, piled(), OWNERS, RebalanceSettings())
    assert plan["moves"] == []
    assert plan["predicted"]["max_skew"] == 2
    assert {entry["target"] for entry in plan["stuck"]} == {"ns/Deployment/web", "ns/Deployment/api",
                                                            "ns/Deployment/db"}
    assert "no node has room for its requests" in plan["stuck"][0]["reason"]


def test_nodes_the_selector_excludes_are_not_counted_and_nothing_moves():
    pods = piled(nodeSelector={"pool": "old"})
    old = [node(n["metadata"]["name"], labels={"pool": "old"}) for n in OLD]
    plan = plan_rebalance(old + NEW, pods, OWNERS, RebalanceSettings())
    assert plan["moves"] == [] and plan["stuck"] == [] and plan["before"]["max_skew"] == 0


def test_do_not_disrupt_pods_stay_and_are_named():
    pods = piled(apps=("web",), nodes=("old-0",), per_node=4,
                 annotations={"karpenter.sh/do-not-disrupt": "true"})
    plan = plan_rebalance([OLD[0]] + NEW, pods, OWNERS, RebalanceSettings())
    assert plan["moves"] == []
    assert "do-not-disrupt" in plan["stuck"][0]["reason"]


def test_caps_per_owner_and_in_all_limit_the_moves_and_the_prediction_shows_it():
    per_owner = plan_rebalance(OLD + NEW, piled(), OWNERS, RebalanceSettings(max_per_owner=1))
    assert len(per_owner["moves"]) == 3 and len({move["owner"] for move in per_owner["moves"]}) == 3
    assert per_owner["predicted"]["max_skew"] == 2, "two old nodes still have 2 of each"
    capped = plan_rebalance(OLD + NEW, piled(), OWNERS, RebalanceSettings(max_evictions=4))
    assert len(capped["moves"]) == 4
    assert "max_evictions (4) reached" in capped["stuck"][0]["reason"]


def test_cordoned_and_not_ready_nodes_are_left_out_of_the_pass():
    plan = plan_rebalance(OLD + [node("cordoned", unschedulable=True), node("down", ready="False")], piled(),
                          OWNERS, RebalanceSettings())
    assert plan["left_out"] == [{"name": "cordoned", "reason": "cordoned"}, {"name": "down", "reason": "not Ready"}]
    assert plan["moves"] == []


def test_zone_spread_is_repaired_with_the_fewest_moves_and_keeps_the_constraint():
    constraint = [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
                   "labelSelector": {"matchLabels": {"app": "web"}}}]
    pods = piled(apps=("web",), nodes=("old-0", "old-1"), per_node=3, topologySpreadConstraints=constraint)
    plan = plan_rebalance(OLD, pods, OWNERS, RebalanceSettings(strategies=("topology_spread",)))
    assert [move["to"] for move in plan["moves"]] == ["old-2", "old-2"]
    assert plan["before"]["constraints"][0]["domains"] == {"a": 3, "b": 3, "c": 0}
    assert plan["predicted"]["constraints"][0]["domains"] == {"a": 2, "b": 2, "c": 2}
    assert plan["predicted"]["max_zone_skew"] == 0


def test_duplicates_do_not_break_a_zone_constraint():
    constraint = [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
                   "labelSelector": {"matchLabels": {"app": "web"}}}]
    nodes = [node("a-0", "a"), node("b-0", "b"), node("a-1", "a")]
    pods = [pod("web-%d" % index, name, topologySpreadConstraints=constraint)
            for index, name in enumerate(["a-0", "a-0", "b-0", "b-0"])]
    plan = plan_rebalance(nodes, pods, OWNERS, RebalanceSettings(strategies=("duplicates",)))
    assert [(move["from"], move["to"]) for move in plan["moves"]] == [("a-0", "a-1")], \
        "only zone a's pod may move to a-1: a b pod there would make zones 3/1"


def test_hostname_anti_affinity_and_selectors_limit_the_targets():
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "db"}}}]}}
    pods = piled(apps=("web",), nodes=("old-0",), per_node=3) + [pod("db-0", "new-0", "db", affinity=anti)]
    extra = pod("db-1", "old-0", "db", affinity=anti)
    plan = plan_rebalance([OLD[0], NEW[0]], pods + [extra], OWNERS, RebalanceSettings(strategies=("duplicates",)))
    assert {move["pod"] for move in plan["moves"]} == {"ns/web-old-0-0"}


def test_utilization_moves_the_largest_pods_from_a_hot_node_to_cold_ones_without_overfilling_them():
    pods = [pod("big-%d" % index, "old-0", "web", cpu="1") for index in range(3)] + \
        [pod("small-%d" % index, "old-1", "api", cpu="100m") for index in range(2)]
    plan = plan_rebalance(OLD, pods, OWNERS, RebalanceSettings(strategies=("utilization",)))
    before = plan["before"]["utilization"]
    assert before["old-0"] == 75.0
    assert [(move["from"], move["to"]) for move in plan["moves"]] == [("old-0", "old-2")]
    assert plan["predicted"]["utilization_spread"] < plan["before"]["utilization_spread"]


def test_spread_reports_zones():
    report = spread(OLD + NEW, piled(), OWNERS)
    assert report["owners"]["ns/Deployment/api"]["zones"] == {"a": 2, "b": 2, "c": 2}
    assert report["owners"]["ns/Deployment/api"]["zone_skew"] == 0
    assert report["owners"]["ns/Deployment/api"]["skew"] == 2


def test_landings_match_replacements_to_the_plan_and_name_those_back_on_their_old_node():
    moves = [{"pod": "ns/web-old-0-0", "owner": "ns/Deployment/web", "from": "old-0", "to": "new-0"},
             {"pod": "ns/web-old-1-0", "owner": "ns/Deployment/web", "from": "old-1", "to": "new-1"}]
    before = piled(apps=("web",))
    after = [p for p in before if p["metadata"]["name"] not in ("web-old-0-0", "web-old-1-0")] + \
        [pod("web-new-a", "new-1"), pod("web-new-b", "old-0")]
    result, back = landings(moves, before, after, OWNERS)
    assert [(move["landed_on"], move["as_planned"]) for move in result] == [("old-0", False), ("new-1", True)]
    assert back == [{"owner": "ns/Deployment/web", "node": "old-0"}]


def test_filter_options_reach_the_planner():
    pods = piled(apps=("web",), nodes=("old-0",), per_node=4, volumes=[{"name": "scratch", "emptyDir": {}}])
    refused = plan_rebalance([OLD[0]] + NEW, pods, OWNERS, RebalanceSettings())
    allowed = plan_rebalance([OLD[0]] + NEW, pods, OWNERS,
                             RebalanceSettings(options=FilterOptions(delete_emptydir_data=True)))
    assert refused["moves"] == [] and "local-storage" in refused["stuck"][0]["reason"]
    assert len(allowed["moves"]) == 3


def test_a_pod_whose_volume_is_bound_to_a_zone_moves_only_within_it():
    pods = piled(apps=("web",), nodes=("old-0",), per_node=3,
                 volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}])
    plan = plan_rebalance([OLD[0]] + NEW, pods, OWNERS, RebalanceSettings(), claim_zones={"ns/data": "a"})
    assert [move["to"] for move in plan["moves"]] == ["new-0"]
    assert "its volume data is bound to zone a" in plan["stuck"][0]["reason"]


def test_steering_patch_adds_and_removes_only_its_own_taint_guarded_by_the_resource_version():
    from ansible_collections.kubeops.rotation.plugins.module_utils.rebalance import steering_patch
    other = {"key": "gpu", "effect": "NoSchedule"}
    plain = {"metadata": {"name": "n", "resourceVersion": "7"}, "spec": {"taints": [other]}}
    added = steering_patch(plain, "PreferNoSchedule")
    assert added[0] == {"op": "test", "path": "/metadata/resourceVersion", "value": "7"}
    steered = [other, {"key": "kubeops.io/rebalancing", "value": "true", "effect": "PreferNoSchedule"}]
    assert added[1] == {"op": "add", "path": "/spec/taints", "value": steered}
    tainted = dict(plain, spec={"taints": steered})
    assert steering_patch(tainted, "PreferNoSchedule") == []
    assert steering_patch(tainted, None)[1]["value"] == [other]
    assert steering_patch(plain, None) == []
