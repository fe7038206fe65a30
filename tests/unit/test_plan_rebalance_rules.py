"""The rule strategies of a rebalance pass (node_taints, node_affinity, pod_anti_affinity) and compaction."""

from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.module_utils.plan.rebalance.compaction import keep_node_patch
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.rebalance.planner import (
    RebalanceSettings,
    plan_rebalance,
)
from builders import node, pod

OWNERS = {("ns", "web-rs"): "web", ("ns", "api-rs"): "api"}
GPU_TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
TOLERATES_GPU = [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]


def rules(*strategies):
    return RebalanceSettings(strategies=strategies)


def test_pods_under_a_taint_they_do_not_tolerate_move_and_those_that_tolerate_it_stay():
    nodes = [node("tainted", "a", taints=[GPU_TAINT]), node("n1", "a"), node("n2", "b")]
    pods = [pod("web-0", "tainted"), pod("web-1", "tainted"),
            pod("api-0", "tainted", app="api", tolerations=TOLERATES_GPU)]
    plan = plan_rebalance(nodes, pods, OWNERS, rules("node_taints"))
    assert sorted(move["pod"] for move in plan["moves"]) == ["ns/web-0", "ns/web-1"]
    assert {move["to"] for move in plan["moves"]} == {"n1", "n2"}, "one web pod on each: no new pile"
    assert all(move["strategy"] == "node_taints" for move in plan["moves"])
    assert set(plan["violations_before"]["node_taints"]) == {"ns/web-0", "ns/web-1"}
    assert plan["violations_predicted"] == {"node_taints": {}}
    assert "Violations: node_taints 2 -> 0." in plan["summary"]


def test_prefer_no_schedule_a_cordon_and_the_collections_own_taints_move_nothing():
    taints = [{"key": "spot", "effect": "PreferNoSchedule"}, {"key": "kubeops.io/rotating", "effect": "NoSchedule"}]
    nodes = [node("n0", "a", taints=taints), node("n1", "a")]
    plan = plan_rebalance(nodes, [pod("web-0", "n0")], OWNERS, rules("node_taints"))
    assert plan["moves"] == [] and plan["violations_before"] == {"node_taints": {}}


def test_a_pod_no_other_node_takes_is_stuck_and_says_why():
    nodes = [node("tainted", "a", taints=[GPU_TAINT]), node("small", "a", cpu="50m")]
    plan = plan_rebalance(nodes, [pod("web-0", "tainted")], OWNERS, rules("node_taints"))
    assert plan["moves"] == []
    assert plan["stuck"][0]["target"] == "ns/web-0" and "no node has room" in plan["stuck"][0]["reason"]
    assert plan["violations_predicted"]["node_taints"] == plan["violations_before"]["node_taints"]
    assert any(line.startswith("cannot move ns/web-0 (node_taints)") for line in plan["summary"])


def test_a_pod_whose_node_lost_the_label_it_requires_moves_to_a_node_that_has_it():
    required = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["web"]}]}]}}}
    nodes = [node("relabelled", "a", labels={"tier": "batch"}), node("n1", "a", labels={"tier": "web"}),
             node("n2", "b", labels={"tier": "batch"})]
    pods = [pod("web-0", "relabelled", affinity=required),
            pod("api-0", "relabelled", app="api", nodeSelector={"tier": "batch"})]
    plan = plan_rebalance(nodes, pods, OWNERS, rules("node_affinity"))
    assert [(move["pod"], move["to"]) for move in plan["moves"]] == [("ns/web-0", "n1")]
    assert plan["violations_before"] == {"node_affinity": {"ns/web-0": "relabelled"}}
    assert plan["violations_predicted"] == {"node_affinity": {}}


def test_a_pod_moves_for_its_preferred_affinity_only_to_a_node_that_scores_higher():
    preferred = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 10, "preference": {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}},
        {"weight": 1, "preference": {"matchExpressions": [{"key": "size", "operator": "In", "values": ["big"]}]}}]}}
    nodes = [node("hdd", "a", labels={"disk": "hdd", "size": "big"}), node("ssd", "a", labels={"disk": "ssd"}),
             node("ssd-full", "a", labels={"disk": "ssd", "size": "big"}, cpu="100m")]
    pods = [pod("web-0", "hdd", affinity=preferred), pod("api-0", "ssd", app="api", affinity=preferred),
            pod("api-1", "ssd-full", app="api")]
    plan = plan_rebalance(nodes, pods, OWNERS, rules("node_affinity"))
    assert [(move["pod"], move["to"]) for move in plan["moves"]] == [("ns/web-0", "ssd")], \
        "web-0 scores 1 on hdd and 10 on ssd (11 on ssd-full, which is full); api-0 is best where it is"
    assert plan["stuck"] == [], "a better node that is full is no violation"


def test_a_rule_move_keeps_to_the_other_rules_and_the_later_strategies_see_it_moved():
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "web"}}}]}}
    nodes = [node("tainted", "a", taints=[GPU_TAINT]), node("n1", "a"), node("n2", "a")]
    pods = [pod("web-0", "tainted", affinity=anti), pod("web-1", "n1", affinity=anti)]
    plan = plan_rebalance(nodes, pods, OWNERS, rules("node_taints", "duplicates"))
    assert [(move["pod"], move["to"]) for move in plan["moves"]] == [("ns/web-0", "n2")]


ANTI_WEB = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "web"}}}]}}


def test_of_pods_that_exclude_each_other_on_one_node_all_but_one_move_each_to_a_node_of_its_own():
    nodes = [node("crowded", "a"), node("n1", "a"), node("n2", "b"), node("n3", "b")]
    pods = [pod("web-%d" % index, "crowded", affinity=ANTI_WEB) for index in range(3)] + \
        [pod("web-3", "n1", affinity=ANTI_WEB)]
    plan = plan_rebalance(nodes, pods, OWNERS, rules("pod_anti_affinity"))
    assert [(move["pod"], move["to"]) for move in plan["moves"]] == [("ns/web-0", "n2"), ("ns/web-1", "n3")], \
        "two of the three go, to the nodes without a web pod; n1 has one already"
    assert set(plan["violations_before"]["pod_anti_affinity"]) == {"ns/web-0", "ns/web-1", "ns/web-2"}
    assert plan["violations_predicted"] == {"pod_anti_affinity": {}}


def test_a_pod_does_not_move_to_a_node_whose_pod_excludes_it():
    nodes = [node("crowded", "a"), node("guarded", "a"), node("free", "a", cpu="1")]
    guard = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "web"}}}]}}
    pods = [pod("web-0", "crowded", affinity=ANTI_WEB), pod("web-1", "crowded", affinity=ANTI_WEB),
            pod("api-0", "guarded", app="api", affinity=guard)]
    plan = plan_rebalance(nodes, pods, OWNERS, rules("pod_anti_affinity"))
    assert [(move["pod"], move["to"]) for move in plan["moves"]] == [("ns/web-0", "free")], \
        "guarded has more room, but its api pod's anti-affinity excludes web pods"


def compact(threshold=30.0, **limits):
    return RebalanceSettings(strategies=("compaction",), compaction_threshold=threshold, **limits)


def test_compaction_empties_the_emptiest_nodes_onto_the_fullest_and_names_them():
    nodes = [node("full", "a"), node("half", "a"), node("low-1", "a"), node("low-2", "a")]
    pods = [pod("api-%d" % index, "full", app="api", cpu="500m") for index in range(6)] + \
        [pod("api-%d" % index, "half", app="api", cpu="500m") for index in range(6, 10)] + \
        [pod("web-0", "low-1", cpu="500m"), pod("web-1", "low-2", cpu="500m"), pod("web-2", "low-2", cpu="500m"),
         pod("agent-low-1", "low-1", kind="DaemonSet", app="agent")]
    plan = plan_rebalance(nodes, pods, OWNERS, compact())
    assert [(move["pod"], move["to"]) for move in plan["moves"]] == [
        ("ns/web-0", "full"), ("ns/web-1", "full"), ("ns/web-2", "half")], \
        "low-1 (12.5 %) first, then low-2 (25 %), the fullest node first; the DaemonSet pod stays"
    assert plan["compaction"]["emptied"] == ["low-1", "low-2"]
    assert plan["compaction"]["empty_before"] == [] and plan["compaction"]["empty_predicted"] == ["low-1", "low-2"]
    assert any(line.startswith("Compaction (below 30%): empties low-1, low-2; nodes an autoscaler may remove 0 -> 2")
               for line in plan["summary"])


def test_a_node_is_emptied_whole_or_not_at_all():
    nodes = [node("full", "a", cpu="1"), node("low", "a")]
    pods = [pod("api-0", "full", app="api", cpu="500m"),
            pod("web-0", "low", cpu="400m"), pod("web-1", "low", cpu="400m")]
    plan = plan_rebalance(nodes, pods, OWNERS, compact())
    assert plan["moves"] == [], "only one of low's two pods fits on full: moving it frees no node"
    assert plan["stuck"] == [{"strategy": "compaction", "target": "low", "skew": None,
                              "reason": "ns/web-1 fits on no other node"}]


def test_a_node_that_received_pods_is_not_emptied_after_and_a_do_not_disrupt_pod_keeps_its_node():
    nodes = [node("low-1", "a"), node("low-2", "a"), node("kept", "a")]
    pods = [pod("web-0", "low-1"), pod("web-1", "low-2", cpu="200m"),
            pod("api-0", "kept", app="api", annotations={"karpenter.sh/do-not-disrupt": "true"})]
    plan = plan_rebalance(nodes, pods, OWNERS, compact())
    assert [(move["pod"], move["to"]) for move in plan["moves"]] == [("ns/web-0", "low-2")], \
        "low-2 is the fullest that takes it, and once it took a pod it is not emptied (no pod moves twice)"
    assert plan["compaction"]["emptied"] == ["low-1"]
    assert [entry["target"] for entry in plan["stuck"]] == ["kept"], "a do-not-disrupt pod keeps its node"


def test_compaction_keeps_to_max_evictions_for_a_whole_node():
    nodes = [node("full", "a"), node("low", "a")]
    pods = [pod("api-0", "full", app="api", cpu="2"), pod("web-0", "low"), pod("web-1", "low")]
    plan = plan_rebalance(nodes, pods, OWNERS, compact(max_evictions=1))
    assert plan["moves"] == [] and "max_evictions (1) would be exceeded" in plan["stuck"][0]["reason"]


def test_a_node_a_pass_fills_is_kept_from_autoscalers_and_only_what_the_pass_added_is_taken_off():
    bare = node("n1", "a")
    kept = keep_node_patch(bare, True)
    assert kept[0]["op"] == "test" and kept[1]["value"] == {
        "karpenter.sh/do-not-disrupt": "true", "cluster-autoscaler.kubernetes.io/scale-down-disabled": "true",
        "kubeops.io/filled-by-rebalance": "cluster-autoscaler.kubernetes.io/scale-down-disabled,"
                                          "karpenter.sh/do-not-disrupt"}
    own = node("n2", "a", annotations={"karpenter.sh/do-not-disrupt": "true", "team": "a"})
    marked = dict(own, metadata=dict(own["metadata"], annotations=keep_node_patch(own, True)[1]["value"]))
    assert keep_node_patch(marked, True) == [], "kept already"
    assert keep_node_patch(marked, False)[1]["value"] == {"karpenter.sh/do-not-disrupt": "true", "team": "a"}, \
        "the node's own do-not-disrupt stays"
    assert keep_node_patch(own, False) == []


def test_a_daemonset_pod_under_a_new_taint_is_no_violation_and_no_stuck_move():
    nodes = [node("tainted", "a", taints=[GPU_TAINT]), node("n1", "a")]
    pods = [pod("agent-0", "tainted", kind="DaemonSet", app="agent"), pod("web-0", "tainted")]
    plan = plan_rebalance(nodes, pods, OWNERS, rules("node_taints"))
    assert [move["pod"] for move in plan["moves"]] == ["ns/web-0"] and plan["stuck"] == []
    assert list(plan["violations_before"]["node_taints"]) == ["ns/web-0"]


ANTI_DB_BY_ZONE = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"topologyKey": "topology.kubernetes.io/zone", "labelSelector": {"matchLabels": {"app": "db"}}}]}}


def test_pods_whose_zone_anti_affinity_is_broken_move_to_a_zone_of_their_own_and_the_violation_is_named():
    nodes = [node("a-1", "a"), node("a-2", "a"), node("b-1", "b"), node("c-1", "c")]
    pods = [pod("db-0", "a-1", app="db", affinity=ANTI_DB_BY_ZONE),
            pod("db-1", "a-2", app="db", affinity=ANTI_DB_BY_ZONE),
            pod("db-2", "b-1", app="db", affinity=ANTI_DB_BY_ZONE)]
    plan = plan_rebalance(nodes, pods, OWNERS, rules("pod_anti_affinity"))
    assert plan["violations_before"]["pod_anti_affinity"] == {"ns/db-0": "a-1: ns/db-1", "ns/db-1": "a-2: ns/db-0"}
    assert [(move["pod"], move["to"]) for move in plan["moves"]] == [("ns/db-0", "c-1")], \
        "zone b has a db pod already; once db-0 is in zone c, db-1 keeps to the rule where it is"
    assert plan["moves"][0]["reason"] == \
        "ns/db-1 runs on a-2, in the same domain as a-1, which its anti-affinity excludes"
    assert plan["violations_predicted"] == {"pod_anti_affinity": {}}
