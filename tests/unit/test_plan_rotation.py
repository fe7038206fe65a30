from __future__ import annotations

import dataclasses
import datetime

from ansible_collections.kubeops.rotation.plugins.module_utils.model.keys import ROTATION_ID, ROTATION_PHASE
from ansible_collections.kubeops.rotation.plugins.module_utils.model.owners import Workload
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.filters import FilterOptions
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.rotation import (
    AbortIf,
    DriftRules,
    RotationFacts,
    RotationSettings,
    abort_reasons,
    choose_nodes,
    drift_reasons,
    make_batches,
    move_of,
    plan_rotation,
    replacing_workload,
    version_tuple,
    warm_template,
)
from builders import ZONE, anti_affinity, node, pdb, pod

NOW = datetime.datetime(2026, 12, 3, tzinfo=datetime.timezone.utc)
WEB = Workload("Deployment", "ns", "web")
SOLO = Workload("Deployment", "ns", "solo")
KEEP = Workload("Deployment", "ns", "keep")
DB = Workload("StatefulSet", "ns", "db")
OWNERS = {("ns", "web-rs"): "web", ("ns", "solo-rs"): "solo", ("ns", "keep-rs"): "keep"}
TEMPLATE = {"cpu": "4", "memory": "16Gi", "pods": "110"}
DO_NOT_DISRUPT = {"karpenter.sh/do-not-disrupt": "true"}


def cluster(nodes, pods, pdbs, replicas, **facts):
    """The RotationFacts of ``nodes``, ``pods`` and ``pdbs``, whose ReplicaSets OWNERS names."""
    return RotationFacts(nodes, pods, pdbs, OWNERS, replicas, **facts)


def names(chosen):
    return [n["metadata"]["name"] for n, _reasons in chosen]


def test_versions_compare_by_number_whatever_the_suffix():
    assert version_tuple("v1.34.2-eks-1") < version_tuple("v1.35.0")
    assert version_tuple("v1.9.0") < version_tuple("v1.10.0")
    assert version_tuple("v1.35") == (1, 35, 0)


def test_drift_rules_pick_nodes_and_say_why_and_finished_nodes_are_left_out():
    nodes = [node("old", kubelet="v1.34.2"), node("new", kubelet="v1.35.4"),
             node("ami", kubelet="v1.35.4", labels={"ami": "ami-1"}),
             node("done", annotations={ROTATION_ID: "r1", ROTATION_PHASE: "drained"})]
    chosen, left_out = choose_nodes(nodes, DriftRules(target_kubelet_version="v1.35.0", labels={"ami": "ami-2"}),
                                    "r1", NOW)
    reasons = {n["metadata"]["name"]: r for n, r in chosen}
    assert set(reasons) == {"old", "ami", "new"}
    assert "kubelet v1.34.2 is older than v1.35.0" in reasons["old"]
    assert reasons["ami"] == ["label ami is ami-1, not ami-2"]
    assert reasons["new"] == ["label ami is None, not ami-2"]
    assert left_out == [{"name": "done", "reason": "already rotated by r1 (drained)"}]
    chosen, left_out = choose_nodes(nodes[:2], DriftRules(target_kubelet_version="v1.35.0"), None, NOW)
    assert names(chosen) == ["old"] and left_out[0]["reason"] == "no drift"


def test_age_rule():
    nodes = [node("aged", created="2026-10-01T00:00:00Z"), node("young", created="2026-12-02T00:00:00Z")]
    chosen, _left_out = choose_nodes(nodes, DriftRules(max_node_age="30d"), None, NOW)
    assert names(chosen) == ["aged"]
    assert chosen[0][1] == ["5443200 s old, more than 30d"], "63 days"


def test_annotation_and_taint_rules_name_what_they_found():
    marked = node("marked", annotations={"retire": "yes"}, taints=[{"key": "deprecated", "effect": "NoSchedule"}])
    rules = DriftRules(annotations=("retire", "other"), taints=("deprecated", "spot"))
    assert drift_reasons(marked, rules, NOW) == ["annotated retire", "tainted deprecated"]
    assert drift_reasons(node("clean"), rules, NOW) == []


def test_nodes_marked_planned_or_cordoned_by_the_rotation_are_still_chosen():
    planned = node("planned", annotations={ROTATION_ID: "r1", ROTATION_PHASE: "planned"})
    cordoned = node("cordoned", annotations={ROTATION_ID: "r1", ROTATION_PHASE: "cordoned"})
    chosen, left_out = choose_nodes([planned, cordoned], DriftRules(), "r1", NOW)
    assert names(chosen) == ["cordoned", "planned"] and left_out == []


def test_without_rules_every_candidate_is_selected_and_named_nodes_always_are():
    assert not DriftRules() and DriftRules(taints=("x",))
    chosen, left_out = choose_nodes([node("b"), node("a")], DriftRules(), None, NOW)
    assert [(n["metadata"]["name"], r) for n, r in chosen] == [("a", ["selected"]), ("b", ["selected"])]
    chosen, left_out = choose_nodes([node("fresh"), node("asked")], DriftRules(target_kubelet_version="v1.0.0"),
                                    None, NOW, named={"asked"})
    assert [(n["metadata"]["name"], r) for n, r in chosen] == [("asked", ["named"])]
    assert left_out == [{"name": "fresh", "reason": "no drift"}]


def test_a_named_node_already_rotated_is_still_left_out():
    done = node("done", annotations={ROTATION_ID: "r1", ROTATION_PHASE: "retired"})
    chosen, left_out = choose_nodes([done], DriftRules(), "r1", NOW, named={"done"})
    assert chosen == [] and left_out == [{"name": "done", "reason": "already rotated by r1 (retired)"}]


def test_batches_take_one_zone_at_a_time_least_disruptive_first():
    chosen = [(node(name, zone=zone), ["x"]) for name, zone in
              (("a1", "a"), ("a2", "a"), ("a3", "a"), ("b1", "b"), ("b2", "b"))]
    batches = make_batches(chosen, "2", {"a1": 5, "a2": 1, "a3": 3})
    assert [b["nodes"] for b in batches] == [["a2", "a3"], ["a1"], ["b1", "b2"]]
    assert [b["zone"] for b in batches] == ["a", "a", "b"]
    assert [b["nodes"] for b in make_batches(chosen, "50%", {})] == [["a1", "a2"], ["a3"], ["b1", "b2"]]


def test_most_disruptive_first_reverses_the_order_within_a_zone_and_zoneless_nodes_go_first():
    chosen = [(node(name, zone=zone), ["x"]) for name, zone in (("a1", "a"), ("a2", "a"), ("x1", None))]
    batches = make_batches(chosen, "2", {"a1": 1, "a2": 5}, most_disruptive="first")
    assert batches == [{"zone": None, "nodes": ["x1"]}, {"zone": "a", "nodes": ["a2", "a1"]}]


def test_only_deployments_and_statefulsets_replace_their_pods_first():
    assert replacing_workload(pod(), OWNERS) == WEB
    assert replacing_workload(pod(kind="StatefulSet", owner="db"), OWNERS) == DB
    assert replacing_workload(pod(owner="orphan-rs"), OWNERS) is None
    assert replacing_workload(pod(kind="DaemonSet", owner="agent"), OWNERS) is None
    assert replacing_workload(pod(kind=None), OWNERS) is None


def test_move_of_replaces_first_what_eviction_cannot_move_safely():
    options = FilterOptions()
    pdb_zero = [pdb("db")]
    assert move_of(pod("p", "n"), WEB, 3, [], options) == ("evict", "evictable")
    assert move_of(pod("p", "n"), WEB, 1, [], options) == ("replace", "single replica")
    assert move_of(pod("p", "n", annotations={"karpenter.sh/do-not-disrupt": "true"}), WEB, 3, [], options) \
        == ("replace", "do-not-disrupt")
    assert move_of(pod("p", "n", app="db"), WEB, 3, pdb_zero, options) == \
        ("replace", "PDB db allows no disruption now")
    assert move_of(pod("p", "n", app="db"), WEB, 3, [pdb("db", allowed=1)], options) == ("evict", "evictable")
    assert move_of(pod("p", "n", kind=None), None, None, [], options)[0] == "blocked"
    assert move_of(pod("p", "n", kind="DaemonSet", owner="agent"), None, None, [], options) == ("stays", "daemonset")


def test_a_planned_eviction_stays_one_while_its_pdb_is_spent_only_until_its_pods_are_ready():
    options = FilterOptions()
    spent_for_now = [pdb("db", max_unavailable=1, expected=8)]
    assert move_of(pod("p", "n", app="db"), WEB, 8, spent_for_now, options, planned_eviction=True) == \
        ("evict", "evictable")
    assert move_of(pod("p", "n", app="db"), WEB, 8, spent_for_now, options) == \
        ("replace", "PDB db allows no disruption now")
    never = [pdb("db", max_unavailable=0, expected=8)]
    assert move_of(pod("p", "n", app="db"), WEB, 8, never, options, planned_eviction=True) == \
        ("replace", "PDB db allows no disruption now")
    assert move_of(pod("p", "n", app="db"), WEB, 1, spent_for_now, options, planned_eviction=True) == \
        ("replace", "single replica")


def test_move_of_replaces_a_pod_protected_for_a_duration_and_evicts_one_whose_annotation_says_false():
    options = FilterOptions()
    for value in ("30m", "1h30m"):
        assert move_of(pod("p", "n", annotations={"karpenter.sh/do-not-disrupt": value}), WEB, 3, [], options) == \
            ("replace", "do-not-disrupt")
    assert move_of(pod("p", "n", annotations={"karpenter.sh/do-not-disrupt": "false"}), WEB, 3, [], options) == \
        ("evict", "evictable")


def test_move_of_blocks_what_has_no_workload_to_replace_it_unless_options_allow():
    protected = pod("p", "n", owner="orphan-rs", annotations={"karpenter.sh/do-not-disrupt": "true"})
    assert move_of(protected, None, None, [], FilterOptions()) == \
        ("blocked", "do-not-disrupt pod without a Deployment or StatefulSet to replace it first")
    scratch = pod("p", "n", volumes=[{"name": "tmp", "emptyDir": {}}])
    assert move_of(scratch, None, None, [], FilterOptions())[1].startswith("local-storage: emptyDir tmp")
    assert move_of(scratch, None, None, [], FilterOptions(delete_emptydir_data=True)) == ("evict", "evictable")
    assert move_of(pod("p", "n", kind=None), None, None, [], FilterOptions(force=True)) == ("evict", "evictable")
    assert move_of(pod("done", "n", phase="Succeeded"), WEB, 3, [], FilterOptions()) == ("stays", "terminal")


def test_warm_template_is_a_pool_node_named_by_hostname():
    assert warm_template("warm-1-0", {"pool": "new"}, {"cpu": "4"}, [{"key": "gpu", "effect": "NoSchedule"}]) == {
        "metadata": {"name": "warm-1-0", "labels": {"pool": "new", "kubernetes.io/hostname": "warm-1-0"}},
        "spec": {"taints": [{"key": "gpu", "effect": "NoSchedule"}]}, "status": {"allocatable": {"cpu": "4"}}}


def rotation():
    nodes = [node("old-1", zone="a"), node("old-2", zone="b"), node("keep", zone="a", cpu="2")]
    pods = [pod("web-1", "old-1", cpu="1"), pod("web-2", "old-2", cpu="1"),
            pod("solo-x", "old-1", app="solo", cpu="1"), pod("bare", "old-2", kind=None)]
    settings = RotationSettings(candidates=frozenset({"old-1", "old-2"}), named=frozenset({"old-1", "old-2"}),
                                rotation_id="r1", batch_size="1", options=FilterOptions(),
                                pool_labels={"pool": "new"}, template_allocatable=dict(TEMPLATE))
    replicas = {WEB: 2, SOLO: 1}
    return nodes, pods, replicas, settings


def test_plan_warms_nodes_replaces_single_replicas_first_and_reports_what_does_not_fit():
    nodes, pods, replicas, settings = rotation()
    plan = plan_rotation(cluster(nodes, pods, [], replicas), settings, NOW)
    first, second = plan["batches"]
    assert first["nodes"] == ["old-1"] and second["nodes"] == ["old-2"]
    assert first["replace"] == [replace_entry(SOLO, "single replica", ["ns/solo-x"])]
    assert first["evict"] == ["ns/web-1"] and first["warm_nodes"] == 1 and first["fits"]
    assert second["blocked"][0]["pod"] == "ns/bare" and plan["safe"] is False and plan["fits"] is True
    assert plan["nodes"] == [{"name": "old-1", "zone": "a", "reasons": ["named"]},
                             {"name": "old-2", "zone": "b", "reasons": ["named"]}]

    no_warm = dataclasses.replace(settings, template_allocatable=None)
    tight = plan_rotation(cluster(nodes, pods, [], replicas), no_warm, NOW)
    assert tight["fits"] is False
    assert tight["batches"][1]["unplaced"][0]["pod"] == "ns/web-2"
    assert any("DOES NOT FIT" in line for line in tight["summary"])


def test_plan_summary_opens_with_the_rotation_and_names_each_batch():
    nodes, pods, replicas, settings = rotation()
    summary = plan_rotation(cluster(nodes, pods, [], replicas), settings, NOW)["summary"]
    assert summary[0] == "Rotation r1: 2 node(s) in 2 batch(es)."
    assert summary[1] == ("batch 1/2 (zone a): old-1; replace first 1 pod(s) of 1 workload(s), evict 1 pod(s), "
                          "1 warm node(s) (a 1)")
    assert summary[2] == "  Deployment ns/solo: surge by 1 pod(s) (single replica)"
    assert summary[3] == "  evict: Deployment ns/web 1"
    assert summary[4].startswith("batch 2/2 (zone b): old-2; replace first 0 pod(s) of 0 workload(s), evict 1 pod(s)")
    assert "BLOCKED: ns/bare (unreplicated:" in summary[4]


def test_a_pod_whose_volume_is_bound_to_a_zone_is_placed_only_there():
    nodes = [node("old-1", zone="a"), node("b-0", zone="b"), node("a-0", zone="a")]
    data = pod("db-0", "old-1", kind="StatefulSet", owner="db",
               volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "data-db-0"}}])
    settings = RotationSettings(candidates=frozenset({"old-1"}))
    replicas = {Workload("StatefulSet", "ns", "db"): 3}
    plan = plan_rotation(cluster(nodes, [data], [], replicas, claim_zones={"ns/data-db-0": "a"}), settings, NOW)
    assert plan["batches"][0]["fits"] and plan["batches"][0]["evict"] == ["ns/db-0"]
    stuck = plan_rotation(cluster(nodes[:2], [data], [], replicas, claim_zones={"ns/data-db-0": "a"}), settings, NOW)
    assert stuck["batches"][0]["unplaced"] == [{"pod": "ns/db-0", "reason": "its volume is bound to zone a: no node "
                                                "matches its node selector, affinity or tolerations"}]


def test_the_check_of_a_batch_keeps_its_planned_evictions_while_the_last_batch_spent_their_pdb():
    nodes = [node("old-1"), node("new-1")]
    pods = [pod("web-1", "old-1"), pod("web-2", "old-1")]
    spent = [pdb("web", max_unavailable=1, expected=8)]
    settings = RotationSettings(candidates=frozenset({"old-1"}), planned_evictions=frozenset({"ns/web-1"}))
    batch = plan_rotation(cluster(nodes, pods, spent, {WEB: 8}), settings, NOW)["batches"][0]
    assert batch["evict"] == ["ns/web-1"]
    assert [entry["pods"] for entry in batch["replace"]] == [["ns/web-2"]]


def test_abort_if_names_long_pending_pods_and_long_blocked_pdbs():
    pending = pod("stuck", None, phase="Pending", created="2026-12-02T23:50:00Z")
    fresh = pod("fresh", None, phase="Pending", created="2026-12-02T23:59:30Z")
    placeholder = pod("warm", None, labels={"kubeops.io/warm-set": "x"}, phase="Pending",
                      created="2026-12-01T00:00:00Z")
    blocked = pdb("db", blocked_since="2026-12-02T23:00:00Z")
    reasons = abort_reasons([pending, fresh, placeholder], [blocked],
                            AbortIf(pending_pods_for="5m", pdb_blocked_for="30m"), NOW)
    assert reasons == ["pod ns/stuck has been Pending for 600 s (abort_if pending_pods_for 5m)",
                       "PDB ns/db has allowed no disruption for 3600 s (abort_if pdb_blocked_for 30m)"]
    assert abort_reasons([pending], [blocked], AbortIf(), NOW) == []


def test_abort_if_ignores_terminating_pods_and_pdbs_that_allow_disruptions_again():
    going = pod("going", None, phase="Pending", created="2026-12-01T00:00:00Z", deleting=True)
    recovered = pdb("db", allowed=1, blocked_since="2026-12-01T00:00:00Z")
    assert abort_reasons([going], [recovered], AbortIf(pending_pods_for="5m", pdb_blocked_for="5m"), NOW) == []


def test_the_plan_carries_the_abort_reasons_of_its_snapshot():
    nodes, pods, replicas, settings = rotation()
    pending = pod("stuck", None, phase="Pending", created="2026-12-02T23:00:00Z")
    settings = dataclasses.replace(settings, abort_if=AbortIf(pending_pods_for="30m"))
    plan = plan_rotation(cluster(nodes, pods + [pending], [], replicas), settings, NOW)
    assert plan["abort_reasons"] == ["pod ns/stuck has been Pending for 3600 s (abort_if pending_pods_for 30m)"]


def settings_for(nodes, **options):
    """Settings that rotate every node named old-*, one node a batch, under rotation r1."""
    return RotationSettings(candidates=frozenset(n["metadata"]["name"] for n in nodes
                                                 if n["metadata"]["name"].startswith("old-")),
                            rotation_id="r1", **options)


def three_batches(pool_labels=None):
    """Two nodes of zone-a and one of zone-b, one a batch, warmed from a pool of 4-cpu nodes: keep
    (do-not-disrupt, 2 cpu a pod) has a pod on each; solo (one replica) one on old-a2; web (plain) one
    on old-a1 and one on old-b1. old-a1 goes first: it ties old-a2 on movable pods and sorts first."""
    nodes = [node("old-a1", zone="zone-a"), node("old-a2", zone="zone-a"), node("old-b1", zone="zone-b")]
    pods = [pod("keep-1", "old-a1", app="keep", cpu="2", annotations=DO_NOT_DISRUPT),
            pod("keep-2", "old-a2", app="keep", cpu="2", annotations=DO_NOT_DISRUPT),
            pod("keep-3", "old-b1", app="keep", cpu="2", annotations=DO_NOT_DISRUPT),
            pod("solo-1", "old-a2", app="solo", cpu="1"),
            pod("web-1", "old-a1", cpu="1"), pod("web-2", "old-b1", cpu="1")]
    settings = settings_for(nodes, pool_labels=pool_labels or {"pool": "new"}, template_allocatable=dict(TEMPLATE))
    return plan_rotation(cluster(nodes, pods, [], {KEEP: 3, SOLO: 1, WEB: 3}), settings, NOW)


def replace_entry(workload, reason, pods, method="surge"):
    return dict(workload.target(), reason=reason, pods=pods, method=method)


def test_a_do_not_disrupt_workload_is_replaced_in_each_batch_of_its_pods_with_only_that_batchs_pods():
    plan = three_batches()
    first, second, third = plan["batches"]
    assert [batch["nodes"] for batch in plan["batches"]] == [["old-a1"], ["old-a2"], ["old-b1"]]
    assert first["replace"] == [replace_entry(KEEP, "do-not-disrupt", ["ns/keep-1"])]
    assert second["replace"] == [replace_entry(KEEP, "do-not-disrupt", ["ns/keep-2"]),
                                 replace_entry(SOLO, "single replica", ["ns/solo-1"])]
    assert third["replace"] == [replace_entry(KEEP, "do-not-disrupt", ["ns/keep-3"])]
    assert all("moved_earlier" not in batch for batch in plan["batches"])
    assert plan["summary"][4:7] == [
        "batch 2/3 (zone zone-a): old-a2; replace first 2 pod(s) of 2 workload(s), evict 0 pod(s), 1 warm node(s) "
        "(zone-a 1)",
        "  Deployment ns/keep: surge by 1 pod(s) (do-not-disrupt)",
        "  Deployment ns/solo: surge by 1 pod(s) (single replica)"]
    assert plan["fits"] and plan["safe"]


def test_plain_pods_are_evicted_in_the_batch_of_their_node():
    first, second, third = three_batches()["batches"]
    assert [first["evict"], second["evict"], third["evict"]] == [["ns/web-1"], [], ["ns/web-2"]]


def test_warm_nodes_count_only_the_batchs_movers_in_their_zones_and_add_up_per_zone():
    plan = three_batches()
    first, second, third = plan["batches"]
    # Each batch moves 3 cpu (a keep pod of 2 and a web or solo pod of 1) from its own zone: one 4-cpu node.
    assert [batch["warm_new"] for batch in plan["batches"]] == [{"zone-a": 1}, {"zone-a": 1}, {"zone-b": 1}]
    assert [batch["warm_nodes"] for batch in plan["batches"]] == [1, 1, 1]
    assert [batch["warm_zones"] for batch in plan["batches"]] == [
        [{"zone": "zone-a", "count": 1}],
        [{"zone": "zone-a", "count": 2}],
        [{"zone": "zone-a", "count": 2}, {"zone": "zone-b", "count": 1}]]
    assert plan["summary"][1].endswith("replace first 1 pod(s) of 1 workload(s), evict 1 pod(s), 1 warm node(s) "
                                       "(zone-a 1)")


def test_the_moving_workloads_keep_their_pods_per_zone():
    plan = three_batches()
    counts = {"ns/Deployment/keep": {"zone-a": 2, "zone-b": 1}, "ns/Deployment/solo": {"zone-a": 1},
              "ns/Deployment/web": {"zone-a": 1, "zone-b": 1}}
    assert plan["zone_counts"] == counts and plan["zone_counts_planned"] == counts
    assert plan["warnings"] == [] and plan["pool_zones"] is None


def test_a_pool_pinned_to_a_zone_warms_only_there_and_warns_that_the_other_zones_pods_move_there():
    plan = three_batches({"pool": "new", ZONE: "zone-a"})
    assert [batch["warm_new"] for batch in plan["batches"]] == [{"zone-a": 1}, {"zone-a": 1}, {"zone-a": 1}]
    assert plan["batches"][-1]["warm_zones"] == [{"zone": "zone-a", "count": 3}]
    warning = ("the pool provisions only in zone(s) zone-a: the pods of zone(s) zone-b move there, or to other nodes "
               "of their own zone")
    assert plan["warnings"] == [warning] and plan["summary"][-1] == "warning: " + warning
    assert plan["fits"]
    assert plan["zone_counts_planned"] == {"ns/Deployment/keep": {"zone-a": 3}, "ns/Deployment/solo": {"zone-a": 1},
                                           "ns/Deployment/web": {"zone-a": 2}}


def test_an_evictable_pod_of_a_workload_replaced_elsewhere_is_still_evicted_in_its_own_batch():
    nodes = [node("old-a1", zone="a"), node("old-a2", zone="a"), node("spare", zone="a")]
    pods = [pod("web-1", "old-a1"), pod("web-2", "old-a2", annotations=DO_NOT_DISRUPT)]
    first, second = plan_rotation(cluster(nodes, pods, [], {WEB: 3}), settings_for(nodes), NOW)["batches"]
    assert first["evict"] == ["ns/web-1"] and first["replace"] == []
    assert second["evict"] == [] and second["replace"] == [replace_entry(WEB, "do-not-disrupt", ["ns/web-2"])]


def test_warm_nodes_leave_room_for_the_daemonset_pods_of_the_batchs_own_nodes():
    nodes = [node("old-a1", zone="a"), node("old-a2", zone="a"), node("old-b1", zone="b")]
    agents = [pod("agent-" + name, name, kind="DaemonSet", owner="agent", cpu="1") for name in
              ("old-a1", "old-a2", "old-b1")]
    keep = [pod("keep-%d" % index, name, app="keep", cpu="1600m", annotations=DO_NOT_DISRUPT)
            for index, name in enumerate(("old-a1", "old-a2", "old-b1", "old-b1"))]
    settings = settings_for(nodes, pool_labels={"pool": "new"}, template_allocatable=dict(TEMPLATE))
    first, second, third = plan_rotation(cluster(nodes, agents + keep, [], {KEEP: 4}), settings, NOW)["batches"]
    # 1.6 cpu a pod on warm nodes with 3 of their 4 cpu left once the agent runs there: 1 node for old-a1's pod,
    # 1 for old-a2's, 2 for the two of old-b1.
    assert [first["nodes"], second["nodes"], third["nodes"]] == [["old-a1"], ["old-a2"], ["old-b1"]]
    assert [first["warm_new"], second["warm_new"], third["warm_new"]] == [{"a": 1}, {"a": 1}, {"b": 2}]
    assert "need 1 node(s) of 3 CPU," in first["warm_computed"]
    assert "need 2 node(s) of 3 CPU," in third["warm_computed"]
    assert third["replace"] == [replace_entry(KEEP, "do-not-disrupt", ["ns/keep-2", "ns/keep-3"])]


def zones_a_and_b(spare_a_cpu="1"):
    """old-a1 (zone a) is rotated with two web pods; spare-b (zone b, 4 cpu) is listed before spare-a (zone a)."""
    nodes = [node("old-a1", zone="a"), node("spare-b", zone="b"), node("spare-a", zone="a", cpu=spare_a_cpu)]
    pods = [pod("web-1", "old-a1", cpu="1"), pod("web-2", "old-a1", cpu="1"),
            pod("db-0", "spare-b", kind="StatefulSet", owner="db")]
    return nodes, pods


def test_each_moved_pod_is_placed_in_its_own_zone_while_it_has_room():
    nodes, pods = zones_a_and_b()
    plan = plan_rotation(cluster(nodes, pods, [], {WEB: 2}), settings_for(nodes), NOW)
    assert plan["zone_counts"] == {"ns/Deployment/web": {"a": 2}}
    assert plan["zone_counts_planned"] == {"ns/Deployment/web": {"a": 1, "b": 1}}, "spare-a has room for one"
    nodes, pods = zones_a_and_b(spare_a_cpu="2")
    roomy = plan_rotation(cluster(nodes, pods, [], {WEB: 2}), settings_for(nodes), NOW)
    assert roomy["zone_counts_planned"] == {"ns/Deployment/web": {"a": 2}}


def test_zone_counts_of_counts_more_workloads_than_those_that_move():
    nodes, pods = zones_a_and_b()
    db = Workload("StatefulSet", "ns", "db")
    plan = plan_rotation(cluster(nodes, pods, [], {WEB: 2}), settings_for(nodes, zone_counts_of=(db,)), NOW)
    assert plan["zone_counts"]["ns/StatefulSet/db"] == {"b": 1}
    assert plan["zone_counts_planned"]["ns/StatefulSet/db"] == {"b": 1}


def no_room_but_on_the_rotation(spare_cpu):
    """Two roomy nodes of zone a rotated; the only other room is spare-b in zone b. keep (do-not-disrupt)
    has a pod on each rotated node, replaced in the batch of its node; web's pod on old-a2 goes in batch 2."""
    nodes = [node("old-a1", zone="a", cpu="64"), node("old-a2", zone="a", cpu="64"),
             node("spare-b", zone="b", cpu=spare_cpu)]
    pods = [pod("keep-1", "old-a1", app="keep", cpu="1", annotations=DO_NOT_DISRUPT),
            pod("keep-2", "old-a2", app="keep", cpu="1", annotations=DO_NOT_DISRUPT),
            pod("web-1", "old-a2", cpu="1")]
    return plan_rotation(cluster(nodes, pods, [], {KEEP: 2, WEB: 3}), settings_for(nodes), NOW)


def test_no_moved_pod_is_planned_onto_a_node_of_the_rotation():
    plan = no_room_but_on_the_rotation(spare_cpu="3")
    assert [batch["nodes"] for batch in plan["batches"]] == [["old-a1"], ["old-a2"]]
    assert plan["fits"]
    assert plan["zone_counts_planned"] == {"ns/Deployment/keep": {"b": 2}, "ns/Deployment/web": {"b": 1}}
    tight = no_room_but_on_the_rotation(spare_cpu="2")
    assert tight["batches"][0]["fits"], "keep-1 takes spare-b, not roomy old-a2 of the next batch"
    assert tight["batches"][1]["replace"] == [replace_entry(KEEP, "do-not-disrupt", ["ns/keep-2"])]
    assert tight["batches"][1]["unplaced"] == [
        {"pod": "ns/web-1", "reason": "no node has room for its requests (1 CPU, 64 MiB)"}]


def test_a_node_karpenter_may_not_disrupt_is_rotated_all_the_same_with_a_note():
    nodes = [node("old-1", annotations={"karpenter.sh/do-not-disrupt": "true"}),
             node("old-2", annotations={"karpenter.sh/do-not-disrupt": "false"})]
    plan = plan_rotation(cluster(nodes, [], [], {}), settings_for(nodes), NOW)
    note = ("annotated karpenter.sh/do-not-disrupt: true; Karpenter will not disrupt it, this rotation does because "
            "it was selected, moving its pods by replacement first or eviction as planned")
    assert plan["nodes"] == [{"name": "old-1", "zone": None, "reasons": ["selected"], "notes": [note]},
                             {"name": "old-2", "zone": None, "reasons": ["selected"]}]
    assert plan["summary"][-1] == "node old-1: " + note


def test_warm_nodes_are_added_one_at_a_time_while_hostname_anti_affinity_leaves_a_pod_out():
    nodes = [node("old-a1", zone="a"), node("old-a2", zone="a"), node("stay-a", zone="a")]
    pods = [pod("db-%d" % index, name, app="db", kind="StatefulSet", owner="db", affinity=anti_affinity("db"))
            for index, name in enumerate(("old-a1", "old-a2", "stay-a"))]
    settings = settings_for(nodes, batch_size="2", pool_labels={"pool": "new"}, template_allocatable=dict(TEMPLATE))
    plan = plan_rotation(cluster(nodes, pods, [], {DB: 3}), settings, NOW)
    (batch,) = plan["batches"]
    # Their requests take one 4-cpu node, but no two db pods may share one, nor go to stay-a.
    assert "need 1 node(s)" in batch["warm_computed"]
    assert batch["nodes"] == ["old-a1", "old-a2"] and batch["evict"] == ["ns/db-0", "ns/db-1"]
    assert batch["warm_new"] == {"a": 2} and batch["fits"] and plan["fits"]
    no_template = dataclasses.replace(settings, template_allocatable=None)
    unwarmed = plan_rotation(cluster(nodes, pods, [], {DB: 3}), no_template, NOW)
    assert [entry["reason"] for entry in unwarmed["batches"][0]["unplaced"]] == [
        "its pod anti-affinity on kubernetes.io/hostname leaves no node"] * 2


def test_pods_whose_volumes_are_bound_to_a_zone_are_placed_with_the_batch_and_warmed_for_node_by_node():
    nodes = [node("old-a1", zone="a"), node("old-a2", zone="a"), node("stay-a", zone="a")]
    pods = [pod("db-%d" % index, name, app="db", kind="StatefulSet", owner="db", affinity=anti_affinity("db"),
                volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "data-db-%d" % index}}])
            for index, name in enumerate(("old-a1", "old-a2", "stay-a"))]
    claims = {"ns/data-db-%d" % index: "a" for index in range(3)}
    settings = settings_for(nodes, batch_size="2", pool_labels={"pool": "new"}, template_allocatable=dict(TEMPLATE))
    (batch,) = plan_rotation(cluster(nodes, pods, [], {DB: 3}, claim_zones=claims), settings, NOW)["batches"]
    assert batch["warm_new"] == {"a": 2} and batch["fits"], "no two db pods share a node, volumes or not"
    # Two 2-cpu pods bound to zone a and one 3-cpu node that stays there: the second does not fit on it too.
    heavy = [pod("data-%d" % index, "old-a1", app="data", cpu="2",
                 volumes=[{"name": "d", "persistentVolumeClaim": {"claimName": "d-%d" % index}}]) for index in range(2)]
    small = [node("old-a1", zone="a"), node("stay-a", zone="a", cpu="3")]
    plan = plan_rotation(cluster(small, heavy, [], {}, claim_zones={"ns/d-0": "a", "ns/d-1": "a"}),
                         settings_for(small), NOW)
    assert len(plan["batches"][0]["unplaced"]) == 1 and plan["fits"] is False


def test_the_pods_of_a_zone_the_pool_does_not_serve_are_warmed_for_in_its_first_zone():
    nodes = [node("old-c1", zone="c"), node("stay-a", zone="a", cpu="0")]
    settings = settings_for(nodes, pool_labels={"pool": "new"}, pool_zones=("b", "a"),
                            template_allocatable=dict(TEMPLATE))
    plan = plan_rotation(cluster(nodes, [pod("web-1", "old-c1")], [], {WEB: 3}), settings, NOW)
    assert plan["batches"][0]["warm_new"] == {"a": 1} and plan["fits"]
    # Sized from the pods' requests, as where the pool serves every zone: a pod without a volume is served anywhere.
    assert plan["batches"][0]["warm_computed"].startswith("zone a: 1 pod(s) requesting"), plan["batches"][0]
    assert plan["zone_counts_planned"] == {"ns/Deployment/web": {"a": 1}}
    assert plan["pool_zones"] == ["a", "b"]
    assert plan["warnings"] == ["the pool provisions only in zone(s) a, b: the pods of zone(s) c move there, or to "
                                "other nodes of their own zone"]


def test_a_pod_whose_volume_is_bound_to_a_zone_the_pool_does_not_serve_and_no_node_stays_in_does_not_fit():
    nodes = [node("old-c1", zone="c"), node("stay-a", zone="a"), node("stay-b", zone="b")]
    data = pod("db-0", "old-c1", app="db", kind="StatefulSet", owner="db",
               volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "data-db-0"}}])
    settings = settings_for(nodes, pool_labels={"pool": "new"}, pool_zones=("a", "b"),
                            template_allocatable=dict(TEMPLATE))
    plan = plan_rotation(cluster(nodes, [data], [], {DB: 3}, claim_zones={"ns/data-db-0": "c"}), settings, NOW)
    (batch,) = plan["batches"]
    assert plan["fits"] is False
    assert [entry["pod"] for entry in batch["unplaced"]] == ["ns/db-0"]
    assert batch["unplaced"][0]["reason"].startswith(
        "its volume is bound to zone c, where the pool provides no node: ")
    assert "c" not in batch["warm_new"] and all(entry["zone"] != "c" for entry in batch["warm_zones"])
    stay_c = plan_rotation(cluster(nodes + [node("stay-c", zone="c")], [data], [], {DB: 3},
                                   claim_zones={"ns/data-db-0": "c"}), settings, NOW)
    assert stay_c["fits"] and stay_c["zone_counts_planned"] == {"ns/StatefulSet/db": {"c": 1}}


def protected_db_plan(budget):
    """One do-not-disrupt pod of StatefulSet db (1 replica) on the rotated node old-a1, under ``budget``."""
    nodes = [node("old-a1", zone="a"), node("stay-a", zone="a")]
    db = pod("db-0", "old-a1", app="db", kind="StatefulSet", owner="db", annotations=DO_NOT_DISRUPT)
    return plan_rotation(cluster(nodes, [db], [budget], {DB: 1}), settings_for(nodes), NOW)


def test_a_statefulset_pod_is_blocked_under_a_pdb_that_allows_no_disruption_even_with_every_pod_ready():
    plan = protected_db_plan(pdb("db", min_available=1, expected=1))
    (batch,) = plan["batches"]
    assert batch["replace"] == [] and plan["safe"] is False
    assert batch["blocked"] == [{"pod": "ns/db-0", "reason": "do-not-disrupt, and its StatefulSet cannot surge while "
                                 "PDB db allows no disruption even with every pod Ready"}]


def test_a_statefulset_pod_is_replaced_one_at_a_time_under_a_pdb_that_allows_one():
    plan = protected_db_plan(pdb("db", max_unavailable=1, expected=1, allowed=1))
    (batch,) = plan["batches"]
    assert batch["blocked"] == [] and plan["safe"]
    assert batch["replace"] == [replace_entry(DB, "do-not-disrupt", ["ns/db-0"], method="one_at_a_time")]
    assert plan["summary"][2] == "  StatefulSet ns/db: one at a time, 1 pod(s) (do-not-disrupt)"


def test_move_of_blocks_only_workloads_that_cannot_surge_under_a_pdb_that_never_allows_one():
    protected = pod("db-0", "n", app="db", kind="StatefulSet", owner="db", annotations=DO_NOT_DISRUPT)
    never = [pdb("db", min_available=1, expected=1)]
    assert move_of(protected, DB, 1, never, FilterOptions(), one_at_a_time=True)[0] == "blocked"
    assert move_of(protected, DB, 1, never, FilterOptions()) == ("replace", "do-not-disrupt")
    assert move_of(protected, DB, 1, [pdb("db", min_available=1)], FilterOptions(), one_at_a_time=True) == \
        ("replace", "do-not-disrupt"), "without expectedPods the PDB is not judged"


def test_a_recreate_deployment_is_replaced_one_at_a_time_and_an_autoscaled_one_names_its_hpa():
    nodes = [node("old-a1", zone="a"), node("stay-a", zone="a")]
    pods = [pod("keep-1", "old-a1", app="keep", annotations=DO_NOT_DISRUPT), pod("solo-1", "old-a1", app="solo")]
    plan = plan_rotation(cluster(nodes, pods, [], {KEEP: 2, SOLO: 1}, one_at_a_time=frozenset({KEEP}),
                                 autoscalers={SOLO: "solo-hpa"}), settings_for(nodes), NOW)
    assert plan["batches"][0]["replace"] == [
        replace_entry(KEEP, "do-not-disrupt", ["ns/keep-1"], method="one_at_a_time"),
        dict(replace_entry(SOLO, "single replica", ["ns/solo-1"]), autoscaler="solo-hpa")]
    assert plan["summary"][2:] == [
        "  Deployment ns/keep: one at a time, 1 pod(s) (do-not-disrupt)",
        "  Deployment ns/solo: surge by 1 pod(s) (single replica); HPA solo-hpa: its bounds follow the surge and come "
        "back after"]


def test_a_workload_whose_replicas_a_gitops_controller_syncs_is_named_with_what_the_surge_will_do():
    nodes = [node("old-a1", zone="a"), node("stay-a", zone="a")]
    plan = plan_rotation(cluster(nodes, [pod("solo-1", "old-a1", app="solo")], [], {SOLO: 1},
                                 gitops={SOLO: ["argocd-controller"]}), settings_for(nodes), NOW)
    assert plan["batches"][0]["replace"][0]["gitops"] == ["argocd-controller"]
    assert plan["summary"][-1].endswith("; its replicas are synced by argocd-controller: pause that sync for the "
                                        "rotation, or the surge is undone and the batch stops")


def test_a_batch_whose_pods_a_residents_anti_affinity_shuts_out_does_not_fit():
    nodes = [node("old-1", zone="a"), node("other", zone="a")]
    pods = [pod("x-1", "old-1", app="x"), pod("x-2", "old-1", app="x"),
            pod("guard", "other", app="guard", affinity=anti_affinity("x"))]
    plan = plan_rotation(cluster(nodes, pods, [], {Workload("Deployment", "ns", "x"): 2}), settings_for(nodes), NOW)
    assert plan["fits"] is False
    assert [entry["reason"] for entry in plan["batches"][0]["unplaced"]] == [
        "the pod anti-affinity of ns/guard on kubernetes.io/hostname leaves no node"] * 2


def test_a_pod_asking_for_a_resource_the_pools_template_lacks_does_not_fit_and_the_resource_is_named():
    nodes = [node("old-1", zone="a")]
    nodes[0]["status"]["allocatable"]["example.com/gpu"] = "1"
    trainer = pod("trainer", "old-1", app="trainer")
    trainer["spec"]["containers"][0]["resources"]["requests"]["example.com/gpu"] = "1"
    settings = settings_for(nodes, pool_labels={"pool": "new"}, template_allocatable=dict(TEMPLATE))
    plan = plan_rotation(cluster(nodes, [trainer], [], {}), settings, NOW)
    assert plan["fits"] is False
    (entry,) = plan["batches"][0]["unplaced"]
    assert entry["pod"] == "ns/trainer" and "example.com/gpu" in entry["reason"], entry
    gpu_pool = dataclasses.replace(settings, template_allocatable=dict(TEMPLATE, **{"example.com/gpu": "1"}))
    warmed = plan_rotation(cluster(nodes, [trainer], [], {}), gpu_pool, NOW)
    assert warmed["fits"] and warmed["batches"][0]["warm_new"] == {"a": 1}


def test_the_plan_warns_of_the_rules_it_does_not_model_naming_the_pods_that_ask_for_them():
    nodes = [node("old-1", zone="a"), node("new-1", zone="a")]
    claims = [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]
    pods = [pod("web-%d" % index, "old-1", resourceClaims=claims) for index in range(7)]
    plan = plan_rotation(cluster(nodes, pods, [], {WEB: 7}), settings_for(nodes), NOW)
    (warning,) = plan["warnings"]
    assert warning.startswith("the plan does not model dynamic resource claims, which ns/web-0, "
                              "ns/web-1, ns/web-2, ns/web-3, ns/web-4 and 2 more ask(s) for")
    assert "warning: " + warning in plan["summary"]


def test_a_canary_batch_of_its_own_size_goes_first_and_a_rerun_of_a_rotation_begun_has_none():
    nodes = [node("old-a%d" % index, zone="a") for index in range(3)] + [node("old-b0", zone="b")]
    settings = settings_for(nodes, batch_size="2", canary_size="1")
    plan = plan_rotation(cluster(nodes, [], [], {}), settings, NOW)
    assert [(batch["nodes"], batch.get("canary", False)) for batch in plan["batches"]] == [
        (["old-a0"], True), (["old-a1", "old-a2"], False), (["old-b0"], False)]
    assert plan["summary"][1].startswith("batch 1/3 (zone a, canary): old-a0;")
    nodes[3]["metadata"]["annotations"] = {ROTATION_ID: "r1", ROTATION_PHASE: "planned"}
    again = plan_rotation(cluster(nodes, [], [], {}), settings, NOW)
    assert [batch["nodes"] for batch in again["batches"]] == [["old-a0", "old-a1"], ["old-a2"], ["old-b0"]]
