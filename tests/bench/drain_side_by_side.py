"""Benchmark: draining 10% of the nodes with kubeops.rotation and with the tools it replaces, side by side.

Each run of a tool gets a fresh scenario on the local control plane, in a
namespace and on kwok nodes of its own (named after the trial and the tool).
Two scenarios (--scenario):

  ten-percent   --nodes nodes (20) hold three Deployments of 2 pods per node each, spread over the
                nodes (a ScheduleAnyway hostname spread), each under a PDB (web maxUnavailable 1, api
                minAvailable replicas - 1, worker maxUnavailable 2; worker's pods have an emptyDir), and
                a DaemonSet; the first 10% of the nodes (2 of 20) are drained
  one-node      one node full of PDB-paced pods: 24 pods, 8 of them (paced) under a PDB of
                maxUnavailable 1, the other 16 (free) under none, and a DaemonSet; that node is drained.
                Pods are Ready 2 s after binding (the local control plane's kwok stage), so the PDB
                lets the 8 go one every 2 s or so: the time a drain cannot beat

Then as many spare empty nodes as will be drained join, to receive the pods,
and one tool drains:

  kubeops.rotation.drain_node   the collection's playbook, all the nodes in one run
                                (drain_node_delete_emptydir_data: true; its other defaults)
  kubectl drain (node by node)  the cluster's own kubectl, one command per node
                                (--ignore-daemonsets --delete-emptydir-data --timeout=300s)
  kubectl drain (all at once)   the same, one command naming all the nodes
  kubernetes.core.k8s_drain     as its users write it: a play with serial: 1 over an inventory of the
                                node names (connection: local), state: drain, delete_options
                                ignore_daemonsets and delete_emptydir_data, until: r is succeeded,
                                retries: 20, delay: 5; ansible 14.5.0's kubernetes.core, from a venv
                                of its own (.cache/venv-ansible-full, made on first use)

The tools alternate trial by trial (even trials in this order, odd ones in
the reverse), so all see the same cluster and the same machine load.
Measured per run, from the cluster rather than from the tools:

  wall         the tool's wall time, start-up included
  drained      until no pod but DaemonSet pods is left on the drained nodes
               (k8s_drain returns once its evictions are accepted; the others wait for the pods to go)
  requests     the API server's apiserver_request_total over the tool's run, Events and the
               benchmark's /metrics reads excluded; it counts every client: the tool, and the
               controllers, kwok and the benchmark's own watcher meanwhile
  net          requests less the steady background (kwok's heartbeats, the watcher...): the rate of
               an idle window (--idle seconds) just before the tool, times its wall time; what the
               run caused, the tool's own requests and the controllers' answer to its evictions
  own          the tool's own requests: those of its User-Agent in the API server's audit log (kubeops.rotation,
               kubectl/..., k8s_drain's OpenAPI-Generator/.../python), Events excluded; own/moved: per pod moved
  evictions    eviction requests (pods/eviction), and how many the API server answered 429
  moved        pods deleted from the tool's start until all replicas are Ready again (a pod that
               moved onto a node drained later counts again), against the pods on the drained
               nodes at the start
  violations   PDBs whose minimum was crossed: the fewest Ready pods of a Deployment
               (DisruptionWatcher, until all replicas are Ready again) below what its PDB allows

Printed: a line per run, then per tool the medians, the wall time's ratio to
ours and the violations of all trials. Written: --json (default
.cache/bench-drain-side-by-side.json, with --quick ...-quick.json), every
tool's output in .cache/bench-drain-side-by-side-logs. --quick (10 nodes, 1
trial, no k8s_drain, no idle window, 1 pod per node per Deployment) is a
smoke run. Run with `make bench`.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
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
from bench_cluster import ClusterBench, fmt, median  # noqa: E402
from ansible_run import INSTALLED_COLLECTIONS, REPO, run_collection_playbook  # noqa: E402
from fakenodes import fake_node  # noqa: E402
from kube import daemon_set, deployment, is_ready, pdb  # noqa: E402
from side_by_side import (KUBECTL_AGENT, OURS_AGENT, PYTHON_AGENT, DeletionWatcher, add_ratios,  # noqa: E402
                          collection_version, kubectl_version, measured, per_moved_pod, trial_order)

CACHE = os.path.join(REPO, ".cache")
RESULTS = os.path.join(CACHE, "bench-drain-side-by-side.json")
QUICK_RESULTS = os.path.join(CACHE, "bench-drain-side-by-side-quick.json")
ONE_NODE_RESULTS = os.path.join(CACHE, "bench-drain-one-node.json")
LOGS = os.path.join(CACHE, "bench-drain-side-by-side-logs")
# kubernetes.core as the ansible package ships it, in a venv of its own so that nothing of ours is on its path.
FULL_ANSIBLE_VENV = os.path.join(CACHE, "venv-ansible-full")
FULL_ANSIBLE_PINS = ("ansible==14.5.0", "kubernetes==35.0.0")
BENCH_LABEL = "kubeops.io/bench"
# Keeps the Deployments' pods off the spare nodes until the scenario is Ready.
SPARE_TAINT = {"key": "kubeops.io/bench-spare", "value": "true", "effect": "NoSchedule"}
DAEMON = "agent"
TIMEOUT = 300
# The one-node scenario: a node of 24 pods, 8 of them paced by a PDB of maxUnavailable 1.
PACED_PODS = 8
FREE_PODS = 16
SETTLE_TIMEOUT = 180

OURS = "kubeops.rotation.drain_node"
KUBECTL_EACH = "kubectl drain (node by node)"
KUBECTL_ALL = "kubectl drain (all at once)"
K8S_DRAIN = "kubernetes.core.k8s_drain"
TOOLS = {"ours": OURS, "kubectl-each": KUBECTL_EACH, "kubectl-all": KUBECTL_ALL, "k8s-drain": K8S_DRAIN}
TOOL_IDS = {name: tool_id for tool_id, name in TOOLS.items()}
AGENTS = {OURS: OURS_AGENT, KUBECTL_EACH: KUBECTL_AGENT, KUBECTL_ALL: KUBECTL_AGENT, K8S_DRAIN: PYTHON_AGENT}


class ToolUnavailable(Exception):
    """A contender that cannot run here; the message says why."""


def workloads(scenario, replicas):
    """Each Deployment: its replicas, its PDB's spec (None: no PDB), the fewest Ready pods that PDB allows, and
    its volumes."""
    if scenario == "one-node":
        return {
            "paced": {"replicas": PACED_PODS, "pdb": {"max_unavailable": 1}, "min_ready": PACED_PODS - 1,
                      "volumes": None},
            "free": {"replicas": FREE_PODS, "pdb": None, "min_ready": 0, "volumes": None},
        }
    return {
        "web": {"replicas": replicas, "pdb": {"max_unavailable": 1}, "min_ready": replicas - 1, "volumes": None},
        "api": {"replicas": replicas, "pdb": {"min_available": replicas - 1}, "min_ready": replicas - 1,
                "volumes": None},
        "worker": {"replicas": replicas, "pdb": {"max_unavailable": 2}, "min_ready": replicas - 2,
                   "volumes": [{"name": "scratch", "emptyDir": {}}]},
    }


def spread_deployment(app, replicas, node_selector, volumes):
    """A Deployment whose pods the scheduler spreads over the nodes, without ever refusing one (ScheduleAnyway):
    a DoNotSchedule spread still counts the cordoned nodes as domains, and could leave replacements Pending."""
    manifest = deployment(app, replicas, node_selector, volumes=volumes)
    manifest["spec"]["template"]["spec"]["topologySpreadConstraints"] = [{
        "maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway",
        "labelSelector": {"matchLabels": {"app": app}}}]
    return manifest


class Scenario:
    """One run's namespace and nodes: ``nodes`` with pods, the first ``drain`` of them to drain, and spares."""

    def __init__(self, scenario_id, args):
        self.id = scenario_id
        self.nodes = ["%s-n%02d" % (scenario_id, index) for index in range(args.nodes)]
        self.drained = self.nodes[:args.drain]
        self.spares = ["%s-spare%d" % (scenario_id, index) for index in range(args.spares)]
        self.apps = workloads(args.scenario, args.pods_per_node * args.nodes)

    @property
    def all_nodes(self):
        return self.nodes + self.spares


class Bench(ClusterBench):
    def build(self, scenario):
        """Namespace, nodes, Deployments under PDBs and a DaemonSet all Ready; the spare nodes join empty.

        The spares are made with the others, tainted so that only the DaemonSet runs there, and untainted once
        all is Ready: the same cluster as adding them then, without waiting twice for pods to become Ready."""
        namespace = scenario.id
        self.core.create_namespace({"metadata": {"name": namespace}})
        self.wait(lambda: self._service_account(namespace), "the service account of %s" % namespace)
        pinned = {BENCH_LABEL: scenario.id}
        for name in scenario.all_nodes:
            self.core.create_node(fake_node(name, pinned, taints=[SPARE_TAINT] if name in scenario.spares else None))
        self.wait(lambda: self._schedulable_nodes(scenario) == set(scenario.all_nodes),
                  "the nodes of %s to take pods" % namespace)
        for app, spec in scenario.apps.items():
            self.apps.create_namespaced_deployment(namespace, spread_deployment(
                app, spec["replicas"], pinned, spec["volumes"]))
            if spec["pdb"]:
                self.policy.create_namespaced_pod_disruption_budget(namespace, pdb(app, {"app": app}, **spec["pdb"]))
        agent = daemon_set(DAEMON, pinned)
        agent["spec"]["template"]["spec"]["tolerations"] = [{"key": SPARE_TAINT["key"], "operator": "Exists"}]
        self.apps.create_namespaced_daemon_set(namespace, agent)
        self.wait(lambda: self.settled(scenario), "the pods of %s to be Ready" % namespace)
        if any(pod.spec.node_name in scenario.spares for pod in self.pods(namespace, "app!=%s" % DAEMON)):
            raise RuntimeError("a pod of %s runs on a spare node" % namespace)
        for name in scenario.spares:
            self.core.patch_node(name, {"spec": {"taints": None}})

    def _schedulable_nodes(self, scenario):
        """The scenario's nodes that are Ready, not cordoned, and tainted by nothing but the spares' taint."""
        return {node.metadata.name for node in self.core.list_node(
            label_selector="%s=%s" % (BENCH_LABEL, scenario.id)).items
            if any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or [])
            and not node.spec.unschedulable
            and all(taint.key == SPARE_TAINT["key"] for taint in node.spec.taints or [])}

    def _service_account(self, namespace):
        return any(sa.metadata.name == "default" for sa in self.core.list_namespaced_service_account(namespace).items)

    def settled(self, scenario):
        """Every Deployment has all its replicas Ready, the DaemonSet a Ready pod per node, and nothing else runs."""
        pods = self.pods(scenario.id)
        if any(pod.metadata.deletion_timestamp or pod.status.phase != "Running" for pod in pods):
            return False
        ready = collections.Counter(pod.metadata.labels["app"] for pod in pods if is_ready(pod))
        return (all(ready[app] == spec["replicas"] for app, spec in scenario.apps.items())
                and ready[DAEMON] == len(scenario.all_nodes))

    def to_move(self, scenario):
        """The pods on the drained nodes that a drain moves: all but the DaemonSet's, Terminating ones included."""
        return [pod for pod in self.pods(scenario.id)
                if pod.spec.node_name in scenario.drained and pod.metadata.labels.get("app") != DAEMON]

    def remove(self, scenario):
        """Delete what the scenario runs, so that the next run finds the cluster as this one did.

        The workloads first, then their pods at once (grace 0), the PDBs and the nodes. The namespace stays,
        empty: the namespace controller deletes a namespace's content 5 s after it is deleted, requests that
        would fall into the next run's measurements."""
        namespace = scenario.id
        for delete in (self.apps.delete_collection_namespaced_deployment,
                       self.apps.delete_collection_namespaced_replica_set,
                       self.apps.delete_collection_namespaced_daemon_set):
            delete(namespace, propagation_policy="Background")
        self.wait(lambda: self._delete_pods_now(namespace), "the pods of %s to be deleted" % namespace)
        self.policy.delete_collection_namespaced_pod_disruption_budget(namespace)
        for name in scenario.all_nodes:
            self.core.delete_node(name)
        self.wait(lambda: not self.core.list_node(label_selector="%s=%s" % (BENCH_LABEL, namespace)).items,
                  "the nodes of %s to be deleted" % namespace)

    def _delete_pods_now(self, namespace):
        """Delete the pods left (the garbage collector may still be deleting some gracefully); True once none is."""
        self.core.delete_collection_namespaced_pod(namespace, grace_period_seconds=0)
        return not self.pods(namespace)

    # The contenders: each returns the completed process (or the last that failed) and writes its output to the log.

    def ours(self, scenario, log):
        completed = run_collection_playbook("kubeops.rotation.drain_node", {
            "kubeops_kubeconfig": self.kubeconfig, "drain_node_nodes": scenario.drained,
            "drain_node_delete_emptydir_data": True, "drain_node_timeout": TIMEOUT,
            "drain_node_reason": "benchmark %s" % scenario.id}, self.work_dir, INSTALLED_COLLECTIONS)
        log.write(completed.stdout + completed.stderr)
        return completed

    def kubectl_drain(self, nodes, log):
        command = [local_cluster.binary("kubectl"), "--kubeconfig", self.kubeconfig,
                   "--cache-dir", os.path.join(self.work_dir, "kubectl-cache"), "drain", *nodes,
                   "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=%ds" % TIMEOUT]
        log.write("$ %s\n" % " ".join(command))
        completed = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT + 60, check=False)
        log.write(completed.stdout + completed.stderr)
        return completed

    def kubectl_each(self, scenario, log):
        for node in scenario.drained:
            completed = self.kubectl_drain([node], log)
            if completed.returncode != 0:
                break
        return completed

    def kubectl_all(self, scenario, log):
        return self.kubectl_drain(scenario.drained, log)

    def k8s_drain(self, scenario, log):
        run_dir = os.path.join(self.work_dir, scenario.id)
        os.makedirs(run_dir, exist_ok=True)
        inventory = os.path.join(run_dir, "inventory.yml")
        with open(inventory, "w") as handle:
            yaml.safe_dump({"nodes": {"hosts": {name: None for name in scenario.drained}, "vars": {
                "ansible_python_interpreter": full_ansible_bin("python")}}}, handle, sort_keys=False)
        playbook = os.path.join(run_dir, "drain.yml")
        with open(playbook, "w") as handle:
            yaml.safe_dump(k8s_drain_play(self.kubeconfig), handle, sort_keys=False)
        # Nothing of ours on its path: no ANSIBLE_* variable (the Makefile exports ANSIBLE_COLLECTIONS_PATH), and an
        # empty ANSIBLE_HOME, so that the collections it finds are the ones the ansible package bundles.
        env = {key: value for key, value in os.environ.items() if not key.startswith(("ANSIBLE_", "K8S_AUTH_"))}
        env.update(ANSIBLE_HOME=os.path.join(self.work_dir, "ansible-home-full"), ANSIBLE_NOCOLOR="1",
                   ANSIBLE_RETRY_FILES_ENABLED="0")
        completed = subprocess.run([full_ansible_bin("ansible-playbook"), "-i", inventory, playbook],
                                   capture_output=True, text=True, env=env, timeout=900, check=False)
        log.write(completed.stdout + completed.stderr)
        return completed


def k8s_drain_play(kubeconfig):
    """The play as kubernetes.core's users write it: one node at a time, retried until it succeeds."""
    return [{
        "name": "Drain the nodes one at a time",
        "hosts": "nodes",
        "serial": 1,
        "connection": "local",
        "gather_facts": False,
        "tasks": [{
            "name": "Drain the node",
            "kubernetes.core.k8s_drain": {
                "kubeconfig": kubeconfig,
                "name": "{{ inventory_hostname }}",
                "state": "drain",
                "delete_options": {"ignore_daemonsets": True, "delete_emptydir_data": True},
            },
            "register": "r",
            "until": "r is succeeded",
            "retries": 20,
            "delay": 5,
        }],
    }]


def full_ansible_bin(name):
    return os.path.join(FULL_ANSIBLE_VENV, "bin", name)


def full_ansible_venv():
    """The venv of the ansible package (with kubernetes.core), made once and remade when its pins change."""
    marker = os.path.join(FULL_ANSIBLE_VENV, ".installed")
    pins = " ".join(FULL_ANSIBLE_PINS)
    if os.path.exists(marker):
        with open(marker) as handle:
            if handle.read().strip() == pins:
                return
    print("installing %s into %s" % (pins, FULL_ANSIBLE_VENV), flush=True)
    created = subprocess.run([sys.executable, "-m", "venv", "--clear", FULL_ANSIBLE_VENV],
                             capture_output=True, text=True, check=False)
    if created.returncode == 0:
        created = subprocess.run([full_ansible_bin("python"), "-m", "pip", "install", "--quiet", *FULL_ANSIBLE_PINS],
                                 capture_output=True, text=True, check=False)
    if created.returncode != 0:
        output = (created.stderr or created.stdout).strip()
        raise ToolUnavailable("installing %s failed (rc %d): %s" % (pins, created.returncode, output))
    with open(marker, "w") as handle:
        handle.write(pins + "\n")


def versions(tools):
    found = {"kubeops.rotation": collection_version(INSTALLED_COLLECTIONS, "kubeops", "rotation")}
    found["kubectl"] = kubectl_version(local_cluster.binary("kubectl"))
    if K8S_DRAIN in tools:
        site = subprocess.run([full_ansible_bin("python"), "-c", "import ansible_collections, os, ansible; print("
                               "os.path.dirname(ansible_collections.__path__[0])); print(ansible.__version__)"],
                              capture_output=True, text=True, check=False).stdout.split()
        if len(site) == 2:
            found["kubernetes.core"] = collection_version(site[0], "kubernetes", "core")
            found["ansible-core (k8s_drain)"] = site[1]
    return found


def run_once(bench, tool, trial, args):
    scenario = Scenario("t%d-%s" % (trial, TOOL_IDS[tool]), args)
    bench.build(scenario)
    to_move = {pod.metadata.uid for pod in bench.to_move(scenario)}
    log_path = os.path.join(LOGS, scenario.id + ".log")
    result = {"scenario": scenario.id, "drained_nodes": scenario.drained, "pods_to_move": len(to_move), "log": log_path}
    with DeletionWatcher(bench, scenario.id) as watcher, open(log_path, "w") as log:
        completed, started, measures = measured(bench, lambda: CONTENDERS[tool](bench, scenario, log), args.idle,
                                                AGENTS[tool])
        result.update(measures)
        try:
            bench.wait(lambda: not bench.to_move(scenario), "the drained nodes to be empty", timeout=TIMEOUT)
            result["drained"] = time.monotonic() - started
        except RuntimeError:
            result["drained"] = None
        try:
            bench.wait(lambda: bench.settled(scenario), "all replicas Ready", timeout=SETTLE_TIMEOUT)
            result["settled"] = time.monotonic() - started
        except RuntimeError:
            result["settled"] = None
    cordoned = [node.metadata.name for node in bench.core.list_node(
        label_selector="%s=%s" % (BENCH_LABEL, scenario.id)).items if node.spec.unschedulable]
    result["min_ready"] = {app: watcher.min_ready.get(app) for app in scenario.apps}
    result["pdb_min_ready"] = {app: spec["min_ready"] for app, spec in scenario.apps.items()}
    result["violations"] = sum(1 for app, spec in scenario.apps.items() if watcher.min_ready[app] < spec["min_ready"])
    result["pods_moved"] = sum(1 for app, _node in watcher.deleted.values() if app != DAEMON)
    result["own_requests_per_moved_pod"] = per_moved_pod(result.get("own_requests"), result["pods_moved"])
    result["left_on_drained_nodes"] = len(to_move & {pod.metadata.uid for pod in bench.to_move(scenario)})
    result["cordoned"] = sorted(cordoned) == sorted(scenario.drained)
    problems = []
    if completed.returncode != 0:
        problems.append("exited %d" % completed.returncode)
    if result["drained"] is None:
        problems.append("pods left on the drained nodes")
    if result["settled"] is None:
        problems.append("replicas not all Ready after %d s" % SETTLE_TIMEOUT)
    if not result["cordoned"]:
        problems.append("cordoned %s, not %s" % (cordoned, scenario.drained))
    result["ok"] = not problems
    result["problems"] = problems
    return scenario, result


CONTENDERS = {
    OURS: Bench.ours,
    KUBECTL_EACH: Bench.kubectl_each,
    KUBECTL_ALL: Bench.kubectl_all,
    K8S_DRAIN: Bench.k8s_drain,
}


def summarize(runs_by_tool):
    summaries = {}
    for tool, runs in runs_by_tool.items():
        summaries[tool] = {key: median(runs, key) for key in (
            "wall", "drained", "settled", "requests", "net_requests", "own_requests", "own_requests_per_moved_pod",
            "eviction_requests", "evictions_429", "pods_moved", "pods_to_move")}
        summaries[tool]["violations"] = sum(run["violations"] for run in runs)
        summaries[tool]["failed"] = sum(1 for run in runs if not run["ok"])
        summaries[tool]["trials"] = len(runs)
    return add_ratios(summaries, OURS, ("wall",))


def print_run(trial, tool, result):
    net = "" if result["net_requests"] is None else " (net ~%.0f)" % result["net_requests"]
    print("trial %d  %-30s wall %6.1f s  drained %s s  requests %5d%s  own %s (%s/moved)  evictions %3d (429: %d)  "
          "moved %d of %d  violations %d%s" % (
              trial, tool, result["wall"], fmt(result["drained"], "6.1f"), result["requests"], net,
              fmt(result.get("own_requests"), "4d"), fmt(result["own_requests_per_moved_pod"], ".1f"),
              result["eviction_requests"], result["evictions_429"],
              result["pods_moved"], result["pods_to_move"], result["violations"],
              "  FAILED: %s (%s)" % ("; ".join(result["problems"]), result["log"]) if result["problems"] else ""),
          flush=True)


def print_table(summaries):
    header = ("%-30s %8s %7s %10s %9s %9s %8s %9s %10s %6s %9s %11s %7s" % (
        "tool", "wall s", "ratio", "drained s", "requests", "net req", "own req", "own/moved", "evictions", "429s",
        "moved/of", "violations", "failed"))
    print(header)
    print("-" * len(header))
    for tool, row in summaries.items():
        moved = "%s/%s" % (fmt(row["pods_moved"], ".0f"), fmt(row["pods_to_move"], ".0f"))
        print("%-30s %8s %7s %10s %9s %9s %8s %9s %10s %6s %9s %11d %7d" % (
            tool, fmt(row["wall"], "8.1f"), fmt(row["wall_ratio_to_ours"], "7.2f"), fmt(row["drained"], "10.1f"),
            fmt(row["requests"], "9.0f"), fmt(row["net_requests"], "9.0f"), fmt(row["own_requests"], "8.0f"),
            fmt(row["own_requests_per_moved_pod"], "9.1f"), fmt(row["eviction_requests"], "10.0f"),
            fmt(row["evictions_429"], "6.0f"), moved, row["violations"], row["failed"]))


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenario", choices=("ten-percent", "one-node"), default="ten-percent",
                        help="what is drained (see above; default ten-percent)")
    parser.add_argument("--nodes", type=int, help="ten-percent: nodes holding pods (default 20, --quick 10); 10%% "
                        "are drained")
    parser.add_argument("--trials", type=int, help="runs per tool (default 3, --quick 1)")
    parser.add_argument("--tools", nargs="+", choices=list(TOOLS),
                        help="the contenders (default all; --quick: all but k8s-drain)")
    parser.add_argument("--idle", type=float, help="seconds of the idle window before each run that measures the "
                        "background request rate (default 5, --quick 0: none)")
    parser.add_argument("--pods-per-node", type=int, help="pods per node of each Deployment (default 2, --quick 1)")
    parser.add_argument("--json", help="where the results go (default %s, --quick %s)" % (
        os.path.relpath(RESULTS, REPO), os.path.relpath(QUICK_RESULTS, REPO)))
    parser.add_argument("--quick", action="store_true", help="a smoke run: 10 nodes, 1 trial, no k8s_drain")
    args = parser.parse_args(argv)
    defaults = {"nodes": 10, "trials": 1, "idle": 0, "pods_per_node": 1, "json": QUICK_RESULTS,
                "tools": ["ours", "kubectl-each", "kubectl-all"]} if args.quick else {
        "nodes": 20, "trials": 3, "idle": 5, "pods_per_node": 2, "json": RESULTS, "tools": list(TOOLS)}
    for key, value in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if args.scenario == "one-node":
        args.nodes, args.pods_per_node = 1, 1
        if args.json == RESULTS:
            args.json = ONE_NODE_RESULTS
    elif args.nodes < 10:
        parser.error("--nodes must be 10 or more, so that 10%% is at least one node")
    if args.trials < 1 or args.pods_per_node < 1 or args.idle < 0:
        parser.error("--trials and --pods-per-node must be 1 or more, --idle 0 or more")
    args.drain = max(1, args.nodes // 10)
    args.spares = args.drain
    args.tools = [TOOLS[tool_id] for tool_id in TOOLS if tool_id in args.tools]
    return args


def main(argv=None):
    args = parse_args(argv)
    skipped = {}
    if K8S_DRAIN in args.tools:
        try:
            full_ansible_venv()
        except ToolUnavailable as error:
            skipped[K8S_DRAIN] = str(error)
            args.tools.remove(K8S_DRAIN)
            print("%s is left out: %s" % (K8S_DRAIN, error), flush=True)
    os.makedirs(LOGS, exist_ok=True)
    started = time.monotonic()
    work_dir = tempfile.mkdtemp(prefix="kubeops-bench-")
    cluster_dir = os.path.join(work_dir, "cluster")
    state = local_cluster.up(cluster_dir, die_with_parent=True, audit=True)
    runs = {tool: [] for tool in args.tools}
    try:
        bench = Bench(state["kubeconfig"], work_dir, state["audit_log"])
        order = trial_order(args.trials, args.tools)
        for index, (trial, tool) in enumerate(order):
            scenario, result = run_once(bench, tool, trial, args)
            runs[tool].append(result)
            print_run(trial, tool, result)
            if index < len(order) - 1:  # the cluster goes down after the last
                bench.remove(scenario)
    finally:
        local_cluster.down(cluster_dir)
    summaries = summarize(runs)
    if args.scenario == "one-node":
        shape = "1 node of %d pods (%d paced by a PDB of maxUnavailable 1, %d free, a DaemonSet), drained" % (
            PACED_PODS + FREE_PODS, PACED_PODS, FREE_PODS)
    else:
        shape = "%d nodes with pods (3 Deployments x %d pods per node under PDBs, a DaemonSet), %d drained" % (
            args.nodes, args.pods_per_node, args.drain)
    print("\n%s, %d spare; medians of %d trial(s); ratio: wall time to ours; violations: all trials" % (
        shape, args.spares, args.trials))
    print_table(summaries)
    found = versions(args.tools)
    with open(args.json, "w") as handle:
        json.dump({"scenario": args.scenario, "nodes": args.nodes, "drained": args.drain, "spares": args.spares,
                   "trials": args.trials,
                   "pods_per_node": args.pods_per_node, "idle_seconds": args.idle, "quick": args.quick,
                   "workloads": workloads(args.scenario, args.nodes * args.pods_per_node),
                   "k8s_drain_play": k8s_drain_play("<kubeconfig>"),
                   "versions": found, "skipped": skipped, "summaries": summaries, "runs": runs,
                   "seconds": round(time.monotonic() - started, 1)}, handle, indent=2)
    print("\n%s; results in %s, logs in %s (%.0f s in all)" % (
        ", ".join("%s %s" % item for item in found.items() if item[1]), args.json, LOGS, time.monotonic() - started))
    if skipped:
        print("left out: %s" % skipped)
    if any(summary["failed"] for summary in summaries.values()):
        sys.exit(1)


if __name__ == "__main__":
    main()
