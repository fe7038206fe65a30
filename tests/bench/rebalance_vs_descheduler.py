"""Benchmark: kubeops.rotation's rebalance against the Descheduler, on the same scenarios, in one run.

Each run of a tool gets a fresh scenario on the local control plane, in its
own namespace and on its own kwok nodes; the tools alternate, so both see the
same state. The scenarios:

  nodes added     3 nodes (zones a, b, c), 3 Deployments x 6 replicas at 2
                  per node each; then 3 empty nodes (zones a, b, c) join.
  nowhere to go   the same, but the 3 new nodes have 50m of allocatable cpu:
                  not one pod (100m) fits, so any eviction lands back.
  zone spread     a Deployment of 6 with a zone topologySpreadConstraint
                  (maxSkew 1, DoNotSchedule) on 2 zones, 3/3; then a node of a
                  third zone joins: a skew of 3.
  old pool preferred  as "nodes added", but the Deployments prefer (a soft
                  node affinity, like "on-demand first") the first nodes'
                  label, which the added nodes lack.

Each tool runs once: ours is the playbook kubeops.rotation.rebalance of the
installed collection (strategies duplicates and topology_spread); the
Descheduler is the real binary, pinned in tests/cluster/gobuild/descheduler,
run for one pass (--descheduling-interval 0) with RemoveDuplicates and
RemovePodsViolatingTopologySpreadConstraint at the balance extension point and
the DefaultEvictor's defaults. Then the benchmark waits until every Deployment
has all its replicas Ready and no pod is Terminating or Pending.

Measured from the cluster, not from the tools: evictions (the scenario's pods
that are gone), replacements that landed back on the node a pod of the same
Deployment was evicted from, the final max skew (pods per node over the nodes
that can take the pod, or per zone for zone spread; max over Deployments),
the tool's wall time and the time until settled (the Descheduler exits as
soon as its evictions are accepted), and whether all replicas were Ready in
the end. With --trials above 1, medians. Results go to .cache/bench-rebalance.json, the
tools' logs beside it. Run with `make bench`.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TESTS, "cluster"))
sys.path.insert(0, os.path.join(TESTS, "integration"))

import cluster as local_cluster  # noqa: E402
from bench_cluster import ClusterBench  # noqa: E402
from ansible_run import REPO, run_collection_playbook  # noqa: E402
from fakenodes import fake_node  # noqa: E402
from kube import deployment, is_ready  # noqa: E402

RESULTS = os.path.join(REPO, ".cache", "bench-rebalance.json")
LOGS = os.path.join(REPO, ".cache", "bench-rebalance-logs")
BENCH_LABEL = "kubeops.io/bench"
ZONE_LABEL = "topology.kubernetes.io/zone"
REBALANCE = "kubeops rebalance"
UNSTEERED = "rebalance, no taint"
DESCHEDULER = "descheduler"
# The unsteered pass shows what the steering taint itself is worth.
TOOLS = (REBALANCE, DESCHEDULER, UNSTEERED)
TOOL_IDS = {REBALANCE: "rebal", DESCHEDULER: "desched", UNSTEERED: "unsteered"}
SETTLE_TIMEOUT = 180
# first: the zones of the nodes the pods start on; added: the zones of the
# nodes that join before the tool runs, with their capacity.
SCENARIOS = {
    "nodes added": {"first": ("zone-a", "zone-b", "zone-c"), "added": ("zone-a", "zone-b", "zone-c"),
                    "added_capacity": None, "apps": {"web": 6, "api": 6, "worker": 6}, "zone_spread": False},
    "nowhere to go": {"first": ("zone-a", "zone-b", "zone-c"), "added": ("zone-a", "zone-b", "zone-c"),
                      "added_capacity": {"cpu": "50m"}, "apps": {"web": 6, "api": 6, "worker": 6},
                      "zone_spread": False},
    "zone spread": {"first": ("zone-a", "zone-b"), "added": ("zone-c",), "added_capacity": None,
                    "apps": {"web": 6}, "zone_spread": True},
    "old pool preferred": {"first": ("zone-a", "zone-b", "zone-c"), "added": ("zone-a", "zone-b", "zone-c"),
                           "added_capacity": None, "apps": {"web": 6, "api": 6, "worker": 6}, "zone_spread": False,
                           "preferred_label": {"kubeops.io/bench-pool": "first"}},
}


def descheduler_binary():
    """The Descheduler pinned in gobuild/descheduler, built beside the cluster's binaries when missing."""
    version = local_cluster.pinned_version("descheduler", "sigs.k8s.io/descheduler")
    path = os.path.join(local_cluster.bin_dir(), "descheduler-" + version)
    if not os.path.exists(path):
        # The version stamp of upstream's Makefile (v<date>-<tag>): the binary checks it against the server's.
        stamp = "v%s-%s" % (datetime.date.today().strftime("%Y%m%d"), version)
        started = time.monotonic()
        local_cluster.run(["go", "build", "-ldflags", "-X sigs.k8s.io/descheduler/pkg/version.version=" + stamp,
                           "-o", path, "sigs.k8s.io/descheduler/cmd/descheduler"],
                          cwd=os.path.join(local_cluster.GOBUILD, "descheduler"),
                          env=dict(os.environ, CGO_ENABLED="0", GOFLAGS="-buildvcs=false -trimpath"))
        local_cluster.log("built the Descheduler %s in %.1f s" % (version, time.monotonic() - started))
    return path


def descheduler_policy(namespace):
    """One profile: both balance plugins limited to the scenario's namespace, the DefaultEvictor as shipped."""
    return {
        "apiVersion": "descheduler/v1alpha2",
        "kind": "DeschedulerPolicy",
        "profiles": [{
            "name": "rebalance",
            "pluginConfig": [
                {"name": "DefaultEvictor", "args": {"nodeFit": False}},
                {"name": "RemoveDuplicates", "args": {"namespaces": {"include": [namespace]}}},
                {"name": "RemovePodsViolatingTopologySpreadConstraint",
                 "args": {"namespaces": {"include": [namespace]}}},
            ],
            "plugins": {
                "filter": {"enabled": ["DefaultEvictor"]},
                "preevictionfilter": {"enabled": ["DefaultEvictor"]},
                "balance": {"enabled": ["RemoveDuplicates", "RemovePodsViolatingTopologySpreadConstraint"]},
            },
        }],
    }


def zone_spread_deployment(name, replicas, node_selector):
    manifest = deployment(name, replicas, node_selector)
    manifest["spec"]["template"]["spec"]["topologySpreadConstraints"] = [{
        "maxSkew": 1, "topologyKey": ZONE_LABEL, "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": name}}}]
    return manifest


def preferring(labels):
    """A preferred (soft) node affinity for nodes with ``labels``, such as "on-demand first"."""
    return {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "preference": {
        "matchExpressions": [{"key": key, "operator": "In", "values": [value]} for key, value in labels.items()]}}]}}


class Scenario:
    """One scenario built for one tool: its namespace, its nodes, and the nodes its pods can go to."""

    def __init__(self, name, spec, scenario_id):
        self.name = name
        self.spec = spec
        self.id = scenario_id
        self.first_nodes = {"%s-%d" % (scenario_id, index): zone for index, zone in enumerate(spec["first"])}
        self.added_nodes = {"%s-%d" % (scenario_id, index): zone
                            for index, zone in enumerate(spec["added"], start=len(self.first_nodes))}
        self.zones = dict(self.first_nodes, **self.added_nodes)
        self.hosting_nodes = self.zones if spec["added_capacity"] is None else self.first_nodes

    def skew(self, placement, nodes):
        """Max over Deployments of max minus min pods per node of ``nodes`` (per zone when spread by zone)."""
        worst = 0
        for app in self.spec["apps"]:
            domains = {self.zones[node] for node in nodes} if self.spec["zone_spread"] else set(nodes)
            counts = dict.fromkeys(domains, 0)
            for node, count in placement.get(app, {}).items():
                domain = self.zones[node] if self.spec["zone_spread"] else node
                if domain in counts:
                    counts[domain] += count
            worst = max(worst, max(counts.values()) - min(counts.values()))
        return worst


class Bench(ClusterBench):
    def build(self, scenario):
        """Namespace, first nodes, Deployments evenly spread and Ready, then the added nodes."""
        namespace = scenario.id
        self.core.create_namespace({"metadata": {"name": namespace}})
        self.wait(lambda: self._service_account(namespace), "the namespace's service account")
        pinned = {BENCH_LABEL: scenario.id}
        preferred = scenario.spec.get("preferred_label")
        self._create_nodes(scenario.first_nodes, dict(pinned, **(preferred or {})), None)
        make = zone_spread_deployment if scenario.spec["zone_spread"] else deployment
        for app, replicas in scenario.spec["apps"].items():
            manifest = make(app, replicas, pinned)
            if preferred:
                manifest["spec"]["template"]["spec"]["affinity"] = preferring(preferred)
            self.apps.create_namespaced_deployment(namespace, manifest)
        self.wait(lambda: self.settled(scenario), "the Deployments of %s to be Ready" % namespace)
        first = placement(self.snapshot(namespace))
        if scenario.skew(first, scenario.first_nodes):
            raise RuntimeError("the scheduler did not spread %s evenly: %s" % (namespace, first))
        self._create_nodes(scenario.added_nodes, pinned, scenario.spec["added_capacity"])

    def _create_nodes(self, zones, labels, capacity):
        """Create the nodes and wait until they take pods: kwok made them Ready, and the node lifecycle
        controller removed its not-ready taint (which the Descheduler and the scheduler both honour)."""
        for name, zone in zones.items():
            self.core.create_node(fake_node(name, dict(labels, **{ZONE_LABEL: zone}), capacity=capacity))
        self.wait(lambda: all(self._schedulable(name) for name in zones), "nodes %s to take pods" % ", ".join(zones))

    def _schedulable(self, name):
        node = self.core.read_node(name)
        ready = any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or [])
        return ready and not node.spec.taints

    def _service_account(self, namespace):
        return any(sa.metadata.name == "default" for sa in self.core.list_namespaced_service_account(namespace).items)

    def settled(self, scenario):
        """Every Deployment has all its replicas Ready, and no pod is Terminating or Pending."""
        pods = self.pods(scenario.id)
        if any(pod.metadata.deletion_timestamp or pod.status.phase == "Pending" for pod in pods):
            return False
        ready = collections.Counter(pod.metadata.labels["app"] for pod in pods if is_ready(pod))
        return all(ready[app] == replicas for app, replicas in scenario.spec["apps"].items())

    def snapshot(self, namespace):
        """{pod uid: (app, node)} of the pods not Terminating."""
        return {pod.metadata.uid: (pod.metadata.labels["app"], pod.spec.node_name)
                for pod in self.pods(namespace) if not pod.metadata.deletion_timestamp}

    def remove(self, scenario):
        """Delete the scenario and wait until it is gone, so that the next one runs on a cluster without it.

        Pods first: a pod whose node is deleted first waits for the pod garbage collector (about a minute).
        """
        self.core.delete_namespace(scenario.id)
        self.wait(lambda: not self.pods(scenario.id), "the pods of %s to be deleted" % scenario.id)
        for name in scenario.zones:
            self.core.delete_node(name)
        self.wait(lambda: scenario.id not in {ns.metadata.name for ns in self.core.list_namespace().items},
                  "namespace %s to be deleted" % scenario.id)

    def rebalance(self, scenario, log_path, steering="PreferNoSchedule"):
        started = time.monotonic()
        completed = run_collection_playbook("kubeops.rotation.rebalance", {
            "kubeops_kubeconfig": self.kubeconfig, "rebalance_namespaces": [scenario.id],
            "rebalance_strategies": ["duplicates", "topology_spread"], "rebalance_steering": steering},
            self.work_dir)
        wall = time.monotonic() - started
        with open(log_path, "w") as handle:
            handle.write(completed.stdout + completed.stderr)
        if completed.returncode != 0:
            raise RuntimeError("rebalance failed (rc %d), see %s" % (completed.returncode, log_path))
        return {"wall": wall}

    def descheduler(self, scenario, log_path):
        policy_path = os.path.join(self.work_dir, "descheduler-policy-%s.yaml" % scenario.id)
        with open(policy_path, "w") as handle:
            yaml.safe_dump(descheduler_policy(scenario.id), handle, sort_keys=False)
        command = [descheduler_binary(), "--kubeconfig", self.kubeconfig, "--policy-config-file", policy_path,
                   "--descheduling-interval=0", "--leader-elect=false", "--secure-port=0", "--v=4"]
        started = time.monotonic()
        with open(log_path, "w") as log:
            completed = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, timeout=600, check=False)
        wall = time.monotonic() - started
        if completed.returncode != 0:
            raise RuntimeError("the Descheduler failed (rc %d), see %s" % (completed.returncode, log_path))
        with open(log_path) as log:
            strategies = re.findall(r'"Evicted pod" .*strategy="([^"]+)"', log.read())
        return {"wall": wall, "logged_evictions": dict(collections.Counter(strategies))}


def placement(snapshot):
    """{app: {node: pods}}"""
    by_app = collections.defaultdict(collections.Counter)
    for app, node in snapshot.values():
        by_app[app][node] += 1
    return {app: dict(nodes) for app, nodes in by_app.items()}


def measure(scenario, before, after):
    """Evictions, and how many of them a replacement of the same Deployment followed onto the same node."""
    evicted = collections.Counter(before[uid] for uid in before.keys() - after.keys())
    replacements = collections.Counter(after[uid] for uid in after.keys() - before.keys())
    return {
        "evictions": sum(evicted.values()),
        "back_on_old_node": sum(min(count, replacements[app_node]) for app_node, count in evicted.items()),
        "skew_before": scenario.skew(placement(before), scenario.hosting_nodes),
        "final_max_skew": scenario.skew(placement(after), scenario.hosting_nodes),
        "placement_before": placement(before),
        "placement_after": placement(after),
    }


def run_once(bench, name, tool, trial):
    scenario_id = "%s-%s-%d" % (name.replace(" ", "-"), TOOL_IDS[tool], trial)
    scenario = Scenario(name, SCENARIOS[name], scenario_id)
    bench.build(scenario)
    before = bench.snapshot(scenario.id)
    log_path = os.path.join(LOGS, scenario.id + ".log")
    if tool == DESCHEDULER:
        ran = bench.descheduler(scenario, log_path)
    else:
        ran = bench.rebalance(scenario, log_path, "none" if tool == UNSTEERED else "PreferNoSchedule")
    started = time.monotonic()
    try:
        bench.wait(lambda: bench.settled(scenario), "%s to settle" % scenario.id, timeout=SETTLE_TIMEOUT)
        all_ready = True
    except RuntimeError:
        all_ready = False
    result = dict(ran, **measure(scenario, before, bench.snapshot(scenario.id)), all_ready=all_ready,
                  until_settled=ran["wall"] + time.monotonic() - started, log=log_path)
    bench.remove(scenario)
    return result


def summary(runs):
    """The one run, or the medians of several."""
    keys = ("evictions", "back_on_old_node", "final_max_skew", "wall", "until_settled")
    merged = {key: statistics.median(run[key] for run in runs) for key in keys}
    merged["all_ready"] = all(run["all_ready"] for run in runs)
    merged["skew_before"] = statistics.median(run["skew_before"] for run in runs)
    return merged


def print_table(name, summaries):
    print("\n%s (skew before: %g)" % (name, next(iter(summaries.values()))["skew_before"]))
    print("%-20s %9s %17s %15s %7s %16s %10s" % ("tool", "evictions", "back on old node", "final max skew",
                                                 "wall s", "until settled s", "all Ready"))
    for tool, row in summaries.items():
        print("%-20s %9g %17g %15g %7.1f %16.1f %10s" % (
            tool, row["evictions"], row["back_on_old_node"], row["final_max_skew"], row["wall"],
            row["until_settled"], row["all_ready"]))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=1, help="runs per tool per scenario (default %(default)s)")
    parser.add_argument("--only", choices=TOOLS, help="run one tool only")
    parser.add_argument("--scenario", choices=list(SCENARIOS), action="append",
                        help="run this scenario only (repeatable; default all)")
    args = parser.parse_args()
    scenarios = args.scenario or list(SCENARIOS)
    tools = [args.only] if args.only else list(TOOLS)
    if DESCHEDULER in tools:
        descheduler_binary()
    os.makedirs(LOGS, exist_ok=True)
    work_dir = tempfile.mkdtemp(prefix="kubeops-bench-")
    state = local_cluster.up(os.path.join(work_dir, "cluster"), die_with_parent=True)
    runs = {name: {tool: [] for tool in tools} for name in scenarios}
    try:
        bench = Bench(state["kubeconfig"], work_dir)
        for trial in range(args.trials):
            for name in scenarios:
                for tool in tools if trial % 2 == 0 else reversed(tools):
                    result = run_once(bench, name, tool, trial)
                    runs[name][tool].append(result)
                    line = "trial %d  %-18s %-18s evictions %2d  back %2d  skew %d -> %d  wall %5.1f s  " \
                           "settled %5.1f s  ready %s" % (
                               trial, name, tool, result["evictions"], result["back_on_old_node"],
                               result["skew_before"], result["final_max_skew"], result["wall"],
                               result["until_settled"], result["all_ready"])
                    if "logged_evictions" in result:
                        line += "  logged %s" % result["logged_evictions"]
                    print(line, flush=True)
    finally:
        local_cluster.down(os.path.join(work_dir, "cluster"))
    summaries = {name: {tool: summary(tool_runs) for tool, tool_runs in by_tool.items()}
                 for name, by_tool in runs.items()}
    for name, by_tool in summaries.items():
        print_table(name, by_tool)
    with open(RESULTS, "w") as handle:
        json.dump({"trials": args.trials, "scenarios": SCENARIOS, "summaries": summaries, "runs": runs,
                   "descheduler_policy": descheduler_policy("<namespace>")}, handle, indent=2)
    print("\nresults in %s, logs in %s" % (RESULTS, LOGS))


if __name__ == "__main__":
    main()
