"""Through a flaky network (tests/cluster/flaky_proxy.py between the collection and the API server: a share of
the connections reset, of the answers stalled, and of the answers dropped after the request reached the server),
a rotation, a drain and a rebalance pass finish, and nothing is done twice: evictions counted from the API server's own
apiserver_request_total, restarts from the workloads, moved pods from their uids. Through connections that go silent
for good or trickle their answers, every call is bounded and the Lease stays fresh while the run acts; cut off from
the API server, a run stops before its Lease expires and a rerun resumes.

Autoscaler: the test provisioner (tests/cluster/provisioner.py), node-group style.
"""

from __future__ import annotations

import json
import signal
import time
import urllib.parse

import pytest
from ansible_run import kill_if_running, run_collection_playbook
from conftest import deployment_under_pdb, wait_until
from kube import DisruptionWatcher, LeaseSampler, eviction_requests, evictions_since
from test_rebalance import APPS, piled_up, pods_per_node, steering_taints, uids, zoned_nodes
from test_rotation_moves_once import assert_moved_once, protected_scenario, watched_rotation

from flaky_proxy import FlakyProxy, kubeconfig_through

SHARES = {"reset": 0.03, "drop": 0.03, "stall": 0.03}


@pytest.fixture
def flaky(cluster, tmp_path):
    """(the proxy, a kubeconfig of the test cluster through it); the proxy passes everything until the test sets
    its rates."""
    with open(cluster.kubeconfig) as handle:
        server = urllib.parse.urlsplit(json.load(handle)["clusters"][0]["cluster"]["server"])
    with FlakyProxy(server.hostname, server.port, seed=26, stall_seconds=2) as proxy:
        yield proxy, kubeconfig_through(proxy, cluster.kubeconfig, tmp_path / "flaky-kubeconfig")


def test_a_rotation_through_a_flaky_network_moves_each_pod_once(cluster, test_id, flaky, tmp_path):
    cluster.need_provisioner()
    proxy, kubeconfig = flaky
    scenario = protected_scenario(cluster, test_id)
    try:
        proxy.set_rates(**SHARES)
        completed, watcher, restarts, evictions_before, zones_before = watched_rotation(
            cluster, scenario, tmp_path, {"kubeops_kubeconfig": kubeconfig})
        print("faults:", proxy.stats)
        assert completed.returncode == 0, completed.stdout[-6000:]
        assert min(proxy.stats[fault] for fault in SHARES) >= 1, proxy.stats
        report = json.loads((tmp_path / "report.json").read_text())
        assert report["outcome"] == "finished"
        assert_moved_once(cluster, scenario, watcher, restarts.restarts(),
                          evictions_since(cluster, evictions_before), report, zones_before)
    finally:
        proxy.set_rates(reset=0, drop=0, stall=0)
        scenario.cleanup()


def test_a_drain_through_a_flaky_network_evicts_each_pod_once_and_says_what_it_retried(
        cluster, namespace, make_nodes, run_play, test_id, flaky):
    proxy, kubeconfig = flaky
    proxy.set_rates(reset=0.08, drop=0.08, stall=0.04)
    old = web_under_pdb(cluster, namespace, make_nodes, test_id, 12, 2)
    before = eviction_requests(cluster)
    with DisruptionWatcher(cluster, namespace) as watcher:
        play = run_play([{"kubeops.rotation.evict": {"nodes": old, "timeout": 300}}],
                        connection={"kubeconfig": kubeconfig})
    print("faults:", proxy.stats, "retried:", play.steps[0].get("api_retries"))
    assert play.rc == 0, play
    step = play.steps[0]
    assert step["summary"]["evicted"] + step["summary"].get("gone", 0) == 12, step["summary"]
    assert evictions_since(cluster, before) == 12, "each pod evicted once"
    assert watcher.min_ready["web"] >= 10, "the PDB (maxUnavailable 2) was crossed"
    assert sum(step["api_retries"].values()) >= 1 and proxy.stats["drop"] >= 1, (step["api_retries"], proxy.stats)


def test_a_rebalance_through_a_flaky_network_moves_each_planned_pod_once_and_leaves_no_taint(
        cluster, namespace, make_nodes, run_play, test_id, flaky):
    proxy, kubeconfig = flaky
    old = piled_up(cluster, namespace, make_nodes, test_id)
    new = zoned_nodes(make_nodes, "abc", "new")
    before_uids = uids(cluster, namespace)
    before = eviction_requests(cluster)
    proxy.set_rates(reset=0.08, drop=0.08, stall=0.04)
    play = run_play([{"kubeops.rotation.rebalance": {
        "namespaces": [namespace], "max_unavailable_per_owner": "100%", "timeout": 240}}],
        connection={"kubeconfig": kubeconfig})
    proxy.set_rates(reset=0, drop=0, stall=0)
    print("faults:", proxy.stats, "retried:", play.steps[0].get("api_retries"))
    assert play.rc == 0, play
    step = play.steps[0]
    moved = before_uids - uids(cluster, namespace)
    assert step["moves"] and len(moved) == len(step["moves"]), "exactly the planned pods moved"
    assert evictions_since(cluster, before) == len(step["moves"]), "each planned pod evicted once"
    assert step["back_on_source"] == [], "no replacement went back to a node it was moved from"
    for app in APPS:
        counts = pods_per_node(cluster, namespace, app, old + new)
        assert max(counts.values()) - min(counts.values()) <= 1, (app, counts)
    assert steering_taints(cluster, old + new) == [], "the steering taints are gone"
    assert sum(step["api_retries"].values()) >= 1 and proxy.stats["drop"] >= 1, (step["api_retries"], proxy.stats)


def web_under_pdb(cluster, namespace, make_nodes, test_id, replicas, max_unavailable):
    """``replicas`` web pods on two old nodes under a PDB, two new nodes for them to go to; the old nodes' names."""
    old = make_nodes(2, prefix="old")
    deployment_under_pdb(cluster, namespace, test_id, "web", replicas, timeout=120, max_unavailable=max_unavailable)
    make_nodes(2, prefix="new")
    return old


def drain_vars(kubeconfig, old, run_id, timeout, lease_seconds=300):
    return {"kubeops_kubeconfig": kubeconfig, "drain_node_nodes": old, "drain_node_run_id": run_id,
            "drain_node_timeout": timeout, "drain_node_lease_seconds": lease_seconds}


def test_a_drain_through_connections_that_go_silent_or_trickle_ends_in_time_and_keeps_its_lease_fresh(
        cluster, namespace, make_nodes, test_id, flaky, tmp_path):
    proxy, kubeconfig = flaky
    old = web_under_pdb(cluster, namespace, make_nodes, test_id, 10, 2)
    before = eviction_requests(cluster)
    proxy.set_rates(reset=0.02, silent=0.03, slow=0.03)
    started = time.monotonic()
    with DisruptionWatcher(cluster, namespace) as watcher, LeaseSampler(cluster, test_id) as lease:
        completed = run_collection_playbook("kubeops.rotation.drain_node", drain_vars(kubeconfig, old, test_id, 240),
                                            str(tmp_path))
    seconds = time.monotonic() - started
    proxy.set_rates(reset=0, silent=0, slow=0)
    print("faults:", proxy.stats, "seconds: %.0f" % seconds, "oldest Lease: %.1f s" % lease.oldest)
    assert completed.returncode == 0, completed.stdout[-4000:]
    assert proxy.stats["silent"] >= 1 and proxy.stats["slow"] >= 1, proxy.stats
    assert seconds < 240 + 60, "within its timeout and a small margin"
    assert evictions_since(cluster, before) == 10, "each pod evicted once"
    assert watcher.min_ready["web"] >= 8, "the PDB (maxUnavailable 2) was crossed"
    assert lease.samples and lease.oldest <= lease.renew_deadline, (lease.oldest, lease.renew_deadline)


def test_a_drain_cut_off_from_the_api_server_stops_before_its_lease_expires_and_a_rerun_resumes(
        cluster, namespace, make_nodes, test_id, flaky, tmp_path):
    proxy, kubeconfig = flaky
    old = web_under_pdb(cluster, namespace, make_nodes, test_id, 10, 1)
    before = eviction_requests(cluster)
    lease_seconds = 30  # renew deadline 20 s
    output = tmp_path / "cut-off-drain.log"
    with DisruptionWatcher(cluster, namespace) as watcher:
        first = run_collection_playbook("kubeops.rotation.drain_node", drain_vars(
            kubeconfig, old, test_id, 240, lease_seconds), str(tmp_path), background=True, output=str(output))
        try:
            wait_until(lambda: evictions_since(cluster, before) >= 2, 120, "the drain to evict")
            proxy.cut()
            time.sleep(lease_seconds + 5)  # cut off for longer than the Lease's duration
            proxy.restore()
            evicted_while_cut = evictions_since(cluster, before)
            assert lease_expired(cluster), "nothing renewed the Lease while the run was cut off"
            first.wait(90)
        finally:
            kill_if_running(first)
        log = output.read_text()
        assert first.returncode not in (0, -signal.SIGKILL), log[-3000:]
        assert "Lost the Lease kube-system/kubeops-rotation: not renewed for" in log, log[-3000:]
        assert evictions_since(cluster, before) == evicted_while_cut < 10, "nothing evicted once the network was back"
        completed = run_collection_playbook("kubeops.rotation.drain_node", drain_vars(
            kubeconfig, old, test_id, 240, lease_seconds), str(tmp_path))
    assert completed.returncode == 0, completed.stdout[-4000:]
    assert evictions_since(cluster, before) == 10, "each pod evicted once over both runs"
    assert watcher.min_ready["web"] >= 9, "the PDB (maxUnavailable 1) was crossed"


def lease_expired(cluster):
    lease = cluster.coordination.read_namespaced_lease("kubeops-rotation", "kube-system")
    return not lease.spec.holder_identity or \
        lease.spec.renew_time.timestamp() + lease.spec.lease_duration_seconds < time.time()
