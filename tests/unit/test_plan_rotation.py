from __future__ import annotations

import dataclasses
import datetime

from ansible_collections.kubeops.rotation.plugins.module_utils.model.keys import ROTATION_ID, ROTATION_PHASE
from ansible_collections.kubeops.rotation.plugins.module_utils.model.owners import Workload
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.filters import FilterOptions
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.rotation import (
    AbortIf,
    DriftRules,
    RotationSettings,
    abort_reasons,
    choose_nodes,
    drift_reasons,
    make_batches,
    move_of,
    plan_rotation,
    surging_workload,
    version_tuple,
    warm_template,
)
from builders import node, pdb, pod

NOW = datetime.datetime(2026, 12, 3, tzinfo=datetime.timezone.utc)
WEB = Workload("Deployment", "ns", "web")
SOLO = Workload("Deployment", "ns", "solo")
OWNERS = {("ns", "web-rs"): "web", ("ns", "solo-rs"): "solo"}
TEMPLATE = {"cpu": "4", "memory": "16Gi", "pods": "110"}


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


def test_only_deployments_and_statefulsets_surge_on_restart():
    assert surging_workload(pod(), OWNERS) == WEB
    assert surging_workload(pod(kind="StatefulSet", owner="db"), OWNERS) == Workload("StatefulSet", "ns", "db")
    assert surging_workload(pod(owner="orphan-rs"), OWNERS) is None
    assert surging_workload(pod(kind="DaemonSet", owner="agent"), OWNERS) is None
    assert surging_workload(pod(kind=None), OWNERS) is None


def test_move_of_restarts_what_eviction_cannot_move_safely():
    options = FilterOptions()
    pdb_zero = [pdb("db")]
    assert move_of(pod("p", "n"), WEB, 3, [], options) == ("evict", "evictable")
    assert move_of(pod("p", "n"), WEB, 1, [], options) == ("restart", "single replica")
    assert move_of(pod("p", "n", annotations={"karpenter.sh/do-not-disrupt": "true"}), WEB, 3, [], options) \
        == ("restart", "do-not-disrupt")
    assert move_of(pod("p", "n", app="db"), WEB, 3, pdb_zero, options) == \
        ("restart", "PDB db allows no disruption now")
    assert move_of(pod("p", "n", app="db"), WEB, 3, [pdb("db", allowed=1)], options) == ("evict", "evictable")
    assert move_of(pod("p", "n", kind=None), None, None, [], options)[0] == "blocked"
    assert move_of(pod("p", "n", kind="DaemonSet", owner="agent"), None, None, [], options) == ("stays", "daemonset")


def test_move_of_blocks_what_has_no_workload_to_restart_unless_options_allow():
    protected = pod("p", "n", owner="orphan-rs", annotations={"karpenter.sh/do-not-disrupt": "true"})
    assert move_of(protected, None, None, [], FilterOptions()) == \
        ("blocked", "do-not-disrupt pod without a Deployment or StatefulSet to restart")
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


def test_plan_warms_nodes_restarts_single_replicas_and_reports_what_does_not_fit():
    nodes, pods, replicas, settings = rotation()
    plan = plan_rotation(nodes, pods, [], OWNERS, replicas, settings, NOW)
    first, second = plan["batches"]
    assert first["nodes"] == ["old-1"] and second["nodes"] == ["old-2"]
    solo = {"kind": "Deployment", "namespace": "ns", "name": "solo"}
    assert first["restart"] == [dict(solo, target=solo, reason="single replica", pods=["ns/solo-x"],
                                     replaces=["ns/solo-x"])]
    assert first["evict"] == ["ns/web-1"] and first["warm_nodes"] == 1 and first["fits"]
    assert second["blocked"][0]["pod"] == "ns/bare" and plan["safe"] is False and plan["fits"] is True
    assert plan["nodes"] == [{"name": "old-1", "zone": "a", "reasons": ["named"]},
                             {"name": "old-2", "zone": "b", "reasons": ["named"]}]

    no_warm = dataclasses.replace(settings, template_allocatable=None)
    tight = plan_rotation(nodes, pods, [], OWNERS, replicas, no_warm, NOW)
    assert tight["fits"] is False
    assert tight["batches"][1]["unplaced"][0]["pod"] == "ns/web-2"
    assert any("DOES NOT FIT" in line for line in tight["summary"])


def test_plan_summary_opens_with_the_rotation_and_names_each_batch():
    nodes, pods, replicas, settings = rotation()
    summary = plan_rotation(nodes, pods, [], OWNERS, replicas, settings, NOW)["summary"]
    assert summary[0] == "Rotation r1: 2 node(s) in 2 batch(es)."
    assert summary[1].startswith("batch 1/2 (zone a): old-1; restart 1 workload(s), evict 1 pod(s), 1 warm node(s)")
    assert "BLOCKED: ns/bare (unreplicated:" in summary[2]


def test_a_pod_whose_volume_is_bound_to_a_zone_is_placed_only_there():
    nodes = [node("old-1", zone="a"), node("b-0", zone="b"), node("a-0", zone="a")]
    data = pod("db-0", "old-1", kind="StatefulSet", owner="db",
               volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "data-db-0"}}])
    settings = RotationSettings(candidates=frozenset({"old-1"}))
    replicas = {Workload("StatefulSet", "ns", "db"): 3}
    plan = plan_rotation(nodes, [data], [], OWNERS, replicas, settings, NOW, claim_zones={"ns/data-db-0": "a"})
    assert plan["batches"][0]["fits"] and plan["batches"][0]["evict"] == ["ns/db-0"]
    stuck = plan_rotation(nodes[:2], [data], [], OWNERS, replicas, settings, NOW, claim_zones={"ns/data-db-0": "a"})
    assert stuck["batches"][0]["unplaced"] == [{"pod": "ns/db-0", "reason": "its volume is bound to zone a: no node "
                                                "matches its node selector, affinity or tolerations"}]


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
    plan = plan_rotation(nodes, pods + [pending], [], OWNERS, replicas, settings, NOW)
    assert plan["abort_reasons"] == ["pod ns/stuck has been Pending for 3600 s (abort_if pending_pods_for 30m)"]
