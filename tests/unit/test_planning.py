from __future__ import annotations

import datetime

from ansible_collections.kubeops.rotation.plugins.module_utils.planning import (
    ROTATION_ID,
    ROTATION_PHASE,
    choose_nodes,
    make_batches,
    move_of,
    parse_duration,
    plan_rotation,
    version_tuple,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.placement import fit
from ansible_collections.kubeops.rotation.plugins.module_utils.pods import FilterOptions

NOW = datetime.datetime(2026, 12, 3, tzinfo=datetime.timezone.utc)


def node(name, zone="a", kubelet="v1.34.2", labels=None, annotations=None, created="2026-11-01T00:00:00Z",
         cpu="4", unschedulable=False, taints=None):
    return {"metadata": {"name": name, "creationTimestamp": created, "annotations": annotations or {},
                         "labels": dict({"topology.kubernetes.io/zone": zone, "kubernetes.io/hostname": name},
                                        **(labels or {}))},
            "spec": {"unschedulable": unschedulable, "taints": taints or []},
            "status": {"nodeInfo": {"kubeletVersion": kubelet},
                       "allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def pod(name, node_name, owner=("ReplicaSet", "web-abc"), cpu="1", annotations=None, labels=None, **spec):
    metadata = {"name": name, "namespace": "ns", "annotations": annotations or {}, "labels": labels or {}}
    if owner:
        metadata["ownerReferences"] = [{"kind": owner[0], "name": owner[1], "controller": True}]
    return {"metadata": metadata, "status": {"phase": "Running"},
            "spec": dict({"nodeName": node_name, "containers": [{"name": "c", "resources": {"requests": {
                "cpu": cpu, "memory": "1Gi"}}}]}, **spec)}


def test_durations_and_versions():
    assert parse_duration("7d") == 604800 and parse_duration("90") == 90 and parse_duration("45m") == 2700
    assert version_tuple("v1.34.2-eks-1") < version_tuple("v1.35.0")


def test_drift_rules_pick_nodes_and_say_why_and_finished_nodes_are_left_out():
    nodes = [node("old", kubelet="v1.34.2"), node("new", kubelet="v1.35.4"),
             node("ami", kubelet="v1.35.4", labels={"ami": "ami-1"}),
             node("done", annotations={ROTATION_ID: "r1", ROTATION_PHASE: "drained"})]
    chosen, left_out = choose_nodes(nodes, {"target_kubelet_version": "v1.35.0", "labels": {"ami": "ami-2"}},
                                    "r1", NOW)
    reasons = {n["metadata"]["name"]: r for n, r in chosen}
    assert set(reasons) == {"old", "ami", "new"}
    assert "kubelet v1.34.2 is older than v1.35.0" in reasons["old"]
    assert reasons["ami"] == ["label ami is ami-1, not ami-2"]
    assert left_out == [{"name": "done", "reason": "already rotated by r1 (drained)"}]
    chosen, left_out = choose_nodes(nodes[:2], {"target_kubelet_version": "v1.35.0"}, None, NOW)
    assert [n["metadata"]["name"] for n, _reasons in chosen] == ["old"] and left_out[0]["reason"] == "no drift"


def test_age_rule():
    nodes = [node("aged", created="2026-10-01T00:00:00Z"), node("young", created="2026-12-02T00:00:00Z")]
    chosen, _left_out = choose_nodes(nodes, {"max_node_age": "30d"}, None, NOW)
    assert [n["metadata"]["name"] for n, _reasons in chosen] == ["aged"]


def test_batches_take_one_zone_at_a_time_least_disruptive_first():
    chosen = [(node(name, zone=zone), ["x"]) for name, zone in
              (("a1", "a"), ("a2", "a"), ("a3", "a"), ("b1", "b"), ("b2", "b"))]
    batches = make_batches(chosen, "2", {"a1": 5, "a2": 1, "a3": 3})
    assert [b["nodes"] for b in batches] == [["a2", "a3"], ["a1"], ["b1", "b2"]]
    assert [b["zone"] for b in batches] == ["a", "a", "b"]
    assert [b["nodes"] for b in make_batches(chosen, "50%", {})] == [["a1", "a2"], ["a3"], ["b1", "b2"]]


def test_move_of_restarts_what_eviction_cannot_move_safely():
    options = FilterOptions()
    pdb_zero = [{"metadata": {"name": "db", "namespace": "ns"}, "spec": {"selector": {"matchLabels": {"app": "db"}}},
                 "status": {"disruptionsAllowed": 0}}]
    workload = ("Deployment", "ns", "web")
    assert move_of(pod("p", "n"), workload, 3, [], options) == ("evict", "evictable")
    assert move_of(pod("p", "n"), workload, 1, [], options) == ("restart", "single replica")
    assert move_of(pod("p", "n", annotations={"karpenter.sh/do-not-disrupt": "true"}), workload, 3, [], options) \
        == ("restart", "do-not-disrupt")
    assert move_of(pod("p", "n", labels={"app": "db"}), workload, 3, pdb_zero, options)[0] == "restart"
    assert move_of(pod("p", "n", owner=None), None, None, [], options)[0] == "blocked"
    assert move_of(pod("p", "n", owner=("DaemonSet", "agent")), None, None, [], options) == ("stays", "daemonset")


def test_fit_respects_requests_selectors_taints_and_hostname_anti_affinity():
    nodes = [node("small", cpu="2"), node("ssd", cpu="8", labels={"disk": "ssd"}),
             node("tainted", cpu="8", taints=[{"key": "gpu", "effect": "NoSchedule"}])]
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "db"}}}]}}
    pods = [pod("big", "old", cpu="3"), pod("needs-ssd", "old", cpu="1", nodeSelector={"disk": "ssd"}),
            pod("db-0", "old", cpu="1", labels={"app": "db"}, affinity=anti),
            pod("db-1", "old", cpu="1", labels={"app": "db"}, affinity=anti),
            pod("db-2", "old", cpu="1", labels={"app": "db"}, affinity=anti)]
    placement, unplaced = fit(pods, nodes, residents := [pod("resident", "small", cpu="1")])
    assert residents
    assert placement["ns/big"] == "ssd" and placement["ns/needs-ssd"] == "ssd"
    assert {placement["ns/db-0"], placement["ns/db-1"]} == {"small", "ssd"}
    assert unplaced == [{"pod": "ns/db-2", "reason": "hostname anti-affinity leaves no node"}]


def test_plan_warms_nodes_restarts_single_replicas_and_reports_what_does_not_fit():
    nodes = [node("old-1", zone="a"), node("old-2", zone="b"), node("keep", zone="a", cpu="2")]
    pods = [pod("web-1", "old-1"), pod("web-2", "old-2"), pod("solo-x", "old-1", owner=("ReplicaSet", "solo-abc")),
            pod("bare", "old-2", owner=None)]
    settings = {"candidates": {"old-1", "old-2"}, "named": {"old-1", "old-2"}, "rotation_id": "r1",
                "batch_size": "1", "options": FilterOptions(), "pool_labels": {"pool": "new"},
                "template_allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"}}
    owners = {("ns", "web-abc"): "web", ("ns", "solo-abc"): "solo"}
    replicas = {("Deployment", "ns", "web"): 2, ("Deployment", "ns", "solo"): 1}
    plan = plan_rotation(nodes, pods, [], owners, replicas, settings, NOW)
    first, second = plan["batches"]
    assert first["nodes"] == ["old-1"] and second["nodes"] == ["old-2"]
    solo = {"kind": "Deployment", "namespace": "ns", "name": "solo"}
    assert first["restart"] == [dict(solo, target=solo, reason="single replica", pods=["ns/solo-x"])]
    assert first["evict"] == ["ns/web-1"] and first["warm_nodes"] == 1 and first["fits"]
    assert second["blocked"][0]["pod"] == "ns/bare" and plan["safe"] is False and plan["fits"] is True

    no_warm = dict(settings, template_allocatable=None)
    tight = plan_rotation(nodes, pods, [], owners, replicas, no_warm, NOW)
    assert tight["fits"] is False
    assert tight["batches"][1]["unplaced"][0]["pod"] == "ns/web-2"
    assert any("DOES NOT FIT" in line for line in tight["summary"])


def test_abort_if_names_long_pending_pods_and_long_blocked_pdbs():
    from ansible_collections.kubeops.rotation.plugins.module_utils.planning import abort_reasons

    pending = pod("stuck", None)
    pending["status"]["phase"] = "Pending"
    pending["metadata"]["creationTimestamp"] = "2026-12-02T23:50:00Z"
    fresh = pod("fresh", None)
    fresh["status"]["phase"] = "Pending"
    fresh["metadata"]["creationTimestamp"] = "2026-12-02T23:59:30Z"
    placeholder = pod("warm", None, labels={"kubeops.io/warm-set": "x"})
    placeholder["status"]["phase"] = "Pending"
    placeholder["metadata"]["creationTimestamp"] = "2026-12-01T00:00:00Z"
    blocked = {"metadata": {"name": "db", "namespace": "ns"}, "status": {"disruptionsAllowed": 0, "conditions": [
        {"type": "DisruptionAllowed", "status": "False", "lastTransitionTime": "2026-12-02T23:00:00Z"}]}}
    reasons = abort_reasons([pending, fresh, placeholder], [blocked],
                            {"pending_pods_for": "5m", "pdb_blocked_for": "30m"}, NOW)
    assert reasons == ["pod ns/stuck has been Pending for 600 s (abort_if pending_pods_for 5m)",
                       "PDB ns/db has allowed no disruption for 3600 s (abort_if pdb_blocked_for 30m)"]
    assert abort_reasons([pending], [blocked], {}, NOW) == []
