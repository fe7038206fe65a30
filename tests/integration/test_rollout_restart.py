"""rollout_restart on the real control plane: the real Deployment and StatefulSet controllers do the rollout."""

from __future__ import annotations

import time

from conftest import TEST_LABEL, deployment_under_pdb, wait_until
from kube import DisruptionWatcher, daemon_set, deployment, running_pods, stateful_set


def uids(cluster, namespace, selector):
    return {pod.metadata.uid for pod in cluster.pods(namespace, selector)}


def test_restart_under_a_pdb_never_drops_below_its_minimum_and_restart_id_restarts_once(
        cluster, namespace, make_nodes, run_play, test_id):
    # 12 replicas: the default strategy (25 %) would take 3 down at once, the PDB allows 1.
    make_nodes(2)
    before = {pod.metadata.uid for pod in deployment_under_pdb(cluster, namespace, test_id, "web", 12, max_unavailable=1)}
    wait_until(lambda: (cluster.policy.read_namespaced_pod_disruption_budget("web", namespace).status
                        .disruptions_allowed or 0) == 1, 30, "the PDB to allow one disruption")
    task = {"kubeops.rotation.rollout_restart": {
        "targets": [{"kind": "Deployment", "namespace": namespace, "name": "web"}],
        "restart_id": "rotation-" + test_id, "timeout": 120}}
    with DisruptionWatcher(cluster, namespace) as watcher:
        play = run_play([task, task])
    assert play.rc == 0, play
    first, second = play.steps
    assert first["changed"] is True and first["workloads"][0]["action"] == "restarted"
    assert first["workloads"][0]["rollout"] == "done"
    assert first["workloads"][0]["paced_from"] == {"maxUnavailable": "25%", "maxSurge": "25%"}
    after = {pod.metadata.uid for pod in running_pods(cluster, namespace, "app=web", 12)}
    assert not before & after, "every pod was replaced by the time the module returned"
    assert watcher.min_ready["web"] >= 11
    web = cluster.apps.read_namespaced_deployment("web", namespace)
    assert (web.spec.strategy.rolling_update.max_unavailable, web.spec.strategy.rolling_update.max_surge) == (
        "25%", "25%"), "the strategy is put back"
    assert "kubeops.io/restart-strategy" not in (web.metadata.annotations or {})
    assert second["changed"] is False and second["workloads"][0]["action"] == "already_restarted"
    # Nothing new: old pods may still be Terminating (kwok keeps them 2 s), no pod came after the first rollout.
    assert uids(cluster, namespace, "app=web") - before - after == set()


def test_on_nodes_finds_the_owners_of_their_pods_across_replicasets(
        cluster, namespace, make_nodes, run_play, test_id):
    (target,) = make_nodes(1, labels={"side": "target"}, prefix="target")
    (other,) = make_nodes(1, labels={"side": "other"}, prefix="other")
    target_only = {TEST_LABEL: test_id, "side": "target"}
    cluster.apps.create_namespaced_deployment(namespace, deployment("web", 2, target_only))
    elsewhere = {TEST_LABEL: test_id, "side": "other"}
    cluster.apps.create_namespaced_deployment(namespace, deployment("elsewhere", 1, elsewhere))
    cluster.apps.create_namespaced_stateful_set(namespace, stateful_set("db", 1, target_only))
    cluster.apps.create_namespaced_daemon_set(namespace, daemon_set("agent", {TEST_LABEL: test_id}))
    wait_until(lambda: running_pods(cluster, namespace, None, 6), 60, "6 pods")
    # A second ReplicaSet for web: the pods on the node belong to it, not to the first one.
    cluster.kubectl("-n", namespace, "rollout", "restart", "deployment/web")
    cluster.kubectl("-n", namespace, "rollout", "status", "deployment/web", "--timeout=60s")
    assert len(cluster.apps.list_namespaced_replica_set(namespace, label_selector="app=web").items) == 2

    play = run_play([{"kubeops.rotation.rollout_restart": {"on_nodes": [target]}, "check_mode": True},
                     {"kubeops.rotation.rollout_restart": {"on_nodes": [target], "include_daemonsets": True},
                      "check_mode": True}])
    assert play.rc == 0, play
    planned = {(w["kind"], w["name"]): w for w in play.steps[0]["workloads"]}
    assert set(planned) == {("Deployment", "web"), ("StatefulSet", "db")}
    assert len(planned[("Deployment", "web")]["pods_on_nodes"]) == 2
    assert all(line.endswith(" on " + target) for line in planned[("Deployment", "web")]["pods_on_nodes"])
    assert {w["action"] for w in play.steps[0]["workloads"]} == {"planned"}
    assert play.steps[0]["changed"] is False
    assert {(w["kind"], w["name"]) for w in play.steps[1]["workloads"]} == {
        ("Deployment", "web"), ("StatefulSet", "db"), ("DaemonSet", "agent")}
    assert other not in str(play.steps[0])


def test_statefulset_restart_returns_after_the_ordered_rollout(cluster, namespace, make_nodes, run_play, test_id):
    make_nodes(2)
    cluster.apps.create_namespaced_stateful_set(namespace, stateful_set("db", 3, {TEST_LABEL: test_id}))
    wait_until(lambda: running_pods(cluster, namespace, "app=db", 3), 90, "3 db pods")
    before = uids(cluster, namespace, "app=db")
    play = run_play([{"kubeops.rotation.rollout_restart": {
        "targets": [{"kind": "StatefulSet", "namespace": namespace, "name": "db"}], "timeout": 180}}])
    assert play.rc == 0, play
    status = cluster.apps.read_namespaced_stateful_set("db", namespace).status
    assert status.current_revision == status.update_revision and status.ready_replicas == 3
    pods = cluster.pods(namespace, "app=db")
    assert {pod.metadata.labels["controller-revision-hash"] for pod in pods} == {status.update_revision}
    assert not before & {pod.metadata.uid for pod in pods}


def test_rollout_that_cannot_progress_fails_with_its_condition(cluster, namespace, make_nodes, run_play, test_id):
    (only,) = make_nodes(1)
    stuck = deployment("web", 2, {TEST_LABEL: test_id})
    stuck["spec"]["progressDeadlineSeconds"] = 3
    stuck["spec"]["strategy"] = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}}
    cluster.apps.create_namespaced_deployment(namespace, stuck)
    wait_until(lambda: running_pods(cluster, namespace, "app=web", 2), 60, "2 web pods")
    cluster.kubectl("cordon", only)  # the surge pod has nowhere to go
    started = time.monotonic()
    play = run_play([{"kubeops.rotation.rollout_restart": {
        "targets": [{"kind": "Deployment", "namespace": namespace, "name": "web"}], "timeout": 90}}])
    step = play.steps[0]
    assert step["failed"] is True
    assert time.monotonic() - started < 60, "a rollout past its deadline is reported, not waited on"
    assert "Deployment %s/web exceeded its progress deadline" % namespace in step["msg"]
    assert step["workloads"][0]["rollout"] == "stuck"
    assert len(running_pods(cluster, namespace, "app=web", 2)) == 2
