"""Side by side with Karpenter's own drift replacement: one NodePool change, the same workloads, on the real
Karpenter (KWOK provider) in a local control plane of its own.

Each contender gets a NodePool and a namespace of its own (named after it), the same workloads, Karpenter's
nodes for them, then the NodePool's template change (node-version v1 -> v2) that drifts every node:

  web      a Deployment of 6 spread over the zones (maxSkew 1, DoNotSchedule), PDB minAvailable 5
  api      a Deployment of 3, PDB maxUnavailable 1
  solo     a single replica, PDB minAvailable 1 (what a drain never gets past)
  db       a StatefulSet of 3 that repels itself by hostname, PDB maxUnavailable 1
  pinned   a Deployment of 2 whose pods carry karpenter.sh/do-not-disrupt

Every pod requests 1 cpu, so that Karpenter's 4-cpu nodes hold three each. With --finishable, solo and pinned
are left out: what Karpenter's drift can finish on its own, to compare the time it takes. The contenders:

  karpenter (default budget)   Karpenter's drift replaces the nodes itself: its default budget (10% of the nodes)
  karpenter (budget 50%)       the same with a disruption budget of 50% of the nodes
  kubeops.rotation             the NodePool's budget is 0 nodes (Karpenter disrupts nothing itself);
                               ansible-playbook kubeops.rotation.rotate_nodes on the drifted nodes, batches of
                               --batch-size, warm nodes from the same NodePool

Measured from the cluster, from the NodePool change on, for each:

  drifted gone   seconds until every drifted node is gone, or what was left at --timeout and why (Karpenter's
                 DisruptionBlocked Events, the pods still on the drifted nodes); gone at: how many went, and
                 the seconds until the last of them went
  min ready      the fewest Ready pods of each workload, against the least its PDB allows
  zero ready     seconds at zero Ready pods, for the single replica
  moved / of     pods deleted against the pods on the drifted nodes at the change
  launched       nodes launched in all (NodeClaims created), and node-seconds of extra capacity: the pool's
                 nodes beyond as many as were drifted, summed over time (sampled every 0.5 s)
  requests       the API server's apiserver_request_total over the run (Events, the /metrics reads and the
                 benchmark's own sampling aside, the last from the API server's audit log by User-Agent)
  own            of them, the contender's own: Karpenter's, or the collection's modules'

Usage: python tests/bench/karpenter_drift.py [--timeout 300] [--batch-size 2] [--finishable] [--json FILE]
Karpenter is built on first use (tests/cluster/karpenter.py: GOTOOLCHAIN=go1.27.3 for that build only).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TESTS, "cluster"))
sys.path.insert(0, os.path.join(TESTS, "integration"))

import cluster as local_cluster  # noqa: E402
import karpenter  # noqa: E402
from bench_cluster import ClusterBench, fmt, request_summary  # noqa: E402
from demo import RotationScenario  # noqa: E402
from kube import InBackground, deployment, pdb, stateful_set  # noqa: E402
from kubernetes import client as k8s_client  # noqa: E402
from side_by_side import OURS_AGENT, DeletionWatcher, audit_offset, audit_requests  # noqa: E402

NODEPOOL_LABEL = "karpenter.sh/nodepool"
ZONE = "topology.kubernetes.io/zone"
DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
# app -> the fewest Ready pods its PDB allows (pinned has none: do-not-disrupt protects it).
PDB_MINIMUM = {"web": 5, "api": 2, "solo": 1, "db": 2}
REPLICAS = {"web": 6, "api": 3, "solo": 1, "db": 3, "pinned": 2}
CONTENDERS = {
    "karpenter-default": ("karpenter (default budget)", None),
    "karpenter-50": ("karpenter (budget 50%)", [{"nodes": "50%"}]),
    "rotation": ("kubeops.rotation", [{"nodes": "0"}]),
}


class ZeroReadyWatcher(DeletionWatcher):
    """The deletion watcher, also summing the seconds each app spent with no Ready pod."""

    def __init__(self, cluster, namespace):
        super().__init__(cluster, namespace)
        self.zero_since = {}
        self.zero_seconds = {}

    def _extremes(self, app):
        super()._extremes(app)
        now = time.monotonic()
        ready = self._ready.get(app, 0)
        if ready == 0 and app not in self.zero_since:
            self.zero_since[app] = now
        elif ready > 0 and app in self.zero_since:
            self.zero_seconds[app] = self.zero_seconds.get(app, 0.0) + now - self.zero_since.pop(app)

    def zero(self, app):
        ongoing = time.monotonic() - self.zero_since[app] if app in self.zero_since else 0.0
        return round(self.zero_seconds.get(app, 0.0) + ongoing, 1)


class NodeSampler(InBackground):
    """Every 0.5 s, the pool's nodes: node-seconds beyond ``baseline`` nodes, and every NodeClaim seen."""

    def __init__(self, scenario, baseline):
        super().__init__()
        self.scenario = scenario
        self.baseline = baseline
        self.extra_node_seconds = 0.0
        self.claims = set()
        # (seconds, nodes) at each change of the pool's node count: where the extra capacity was.
        self.timeline = []

    def _run(self):
        started = last = time.monotonic()
        while not self._stop.wait(0.5):
            now = time.monotonic()
            nodes = len(self.scenario.pool_nodes())
            self.claims |= {claim["metadata"]["name"] for claim in self.scenario.node_claims()}
            self.extra_node_seconds += max(0, nodes - self.baseline) * (now - last)
            if not self.timeline or self.timeline[-1][1] != nodes:
                self.timeline.append((round(now - started, 1), nodes))
            last = now


class DriftScenario(RotationScenario):
    """One contender's NodePool, namespace and workloads."""

    def __init__(self, kubeconfig, contender, budgets, batch_size, apps):
        super().__init__(kubeconfig)
        self.app_names = apps
        self.custom = k8s_client.CustomObjectsApi(self.api_client)
        self.pool = self.namespace = "drift-" + contender
        self.budgets = budgets
        self.drifted_nodes = []
        self.rotation = {
            "rotate_nodes_id": "drift-" + contender,
            "rotate_nodes_karpenter_drifted": True,
            "rotate_nodes_karpenter_nodepools": [self.pool],
            "rotate_nodes_batch_size": str(batch_size),
            "rotate_nodes_pool_node_selector": {NODEPOOL_LABEL: self.pool},
            "rotate_nodes_template_capacity": dict(karpenter.INSTANCE_CAPACITY),
        }

    def node_claims(self):
        return [claim for claim in self.custom.list_cluster_custom_object("karpenter.sh", "v1", "nodeclaims")["items"]
                if (claim["metadata"].get("labels") or {}).get(NODEPOOL_LABEL) == self.pool]

    def pool_nodes(self):
        return self.core.list_node(label_selector="%s=%s" % (NODEPOOL_LABEL, self.pool)).items

    def setup(self):
        """The NodePool and the workloads on the nodes Karpenter launches for them."""
        self.custom.create_cluster_custom_object("karpenter.sh", "v1", "nodepools", karpenter.node_pool(
            self.pool, labels={"node-version": "v1"}, budgets=self.budgets))
        self.core.create_namespace({"metadata": {"name": self.namespace}})
        self.wait(lambda: any(sa.metadata.name == "default"
                              for sa in self.core.list_namespaced_service_account(self.namespace).items), "namespace")
        on_pool = {NODEPOOL_LABEL: self.pool}
        web = deployment("web", REPLICAS["web"], on_pool)
        web["spec"]["template"]["spec"]["topologySpreadConstraints"] = [{
            "maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}}}]
        db = stateful_set("db", REPLICAS["db"], on_pool)
        db["spec"]["template"]["spec"]["affinity"] = {"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "db"}}}]}}
        pinned = deployment("pinned", REPLICAS["pinned"], on_pool, annotations={DO_NOT_DISRUPT: "true"})
        every = (web, deployment("api", REPLICAS["api"], on_pool), deployment("solo", 1, on_pool), pinned)
        workloads = [manifest for manifest in every if manifest["metadata"]["name"] in self.app_names]
        for manifest in workloads + [db]:
            manifest["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1"
        for manifest in workloads:
            self.apps.create_namespaced_deployment(self.namespace, manifest)
        self.apps.create_namespaced_stateful_set(self.namespace, db)
        budgets = [pdb("web", {"app": "web"}, min_available=5), pdb("api", {"app": "api"}, max_unavailable=1),
                   pdb("solo", {"app": "solo"}, min_available=1), pdb("db", {"app": "db"}, max_unavailable=1)]
        for budget in budgets:
            if budget["metadata"]["name"] in self.app_names:
                self.policy.create_namespaced_pod_disruption_budget(self.namespace, budget)
        self.wait(lambda: self.ready_count() >= sum(REPLICAS[app] for app in self.app_names),
                  "Karpenter's nodes and the workloads", timeout=300)

    def drift(self):
        """Change the NodePool's template; returns when every NodeClaim of the pool is Drifted."""
        self.custom.patch_cluster_custom_object("karpenter.sh", "v1", "nodepools", self.pool, {
            "spec": {"template": {"metadata": {"labels": {"node-version": "v2"}}}}})

    def drifted_claims(self):
        return [claim for claim in self.node_claims() if any(
            condition["type"] == "Drifted" and condition["status"] == "True"
            for condition in (claim.get("status") or {}).get("conditions") or [])]

    def left(self):
        names = {node.metadata.name for node in self.core.list_node().items}
        return [name for name in self.drifted_nodes if name in names]

    def why_left(self, left):
        """What Karpenter said of the nodes left, and the pods still on them."""
        reasons = sorted({"%s: %s" % (event.involved_object.name, event.message)
                          for event in self.core.list_event_for_all_namespaces(
                              field_selector="reason=DisruptionBlocked").items
                          if event.involved_object.name in set(left)})
        pods = sorted("%s on %s" % (pod.metadata.name, pod.spec.node_name) for pod in self.pods(self.namespace)
                      if pod.spec.node_name in set(left) and not pod.metadata.deletion_timestamp)
        return reasons[-3:] + (["still there: " + ", ".join(pods)] if pods else [])

    def remove(self):
        self.core.delete_namespace(self.namespace)
        self.wait(lambda: not self.pods(self.namespace), "the namespace's pods to go", timeout=180)
        self.custom.delete_cluster_custom_object("karpenter.sh", "v1", "nodepools", self.pool)
        self.wait(lambda: not self.pool_nodes(), "the pool's nodes to go", timeout=300)


def run_contender(bench, contender, args):
    name, budgets = CONTENDERS[contender]
    apps = [app for app in REPLICAS if not args.finishable or app not in ("solo", "pinned")]
    scenario = DriftScenario(bench.kubeconfig, contender, budgets, args.batch_size, apps)
    scenario.setup()
    on_drifted_nodes = None
    with ZeroReadyWatcher(scenario, scenario.namespace) as watcher:
        before = bench.request_counts()
        audit_start = audit_offset(bench.audit_log)
        started = time.monotonic()
        nodes = [node.metadata.name for node in scenario.pool_nodes()]
        scenario.drifted_nodes = nodes
        on_drifted_nodes = sum(1 for pod in scenario.pods(scenario.namespace) if pod.spec.node_name in set(nodes))
        claims_before = {claim["metadata"]["name"] for claim in scenario.node_claims()}
        with NodeSampler(scenario, len(nodes)) as sampler:
            scenario.drift()
            outcome = "finished"
            if contender == "rotation":
                scenario.wait(lambda: len(scenario.drifted_claims()) == len(claims_before), "Drifted", timeout=120)
                completed = scenario.run_rotation(bench.work_dir)
                if completed.returncode != 0:
                    outcome = "failed: " + completed.stdout[-600:]
            deadline = started + args.timeout
            gone_at = {}
            while time.monotonic() < deadline:
                left = scenario.left()
                gone_at.update({name: time.monotonic() - started for name in nodes
                                if name not in left and name not in gone_at})
                if not left:
                    break
                time.sleep(1)
            wall = time.monotonic() - started
        after = bench.request_counts()
        by_agent = audit_requests(bench.audit_log, audit_start)["by_agent"]
    requests = request_summary(before, after)
    by_request = requests.pop("by_request")
    # The benchmark's own sampling (every 0.5 s) is no contender's: left out, so that a longer run is not charged.
    requests["requests"] -= by_agent.get("benchmark", 0)
    result = {
        "contender": name, "outcome": "left %d node(s)" % len(left) if left else outcome,
        "drifted_nodes": len(nodes), "seconds": None if left else round(wall, 1),
        # Until the last node that went: what a contender that left some nodes took for those it could move.
        "nodes_gone": len(gone_at), "last_gone_seconds": round(max(gone_at.values()), 1) if gone_at else None,
        "why_left": scenario.why_left(left) if left else [],
        "min_ready": {app: watcher.min_ready.get(app) for app in apps},
        "pdb_crossed": sorted(app for app, least in PDB_MINIMUM.items()
                              if app in apps and watcher.min_ready.get(app, 0) < least),
        "zero_ready_seconds": {"solo": watcher.zero("solo") if "solo" in apps else None},
        "moved": sum(1 for app, _node in watcher.deleted.values() if app in apps),
        "on_drifted_nodes": on_drifted_nodes,
        "launched": len(sampler.claims - claims_before),
        "extra_node_seconds": round(sampler.extra_node_seconds),
        "node_timeline": sampler.timeline,
        **requests,
        # The kinds of request that made most of them: where a contender's requests go.
        "top_requests": dict(sorted(by_request.items(), key=lambda item: -item[1])[:12]),
        "requests_by_agent": by_agent,
        "own_requests": by_agent.get(OURS_AGENT if contender == "rotation" else "karpenter", 0),
    }
    scenario.remove()
    return result


def print_table(results):
    print("\n%-28s %-16s %8s %10s %-28s %6s %9s %9s %9s %9s %6s" % (
        "contender", "outcome", "seconds", "gone at", "min ready (web api solo db)", "zero", "moved/of", "launched",
        "node-s+", "requests", "own"))
    for result in results:
        ready = result["min_ready"]
        print("%-28s %-16s %8s %10s %-28s %6s %9s %9d %9d %9d %6d" % (
            result["contender"], result["outcome"][:16], fmt(result["seconds"], "8.1f"),
            "%d: %s" % (result["nodes_gone"], fmt(result["last_gone_seconds"], ".0f")),
            " ".join("%s/%d" % (ready.get(app, "-"), PDB_MINIMUM[app]) for app in PDB_MINIMUM),
            fmt(result["zero_ready_seconds"]["solo"], "6.1f"), "%d/%d" % (result["moved"], result["on_drifted_nodes"]),
            result["launched"], result["extra_node_seconds"], result["requests"], result["own_requests"]))
    for result in results:
        for line in result["why_left"]:
            print("  %s: %s" % (result["contender"], line))
        if result["pdb_crossed"]:
            print("  %s: crossed the PDB of %s" % (result["contender"], ", ".join(result["pdb_crossed"])))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--timeout", type=int, default=300, help="seconds each contender has to remove the nodes")
    parser.add_argument("--batch-size", type=int, default=2, help="the rotation's batch size")
    parser.add_argument("--contenders", default=",".join(CONTENDERS), help="which, in order")
    parser.add_argument("--finishable", action="store_true",
                        help="without solo and pinned: the workloads Karpenter's drift can finish")
    parser.add_argument("--json", default=os.path.join(TESTS, os.pardir, ".cache", "bench-karpenter-drift.json"))
    args = parser.parse_args(argv)
    work_dir = tempfile.mkdtemp(prefix="kubeops-drift-")
    cluster_dir = os.path.join(work_dir, "cluster")
    state = local_cluster.up(cluster_dir, die_with_parent=True, python=sys.executable, autoscaler="karpenter",
                             audit=True)
    results = []
    try:
        bench = ClusterBench(state["kubeconfig"], work_dir, audit_log=state["audit_log"])
        for contender in args.contenders.split(","):
            results.append(run_contender(bench, contender, args))
            print(json.dumps(results[-1]), flush=True)
    finally:
        local_cluster.down(cluster_dir)
    print_table(results)
    with open(args.json, "w") as handle:
        json.dump({"timeout": args.timeout, "batch_size": args.batch_size, "finishable": args.finishable,
                   "results": results}, handle, indent=2)
    print("\nresults in %s" % args.json)


if __name__ == "__main__":
    main()
