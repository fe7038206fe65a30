"""Between batches, on the real control plane: gates on a real Prometheus (Debian's, ``make prometheus``) scraping an
exporter the test sets - an alert that fires after batch 1 stops the rotation before batch 2 with nothing of it
touched, and the rerun once it resolves finishes with every pod moved once; gates that do not hold before the first
batch (an alert, a Deployment not whole, a service that does not answer) refuse the rotation with nothing changed. A
canary batch of its own size goes first; a maintenance window that closes after batch 1 stops the rotation before
batch 2, and a rerun in a window goes on."""

from __future__ import annotations

import datetime
import json
import re
import signal

import pytest
from ansible_run import kill_if_running, run_collection_playbook
from conftest import TEST_LABEL, wait_until
from kube import DisruptionWatcher, deployment, eviction_requests, evictions_since, running_pods
from test_rotation_moves_once import Scenario, web_scenario

from prometheus import Prometheus, free_port

NOT_WHOLE = "length([?status.readyReplicas != spec.replicas]) == `0`"


@pytest.fixture
def prometheus(tmp_path):
    if not Prometheus.available():
        pytest.skip("no prometheus binary: `make prometheus` installs Debian's package")
    with Prometheus(tmp_path) as server:
        yield server


def test_gates_that_do_not_hold_before_the_first_batch_refuse_the_rotation_with_nothing_changed(
        cluster, namespace, make_nodes, run_playbook, prometheus, test_id, tmp_path):
    (old,) = make_nodes(1, prefix="old")
    make_nodes(1, prefix="new")
    cluster.apps.create_namespaced_deployment(namespace, deployment("web", 2, {TEST_LABEL: test_id}))
    # A Deployment that cannot be whole: no node matches its selector.
    cluster.apps.create_namespaced_deployment(namespace, deployment("stuck", 1, {TEST_LABEL: "nowhere"}))
    wait_until(lambda: running_pods(cluster, namespace, "app=web", 2), 60, "2 web pods")
    prometheus.set_errors(1)
    prometheus.wait_for_alert(firing=True)
    before = eviction_requests(cluster)
    completed = run_playbook("kubeops.rotation.rotate_nodes", {
        "rotate_nodes_id": test_id, "rotate_nodes_nodes": [old], "rotate_nodes_warm": False,
        "rotate_nodes_retire": "delete_node", "rotate_nodes_gate_timeout": 0,
        "rotate_nodes_gates": {
            "prometheus": {"url": prometheus.url, "alerts": [{"team": "shop"}]},
            "kubernetes": [{"kind": "Deployment", "api_version": "apps/v1", "namespace": namespace,
                            "condition": NOT_WHOLE}],
            "http": [{"url": "http://127.0.0.1:%d/healthz" % free_port(), "timeout": 2}]}})
    output = completed.stdout
    assert completed.returncode != 0, output[-3000:]
    assert "The gates did not hold before the first batch within 0" in output, output[-3000:]
    assert "prometheus alerts {team=shop}: firing: KubeopsTestErrors" in output
    assert "kubernetes Deployment in %s: %s: 2 object(s)" % (namespace, NOT_WHOLE) in output
    assert "/healthz: no answer" in output and "Nothing was changed; rerun once they hold." in output
    assert evictions_since(cluster, before) == 0
    assert not cluster.core.read_node(old).spec.unschedulable


@pytest.fixture
def two_batches(cluster, test_id):
    scenario = web_scenario(cluster, test_id, {"zone-a": 2})
    yield scenario
    scenario.cleanup()


def test_an_alert_that_fires_after_batch_one_stops_the_rotation_before_batch_two_and_a_rerun_finishes(
        cluster, two_batches, prometheus, tmp_path):
    scenario = two_batches
    checks = {"prometheus": {"url": prometheus.url, "alerts": [{"severity": "critical"}]},
              "kubernetes": [{"kind": "Deployment", "api_version": "apps/v1", "namespace": scenario.namespace,
                              "condition": NOT_WHOLE, "name": "the shop is whole"}]}
    # The soak is long enough for the test to raise the alert once batch 1's node is gone, before its gates.
    gates = {"rotate_nodes_gates": checks, "rotate_nodes_gate_timeout": 6, "rotate_nodes_gate_interval": 2,
             "rotate_nodes_soak_seconds": 10}
    first_uids = {pod.metadata.uid: pod.spec.node_name for pod in cluster.pods(scenario.namespace)}
    before = eviction_requests(cluster)
    log = tmp_path / "first.log"
    with DisruptionWatcher(cluster, scenario.namespace) as watcher:
        run = run_collection_playbook("kubeops.rotation.rotate_nodes", dict(
            scenario.rotation, rotate_nodes_report_file=str(tmp_path / "report.json"), **gates), str(tmp_path),
            background=True, output=str(log))
        try:
            wait_until(lambda: run.poll() is not None or len(scenario.remaining_old_nodes()) == 1, 240,
                       "batch 1 to retire its node")
            assert run.poll() is None, log.read_text()[-4000:]
            prometheus.set_errors(1)
            run.wait(180)
        finally:
            kill_if_running(run)
        output = log.read_text()
        assert run.returncode not in (0, -signal.SIGKILL), output[-4000:]
        assert "The gates did not hold after batch 1/2 within" in output, output[-4000:]
        assert "prometheus alerts {severity=critical}: firing: KubeopsTestErrors" in output
        assert "Batch 1 is done; rerun with rotate_nodes_id %s" % scenario.rotation["rotate_nodes_id"] in output
        (second,) = scenario.remaining_old_nodes()
        node = cluster.core.read_node(second)
        assert not node.spec.unschedulable, "batch 2 did not start"
        on_second = {uid for uid, name in first_uids.items() if name == second}
        assert on_second <= {pod.metadata.uid for pod in cluster.pods(scenario.namespace)}, "its pods did not move"
        report = json.loads((tmp_path / "report.json").read_text())
        assert report["outcome"] == "stopped" and [batch["batch"] for batch in report["batches"]] == [1]
        assert report["batches"][0]["soak_seconds"] >= 10, report["batches"]
        assert [entry["stage"] for entry in report["gates"]] == ["before the first batch"]

        prometheus.set_errors(0)
        prometheus.wait_for_alert(firing=False)
        again = scenario.rotate(str(tmp_path), gates)
    assert again.returncode == 0, again.stdout[-4000:]
    assert scenario.remaining_old_nodes() == []
    report = json.loads((tmp_path / "report.json").read_text())
    assert [entry["stage"] for entry in report["gates"]] == ["before the first batch", "after batch 1/1"]
    assert all(gate["held"] for entry in report["gates"] for gate in entry["gates"])
    now = {pod.metadata.uid for pod in cluster.pods(scenario.namespace)}
    assert not set(first_uids) & now, "every pod of the old nodes moved"
    assert evictions_since(cluster, before) == 6, "each pod evicted once, over both runs"
    assert watcher.min_ready["web"] >= 5, "the PDB (maxUnavailable 1) was crossed"
    assert {app: count for app, count in watcher.churned.items() if app} == {}, "a pod moved twice"


def test_a_check_run_shows_the_canary_batch_first_and_the_window_each_batch_would_start_in(
        cluster, test_id, tmp_path):
    scenario = Scenario(cluster, test_id, {"zone-a": 3}, batch_size="2")
    scenario.create_nodes()
    now = datetime.datetime.now(datetime.timezone.utc)
    # Open since this minute, for an hour: batch 1 starts in it, batch 2 (an hour later, by the guess) does not.
    window = {"schedule": "%d %d * * *" % (now.minute, now.hour), "duration": "1h"}
    try:
        scenario.add("Deployment", deployment("web", 3, {}), 3)
        completed = run_collection_playbook("kubeops.rotation.rotate_nodes", dict(
            scenario.rotation, rotate_nodes_canary_size="1", rotate_nodes_canary_soak_seconds=30,
            rotate_nodes_windows=[window], rotate_nodes_window_batch_seconds=3600,
            rotate_nodes_report_file=str(tmp_path / "report.json")), str(tmp_path), check=True)
        assert completed.returncode == 0, completed.stdout[-3000:]
        assert re.search(r"batch 1/2: starts about \S+, in %s for 1h UTC" % re.escape(window["schedule"]),
                         completed.stdout), completed.stdout[-3000:]
        assert "batch 2/2: the rotation stops before it, outside the windows; a rerun then starts about" in \
            completed.stdout
        report = json.loads((tmp_path / "report.json").read_text())
        assert [(len(batch["nodes"]), batch.get("canary", False)) for batch in report["planned_batches"]] == [
            (1, True), (2, False)]
        assert "batch 1/2 (zone zone-a, canary)" in completed.stdout
        assert not any(cluster.core.read_node(name).spec.unschedulable for name in scenario.old_nodes)
    finally:
        scenario.cleanup()


def test_a_window_that_closes_after_batch_one_stops_the_rotation_before_batch_two_and_a_rerun_goes_on(
        cluster, two_batches, tmp_path):
    scenario = two_batches
    now = datetime.datetime.now(datetime.timezone.utc)
    # Open from this minute to two minutes on: batch 1 starts inside it; its soak outlasts it.
    closes = (now + datetime.timedelta(minutes=2)).replace(second=0, microsecond=0)
    window = {"days": ["mon", "tue", "wed", "thu", "fri", "sat", "sun"], "start": now.strftime("%H:%M"),
              "end": closes.strftime("%H:%M")}
    soak = int((closes - now).total_seconds()) + 5
    first = scenario.rotate(str(tmp_path), {"rotate_nodes_windows": [window], "rotate_nodes_soak_seconds": soak})
    assert first.returncode != 0, first.stdout[-3000:]
    assert "Stopped before batch 2: outside the maintenance windows" in first.stdout, first.stdout[-3000:]
    assert "the next opens at %s" % (now + datetime.timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:00Z") in first.stdout
    (second,) = scenario.remaining_old_nodes()
    assert not cluster.core.read_node(second).spec.unschedulable, "batch 2 did not start"
    always = {"days": window["days"], "start": "00:00", "end": "24:00"}
    again = scenario.rotate(str(tmp_path), {"rotate_nodes_windows": [always]})
    assert again.returncode == 0, again.stdout[-3000:]
    assert scenario.remaining_old_nodes() == []
