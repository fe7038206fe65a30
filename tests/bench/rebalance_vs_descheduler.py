"""Benchmark: kubeops.rotation's rebalance against the Descheduler, on the same scenarios, in one run.

Each run of a tool gets a fresh scenario on the local control plane, in its
own namespace and on its own kwok nodes; the tools alternate, so all see the
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
  node replaced   6 nodes (zones a, b, c twice), 3 Deployments x 12 replicas
                  at 2 per node each; the first node is drained (kubectl
                  drain) and deleted, each Deployment gets a PDB
                  (maxUnavailable 1), and an empty node of its zone joins, as
                  after a node replacement: the drained pods piled onto the
                  others (3/3/2/2/2 per Deployment) and the new node has none.
                  --quick: 3 nodes (zones a, b, c), 2 Deployments x 6 (3/3).
  node tainted    3 nodes (zones a, b, c), 3 Deployments x 6 at 2 per node
                  each, a PDB each (maxUnavailable 1); then the first node is
                  tainted dedicated=gpu:NoSchedule, which the Deployment "gpu"
                  tolerates and "web" and "api" do not (4 pods break the
                  taint), and an empty node (zone a) joins.
  node relabelled 3 nodes (zones a, b, c) labelled tier=web, 2 Deployments x 6
                  requiring it (a required node affinity) at 2 per node each,
                  a PDB each (maxUnavailable 1); then the first node's label
                  becomes tier=batch (4 pods on a node they no longer match),
                  and an empty node (zone a, tier=web) joins.
  anti-affinity broken  4 nodes, a Deployment "shy" of 4 (one per node)
                  whose required pod anti-affinity (kubernetes.io/hostname)
                  excludes pods labelled role=noisy, and a Deployment "batch"
                  of 8 at 2 per node, a PDB each (maxUnavailable 1); then the
                  batch pods on the first 2 nodes are labelled role=noisy, as
                  users break the rule (the scheduler never places a pod
                  against it): 2 shy pods beside pods they exclude; and an
                  empty node joins.
  under-used nodes  6 nodes: 3 labelled for a Deployment "big" of 6 (1.5 cpu,
                  4Gi each, required by a node affinity) at 2 per node, 75%
                  of their cpu; 3 running a Deployment "small" of 6 (100m, the
                  default, no rule: it may run anywhere) at 2 per node, 5%
                  (each Deployment's pods start on their 3 nodes with the
                  others cordoned meanwhile); a PDB each (maxUnavailable 1).
                  The small nodes are below the threshold of 30%, and their
                  pods fit on the big ones.

The tools, each run once per scenario and trial:

  kubeops rebalance     the playbook kubeops.rotation.rebalance of the installed collection (strategies
                        duplicates and topology_spread; node_taints on "node tainted", node_affinity on "node
                        relabelled", pod_anti_affinity on "anti-affinity broken", compaction with
                        compaction_threshold 30 on "under-used nodes"; its steering taint)
  rebalance, no taint   the same with rebalance_steering: none, what the steering taint itself is worth (on
                        "under-used nodes" also the NoSchedule taint of the nodes a compaction pass empties,
                        which it then leaves off too)
  descheduler, article  the Descheduler with the policy of the Descheduler article (a CronJob every 5
                        minutes, RemoveDuplicates only, the whole cluster; article_policy()) for one pass:
                        what the CronJob does each time it fires; not on "node tainted", "node relabelled",
                        "anti-affinity broken" and "under-used nodes", which RemoveDuplicates does not address
  descheduler           the Descheduler with RemoveDuplicates and RemovePodsViolatingTopologySpreadConstraint
                        (balance); RemovePodsViolatingNodeTaints on "node tainted", RemovePodsViolatingNodeAffinity
                        (requiredDuringSchedulingIgnoredDuringExecution) on "node relabelled",
                        RemovePodsViolatingInterPodAntiAffinity on "anti-affinity broken" (deschedule);
                        HighNodeUtilization (balance, thresholds cpu, memory and pods 30) on "under-used nodes";
                        limited to the scenario's namespace (HighNodeUtilization, which can only exclude
                        namespaces, to the whole cluster, where no other namespace has pods), and the
                        DefaultEvictor's defaults

The Descheduler is the real binary, pinned in tests/cluster/gobuild/descheduler and
built on first use, run for one pass (--descheduling-interval 0), as its
CronJob runs it. After each tool the benchmark waits until every Deployment
has all its replicas Ready and no pod is Terminating or Pending.

Measured from the cluster, not from the tools: evictions (the scenario's pods
that are gone), the pods on the added nodes after (all of them replacements:
the added nodes start empty), replacements that landed back on the node a pod
of the same Deployment was evicted from, the final max skew (pods per node
over the nodes that can take the pod, or per zone for zone spread; max over
Deployments) and the max minus min of all the scenario's pods per node, the
PDBs whose minimum was crossed (the fewest Ready pods a DisruptionWatcher saw,
until settled; scenarios with PDBs only), the tool's wall time and the time
until settled (the Descheduler exits as soon as its evictions are accepted),
whether all replicas were Ready in the end, and the API server's
apiserver_request_total (from its /metrics; Events and the /metrics reads
left out) over the tool's run and until settled, the eviction requests and
how many were answered 429. Those counts include every client: the tool, the
controllers' answer, kwok's heartbeats and the watcher; --idle measures that
background in an idle window before each run, and "net" is the count until
settled less that rate times the time until settled. The tool's own requests
are those of its User-Agent (kubeops.rotation, the Descheduler's
descheduler-<version>/...) in the API server's audit log over its run, Events
excluded, and per pod moved (evicted).

On "node tainted" and "node relabelled" the table has the rules' measures
instead of the spread's: the pods that break a rule where they run, before and
after (a NoSchedule taint of their node they do not tolerate, or a nodeSelector
or required node affinity their node does not match; read from the pods and
the nodes), and the replacements that landed badly: on a node a pod of the
same Deployment was evicted from, or on a node where they break a rule. On
"anti-affinity broken" the rule is a required hostname pod anti-affinity: a
pod breaks it where a pod of its namespace that it selects runs beside it.

On "under-used nodes" the table has the compaction's measures: the nodes used
below the threshold before (the most used of cpu, memory and pods, by
requests, in percent of allocatable), the empty nodes (running no pod but
DaemonSet and static ones) before and after, how many nodes an autoscaler
could remove after the best compaction (simulated on the nodes before, as
cluster-autoscaler's scale-down does: the emptiest first, each whose pods fit
on the nodes that stay), the replacements that landed back on a node used
below the threshold (one being emptied), and the pods moved twice (a
replacement evicted again, as the watcher saw it). The local kube-scheduler
scores nodes as shipped (NodeResourcesFit LeastAllocated): it places a
replacement on the emptiest node that takes it, where the Descheduler's docs
ask HighNodeUtilization's users to switch it to MostAllocated. The benchmark
leaves it as it is and measures what each tool does with it: ours taints the
nodes it empties NoSchedule while it moves their pods (steered only).

With --trials above 1, medians. The run fails (exit 1) when a tool failed,
replicas were not all Ready in the end, our rebalance evicted nothing or
left the new node empty on "node replaced", our rebalance (steered or not)
left a pod breaking a rule or moved a pod twice, or our steered rebalance
emptied no node on "under-used nodes". --quick (only "node replaced" at
its small size, 1 trial, all tools but "rebalance, no taint", no idle window)
is a smoke run. Results go to .cache/bench-rebalance.json (--quick
.cache/bench-rebalance-quick.json), the tools' logs beside it. Run with
`make bench`.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import yaml
from kubernetes.utils import parse_quantity

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TESTS, "cluster"))
sys.path.insert(0, os.path.join(TESTS, "integration"))

import cluster as local_cluster  # noqa: E402
from bench_cluster import ClusterBench, fmt, median, request_summary  # noqa: E402
from ansible_run import REPO, run_collection_playbook  # noqa: E402
from fakenodes import fake_node  # noqa: E402
from kube import PAUSE, DisruptionWatcher, deployment, is_ready, pdb  # noqa: E402
from side_by_side import DESCHEDULER_AGENT, OURS_AGENT, measured, per_moved_pod, trial_order  # noqa: E402

RESULTS = os.path.join(REPO, ".cache", "bench-rebalance.json")
QUICK_RESULTS = os.path.join(REPO, ".cache", "bench-rebalance-quick.json")
LOGS = os.path.join(REPO, ".cache", "bench-rebalance-logs")
BENCH_LABEL = "kubeops.io/bench"
POOL_LABEL = "kubeops.io/bench-pool"
ZONE_LABEL = "topology.kubernetes.io/zone"
HOSTNAME_LABEL = "kubernetes.io/hostname"
REBALANCE = "kubeops rebalance"
UNSTEERED = "rebalance, no taint"
DESCHEDULER = "descheduler"
ARTICLE = "descheduler, article"
# The unsteered pass shows what the steering taint itself is worth.
TOOLS = (REBALANCE, ARTICLE, DESCHEDULER, UNSTEERED)
QUICK_TOOLS = (REBALANCE, ARTICLE, DESCHEDULER)
TOOL_IDS = {REBALANCE: "rebal", DESCHEDULER: "desched", UNSTEERED: "unsteered", ARTICLE: "article"}
AGENTS = {REBALANCE: OURS_AGENT, UNSTEERED: OURS_AGENT, DESCHEDULER: DESCHEDULER_AGENT, ARTICLE: DESCHEDULER_AGENT}
# The article's policy (RemoveDuplicates) has no plugin for a rule broken under the pods, nor for under-used nodes.
WITHOUT_ARTICLE = (REBALANCE, DESCHEDULER, UNSTEERED)
SETTLE_TIMEOUT = 180
NODE_REPLACED = "node replaced"
UNDER_USED = "under-used nodes"
TIER_LABEL = "tier"
GPU_TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
NOISY = {"role": "noisy"}
# Below it a node is under-used: our compaction_threshold (the most used of cpu, memory and pods below it) and the
# Descheduler's thresholds (each of them below it), the same nodes.
UNDER_USED_PERCENT = 30
RESOURCES = ("cpu", "memory", "pods")
# HighNodeUtilization takes evictableNamespaces, which only excludes: it runs on the whole cluster, where the
# scenario's namespace is the only one with pods.
WHOLE_CLUSTER_PLUGINS = {"HighNodeUtilization"}
# What the tools do where a scenario says nothing: our strategies, and the Descheduler's plugins by extension
# point with their args (each limited to the scenario's namespace).
SPREAD_STRATEGIES = ["duplicates", "topology_spread"]
SPREAD_PLUGINS = {"balance": {"RemoveDuplicates": {}, "RemovePodsViolatingTopologySpreadConstraint": {}}}


def match_expressions(labels):
    """A node selector term's expressions for nodes with ``labels``."""
    return [{"key": key, "operator": "In", "values": [value]} for key, value in labels.items()]


def preferring(labels):
    """A preferred (soft) node affinity for nodes with ``labels``, such as "on-demand first"."""
    return {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
        "weight": 100, "preference": {"matchExpressions": match_expressions(labels)}}]}}


def requiring(labels):
    """A required node affinity for nodes with ``labels``."""
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": match_expressions(labels)}]}}}


def avoiding(labels):
    """A required pod anti-affinity: never on a node with a pod labelled ``labels``."""
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": HOSTNAME_LABEL, "labelSelector": {"matchLabels": labels}}]}}


def requesting(cpu, memory):
    """A pod template's container requesting ``cpu`` and ``memory``, for pods larger than the default ones."""
    return [{"name": "app", "image": PAUSE, "resources": {"requests": {"cpu": cpu, "memory": memory}}}]


# first: the zones of the nodes the pods start on; replaced: how many of the first nodes are drained and deleted
# once the pods run; added: the zones of the nodes that join before the tool runs, with their capacity;
# pdb_max_unavailable: a PDB per Deployment; node_labels: on every node of the scenario; first_labels: on each first
# node (in the order of first); start_on: labels of the first nodes a Deployment's pods start on (the other first
# nodes cordoned meanwhile, the Deployments then made one at a time; all first nodes without it); pod_spec: what
# each Deployment's pod template adds; node_change: a patch of the first node once the pods run, before the added
# nodes join (a taint or a label that breaks a rule of pods on it); pod_change: then, a patch ("patch") of the pods
# of Deployment "app" on the first "nodes" first nodes (a label that another pod's anti-affinity excludes);
# compaction_threshold: the tools empty the nodes used below it (in percent), measured by the nodes emptied;
# strategies, descheduler_plugins, tools: as in SPREAD_STRATEGIES, SPREAD_PLUGINS and TOOLS. All plain data: the
# results' JSON holds them.
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
                           "preferred_label": {POOL_LABEL: "first"}},
    NODE_REPLACED: {"first": ("zone-a", "zone-b", "zone-c") * 2, "replaced": 1, "added": ("zone-a",),
                    "added_capacity": None, "apps": {"web": 12, "api": 12, "worker": 12}, "zone_spread": False,
                    "pdb_max_unavailable": 1},
    "node tainted": {"first": ("zone-a", "zone-b", "zone-c"), "added": ("zone-a",), "added_capacity": None,
                     "apps": {"web": 6, "api": 6, "gpu": 6}, "zone_spread": False, "pdb_max_unavailable": 1,
                     "pod_spec": {"gpu": {"tolerations": [dict(GPU_TAINT, operator="Equal")]}},
                     "node_change": {"spec": {"taints": [GPU_TAINT]}}, "strategies": ["node_taints"],
                     "descheduler_plugins": {"deschedule": {"RemovePodsViolatingNodeTaints": {}}},
                     "tools": WITHOUT_ARTICLE},
    "node relabelled": {"first": ("zone-a", "zone-b", "zone-c"), "added": ("zone-a",), "added_capacity": None,
                        "apps": {"web": 6, "api": 6}, "zone_spread": False, "pdb_max_unavailable": 1,
                        "node_labels": {TIER_LABEL: "web"},
                        "pod_spec": {app: {"affinity": requiring({TIER_LABEL: "web"})} for app in ("web", "api")},
                        "node_change": {"metadata": {"labels": {TIER_LABEL: "batch"}}},
                        "strategies": ["node_affinity"],
                        "descheduler_plugins": {"deschedule": {"RemovePodsViolatingNodeAffinity": {
                            "nodeAffinityType": ["requiredDuringSchedulingIgnoredDuringExecution"]}}},
                        "tools": WITHOUT_ARTICLE},
    "anti-affinity broken": {"first": ("zone-a", "zone-b", "zone-c", "zone-a"), "added": ("zone-b",),
                             "added_capacity": None, "apps": {"shy": 4, "batch": 8}, "zone_spread": False,
                             "pdb_max_unavailable": 1, "pod_spec": {"shy": {"affinity": avoiding(NOISY)}},
                             "pod_change": {"app": "batch", "nodes": 2, "patch": {"metadata": {"labels": NOISY}}},
                             "strategies": ["pod_anti_affinity"],
                             "descheduler_plugins": {"deschedule": {"RemovePodsViolatingInterPodAntiAffinity": {}}},
                             "tools": WITHOUT_ARTICLE},
    UNDER_USED: {"first": ("zone-a", "zone-b", "zone-c") * 2, "added": (), "added_capacity": None,
                 "apps": {"big": 6, "small": 6}, "zone_spread": False, "pdb_max_unavailable": 1,
                 "first_labels": ({POOL_LABEL: "big"},) * 3 + ({POOL_LABEL: "small"},) * 3,
                 "start_on": {"big": {POOL_LABEL: "big"}, "small": {POOL_LABEL: "small"}},
                 "pod_spec": {"big": {"containers": requesting("1500m", "4Gi"),
                                      "affinity": requiring({POOL_LABEL: "big"})}},
                 "compaction_threshold": UNDER_USED_PERCENT, "strategies": ["compaction"],
                 "descheduler_plugins": {"balance": {"HighNodeUtilization": {
                     "thresholds": dict.fromkeys(RESOURCES, UNDER_USED_PERCENT)}}},
                 "tools": WITHOUT_ARTICLE},
}
# --quick: the node replaced at its smallest, 3 nodes and 2 Deployments of 2 pods per node.
QUICK_SCENARIOS = {
    NODE_REPLACED: dict(SCENARIOS[NODE_REPLACED], first=("zone-a", "zone-b", "zone-c"), apps={"web": 6, "api": 6}),
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


def article_policy():
    """The article's DeschedulerPolicy (Descheduler 0.26.1, the ConfigMap of its 5-minute CronJob), as written.

    descheduler/v1alpha2, which the pinned Descheduler still reads: RemoveDuplicates with its defaults at the
    balance extension point, the DefaultEvictor with the article's evictSystemCriticalPods and evictLocalStoragePods
    (deprecated, still honoured), no namespace limit: the whole cluster, where the scenario's namespace is the only
    one with pods. The Descheduler enables the DefaultEvictor at filter and preEvictionFilter by itself.
    """
    return {
        "apiVersion": "descheduler/v1alpha2",
        "kind": "DeschedulerPolicy",
        "profiles": [{
            "name": "ProfileName",
            "pluginConfig": [
                {"name": "RemoveDuplicates"},
                {"name": "DefaultEvictor", "args": {"evictSystemCriticalPods": True, "evictLocalStoragePods": True}},
            ],
            "plugins": {"balance": {"enabled": ["RemoveDuplicates"]}},
        }],
    }


def descheduler_policy(namespace, plugins):
    """One profile: ``plugins`` ({extension point: {plugin: args}}) limited to the scenario's namespace (but
    WHOLE_CLUSTER_PLUGINS), the DefaultEvictor as shipped."""
    return {
        "apiVersion": "descheduler/v1alpha2",
        "kind": "DeschedulerPolicy",
        "profiles": [{
            "name": "rebalance",
            "pluginConfig": [{"name": "DefaultEvictor", "args": {"nodeFit": False}}] + [
                {"name": name, "args": args if name in WHOLE_CLUSTER_PLUGINS else dict(
                    args, namespaces={"include": [namespace]})}
                for by_name in plugins.values() for name, args in by_name.items()],
            "plugins": dict({"filter": {"enabled": ["DefaultEvictor"]},
                             "preevictionfilter": {"enabled": ["DefaultEvictor"]}},
                            **{point: {"enabled": list(by_name)} for point, by_name in plugins.items()}),
        }],
    }


def zone_spread_deployment(name, replicas, node_selector):
    manifest = deployment(name, replicas, node_selector)
    manifest["spec"]["template"]["spec"]["topologySpreadConstraints"] = [{
        "maxSkew": 1, "topologyKey": ZONE_LABEL, "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": name}}}]
    return manifest


def breaks_rules(spec):
    """Whether a node or a pod changes under the pods of the scenario: the tools are measured by the pods that break
    their rules, rather than by the spread."""
    return "node_change" in spec or "pod_change" in spec


def compacts(spec):
    """Whether the tools empty the under-used nodes of the scenario: they are measured by the nodes emptied."""
    return "compaction_threshold" in spec


class Scenario:
    """One scenario built for one tool: its namespace, its nodes, and the nodes its pods can go to."""

    def __init__(self, name, spec, scenario_id):
        self.name = name
        self.spec = spec
        self.id = scenario_id
        self.first_nodes = {"%s-%d" % (scenario_id, index): zone for index, zone in enumerate(spec["first"])}
        self.replaced_nodes = list(self.first_nodes)[:spec.get("replaced", 0)]
        self.added_nodes = {"%s-%d" % (scenario_id, index): zone
                            for index, zone in enumerate(spec["added"], start=len(self.first_nodes))}
        self.zones = dict(self.first_nodes, **self.added_nodes)
        pinned = dict(spec.get("node_labels", {}), **{BENCH_LABEL: scenario_id})
        first_labels = spec.get("first_labels", ({},) * len(self.first_nodes))
        preferred = spec.get("preferred_label", {})
        self.node_labels = {node: {**pinned, **labels, **preferred}
                            for node, labels in zip(self.first_nodes, first_labels)}
        self.node_labels.update(dict.fromkeys(self.added_nodes, pinned))
        start_on = spec.get("start_on", {})
        self.start_nodes = {app: [node for node in self.first_nodes if start_on.get(app, {}).items()
                                  <= self.node_labels[node].items()] for app in spec["apps"]}
        hosting = self.zones if spec["added_capacity"] is None else self.first_nodes
        self.hosting_nodes = {node: zone for node, zone in hosting.items() if node not in self.replaced_nodes}
        max_unavailable = spec.get("pdb_max_unavailable")
        # The fewest Ready pods each Deployment's PDB allows, when it has one.
        self.pdb_min_ready = {} if max_unavailable is None else {
            app: replicas - max_unavailable for app, replicas in spec["apps"].items()}
        self.breaks_rules = breaks_rules(spec)
        self.changed_node = next(iter(self.first_nodes)) if "node_change" in spec else None
        pod_change = spec.get("pod_change")
        self.changed_pods_nodes = list(self.first_nodes)[:pod_change["nodes"]] if pod_change else []
        self.compaction_threshold = spec.get("compaction_threshold")
        self.strategies = spec.get("strategies", SPREAD_STRATEGIES)
        self.descheduler_plugins = spec.get("descheduler_plugins", SPREAD_PLUGINS)

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

    def node_spread(self, placement, nodes):
        """Max minus min of all the scenario's pods per node of ``nodes``."""
        counts = dict.fromkeys(nodes, 0)
        for by_node in placement.values():
            for node, count in by_node.items():
                if node in counts:
                    counts[node] += count
        return max(counts.values()) - min(counts.values())


class Bench(ClusterBench):
    def build(self, scenario):
        """Namespace, first nodes, Deployments evenly spread (over the nodes they start on) and Ready, the replaced
        nodes drained and deleted, the first node or some pods changed, then the added nodes."""
        namespace = scenario.id
        self.core.create_namespace({"metadata": {"name": namespace}})
        self.wait(lambda: self._service_account(namespace), "the namespace's service account")
        pinned = {BENCH_LABEL: scenario.id}
        preferred = scenario.spec.get("preferred_label")
        self._create_nodes(scenario.first_nodes, scenario.node_labels, None)
        make = zone_spread_deployment if scenario.spec["zone_spread"] else deployment
        created = []
        for app, replicas in scenario.spec["apps"].items():
            manifest = make(app, replicas, pinned)
            if preferred:
                manifest["spec"]["template"]["spec"]["affinity"] = preferring(preferred)
            manifest["spec"]["template"]["spec"].update(scenario.spec.get("pod_spec", {}).get(app, {}))
            closed = [node for node in scenario.first_nodes if node not in scenario.start_nodes[app]]
            if closed:  # the Deployments before it run first, so that the scheduler places its pods alone
                self.wait(lambda: self.settled(scenario, created), "the Deployments of %s to be Ready" % namespace)
                self._cordon(closed, True)
            self.apps.create_namespaced_deployment(namespace, manifest)
            created.append(app)
            if closed:
                self.wait(lambda: self.settled(scenario, created), "%s of %s to be Ready" % (app, namespace))
                self._cordon(closed, False)
                self.wait(lambda: all(self._schedulable(name) for name in closed),
                          "nodes %s to take pods again" % ", ".join(closed))
        self.wait(lambda: self.settled(scenario), "the Deployments of %s to be Ready" % namespace)
        first = placement(self.snapshot(namespace))
        if any(scenario.skew({app: first.get(app, {})}, nodes) for app, nodes in scenario.start_nodes.items()):
            raise RuntimeError("the scheduler did not spread %s evenly: %s" % (namespace, first))
        if scenario.replaced_nodes:
            self._retire(scenario)
        # The PDBs come once the node is replaced: under them, the drain would wait 5 s per 429.
        for app in scenario.pdb_min_ready:
            self.policy.create_namespaced_pod_disruption_budget(namespace, pdb(
                app, {"app": app}, max_unavailable=scenario.spec["pdb_max_unavailable"]))
        self.wait(lambda: all(self._pdb_processed(namespace, app) for app in scenario.pdb_min_ready),
                  "the disruption controller to process the PDBs of %s" % namespace)
        if scenario.changed_node:
            self.core.patch_node(scenario.changed_node, scenario.spec["node_change"])
        if scenario.changed_pods_nodes:
            change = scenario.spec["pod_change"]
            for pod in self.pods(namespace, "app=%s" % change["app"]):
                if pod.spec.node_name in scenario.changed_pods_nodes:
                    self.core.patch_namespaced_pod(pod.metadata.name, namespace, change["patch"])
        if scenario.breaks_rules and not self.breaking_rules(scenario):
            raise RuntimeError("no pod of %s breaks a rule after the change" % namespace)
        if scenario.compaction_threshold and not under_used(self.node_pods(scenario), scenario.compaction_threshold):
            raise RuntimeError("no node of %s is used below %d%%" % (namespace, scenario.compaction_threshold))
        self._create_nodes(scenario.added_nodes, scenario.node_labels, scenario.spec["added_capacity"])

    def _pdb_processed(self, namespace, name):
        """The disruption controller has computed the PDB's status (the Eviction API answers 429 until it has)."""
        budget = self.policy.read_namespaced_pod_disruption_budget(name, namespace)
        return budget.status is not None and budget.status.observed_generation == budget.metadata.generation \
            and (budget.status.disruptions_allowed or 0) > 0

    def _retire(self, scenario):
        """Drain the replaced nodes as an operator or an autoscaler does (kubectl drain: cordon, evictions), wait
        until their pods run elsewhere, and delete them."""
        command = [local_cluster.binary("kubectl"), "--kubeconfig", self.kubeconfig,
                   "--cache-dir", os.path.join(self.work_dir, "kubectl-cache"), "drain", *scenario.replaced_nodes,
                   "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=120s"]
        drained = subprocess.run(command, capture_output=True, text=True, timeout=180, check=False)
        if drained.returncode != 0:
            raise RuntimeError("kubectl drain %s failed (rc %d): %s" % (
                " ".join(scenario.replaced_nodes), drained.returncode, (drained.stderr or drained.stdout).strip()))
        self.wait(lambda: self.settled(scenario), "the pods of %s to run on the other nodes" % scenario.id)
        for name in scenario.replaced_nodes:
            self.core.delete_node(name)
        self.wait(lambda: not set(scenario.replaced_nodes) & self._node_names(scenario),
                  "nodes %s to be deleted" % ", ".join(scenario.replaced_nodes))

    def _node_names(self, scenario):
        return {node.metadata.name for node in self.core.list_node(
            label_selector="%s=%s" % (BENCH_LABEL, scenario.id)).items}

    def _create_nodes(self, zones, labels, capacity):
        """Create the nodes (``labels``: by node) and wait until they take pods: kwok made them Ready, and the node
        lifecycle controller removed its not-ready taint (which the Descheduler and the scheduler both honour)."""
        for name, zone in zones.items():
            self.core.create_node(fake_node(name, dict(labels[name], **{ZONE_LABEL: zone}), capacity=capacity))
        self.wait(lambda: all(self._schedulable(name) for name in zones), "nodes %s to take pods" % ", ".join(zones))

    def _cordon(self, names, cordoned):
        for name in names:
            self.core.patch_node(name, {"spec": {"unschedulable": cordoned or None}})

    def _schedulable(self, name):
        node = self.core.read_node(name)
        ready = any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or [])
        return ready and not node.spec.taints

    def _service_account(self, namespace):
        return any(sa.metadata.name == "default" for sa in self.core.list_namespaced_service_account(namespace).items)

    def settled(self, scenario, apps=None):
        """Every Deployment (of ``apps``, by default all) has all its replicas Ready, and no pod is Terminating or
        Pending."""
        pods = self.pods(scenario.id)
        if any(pod.metadata.deletion_timestamp or pod.status.phase == "Pending" for pod in pods):
            return False
        ready = collections.Counter(pod.metadata.labels["app"] for pod in pods if is_ready(pod))
        return all(ready[app] == scenario.spec["apps"][app] for app in scenario.spec["apps"] if apps is None
                   or app in apps)

    def snapshot(self, namespace):
        """{pod uid: (app, node)} of the pods not Terminating."""
        return {pod.metadata.uid: (pod.metadata.labels["app"], pod.spec.node_name)
                for pod in self.pods(namespace) if not pod.metadata.deletion_timestamp}

    def breaking_rules(self, scenario):
        """The uids of the scenario's pods (not Terminating) that break a rule on the node they run on: of the node,
        or an anti-affinity against a pod of the scenario beside them."""
        nodes = {node.metadata.name: node for node in self.core.list_node(
            label_selector="%s=%s" % (BENCH_LABEL, scenario.id)).items}
        pods = [pod for pod in self.pods(scenario.id)
                if not pod.metadata.deletion_timestamp and pod.spec.node_name in nodes]
        beside = collections.defaultdict(list)
        for pod in pods:
            beside[pod.spec.node_name].append(pod)
        return {pod.metadata.uid for pod in pods if breaks_rule(pod, nodes[pod.spec.node_name])
                or breaks_anti_affinity(pod, beside[pod.spec.node_name])}

    def node_pods(self, scenario):
        """{node: (the node, the pods on it)} of the scenario's nodes: the pods of all namespaces, not Terminating."""
        nodes = {node.metadata.name: (node, []) for node in self.core.list_node(
            label_selector="%s=%s" % (BENCH_LABEL, scenario.id)).items}
        for pod in self.core.list_pod_for_all_namespaces().items:
            if pod.spec.node_name in nodes and not pod.metadata.deletion_timestamp:
                nodes[pod.spec.node_name][1].append(pod)
        return nodes

    def remove(self, scenario):
        """Delete the scenario and wait until it is gone, so that the next one runs on a cluster without it.

        Pods first: a pod whose node is deleted first waits for the pod garbage collector (about a minute).
        """
        self.core.delete_namespace(scenario.id)
        self.wait(lambda: not self.pods(scenario.id), "the pods of %s to be deleted" % scenario.id)
        for name in self._node_names(scenario):
            self.core.delete_node(name)
        self.wait(lambda: scenario.id not in {ns.metadata.name for ns in self.core.list_namespace().items},
                  "namespace %s to be deleted" % scenario.id)

    # The contenders: each returns the completed process and writes its output to the log.

    def rebalance(self, scenario, log_path, steering="PreferNoSchedule"):
        variables = {"kubeops_kubeconfig": self.kubeconfig, "rebalance_namespaces": [scenario.id],
                     "rebalance_strategies": scenario.strategies, "rebalance_steering": steering}
        if scenario.compaction_threshold:
            variables["rebalance_compaction_threshold"] = scenario.compaction_threshold
        completed = run_collection_playbook("kubeops.rotation.rebalance", variables, self.work_dir)
        with open(log_path, "w") as handle:
            handle.write(completed.stdout + completed.stderr)
        return completed

    def descheduler(self, scenario, log_path, policy):
        """One pass of the Descheduler with ``policy``, as its CronJob's Job runs it (--descheduling-interval 0)."""
        policy_path = os.path.join(self.work_dir, "descheduler-policy-%s.yaml" % scenario.id)
        with open(policy_path, "w") as handle:
            yaml.safe_dump(policy, handle, sort_keys=False)
        command = [descheduler_binary(), "--kubeconfig", self.kubeconfig, "--policy-config-file", policy_path,
                   "--descheduling-interval=0", "--leader-elect=false", "--secure-port=0", "--v=4"]
        with open(log_path, "w") as log:
            return subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, timeout=600, check=False)


def logged_evictions(log_path):
    """The Descheduler's "Evicted pod" lines by strategy."""
    with open(log_path) as log:
        return dict(collections.Counter(re.findall(r'"Evicted pod" .*strategy="([^"]+)"', log.read())))


# The node selector operators, as the scheduler reads them: a label's value (None when missing) against the values.
SELECTOR_OPERATORS = {
    "In": lambda value, values: value in values,
    "NotIn": lambda value, values: value not in values,
    "Exists": lambda value, values: value is not None,
    "DoesNotExist": lambda value, values: value is None,
}


def breaks_rule(pod, node):
    """Whether ``pod`` breaks a rule on ``node``: a NoSchedule taint it does not tolerate, or a nodeSelector or a
    required node affinity the node does not match (the rules a taint or a label added after it landed breaks)."""
    untolerated = any(taint.effect == "NoSchedule" and not any(
        tolerates(toleration, taint) for toleration in pod.spec.tolerations or []) for taint in node.spec.taints or [])
    return untolerated or not matches_node(pod, node)


def tolerates(toleration, taint):
    """As the scheduler's ToleratesTaint: an empty key (with Exists) matches every key, an empty effect every
    effect."""
    if (toleration.effect and toleration.effect != taint.effect) or (toleration.key and toleration.key != taint.key):
        return False
    return toleration.operator == "Exists" or (toleration.value or "") == (taint.value or "")


def matches_node(pod, node):
    """The node's labels match the pod's nodeSelector, and one term of its required node affinity (all of the term's
    matchExpressions; the benchmark's pods have no matchFields)."""
    labels = node.metadata.labels or {}
    if any(labels.get(key) != value for key, value in (pod.spec.node_selector or {}).items()):
        return False
    node_affinity = pod.spec.affinity and pod.spec.affinity.node_affinity
    required = node_affinity and node_affinity.required_during_scheduling_ignored_during_execution
    return not required or any(
        all(SELECTOR_OPERATORS[expression.operator](labels.get(expression.key), expression.values or [])
            for expression in term.match_expressions or []) for term in required.node_selector_terms)


def breaks_anti_affinity(pod, beside):
    """Whether one of ``beside`` (the pods on its node, of its own namespace) is a pod that ``pod``'s required
    hostname pod anti-affinity selects (other topology keys: the benchmark's pods have none)."""
    anti_affinity = pod.spec.affinity and pod.spec.affinity.pod_anti_affinity
    terms = [term for term in (anti_affinity and anti_affinity.required_during_scheduling_ignored_during_execution)
             or [] if term.topology_key == HOSTNAME_LABEL]
    return any(selects(term.label_selector, other.metadata.labels or {}) for term in terms for other in beside
               if other.metadata.uid != pod.metadata.uid)


def selects(selector, labels):
    """Whether a label selector selects ``labels`` (no selector selects nothing, as in a pod affinity term)."""
    if selector is None:
        return False
    return all(labels.get(key) == value for key, value in (selector.match_labels or {}).items()) and all(
        SELECTOR_OPERATORS[expression.operator](labels.get(expression.key), expression.values or [])
        for expression in selector.match_expressions or [])


def goes_with_its_node(pod):
    """DaemonSet and static pods: a node that runs only those is empty, and an autoscaler removes it with them."""
    return any(owner.kind in ("DaemonSet", "Node") for owner in pod.metadata.owner_references or [])


def requests(pod):
    """{resource: what the pod requests} of RESOURCES (cpu in cores, memory in bytes)."""
    asked = {name: sum(parse_quantity(((container.resources and container.resources.requests) or {}).get(name, 0))
                       for container in pod.spec.containers) for name in ("cpu", "memory")}
    return dict(asked, pods=1)


def free(node, pods):
    """{resource: what is left of ``node``'s allocatable} once ``pods`` run there."""
    allocatable = node.status.allocatable
    return {name: parse_quantity(allocatable[name]) - sum(requests(pod)[name] for pod in pods) for name in RESOURCES}


def utilization(node, pods):
    """The most used of cpu, memory and pods on ``node`` running ``pods``, in percent of its allocatable."""
    left = free(node, pods)
    return max(100 * (1 - left[name] / parse_quantity(node.status.allocatable[name])) for name in RESOURCES)


def under_used(node_pods, threshold):
    """The nodes of ``node_pods`` ({node: (the node, its pods)}) used below ``threshold`` percent."""
    return {name for name, (node, pods) in node_pods.items() if utilization(node, pods) < threshold}


def empty_nodes(node_pods):
    """The nodes that run nothing but pods that go with their node: what an autoscaler removes at once."""
    return {name for name, (_node, pods) in node_pods.items() if all(goes_with_its_node(pod) for pod in pods)}


def removable_nodes(node_pods):
    """How many nodes an autoscaler's scale-down could remove, simulated as cluster-autoscaler does: the emptiest
    first, each whose pods (but those that go with it) all fit, by their requests and the node's taints and labels,
    on the nodes that stay (the fullest first)."""
    room = {name: free(node, pods) for name, (node, pods) in node_pods.items()}
    by_use = sorted(node_pods, key=lambda name: utilization(*node_pods[name]))
    removed = set()
    for name in by_use:
        staying = {other: dict(room[other]) for other in reversed(by_use) if other != name and other not in removed}
        leaving = sorted((pod for pod in node_pods[name][1] if not goes_with_its_node(pod)),
                         key=lambda pod: -requests(pod)["cpu"])
        if all(fits_somewhere(pod, staying, node_pods) for pod in leaving):
            removed.add(name)
            room.update(staying)
    return len(removed)


def fits_somewhere(pod, room, node_pods):
    """Put ``pod`` on the first node of ``room`` ({node: what is left}, updated) that takes it; whether one did."""
    asked = requests(pod)
    target = next((name for name, left in room.items() if all(asked[key] <= left[key] for key in RESOURCES)
                   and not breaks_rule(pod, node_pods[name][0])), None)
    if target is not None:
        room[target] = {key: room[target][key] - asked[key] for key in RESOURCES}
    return target is not None


def placement(snapshot):
    """{app: {node: pods}}"""
    by_app = collections.defaultdict(collections.Counter)
    for app, node in snapshot.values():
        by_app[app][node] += 1
    return {app: dict(nodes) for app, nodes in by_app.items()}


def measure(scenario, before, after, breaking_before, breaking_after):
    """Evictions, where the replacements went (the added nodes, back onto the node a pod of the same Deployment
    was evicted from, or where they break a rule), the skew before and after, and the pods breaking a rule before
    and after (``breaking_before``, ``breaking_after``: their uids)."""
    evicted = collections.Counter(before[uid] for uid in before.keys() - after.keys())
    replacements = collections.Counter(after[uid] for uid in after.keys() - before.keys())
    placed_before, placed_after = placement(before), placement(after)
    return {
        "evictions": sum(evicted.values()),
        "on_new_nodes": sum(1 for _app, node in after.values() if node in scenario.added_nodes),
        "back_on_old_node": sum(min(count, replacements[app_node]) for app_node, count in evicted.items()),
        "rule_violations_before": len(breaking_before),
        "rule_violations_after": len(breaking_after),
        # Each such replacement counts, not matched to the evictions one for one as back_on_old_node.
        "landed_badly": sum(1 for uid in after.keys() - before.keys()
                            if after[uid] in evicted or uid in breaking_after),
        "skew_before": scenario.skew(placed_before, scenario.hosting_nodes),
        "final_max_skew": scenario.skew(placed_after, scenario.hosting_nodes),
        "node_spread_before": scenario.node_spread(placed_before, scenario.hosting_nodes),
        "node_spread": scenario.node_spread(placed_after, scenario.hosting_nodes),
        "placement_before": placed_before,
        "placement_after": placed_after,
    }


def measure_compaction(scenario, before, after, node_pods_before, node_pods_after):
    """The nodes used below the threshold (being emptied) and the empty nodes before, the empty nodes after, how
    many nodes the pods leave an autoscaler to remove (before: what the best compaction could free), and the
    replacements that landed on a node being emptied (``node_pods_*``: Bench.node_pods)."""
    emptying = under_used(node_pods_before, scenario.compaction_threshold)
    return {
        "under_used_before": len(emptying),
        "empty_before": len(empty_nodes(node_pods_before)),
        "empty_after": len(empty_nodes(node_pods_after)),
        "removable_nodes": removable_nodes(node_pods_before),
        "back_on_under_used": sum(1 for uid in after.keys() - before.keys() if after[uid][1] in emptying),
    }


def run_tool(bench, scenario, tool, log_path):
    if tool == DESCHEDULER:
        return bench.descheduler(scenario, log_path, descheduler_policy(scenario.id, scenario.descheduler_plugins))
    if tool == ARTICLE:
        return bench.descheduler(scenario, log_path, article_policy())
    return bench.rebalance(scenario, log_path, "none" if tool == UNSTEERED else "PreferNoSchedule")


def run_once(bench, name, spec, tool, trial, idle):
    scenario_id = "%s-%s-%d" % (name.replace(" ", "-"), TOOL_IDS[tool], trial)
    scenario = Scenario(name, spec, scenario_id)
    build_started = time.monotonic()
    bench.build(scenario)
    build_seconds = time.monotonic() - build_started
    before = bench.snapshot(scenario.id)
    breaking_before = bench.breaking_rules(scenario)
    node_pods_before = bench.node_pods(scenario) if scenario.compaction_threshold else None
    log_path = os.path.join(LOGS, scenario.id + ".log")
    problems = []
    with DisruptionWatcher(bench, scenario.id) as watcher:
        completed, started, result = measured(bench, lambda: run_tool(bench, scenario, tool, log_path), idle,
                                              AGENTS[tool])
        ran = bench.request_counts()
        if completed.returncode != 0:
            problems.append("exited %d" % completed.returncode)
        try:
            bench.wait(lambda: bench.settled(scenario), "%s to settle" % scenario.id, timeout=SETTLE_TIMEOUT)
            all_ready = True
        except RuntimeError:
            all_ready = False
            problems.append("replicas not all Ready %d s after the tool" % SETTLE_TIMEOUT)
        until_settled = time.monotonic() - started
        settling = request_summary(ran, bench.request_counts())
    after = bench.snapshot(scenario.id)
    result.update(measure(scenario, before, after, breaking_before, bench.breaking_rules(scenario)),
                  all_ready=all_ready, until_settled=until_settled, log=log_path)
    if scenario.compaction_threshold:
        # A pod moved twice: a replacement evicted again, as the watcher saw it come and go.
        result.update(measure_compaction(scenario, before, after, node_pods_before, bench.node_pods(scenario)),
                      moved_twice=sum(watcher.churned.values()))
    result["own_requests_per_moved_pod"] = per_moved_pod(result.get("own_requests"), result["evictions"])
    # The tool's run and what followed until settled: the controllers' answer to the Descheduler comes after it.
    for key in ("requests", "eviction_requests", "evictions_429"):
        result[key + "_until_settled"] = result[key] + settling[key]
    background = result["background_per_s"]
    result["net_requests_until_settled"] = None if background is None else \
        result["requests_until_settled"] - background * until_settled
    if tool in (DESCHEDULER, ARTICLE):
        result["logged_evictions"] = logged_evictions(log_path)
    result["min_ready"] = {app: watcher.min_ready.get(app) for app in spec["apps"]}
    result["violations"] = sum(1 for app, least in scenario.pdb_min_ready.items()
                               if watcher.min_ready.get(app, least) < least) if scenario.pdb_min_ready else None
    if tool == REBALANCE and scenario.replaced_nodes:
        if not result["evictions"]:
            problems.append("evicted nothing after a node was replaced")
        if not result["on_new_nodes"]:
            problems.append("left the new node empty")
    if tool in (REBALANCE, UNSTEERED) and result["rule_violations_after"]:
        problems.append("left %d pod(s) breaking a rule" % result["rule_violations_after"])
    # Unsteered, the nodes it empties are not tainted either: the scheduler (LeastAllocated) may put every pod back.
    if tool == REBALANCE and scenario.compaction_threshold and result["empty_after"] <= result["empty_before"]:
        problems.append("emptied no node")
    if tool in (REBALANCE, UNSTEERED) and scenario.compaction_threshold and result["moved_twice"]:
        problems.append("moved %d pod(s) twice" % result["moved_twice"])
    result.update(problems=problems, build_seconds=build_seconds)
    return scenario, result


def summary(runs):
    """The one run, or the medians of several; violations and failures over all of them."""
    keys = ("evictions", "on_new_nodes", "back_on_old_node", "skew_before", "final_max_skew", "node_spread_before",
            "node_spread", "wall", "until_settled", "requests", "requests_until_settled", "net_requests_until_settled",
            "eviction_requests_until_settled", "evictions_429_until_settled", "own_requests",
            "own_requests_per_moved_pod", "rule_violations_before", "rule_violations_after", "landed_badly",
            "under_used_before", "empty_before", "empty_after", "removable_nodes", "back_on_under_used", "moved_twice")
    merged = {key: median(runs, key) for key in keys}
    merged["violations"] = None if runs[0]["violations"] is None else sum(run["violations"] for run in runs)
    merged["all_ready"] = all(run["all_ready"] for run in runs)
    merged["failed"] = sum(1 for run in runs if run["problems"])
    return merged


def print_run(trial, scenario, tool, result):
    if scenario.breaks_rules:
        measures = "breaking a rule %d -> %d  landed badly %d" % (
            result["rule_violations_before"], result["rule_violations_after"], result["landed_badly"])
    elif scenario.compaction_threshold:
        measures = "empty nodes %d -> %d  back on under-used %d  moved twice %d" % (
            result["empty_before"], result["empty_after"], result["back_on_under_used"], result["moved_twice"])
    else:
        measures = "back %2d  skew %d -> %d  per node %d -> %d" % (
            result["back_on_old_node"], result["skew_before"], result["final_max_skew"], result["node_spread_before"],
            result["node_spread"])
    line = ("trial %d  %-18s %-20s evictions %2d  on new %2d  %s  violations %s  wall %5.1f s  settled %5.1f s  "
            "requests %d / %d (evictions %d, 429 %d)  own %s (%s/moved)" % (
                trial, scenario.name, tool, result["evictions"], result["on_new_nodes"], measures,
                fmt(result["violations"], "1d"), result["wall"], result["until_settled"], result["requests"],
                result["requests_until_settled"], result["eviction_requests_until_settled"],
                result["evictions_429_until_settled"], fmt(result.get("own_requests"), "d"),
                fmt(result["own_requests_per_moved_pod"], ".1f")))
    if "logged_evictions" in result:
        line += "  logged %s" % result["logged_evictions"]
    if result["problems"]:
        line += "  FAILED: %s (%s)" % ("; ".join(result["problems"]), result["log"])
    print(line, flush=True)


def print_table(name, summaries):
    """The spread's measures."""
    first = next(iter(summaries.values()))
    print("\n%s (max skew before: %g, pods per node max-min before: %g)" % (
        name, first["skew_before"], first["node_spread_before"]))
    header = "%-20s %9s %7s %9s %9s %9s %10s %7s %9s %9s %9s %10s %8s %9s %8s %6s %6s" % (
        "tool", "evictions", "on new", "back old", "max skew", "node m-m", "violation", "wall s", "settled s",
        "requests", "to settle", "net settle", "own req", "own/moved", "evict rq", "429s", "ready")
    print(header)
    print("-" * len(header))
    for tool, row in summaries.items():
        print("%-20s %9g %7g %9g %9g %9g %10s %7.1f %9.1f %9g %9g %10s %8s %9s %8g %6g %6s" % (
            tool, row["evictions"], row["on_new_nodes"], row["back_on_old_node"], row["final_max_skew"],
            row["node_spread"], fmt(row["violations"], "10d"), row["wall"], row["until_settled"], row["requests"],
            row["requests_until_settled"], fmt(row["net_requests_until_settled"], "10.0f"),
            fmt(row["own_requests"], "8.0f"), fmt(row["own_requests_per_moved_pod"], "9.1f"),
            row["eviction_requests_until_settled"], row["evictions_429_until_settled"],
            "yes" if row["all_ready"] else "NO"))


def print_rule_table(name, summaries):
    """The rules' measures, for a scenario where a node changed under the pods."""
    first = next(iter(summaries.values()))
    print("\n%s (pods breaking a rule before: %g)" % (name, first["rule_violations_before"]))
    header = "%-20s %9s %11s %10s %12s %7s %11s %7s %9s %8s %9s %8s %6s %6s" % (
        "tool", "evictions", "rule before", "rule after", "landed badly", "on new", "PDB crossed", "wall s",
        "settled s", "own req", "own/moved", "evict rq", "429s", "ready")
    print(header)
    print("-" * len(header))
    for tool, row in summaries.items():
        print("%-20s %9g %11g %10g %12g %7g %11s %7.1f %9.1f %8s %9s %8g %6g %6s" % (
            tool, row["evictions"], row["rule_violations_before"], row["rule_violations_after"], row["landed_badly"],
            row["on_new_nodes"], fmt(row["violations"], "11d"), row["wall"], row["until_settled"],
            fmt(row["own_requests"], "8.0f"), fmt(row["own_requests_per_moved_pod"], "9.1f"),
            row["eviction_requests_until_settled"], row["evictions_429_until_settled"],
            "yes" if row["all_ready"] else "NO"))


def print_compaction_table(name, summaries):
    """The compaction's measures, for a scenario with under-used nodes."""
    first = next(iter(summaries.values()))
    print("\n%s (nodes used below the threshold before: %g, empty before: %g, that an autoscaler could remove "
          "after the best compaction: %g)" % (name, first["under_used_before"], first["empty_before"],
                                              first["removable_nodes"]))
    header = "%-20s %9s %11s %11s %11s %11s %7s %9s %8s %9s %8s %6s %6s" % (
        "tool", "evictions", "empty after", "landed back", "moved twice", "PDB crossed", "wall s", "settled s",
        "own req", "own/moved", "evict rq", "429s", "ready")
    print(header)
    print("-" * len(header))
    for tool, row in summaries.items():
        print("%-20s %9g %11g %11g %11g %11s %7.1f %9.1f %8s %9s %8g %6g %6s" % (
            tool, row["evictions"], row["empty_after"], row["back_on_under_used"], row["moved_twice"],
            fmt(row["violations"], "11d"), row["wall"], row["until_settled"], fmt(row["own_requests"], "8.0f"),
            fmt(row["own_requests_per_moved_pod"], "9.1f"), row["eviction_requests_until_settled"],
            row["evictions_429_until_settled"], "yes" if row["all_ready"] else "NO"))


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, help="runs per tool per scenario (default 1)")
    parser.add_argument("--only", choices=TOOLS, help="run one tool only")
    parser.add_argument("--scenario", choices=list(SCENARIOS), action="append",
                        help="run this scenario only (repeatable; default all)")
    parser.add_argument("--idle", type=float, help="seconds of the idle window before each run that measures the "
                        "background request rate (default 5, --quick 0: none)")
    parser.add_argument("--json", help="where the results go (default %s, --quick %s)" % (
        os.path.relpath(RESULTS, REPO), os.path.relpath(QUICK_RESULTS, REPO)))
    parser.add_argument("--quick", action="store_true", help='a smoke run: "node replaced" at its smallest, 1 trial, '
                        "no unsteered pass, no idle window")
    args = parser.parse_args(argv)
    if args.quick:
        defaults = {"trials": 1, "idle": 0, "json": QUICK_RESULTS}
        args.scenarios = {name: QUICK_SCENARIOS[name] for name in args.scenario or QUICK_SCENARIOS
                          if name in QUICK_SCENARIOS}
        if not args.scenarios:
            parser.error("--quick runs %s only" % ", ".join(QUICK_SCENARIOS))
        tools = [args.only] if args.only else list(QUICK_TOOLS)
    else:
        defaults = {"trials": 1, "idle": 5, "json": RESULTS}
        args.scenarios = {name: SCENARIOS[name] for name in args.scenario or SCENARIOS}
        tools = [args.only] if args.only else list(TOOLS)
    # Each scenario's tools, in the order asked; a scenario that runs none of them is left out.
    scenario_tools = {name: [tool for tool in tools if tool in spec.get("tools", TOOLS)]
                      for name, spec in args.scenarios.items()}
    args.tools = {name: asked for name, asked in scenario_tools.items() if asked}
    args.scenarios = {name: spec for name, spec in args.scenarios.items() if name in args.tools}
    if not args.scenarios:
        parser.error("no scenario asked runs %s" % ", ".join(tools))
    for key, value in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if args.trials < 1 or args.idle < 0:
        parser.error("--trials must be 1 or more, --idle 0 or more")
    return args


def main(argv=None):
    args = parse_args(argv)
    if {DESCHEDULER, ARTICLE} & {tool for tools in args.tools.values() for tool in tools}:
        descheduler_binary()
    os.makedirs(LOGS, exist_ok=True)
    started = time.monotonic()
    work_dir = tempfile.mkdtemp(prefix="kubeops-bench-")
    state = local_cluster.up(os.path.join(work_dir, "cluster"), die_with_parent=True, audit=True)
    runs = {name: {tool: [] for tool in tools} for name, tools in args.tools.items()}
    try:
        bench = Bench(state["kubeconfig"], work_dir, state["audit_log"])
        order = [(name, spec, trial, tool) for name, spec in args.scenarios.items()
                 for trial, tool in trial_order(args.trials, args.tools[name])]
        for index, (name, spec, trial, tool) in enumerate(order):
            scenario, result = run_once(bench, name, spec, tool, trial, args.idle)
            runs[name][tool].append(result)
            print_run(trial, scenario, tool, result)
            removing = time.monotonic()
            if index < len(order) - 1:  # the cluster goes down after the last
                bench.remove(scenario)
            result["remove_seconds"] = time.monotonic() - removing
    finally:
        local_cluster.down(os.path.join(work_dir, "cluster"))
    summaries = {name: {tool: summary(tool_runs) for tool, tool_runs in by_tool.items()}
                 for name, by_tool in runs.items()}
    print("\nmedians of %d trial(s); on new: pods on the added nodes; back old: replacements back on the node a pod "
          "of theirs left; node m-m: max-min of all pods per node; requests: over the tool's run, to settle: until "
          "settled, net settle: less the idle rate; own req: the tool's own requests over its run (audit log), "
          "own/moved: per pod evicted; evict rq: eviction requests until settled; rule before, rule after: pods "
          "breaking a rule (a taint, a node selector or affinity, a pod anti-affinity) where they run; landed badly: "
          "replacements on a node their Deployment's pods were evicted from or where they break a rule; empty "
          "after: nodes running no pod (but DaemonSet ones); landed back: replacements on a node used below the "
          "threshold before (one being emptied); moved twice: replacements evicted again; PDB crossed, violation: "
          "PDBs whose minimum was crossed" % args.trials)
    for name, by_tool in summaries.items():
        spec = args.scenarios[name]
        (print_rule_table if breaks_rules(spec) else print_compaction_table if compacts(spec) else print_table)(
            name, by_tool)
    with open(args.json, "w") as handle:
        json.dump({"trials": args.trials, "quick": args.quick, "idle_seconds": args.idle,
                   "scenarios": args.scenarios, "summaries": summaries, "runs": runs,
                   "descheduler_policies": {name: descheduler_policy("<namespace>", spec.get(
                       "descheduler_plugins", SPREAD_PLUGINS)) for name, spec in args.scenarios.items()},
                   "article_policy": article_policy(),
                   "seconds": round(time.monotonic() - started, 1)}, handle, indent=2)
    all_runs = [run for by_tool in runs.values() for tool_runs in by_tool.values() for run in tool_runs]
    print("\nresults in %s, logs in %s (%.0f s in all: building the scenarios %.0f s, the tools until settled %.0f s, "
          "removing the scenarios %.0f s)" % (
              args.json, LOGS, time.monotonic() - started, sum(run["build_seconds"] for run in all_runs),
              sum(run["until_settled"] for run in all_runs), sum(run["remove_seconds"] for run in all_runs)))
    failed = [(name, tool) for name, by_tool in summaries.items() for tool, row in by_tool.items() if row["failed"]]
    if failed:
        print("FAILED: %s" % "; ".join("%s on %s" % (tool, name) for name, tool in failed))
        sys.exit(1)


if __name__ == "__main__":
    main()
