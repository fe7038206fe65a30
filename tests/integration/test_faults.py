"""Faults a production cluster has: the API server goes away for 10 s in the middle of a drain."""

from __future__ import annotations

import threading
import time

import pytest
from conftest import TEST_LABEL, wait_until
from kube import DisruptionWatcher, deployment, eviction_requests, pdb, running_pods

import cluster as local_cluster


def test_a_drain_rides_through_a_ten_second_api_server_outage_evicting_each_pod_once(
        cluster, namespace, make_nodes, run_playbook, test_id):
    if not cluster.state_dir:
        pytest.skip("stopping the API server needs the local control plane")
    old = make_nodes(2, prefix="old")
    pinned = {TEST_LABEL: test_id}
    cluster.apps.create_namespaced_deployment(namespace, deployment("web", 16, pinned))
    cluster.policy.create_namespaced_pod_disruption_budget(namespace, pdb("web", {"app": "web"}, max_unavailable=2))
    wait_until(lambda: running_pods(cluster, namespace, "app=web", 16), 120, "16 web pods")
    make_nodes(2, prefix="new")
    counted = {}

    def outage():
        time.sleep(6)
        counted["before_outage"] = eviction_requests(cluster)
        local_cluster.outage(cluster.state_dir, "kube-apiserver", 10)

    evictions_at_start = eviction_requests(cluster)
    fault = threading.Thread(target=outage)
    with DisruptionWatcher(cluster, namespace) as watcher:
        fault.start()
        completed = run_playbook("kubeops.rotation.drain_node", {
            "drain_node_nodes": old, "drain_node_max_in_flight": 1, "drain_node_timeout": 240})
        fault.join()
    assert completed.returncode == 0, completed.stdout[-5000:]
    # The API server's counters start again at 0 when it restarts: before the outage plus after it.
    evicted = counted["before_outage"].get("201", 0) - evictions_at_start.get("201", 0) + \
        eviction_requests(cluster).get("201", 0)
    assert evicted == 16, "each pod evicted once: %d successful evictions" % evicted
    assert watcher.min_ready["web"] >= 14, "the PDB (maxUnavailable 2) was crossed"
    assert not [pod for pod in cluster.pods(namespace, "app=web") if pod.spec.node_name in old]
