"""Benchmark: kubeops.rotation.evict against kubectl drain, on the same scenario, in one run.

Each trial builds a fresh scenario on the local control plane: an old node
with three Deployments (one under a PDB that allows one disruption) and a
DaemonSet, and an empty new node; the old node is cordoned; then one tool
drains it. Tools alternate trial by trial so that both see the same machine
load. Printed: wall time and API requests per trial, their medians, and the
ratio. Run with `make bench`.

kubectl's request count comes from its -v=6 log (one "Response" line per
request); ours from the module's api_requests, which counts every request
the module makes. Wall time of ours includes ansible-playbook's own start-up,
which is also shown apart (module elapsed_seconds).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
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
from kube import daemon_set, deployment, pdb, running_pods  # noqa: E402

REPLICAS = {"web": 8, "api": 8, "worker": 8}


class Bench(ClusterBench):
    def scenario(self, trial):
        """A namespace and an old node full of pods, a new empty node; returns the old node's name."""
        name = "bench%d" % trial
        old, new = name + "-old", name + "-new"
        self.core.create_namespace({"metadata": {"name": name}})
        self.wait(lambda: self._service_account(name), "the namespace's service account")
        self.core.create_node(fake_node(old, {"bench": name}))
        pinned = {"bench": name}
        for app, replicas in REPLICAS.items():
            self.apps.create_namespaced_deployment(name, deployment(app, replicas, pinned))
        self.apps.create_namespaced_daemon_set(name, daemon_set("agent", pinned))
        self.policy.create_namespaced_pod_disruption_budget(name, pdb("web", {"app": "web"}, max_unavailable=1))
        total = sum(REPLICAS.values()) + 1
        self.wait(lambda: running_pods(self, name, None, total), "%d running pods" % total)
        self.core.create_node(fake_node(new, {"bench": name}))
        self.core.patch_node(old, {"spec": {"unschedulable": True}})
        return name, old

    def _service_account(self, namespace):
        return any(sa.metadata.name == "default" for sa in self.core.list_namespaced_service_account(namespace).items)

    def kubectl_drain(self, node):
        started = time.monotonic()
        completed = subprocess.run(
            [local_cluster.binary("kubectl"), "--kubeconfig", self.kubeconfig, "drain", node, "--ignore-daemonsets",
             "--delete-emptydir-data", "--timeout=300s", "-v=6"], capture_output=True, text=True, check=True)
        wall = time.monotonic() - started
        requests = sum(1 for line in completed.stderr.splitlines() if '"Response" verb=' in line)
        return {"wall": wall, "requests": requests, "inner": wall}

    def evict(self, node):
        started = time.monotonic()
        play = run_tasks([{"kubeops.rotation.evict": {"nodes": [node], "timeout": 300}}], self.work_dir,
                         {"kubeconfig": self.kubeconfig})
        wall = time.monotonic() - started
        step = play.steps[0]
        if play.rc != 0:
            raise RuntimeError("evict failed: %r" % play)
        return {"wall": wall, "requests": step["api_requests"], "inner": step["elapsed_seconds"]}

    def check_drained(self, namespace, node):
        left = [pod for pod in self.pods(namespace) if pod.spec.node_name == node
                and pod.metadata.owner_references[0].kind != "DaemonSet"]
        if left:
            raise RuntimeError("%d pods left on %s" % (len(left), node))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=3, help="trials per tool (default %(default)s)")
    args = parser.parse_args()
    work_dir = tempfile.mkdtemp(prefix="kubeops-bench-")
    state = local_cluster.up(os.path.join(work_dir, "cluster"), die_with_parent=True)
    results = {"kubectl drain": [], "kubeops.rotation.evict": []}
    try:
        bench = Bench(state["kubeconfig"], work_dir)
        for trial in range(2 * args.trials):
            tool = "kubectl drain" if trial % 2 == 0 else "kubeops.rotation.evict"
            namespace, node = bench.scenario(trial)
            measured = bench.kubectl_drain(node) if tool == "kubectl drain" else bench.evict(node)
            bench.check_drained(namespace, node)
            results[tool].append(measured)
            print("trial %d  %-24s wall %6.2f s  in-tool %6.2f s  requests %4d" % (
                trial, tool, measured["wall"], measured["inner"], measured["requests"]), flush=True)
    finally:
        local_cluster.down(os.path.join(work_dir, "cluster"))
    print("\nscenario: one node, %d pods in 3 Deployments (web under a PDB maxUnavailable 1) + 1 DaemonSet pod; "
          "kwok keeps each deleted pod Terminating ~2 s" % sum(REPLICAS.values()))
    print("%-24s %12s %14s %16s" % ("tool", "median wall", "median in-tool", "median requests"))
    medians = {}
    for tool, runs in results.items():
        medians[tool] = {key: statistics.median(run[key] for run in runs) for key in ("wall", "inner", "requests")}
        print("%-24s %10.2f s %12.2f s %16d" % (tool, medians[tool]["wall"], medians[tool]["inner"],
                                                medians[tool]["requests"]))
    ours, theirs = medians["kubeops.rotation.evict"], medians["kubectl drain"]
    print("ratio evict / kubectl drain: wall %.2f, in-tool %.2f, requests %.2f" % (
        ours["wall"] / theirs["wall"], ours["inner"] / theirs["inner"], ours["requests"] / theirs["requests"]))


if __name__ == "__main__":
    main()
