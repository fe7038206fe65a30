"""Guarded eviction and cordon on the real control plane, run through ansible-playbook."""

from __future__ import annotations

import threading
import time

from conftest import TEST_LABEL, deployment_under_pdb, wait_until
from kube import (
    DisruptionWatcher,
    bare_pod,
    daemon_set,
    deployment,
    eviction_requests,
    evictions_since,
    pdb,
    running_pods,
    stateful_set,
)


def pods_on(cluster, namespace, node):
    return sorted(pod.metadata.name for pod in cluster.pods(namespace) if pod.spec.node_name == node)


def workload_name(entry):
    """web for a pod of ReplicaSet web-<hash>, the owner's name for other controllers, else the pod's name."""
    if not entry["owner"] or entry["owner"].startswith("Node/"):
        return entry["name"]
    kind, name = entry["owner"].split("/")
    return name.rsplit("-", 1)[0] if kind == "ReplicaSet" else name


def outcomes(play_step):
    return {(workload_name(entry), entry["outcome"], entry["reason"]) for entry in play_step["pods"]}


def test_drain_judges_every_kind_of_pod_refuses_first_then_evicts(cluster, namespace, make_nodes, run_play, test_id):
    (old,) = make_nodes(1, prefix="old")
    pinned = {TEST_LABEL: test_id}
    cluster.apps.create_namespaced_deployment(namespace, deployment("web", 2, pinned))
    cluster.apps.create_namespaced_stateful_set(namespace, stateful_set("db", 1, pinned))
    cluster.apps.create_namespaced_daemon_set(namespace, daemon_set("agent", pinned))
    cluster.apps.create_namespaced_deployment(namespace, deployment(
        "cache", 1, pinned, volumes=[{"name": "scratch", "emptyDir": {}}]))
    cluster.core.create_namespaced_pod(namespace, bare_pod("debug", old))
    node_uid = cluster.core.read_node(old).metadata.uid
    cluster.core.create_namespaced_pod(namespace, bare_pod(
        "static-web", old, annotations={"kubernetes.io/config.mirror": "hash", "kubernetes.io/config.source": "file"},
        owner={"apiVersion": "v1", "kind": "Node", "name": old, "uid": node_uid, "controller": True}))
    wait_until(lambda: running_pods(cluster, namespace, None, 7), 60, "7 running pods on the old node")
    (new,) = make_nodes(1, prefix="new")
    cluster.kubectl("cordon", old)
    before = pods_on(cluster, namespace, old)

    refused = run_play([{"kubeops.rotation.evict": {"nodes": [old], "timeout": 60}}])
    step = refused.steps[0]
    assert step["failed"] is True
    assert step["msg"].startswith("Refusing to evict anything: 2 pod(s) cannot be evicted safely")
    assert "%s/debug (unreplicated" % namespace in step["msg"] and "(local-storage: emptyDir scratch" in step["msg"]
    assert pods_on(cluster, namespace, old) == before, "a refused drain must not evict anything"

    options = {"nodes": [old], "force": True, "delete_emptydir_data": True, "timeout": 120, "reason": test_id}
    play = run_play([{"kubeops.rotation.evict": options, "check_mode": True},
                     {"kubeops.rotation.evict": options},
                     {"kubeops.rotation.evict": options}])
    assert play.rc == 0, play
    planned, done, again = play.steps
    assert planned["changed"] is False
    assert {e["outcome"] for e in planned["pods"] if e["action"] == "evict"} == {"planned"}
    assert outcomes(done) == {
        ("web", "evicted", "evictable"), ("db", "evicted", "evictable"), ("cache", "evicted", "evictable"),
        ("debug", "evicted", "evictable"), ("static-web", "skipped", "mirror"), ("agent", "skipped", "daemonset")}
    assert done["changed"] is True and done["remaining"] == [] and done["summary"]["evicted"] == 5
    left = [pod for pod in cluster.pods(namespace) if pod.spec.node_name == old]
    assert sorted(pod.metadata.annotations.get("kubernetes.io/config.mirror") is not None or
                  pod.metadata.owner_references[0].kind == "DaemonSet" for pod in left) == [True, True]
    wait_until(lambda: running_pods(cluster, namespace, "app=web", 2), 60, "web back to 2 on the new node")
    assert {pod.spec.node_name for pod in cluster.pods(namespace, "app=web")} == {new}

    events = cluster.core.list_namespaced_event(namespace).items
    evicted_events = [e for e in events if e.reason == "Evicted" and e.source.component == "kubeops.rotation"]
    assert len(evicted_events) == 5 and all(test_id in e.message for e in evicted_events)
    node_events = {e.reason for e in cluster.core.list_namespaced_event("default").items
                   if e.involved_object.name == old and e.source.component == "kubeops.rotation"}
    assert node_events == {"Draining", "Drained"}

    assert again["changed"] is False
    assert "evicted" not in again["summary"]


def test_pdb_allowing_one_disruption_drains_without_dropping_below_its_minimum(cluster, namespace, make_nodes,
                                                                               run_play, test_id):
    (old,) = make_nodes(1, prefix="old")
    deployment_under_pdb(cluster, namespace, test_id, "web", 4, min_available=3)
    make_nodes(1, prefix="new")
    cluster.kubectl("cordon", old)
    with DisruptionWatcher(cluster, namespace) as watcher:
        play = run_play([{"kubeops.rotation.evict": {"nodes": [old], "timeout": 180}}])
    assert play.rc == 0, play
    step = play.steps[0]
    assert step["summary"]["evicted"] == 4
    # Whether a 429 came depends on how fast kwok readies a replacement; the minimum is the claim.
    assert watcher.min_ready["web"] >= 3


def db_under_a_pdb_that_allows_nothing(cluster, namespace, make_nodes, test_id):
    """Two db pods on a node of their own under a PDB of maxUnavailable 0; returns that node."""
    (old,) = make_nodes(1, prefix="old")
    cluster.apps.create_namespaced_deployment(namespace, deployment("db", 2, {TEST_LABEL: test_id}))
    cluster.policy.create_namespaced_pod_disruption_budget(namespace, pdb("db-pdb", {"app": "db"}, max_unavailable=0))
    wait_until(lambda: running_pods(cluster, namespace, "app=db", 2), 60, "2 db pods")
    return old


def test_a_pdb_held_by_a_pod_that_cannot_be_scheduled_names_that_pod_and_the_schedulers_reason(
        cluster, namespace, make_nodes, run_play, test_id):
    old = db_under_a_pdb_that_allows_nothing(cluster, namespace, make_nodes, test_id)
    # A third pod under the same PDB that no node takes: the budget waits for it, and the failure says so.
    cluster.apps.create_namespaced_deployment(namespace, deployment(
        "db-extra", 1, {TEST_LABEL: test_id, "kubeops.io/nowhere": "true"}, labels={"app": "db", "role": "extra"}))
    wait_until(lambda: [pod for pod in cluster.pods(namespace, "role=extra") if pod.status.conditions], 30,
               "the extra db pod to be found unschedulable")
    play = run_play([{"kubeops.rotation.evict": {"nodes": [old], "timeout": 8}}])
    message = play.steps[0]["msg"]
    assert "which waits for: %s/db-extra-" % namespace in message, message
    assert "Pending: 0/" in message and "node affinity/selector" in message, message


def test_pdb_that_never_allows_disruption_fails_at_the_deadline_naming_it(cluster, namespace, make_nodes, run_play,
                                                                          test_id):
    old = db_under_a_pdb_that_allows_nothing(cluster, namespace, make_nodes, test_id)
    before = eviction_requests(cluster)
    started = time.monotonic()
    play = run_play([{"kubeops.rotation.evict": {"nodes": [old], "timeout": 8}}])
    elapsed = time.monotonic() - started
    step = play.steps[0]
    assert step["failed"] is True
    assert step["msg"].startswith("Timed out after 8 s evicting: %s/db-" % namespace)
    assert ("blocked by PDB %s/db-pdb (currentHealthy 2, desiredHealthy 2, disruptionsAllowed 0)" % namespace
            in step["msg"])
    assert step["msg"].endswith("0 of 2 pods evicted; rerunning continues from here.")
    assert {entry["outcome"] for entry in step["pods"]} == {"blocked"}
    # The PDB, read first, allows nothing: each pod waits on a watch of it instead of asking to be refused.
    assert [entry["attempts"] for entry in step["pods"]] == [0, 0]
    assert sum(eviction_requests(cluster).values()) == sum(before.values()), "asked to evict a pod its PDB refuses"
    assert elapsed < 30
    assert len(running_pods(cluster, namespace, "app=db", 2)) == 2


def test_a_pod_its_pdb_refused_is_evicted_as_soon_as_the_pdb_allows_it(cluster, namespace, make_nodes, run_play,
                                                                       test_id):
    old = db_under_a_pdb_that_allows_nothing(cluster, namespace, make_nodes, test_id)
    make_nodes(1, prefix="new")
    cluster.kubectl("cordon", old)
    loosened = {}

    def loosen():
        cluster.policy.patch_namespaced_pod_disruption_budget("db-pdb", namespace, {"spec": {"maxUnavailable": 1}})
        loosened["at"] = time.monotonic()

    # Well after the run started, and long before the 30 s a held pod would otherwise wait to be asked.
    before = eviction_requests(cluster)
    timer = threading.Timer(8, loosen)
    timer.start()
    try:
        play = run_play([{"kubeops.rotation.evict": {"nodes": [old], "timeout": 120}}])
    finally:
        timer.cancel()
    finished = time.monotonic()
    assert play.rc == 0, play
    step = play.steps[0]
    assert step["summary"]["evicted"] == 2
    assert sorted(entry["attempts"] for entry in step["pods"]) == [1, 1]
    assert (evictions_since(cluster, before, "429"), evictions_since(cluster, before)) == (0, 2)
    assert finished - loosened["at"] < 15


def test_pod_under_two_pdbs_is_reported_at_once_with_both_names(cluster, namespace, make_nodes, run_play, test_id):
    (old,) = make_nodes(1, prefix="old")
    cluster.apps.create_namespaced_deployment(namespace, deployment("web", 2, {TEST_LABEL: test_id}))
    cluster.policy.create_namespaced_pod_disruption_budget(namespace, pdb("first", {"app": "web"}, max_unavailable=1))
    cluster.policy.create_namespaced_pod_disruption_budget(namespace, pdb("second", {"app": "web"}, max_unavailable=1))
    wait_until(lambda: running_pods(cluster, namespace, "app=web", 2), 60, "2 web pods")
    started = time.monotonic()
    play = run_play([{"kubeops.rotation.evict": {"nodes": [old], "timeout": 60}}])
    step = play.steps[0]
    assert step["failed"] is True
    assert time.monotonic() - started < 30, "several PDBs is an error to report, not to retry until the deadline"
    assert {entry["outcome"] for entry in step["pods"]} == {"failed"}
    assert "PDB %s/first" % namespace in step["msg"] and "PDB %s/second" % namespace in step["msg"]


def test_max_in_flight_and_max_unavailable_per_owner_are_honoured(cluster, namespace, make_nodes, run_play, test_id):
    (old,) = make_nodes(1, prefix="old")
    pinned = {TEST_LABEL: test_id}
    cluster.apps.create_namespaced_deployment(namespace, deployment("batch", 6, pinned))
    cluster.apps.create_namespaced_deployment(namespace, deployment("web", 4, pinned))
    wait_until(lambda: running_pods(cluster, namespace, "app in (batch,web)", 10), 60, "10 pods")
    make_nodes(1, prefix="new")
    cluster.kubectl("cordon", old)
    with DisruptionWatcher(cluster, namespace) as watcher:
        play = run_play([
            {"kubeops.rotation.evict": {"nodes": [old], "pod_selector": "app=batch", "max_in_flight": 2,
                                        "timeout": 120}},
            {"kubeops.rotation.evict": {"nodes": [old], "pod_selector": "app=web", "max_unavailable_per_owner": "1",
                                        "timeout": 120}},
        ])
    assert play.rc == 0, play
    assert play.steps[0]["summary"]["evicted"] == 6 and play.steps[1]["summary"]["evicted"] == 4
    # Exactly the limit: it was reached, and held.
    assert watcher.max_terminating["batch"] == 2
    assert watcher.min_ready["web"] == 3


def test_cordon_records_who_and_why_and_uncordon_leaves_other_cordons_alone(cluster, make_nodes, run_play, test_id):
    ours, theirs = make_nodes(2)
    cluster.kubectl("cordon", theirs)
    play = run_play([
        {"kubeops.rotation.cordon": {"nodes": [ours, theirs], "reason": "rotation " + test_id, "taint": True}},
        {"kubeops.rotation.cordon": {"nodes": [ours, theirs], "reason": "again"}},
        {"kubeops.rotation.cordon": {"nodes": [ours, theirs], "state": "uncordoned"}, "check_mode": True},
    ])
    assert play.rc == 0, play
    first, second, preview = play.steps
    assert first["changed"] is True and first["summary"] == {"nodes": 2, "changed": 1, "unchanged": 1}
    node = cluster.core.read_node(ours)
    assert node.spec.unschedulable is True
    assert node.metadata.annotations["kubeops.io/cordon-reason"] == "rotation " + test_id
    assert node.metadata.annotations["kubeops.io/cordoned-by"] == "kubeops-admin"
    assert "kubeops.io/cordoned" in [t.key for t in node.spec.taints]
    assert "kubeops.io/cordoned-by" not in (cluster.core.read_node(theirs).metadata.annotations or {})
    assert second["changed"] is False
    assert preview["changed"] is True and cluster.core.read_node(ours).spec.unschedulable is True

    play = run_play([{"kubeops.rotation.cordon": {"nodes": [ours, theirs], "state": "uncordoned"}}])
    assert play.rc == 0, play
    by_name = {entry["name"]: entry for entry in play.steps[0]["nodes"]}
    assert by_name[ours]["unschedulable"] is False and by_name[ours]["changed"] is True
    assert by_name[theirs]["unschedulable"] is True and "someone else" in by_name[theirs]["reason"]
    assert not cluster.core.read_node(ours).spec.unschedulable
    assert "kubeops.io/cordoned" not in [t.key for t in cluster.core.read_node(ours).spec.taints or []]
    assert cluster.core.read_node(theirs).spec.unschedulable is True

    forced = run_play([{"kubeops.rotation.cordon": {"nodes": [theirs], "state": "uncordoned", "force": True}}])
    assert forced.rc == 0, forced
    assert not cluster.core.read_node(theirs).spec.unschedulable


def test_cordon_naming_a_missing_node_changes_nothing(cluster, make_nodes, run_play, test_id):
    (real,) = make_nodes(1)
    play = run_play([{"kubeops.rotation.cordon": {"nodes": [real, test_id + "-missing"]}}])
    assert play.steps[0]["failed"] is True
    assert play.steps[0]["msg"] == "No node named %s-missing; nothing was changed." % test_id
    assert not cluster.core.read_node(real).spec.unschedulable


def test_do_not_disrupt_budget_replacements_and_loud_deletion(cluster, namespace, make_nodes, run_play, test_id):
    (old,) = make_nodes(1, prefix="old")
    pinned = {TEST_LABEL: test_id}
    cluster.apps.create_namespaced_deployment(namespace, deployment(
        "stateful", 1, pinned, annotations={"karpenter.sh/do-not-disrupt": "true"}))
    cluster.apps.create_namespaced_deployment(namespace, deployment("web", 3, pinned))
    wait_until(lambda: running_pods(cluster, namespace, None, 4), 60, "4 pods on the old node")
    make_nodes(1, prefix="new")
    cluster.kubectl("cordon", old)

    play = run_play([{"kubeops.rotation.evict": {"nodes": [old], "skip_refused": True, "max_evictions": 2,
                                                 "wait_for_replacements": True, "timeout": 120}}])
    assert play.rc == 0, play
    step = play.steps[0]
    by_outcome = {}
    for entry in step["pods"]:
        by_outcome.setdefault(entry["outcome"], []).append(entry)
    assert [e["reason"] for e in by_outcome["refused"]] == ["do-not-disrupt"]
    assert len(by_outcome["evicted"]) == 2
    assert [e["detail"] for e in by_outcome["pending"]] == ["max_evictions reached; rerun to continue"]
    # wait_for_replacements: web is whole again when the module returns, without waiting here.
    assert running_pods(cluster, namespace, "app=web", 3)
    assert len(step["remaining"]) == 2

    play = run_play([{"kubeops.rotation.evict": {"nodes": [old], "disable_eviction": True,
                                                 "respect_do_not_disrupt": False, "grace_period": 0,
                                                 "timeout": 120}}])
    assert play.rc == 0, play
    step = play.steps[0]
    assert any("bypassing their PodDisruptionBudgets" in warning for warning in step["warnings"])
    assert step["summary"] == {"deleted": 2, "remaining": 0}


def test_diff_mode_shows_the_pods_that_leave_and_the_restart_stamp(cluster, namespace, make_nodes, run_play, test_id):
    (old,) = make_nodes(1, prefix="old")
    cluster.apps.create_namespaced_deployment(namespace, deployment("web", 2, {TEST_LABEL: test_id}))
    web = wait_until(lambda: running_pods(cluster, namespace, "app=web", 2), 60, "web on the old node")
    keys = {"%s/%s" % (namespace, pod.metadata.name) for pod in web}
    make_nodes(1, prefix="new")
    evict = {"kubeops.rotation.evict": {"nodes": [old], "timeout": 60}, "diff": True}
    restart = {"kubeops.rotation.rollout_restart": {"targets": [{"kind": "Deployment", "name": "web",
                                                                "namespace": namespace}], "wait": False},
               "diff": True}
    checked = run_play([evict, restart], check=True)
    assert checked.rc == 0, checked
    assert checked.steps[0]["diff"] == {"before": {key: old for key in keys}, "after": {key: None for key in keys}}
    assert checked.steps[1]["diff"] == {"before": {"Deployment %s/web" % namespace: None},
                                        "after": {"Deployment %s/web" % namespace: "now"}}
    assert {"%s/%s" % (namespace, pod.metadata.name) for pod in cluster.pods(namespace)} == keys, "nothing moved"
    done = run_play([evict])
    assert done.rc == 0, done
    assert done.steps[0]["diff"]["before"] == {key: old for key in keys}


def test_replace_first_replaces_the_pods_given_then_evicts_the_rest_in_one_call(
        cluster, namespace, make_nodes, run_play, test_id):
    (old,) = make_nodes(1, prefix="old")
    pinned = {TEST_LABEL: test_id}
    cluster.apps.create_namespaced_deployment(namespace, deployment(
        "stateful", 1, pinned, annotations={"karpenter.sh/do-not-disrupt": "true"}))
    cluster.apps.create_namespaced_deployment(namespace, deployment("web", 2, pinned))
    (stateful,) = wait_until(lambda: running_pods(cluster, namespace, "app=stateful", 1), 60, "stateful on old")
    wait_until(lambda: running_pods(cluster, namespace, "app=web", 2), 60, "web on the old node")
    (new,) = make_nodes(1, prefix="new")
    cluster.kubectl("cordon", old)
    key = "%s/%s" % (namespace, stateful.metadata.name)
    before = eviction_requests(cluster)

    with DisruptionWatcher(cluster, namespace) as watcher:
        play = run_play([{"kubeops.rotation.evict": {"nodes": [old], "timeout": 120,
                                                     "replace_first": {"pods": [key], "run_id": test_id}},
                          "diff": True}])
    assert play.rc == 0, play
    assert watcher.min_ready["stateful"] == 1, "its replacement was Ready before it went"
    step = play.steps[0]
    assert step["replaced"]["summary"]["replaced"] == 1 and step["replaced"]["workloads"][0]["replaced"] == [key]
    # The replaced pod is found on the node only while it terminates: then the eviction waits for it to be gone.
    assert sorted((workload_name(e), e["outcome"]) for e in step["pods"] if workload_name(e) == "web") == [
        ("web", "evicted"), ("web", "evicted")]
    assert all(e["outcome"] == "gone" for e in step["pods"] if workload_name(e) == "stateful")
    assert evictions_since(cluster, before) == 2, "the do-not-disrupt pod was surged, not evicted"
    assert step["remaining"] == [] and pods_on(cluster, namespace, old) == []
    moved = running_pods(cluster, namespace, "app=stateful", 1)
    assert moved and moved[0].metadata.uid != stateful.metadata.uid and moved[0].spec.node_name == new
    assert step["diff"]["before"][key] == old and len(step["diff"]["before"]) == 3
