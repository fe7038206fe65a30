from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.module_utils.plan.filters import FilterOptions
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.rebalance.planner import (
    RebalanceSettings,
    landings,
    plan_rebalance,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.rebalance.spread import spread
from builders import anti_affinity, node, pod, zone_spread

OWNERS = {("ns", "web-rs"): "web", ("ns", "api-rs"): "api", ("ns", "db-rs"): "db"}


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
    old = [node(n["metadata"]["name"], "a", labels={"pool": "old"}) for n in OLD]
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
    constraint = [zone_spread()]
    pods = piled(apps=("web",), nodes=("old-0", "old-1"), per_node=3, topologySpreadConstraints=constraint)
    plan = plan_rebalance(OLD, pods, OWNERS, RebalanceSettings(strategies=("topology_spread",)))
    assert [move["to"] for move in plan["moves"]] == ["old-2", "old-2"]
    assert plan["before"]["constraints"][0]["domains"] == {"a": 3, "b": 3, "c": 0}
    assert plan["predicted"]["constraints"][0]["domains"] == {"a": 2, "b": 2, "c": 2}
    assert plan["predicted"]["max_zone_skew"] == 0


def test_duplicates_do_not_break_a_zone_constraint():
    constraint = [zone_spread()]
    nodes = [node("a-0", "a"), node("b-0", "b"), node("a-1", "a")]
    pods = [pod("web-%d" % index, name, topologySpreadConstraints=constraint)
            for index, name in enumerate(["a-0", "a-0", "b-0", "b-0"])]
    plan = plan_rebalance(nodes, pods, OWNERS, RebalanceSettings(strategies=("duplicates",)))
    assert [(move["from"], move["to"]) for move in plan["moves"]] == [("a-0", "a-1")], \
        "only zone a's pod may move to a-1: a b pod there would make zones 3/1"


def test_hostname_anti_affinity_and_selectors_limit_the_targets():
    anti = anti_affinity("db")
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


def test_a_bare_pod_in_a_spread_constraint_stays_and_is_named_unless_forced():
    constraint = [zone_spread()]
    pods = [pod("bare-%d" % index, "old-0", kind=None, topologySpreadConstraints=constraint) for index in range(3)]
    settings = RebalanceSettings(strategies=("topology_spread",))
    kept = plan_rebalance(OLD, pods, OWNERS, settings)
    assert kept["moves"] == []
    assert kept["stuck"][0]["reason"].startswith("ns/bare-0 stays (unreplicated: no controller would recreate it")
    forced = plan_rebalance(OLD, pods, OWNERS, RebalanceSettings(strategies=("topology_spread",),
                                                                 options=FilterOptions(force=True)))
    assert [(move["pod"], move["owner"], move["to"]) for move in forced["moves"]] == [
        ("ns/bare-0", None, "old-1"), ("ns/bare-1", None, "old-2")]
    assert forced["predicted"]["constraints"][0]["domains"] == {"a": 1, "b": 1, "c": 1}


def test_landings_ignore_new_pods_of_no_planned_owner():
    moves = [{"pod": "ns/web-old-0-0", "owner": "ns/Deployment/web", "from": "old-0", "to": "new-0"}]
    before = piled(apps=("web",))
    after = [p for p in before if p["metadata"]["name"] != "web-old-0-0"] + \
        [pod("web-new", "new-0"), pod("debug", "new-1", kind=None), pod("api-new", "new-2", "api")]
    result, back = landings(moves, before, after, OWNERS)
    assert [(move["landed_on"], move["as_planned"]) for move in result] == [("new-0", True)] and back == []


def test_a_move_whose_replacement_never_came_has_landed_nowhere():
    moves = [{"pod": "ns/web-old-0-0", "owner": "ns/Deployment/web", "from": "old-0", "to": "new-0"}]
    before = piled(apps=("web",))
    result, back = landings(moves, before, before, OWNERS)
    assert result == [dict(moves[0], landed_on=None, as_planned=False)] and back == []


def test_summary_gives_the_skews_each_move_and_what_is_stuck():
    summary = plan_rebalance(OLD + NEW, piled(), OWNERS, RebalanceSettings(max_evictions=1))["summary"]
    assert summary[0] == ("Rebalance over 6 node(s): 1 move(s) (duplicates 1); max skew per owner 2 -> 2, "
                          "per zone 0 -> 0.")
    assert summary[1] == "move ns/api-old-0-0 (ns/Deployment/api): old-0 -> new-0 [duplicates]"
    assert summary[2:] == ["cannot even out ns/Deployment/%s (duplicates, skew 2): max_evictions (1) reached" % app
                           for app in ("api", "db", "web")]
