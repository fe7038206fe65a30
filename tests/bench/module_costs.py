"""Benchmark: how long a warm-up of 3 and of 20 nodes takes, and how many API requests each module makes.

Runs on the local control plane with the test provisioner playing the
autoscaler (it adds a kwok node within about a second of seeing a pending
placeholder). Every number is the median of --trials runs. Run with
`make bench`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TESTS, "cluster"))
sys.path.insert(0, os.path.join(TESTS, "integration"))

import cluster as local_cluster  # noqa: E402
from bench_cluster import ClusterBench  # noqa: E402
from ansible_run import run_tasks  # noqa: E402
from fakenodes import fake_node  # noqa: E402
from kube import deployment, running_pods  # noqa: E402


class Costs(ClusterBench):
    def run(self, task):
        started = time.monotonic()
        play = run_tasks([task], self.work_dir, {"kubeconfig": self.kubeconfig})
        wall = time.monotonic() - started
        step = play.steps[0]
        if play.rc != 0:
            raise RuntimeError("%r" % play)
        return {"wall": wall, "module": step.get("elapsed_seconds", 0.0), "requests": step["api_requests"]}

    def release_pool_nodes(self):
        self.run({"kubeops.rotation.warm_nodes": {"state": "absent"}})
        for node in self.core.list_node(label_selector="kubeops.io/provisioned-by=test-provisioner").items:
            self.core.delete_node(node.metadata.name)
        deadline = time.monotonic() + 60
        while self.core.list_node(label_selector="kubeops.io/provisioned-by=test-provisioner").items:
            if time.monotonic() > deadline:
                raise RuntimeError("pool nodes were not removed")
            time.sleep(0.5)

    def warm_up(self, count):
        measured = self.run({"kubeops.rotation.warm_nodes": {"count": count, "node_selector": {
            "kubeops.io/pool": "warm"}, "timeout": 300}})
        self.release_pool_nodes()
        return measured

    def workload_scenario(self, trial):
        namespace = "costs%d" % trial
        self.core.create_namespace({"metadata": {"name": namespace}})
        deadline = time.monotonic() + 30
        while not any(sa.metadata.name == "default" for sa in self.core.list_namespaced_service_account(namespace).items):
            if time.monotonic() > deadline:
                raise RuntimeError("no default service account")
            time.sleep(0.2)
        nodes = ["%s-n%d" % (namespace, index) for index in range(3)]
        for name in nodes:
            self.core.create_node(fake_node(name, {"costs": namespace}))
        self.apps.create_namespaced_deployment(namespace, deployment("web", 10, {"costs": namespace}))
        deadline = time.monotonic() + 60
        while not running_pods(self, namespace, "app=web", 10):
            if time.monotonic() > deadline:
                raise RuntimeError("web did not start")
            time.sleep(0.3)
        return namespace, nodes


def median(runs, key):
    return statistics.median(run[key] for run in runs)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=3)
    args = parser.parse_args()
    work_dir = tempfile.mkdtemp(prefix="kubeops-costs-")
    state = local_cluster.up(os.path.join(work_dir, "cluster"), die_with_parent=True,
                             provisioner_pools=os.path.join(TESTS, "cluster", "pools.yaml"))
    rows = {}
    try:
        costs = Costs(state["kubeconfig"], work_dir)
        for trial in range(args.trials):
            rows.setdefault("warm_nodes count 3", []).append(costs.warm_up(3))
            rows.setdefault("warm_nodes count 20", []).append(costs.warm_up(20))
            namespace, nodes = costs.workload_scenario(trial)
            rows.setdefault("cluster_info (all nodes)", []).append(costs.run({"kubeops.rotation.cluster_info": {}}))
            rows.setdefault("cordon 3 nodes", []).append(costs.run({"kubeops.rotation.cordon": {"nodes": nodes}}))
            rows.setdefault("cordon 3 nodes again (no-op)", []).append(
                costs.run({"kubeops.rotation.cordon": {"nodes": nodes}}))
            costs.run({"kubeops.rotation.cordon": {"nodes": nodes, "state": "uncordoned"}})
            rows.setdefault("rollout_restart 1 Deployment x10", []).append(costs.run(
                {"kubeops.rotation.rollout_restart": {"targets": [
                    {"kind": "Deployment", "namespace": namespace, "name": "web"}], "timeout": 300}}))
            rows.setdefault("evict 10 pods on 3 nodes", []).append(costs.run(
                {"kubeops.rotation.evict": {"nodes": nodes, "timeout": 300}}))
            print("trial %d done" % trial, flush=True)
    finally:
        local_cluster.down(os.path.join(work_dir, "cluster"))
    print("\n%-36s %12s %14s %16s" % ("call", "median wall", "median module", "median requests"))
    for name, runs in rows.items():
        print("%-36s %10.2f s %12.2f s %16d" % (name, median(runs, "wall"), median(runs, "module"),
                                                median(runs, "requests")))


if __name__ == "__main__":
    main()
