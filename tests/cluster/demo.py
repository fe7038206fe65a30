"""The demo of `make demo`: a small realistic cluster rotated by playbooks/rotate_nodes.yml.

An old pool of 4 nodes across 2 zones (label node-version=v1); in namespace
"shop": a web Deployment of 4 under a PDB (minAvailable 3), a StatefulSet of 2
whose pods carry karpenter.sh/do-not-disrupt, a single-replica Deployment
under a minAvailable 1 PDB (what blocks a naive drain forever), a DaemonSet
and a Job. The test provisioner plays Karpenter for the new pool
(kubeops.io/pool=warm). A watcher records Ready pods and PDB status all the
way through; at the end every pod must run on the new pool, no PDB may have
been violated and the single replica must never have had zero Ready pods. It prints the
restarts and evictions planned and done per batch and each workload's pods
per zone before and after, and fails if they differ (zones by more than 1).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))

import cluster as local_cluster  # noqa: E402
from clients import ClusterClients  # noqa: E402
from ansible_run import run_collection_playbook  # noqa: E402
from fakenodes import fake_node  # noqa: E402
from kube import DisruptionWatcher, daemon_set, deployment, pdb, stateful_set  # noqa: E402

MIN_READY = {"web": 3, "checkout": 1}


class RotationScenario(ClusterClients):
    """What every demo scenario shares: its namespace's Ready pods, and rotate_nodes run with its
    ``rotation`` variables under a watcher."""

    namespace = None
    rotation = None

    def ready_count(self):
        return sum(1 for pod in self.pods(self.namespace) if pod.status.phase == "Running" and any(
            c.type == "Ready" and c.status == "True" for c in pod.status.conditions or []))

    def run_rotation(self, work_dir, extra=None, check=False, environment=None):
        """ansible-playbook kubeops.rotation.rotate_nodes with the ``rotation`` variables, the kubeconfig and a
        report in ``work_dir``, as its users run it; returns the CompletedProcess."""
        return run_collection_playbook(
            "kubeops.rotation.rotate_nodes",
            dict(dict(self.rotation, kubeops_kubeconfig=self.kubeconfig,
                      rotate_nodes_report_file=os.path.join(work_dir, "rotation-report.json")), **(extra or {})),
            work_dir, check=check, environment=environment)

    def rotate(self, work_dir, extra=None, check=False):
        """Run the playbook while watching; returns (CompletedProcess, watcher, seconds)."""
        started = time.monotonic()
        with DisruptionWatcher(self, self.namespace) as watcher:
            completed = self.run_rotation(work_dir, extra, check)
        return completed, watcher, time.monotonic() - started


class Demo(RotationScenario):
    """The scenario; ``prefix`` names its namespace, nodes, pool and rotation id, so tests can run it side by side."""

    def __init__(self, kubeconfig, prefix=""):
        super().__init__(kubeconfig)
        self.namespace = prefix + "shop"
        self.old_nodes = {prefix + name: zone for name, zone in (
            ("old-a-1", "zone-a"), ("old-a-2", "zone-a"), ("old-b-1", "zone-b"), ("old-b-2", "zone-b"))}
        self.old_pool = prefix + "old"
        self.rotation = {
            "rotate_nodes_id": prefix + "demo-1",
            "rotate_nodes_node_selector": "kubeops.io/pool=" + self.old_pool,
            "rotate_nodes_wanted_labels": {"node-version": "v2"},
            "rotate_nodes_batch_size": "2",
            # kwok nodes: no instance behind them, and no NodeClaim or Machine to delete.
            "rotate_nodes_retire": "delete_node",
            "rotate_nodes_pool_node_selector": {"kubeops.io/pool": "warm"},
            "rotate_nodes_template_capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"},
        }

    def setup(self):
        for name, zone in self.old_nodes.items():
            self.core.create_node(fake_node(name, {"kubeops.io/pool": self.old_pool, "node-version": "v1",
                                                   "topology.kubernetes.io/zone": zone}))
        self.core.create_namespace({"metadata": {"name": self.namespace}})
        self.wait(lambda: any(sa.metadata.name == "default"
                              for sa in self.core.list_namespaced_service_account(self.namespace).items), "namespace")
        self.apps.create_namespaced_deployment(self.namespace, deployment("web", 4, {}))
        self.policy.create_namespaced_pod_disruption_budget(self.namespace, pdb("web", {"app": "web"}, min_available=3))
        db = stateful_set("db", 2, {})
        db["spec"]["template"]["metadata"]["annotations"]["karpenter.sh/do-not-disrupt"] = "true"
        self.apps.create_namespaced_stateful_set(self.namespace, db)
        self.apps.create_namespaced_deployment(self.namespace, deployment("checkout", 1, {}))
        checkout_pdb = pdb("checkout", {"app": "checkout"}, min_available=1)
        self.policy.create_namespaced_pod_disruption_budget(self.namespace, checkout_pdb)
        self.apps.create_namespaced_daemon_set(self.namespace, daemon_set("agent", {}))
        self.batch.create_namespaced_job(self.namespace, {"metadata": {"name": "report"}, "spec": {"template": {
            "spec": {"restartPolicy": "Never", "containers": [{"name": "job", "image": "busybox"}]}}}})
        self.wait(lambda: self.ready_count() >= 4 + 2 + 1 + 4, "the workloads to be Ready")

    def verify(self, watcher):
        """Problems found, as sentences; empty when the rotation did what it promises."""
        problems = below_minimum(watcher, MIN_READY, "PDB minimum")
        new_nodes = {node.metadata.name for node in self.core.list_node(label_selector="kubeops.io/pool=warm").items}
        for pod in self.pods(self.namespace):
            owner = (pod.metadata.owner_references or [None])[0]
            if owner and owner.kind in ("Job", "DaemonSet"):  # a DaemonSet pod follows its node; a Job finished
                continue
            if pod.spec.node_name not in new_nodes:
                problems.append("%s runs on %s, not on the new pool" % (pod.metadata.name, pod.spec.node_name))
        left = [name for name in self.old_nodes if name in {n.metadata.name for n in self.core.list_node().items}]
        if left:
            problems.append("old nodes still exist: %s" % ", ".join(left))
        return problems


def below_minimum(watcher, minimums, what):
    """A sentence for each app of ``minimums`` ({app: the fewest Ready pods it may have}) that had fewer."""
    return ["%s had %d Ready pods at one point, below its %s %d" % (app, watcher.min_ready.get(app, 0), what, minimum)
            for app, minimum in minimums.items() if watcher.min_ready.get(app, 0) < minimum]


def report_problems(report):
    """Where the rotation did not do what its plan said, or moved pods between zones, as sentences."""
    problems = []
    for batch in report["batches"]:
        for planned, done, what in (("replacements_planned", "replacements_done", "replacements"),
                                    ("evictions_planned", "evictions_done", "evictions")):
            if sorted(batch[planned]) != sorted(batch[done]):
                problems.append("batch %s: %s planned %s, done %s" % (
                    batch["batch"], what, batch[planned], batch[done]))
    for owner, before in report["zones_before"].items():
        after = report["zones_after"].get(owner, {})
        for zone in set(before) | set(after):
            if abs(before.get(zone, 0) - after.get(zone, 0)) > 1:
                problems.append("%s had %d pod(s) in %s before and %d after" % (
                    owner, before.get(zone, 0), zone, after.get(zone, 0)))
    return problems


def print_report(report):
    print("Planned against done, per batch:")
    print("| batch | nodes | replacements planned | done | evictions planned | done | seconds |")
    for batch in report["batches"]:
        print("| %s | %s | %d | %d | %d | %d | %s |" % (
            batch["batch"], ", ".join(batch["nodes"]), len(batch["replacements_planned"]), len(batch["replacements_done"]),
            len(batch["evictions_planned"]), len(batch["evictions_done"]), batch["seconds"]))
    print("Pods per zone, before and after:")
    for owner, before in sorted(report["zones_before"].items()):
        print("  %-40s %-28s -> %s" % (owner, json.dumps(before, sort_keys=True),
                                       json.dumps(report["zones_after"].get(owner, {}), sort_keys=True)))


def print_min_ready(watcher):
    print("Fewest Ready pods seen during the rotation: %s" % json.dumps(
        {app: count for app, count in watcher.min_ready.items() if app}, sort_keys=True))


def rotate_and_report(demo, work_dir, show):
    """Run the demo's rotation and print its output (exit if it failed), what ``show(watcher)`` prints, its report
    and the problems found; exit 1 where there are any."""
    completed, watcher, seconds = demo.rotate(work_dir)
    print(completed.stdout)
    if completed.returncode != 0:
        print(completed.stderr)
        sys.exit("The rotation failed.")
    show(watcher)
    with open(os.path.join(work_dir, "rotation-report.json")) as handle:
        report = json.load(handle)
    print_report(report)
    problems = demo.verify(watcher) + report_problems(report)
    for problem in problems:
        print("PROBLEM: " + problem)
    print("Rotation took %.1f s; report: %s" % (seconds, os.path.join(work_dir, "rotation-report.json")))
    sys.exit(1 if problems else 0)


def demo_arguments(description):
    """A demo's command line: --kubeconfig and --work-dir, which is made if missing."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--work-dir", default=os.path.join(REPO, ".cache", "demo"))
    args = parser.parse_args()
    os.makedirs(args.work_dir, exist_ok=True)
    return args


def main():
    args = demo_arguments(__doc__)
    demo = Demo(args.kubeconfig)
    print("Creating the old pool and the shop workloads...", flush=True)
    demo.setup()
    print("Running ansible-playbook kubeops.rotation.rotate_nodes (with a watcher)...", flush=True)

    def show(watcher):
        kubectl = local_cluster.binary("kubectl") if os.path.exists(local_cluster.binary("kubectl")) else "kubectl"
        listing = subprocess.run([kubectl, "--kubeconfig", args.kubeconfig, "-n", demo.namespace, "get", "pods",
                                  "-o", "wide"], capture_output=True, text=True, check=False)
        print("$ kubectl -n %s get pods -o wide\n%s" % (demo.namespace, listing.stdout))
        print_min_ready(watcher)

    rotate_and_report(demo, args.work_dir, show)


if __name__ == "__main__":
    main()
