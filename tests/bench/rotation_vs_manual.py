"""Benchmark: rotating 20% of the nodes with kubeops.rotation, and with the article's manual sequence in kubectl.

The article (Karpenter with stateful pods: do-not-disrupt keeps Karpenter from
draining them, and the operator moves them at a time of their choosing) does,
by hand: cordon the old nodes, bring new nodes up with a placeholder
Deployment, `kubectl rollout restart` the protected workloads, then `kubectl
drain` the old nodes. This benchmark runs that sequence scripted with kubectl
against the collection's rotate_nodes role on the same scenario.

Each run gets a fresh scenario on the local control plane, in a namespace,
an old pool and a new pool of its own (named after the trial and the tool):
--nodes kwok nodes (20) of the old pool over zone-a and zone-b, each with room
for --slots pods (5: cpu --slots x 100m; every pod requests 100m), all of it
taken, so that whatever moves needs new nodes; the first 20% of the nodes
carry node-version=v1 (to rotate), the others v2. In the namespace: web, a
Deployment under a PDB (maxUnavailable 1, an emptyDir); guard, a Deployment
whose pods carry karpenter.sh/do-not-disrupt; db, a StatefulSet with the same
annotation; solo, a single replica under a minAvailable 1 PDB; agent, a
DaemonSet (no requests). The new pool is the test provisioner's
(tests/cluster/provisioner.py, a node-group autoscaler in zone-a and zone-b):
a pending pod that asks for it gets a new node of the same size. The
workloads' pods may run on either pool.

  kubeops.rotation.rotate_nodes   ansible-playbook kubeops.rotation.rotate_nodes, as users run it:
                                  node selector the old pool, wanted label node-version=v2, batches of
                                  --batch-size (one zone at a time), pool selector and template capacity
                                  the new pool's, rotate_nodes_delete_emptydir_data: true; its other defaults
  manual (kubectl)                the article's sequence, per batch (the same batches: the nodes to rotate
                                  by zone, --batch-size at a time): kubectl cordon the batch; list its pods
                                  (kubectl get pods, and the Deployments, StatefulSets and ReplicaSets, to
                                  find their owners); kubectl apply the article's placeholder Deployment
                                  prepare-nodes (pause pods with the article's requests, cpu 100m and
                                  memory 64Mi, one per node by hostname anti-affinity and spread, node
                                  affinity on the new pool and the batch's zone) with as many replicas as
                                  new nodes the batch's pods need (their requests over a new node's room
                                  beside a placeholder), and kubectl rollout status until they run; kubectl
                                  rollout restart of the protected workloads with pods on the batch (pods
                                  with karpenter.sh/do-not-disrupt, or a single replica), then kubectl
                                  rollout status of each; kubectl drain --ignore-daemonsets
                                  --delete-emptydir-data; kubectl delete the placeholder Deployment and
                                  the batch's nodes

The tools alternate trial by trial (even trials in this order, odd ones in
the reverse). Measured per run, from the cluster rather than from the tools:

  wall         the tool's wall time, start-up included; settled: until every workload has all its replicas
               Ready, nothing Terminating, and no pod but the DaemonSet's on the rotated nodes
  moved/of     pods deleted (the DaemonSet's and the placeholders aside) from the tool's start until settled,
               against the pods on the rotated nodes at the start (the pods that had to move): a rollout
               restart moves all of a workload's pods, and a pod that moved onto a node rotated later counts
               again
  restarts     per workload whose kubectl.kubernetes.io/restartedAt changed, its generation's change over the
               run (a rollout restart sets restartedAt, which bumps it; ours scales a workload to replace pods
               first, which bumps the generation without a restart); never the tools' own words
  requests     the API server's apiserver_request_total over the tool's run (Events and the /metrics reads
               left out): every client, the tool and the controllers', kwok's, the provisioner's and the
               watcher's requests meanwhile; net: less the rate of an idle window (--idle seconds) before the
               run times the wall time. req/moved: requests (net when measured) per pod moved
  own          the tool's own requests: those of its User-Agent (kubeops.rotation, kubectl/...) in the API
               server's audit log, Events excluded; own/moved: per pod moved
  new nodes    the new pool's nodes at the end (the provisioner adds them, nothing removes them)
  violations   PDBs whose minimum was crossed: the fewest Ready pods of web and solo (DisruptionWatcher,
               tests/integration/kube.py, until settled) below what their PDB allows

For ours, per batch, from the role's JSON report (rotate_nodes_report_file) and
ansible-core's own junit callback (ANSIBLE_CALLBACKS_ENABLED=ansible.builtin.junit, one
test case per task run with its duration and its result):

  calls        tasks run in the batch (not skipped; ansible.builtin ones included), and module calls: those of
               them whose result has the collection's api_requests (every kubeops.rotation module returns it)
  waiting      what the report's warm_seconds + replace_seconds + evict_seconds say: the elapsed_seconds of
               the warming (evict's warmed; before, warm_nodes'), of the replacement (evict's replaced; before,
               replace_pods') and of the eviction,
               each measured inside the module from the start of that part to its end, i.e. waiting by watch
               for the placeholders to run, the rollouts to be done and the evicted pods to be gone (their own
               requests are in it, milliseconds each); retiring does not wait here (the provisioner's nodes
               have no NodeClaim: rotation_state deletes the Node objects and returns)
  overhead     the report's seconds of the batch (from its first task, which notes the time, to its report
               task: check, cordon, move, retire) minus waiting: ansible-playbook running each task
               (templating, a fork, shipping the module, a Python that imports the kubernetes client and
               builds its client) and the steps that do not wait (rotation_plan's check, cordon, the two
               rotation_state calls, set_fact and assert). outside: ours' wall time less its batches'
               seconds (start-up, the plan, the Lease, marking the nodes, releasing the placeholders, the
               report)

and for the manual sequence, its kubectl commands per batch and the seconds of
each step. Printed: a line per run, then per tool the medians with ratios to
ours, ours' batches, and the restarts per workload. Written: --json (default
.cache/bench-rotation-vs-manual.json, with --quick ...-quick.json), every
tool's output, ours' report and junit files (and with --profile its modules' cProfile
files) in .cache/bench-rotation-vs-manual-logs. --quick (5 nodes of 3 pods, so one node
rotated in one batch, 1 trial, no idle window) is a smoke run: it exits 1 when a tool failed, a pod or an old
node was left, the cluster did not settle, ours crossed a PDB, restarted a
workload twice or did not do what its plan said; it is not a timing test.
"""

from __future__ import annotations

import argparse
import datetime
import glob
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from xml.etree import ElementTree

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TESTS, "cluster"))
sys.path.insert(0, os.path.join(TESTS, "integration"))

import cluster as local_cluster  # noqa: E402
from bench_cluster import ClusterBench, fmt, median  # noqa: E402
from ansible_run import INSTALLED_COLLECTIONS, REPO  # noqa: E402
from demo import RotationScenario, report_problems  # noqa: E402
from fakenodes import fake_node  # noqa: E402
from module_profiles import print_report, profiling_interpreter, summarize as summarize_profiles  # noqa: E402
from kube import PAUSE, daemon_set, deployment, is_ready, pdb, stateful_set, workload_templates  # noqa: E402
from side_by_side import (KUBECTL_AGENT, OURS_AGENT, DeletionWatcher, PeakMemory, add_ratios,  # noqa: E402
                          collection_version, kubectl_version, measured, per_moved_pod, trial_order)

CACHE = os.path.join(REPO, ".cache")
RESULTS = os.path.join(CACHE, "bench-rotation-vs-manual.json")
QUICK_RESULTS = os.path.join(CACHE, "bench-rotation-vs-manual-quick.json")
LOGS = os.path.join(CACHE, "bench-rotation-vs-manual-logs")
POOL_LABEL = "kubeops.io/pool"
ZONE_LABEL = "topology.kubernetes.io/zone"
HOSTNAME_LABEL = "kubernetes.io/hostname"
VERSION_LABEL = "node-version"
ZONES = ("zone-a", "zone-b")
DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
WARM_NAMESPACE = "kubeops-warm"
DAEMON = "agent"
# The article's placeholder Deployment: its name, and its container's limits, which are its requests.
PLACEHOLDER = "prepare-nodes"
PLACEHOLDER_RESOURCES = {"cpu": "100m", "memory": "64Mi"}
POD_MILLICPU = 100  # what every workload pod requests (kube.pod_spec)
SHARE_ROTATED = 0.2
TIMEOUT = 600
SETTLE_TIMEOUT = 300
# While a large cluster's workloads come up: how long without all of them Ready before pods that kwok left not
# Ready are deleted and made again (Scenario._workloads_ready).
STUCK_SECONDS = 300
# ... and how many times nodes of the new pool launched meanwhile are taken away again before the run gives up.
NEW_NODE_CLEARINGS = 3

OURS = "kubeops.rotation.rotate_nodes"
MANUAL = "manual (kubectl)"
TOOLS = {"ours": OURS, "manual": MANUAL}
TOOL_IDS = {name: tool_id for tool_id, name in TOOLS.items()}
AGENTS = {OURS: OURS_AGENT, MANUAL: KUBECTL_AGENT}
# "..., batch 2/3": the suffix of every task of the role's batch.yml.
BATCH_TASK = re.compile(r", batch (\d+)/\d+$")
STEPS = ("cordon", "warm", "restart", "drain", "retire")


def workloads(slots, web_max_unavailable=1):
    """The scenario's workloads, filling ``slots`` pods: kind, replicas, do-not-disrupt, PDB, the fewest Ready
    pods the PDB allows (None without one), volumes. ``web_max_unavailable``: web's PDB, a count or a percent
    (rounded up, as the disruption controller does)."""
    guard = max(2, slots // 10)
    db = 2 if slots < 50 else 3
    web = slots - guard - db - 1
    if str(web_max_unavailable).endswith("%"):
        web_unavailable = -(-web * int(str(web_max_unavailable)[:-1]) // 100)
    else:
        web_unavailable = int(web_max_unavailable)
    return {
        "web": {"kind": "Deployment", "replicas": web, "do_not_disrupt": False,
                "pdb": {"max_unavailable": web_max_unavailable},
                "min_ready": web - web_unavailable, "volumes": [{"name": "scratch", "emptyDir": {}}]},
        "guard": {"kind": "Deployment", "replicas": guard, "do_not_disrupt": True, "pdb": None, "min_ready": None,
                  "volumes": None},
        "db": {"kind": "StatefulSet", "replicas": db, "do_not_disrupt": True, "pdb": None, "min_ready": None,
               "volumes": None},
        "solo": {"kind": "Deployment", "replicas": 1, "do_not_disrupt": False, "pdb": {"min_available": 1},
                 "min_ready": 1, "volumes": None},
    }


def millicpu(quantity):
    """A cpu quantity ("100m", "1", "0.5") in millicores."""
    quantity = str(quantity)
    return int(quantity[:-1]) if quantity.endswith("m") else int(float(quantity) * 1000)


def pool_affinity(pools, zones=None):
    """Required node affinity: one of ``pools`` (and of ``zones`` when given)."""
    expressions = [{"key": POOL_LABEL, "operator": "In", "values": list(pools)}]
    if zones:
        expressions.append({"key": ZONE_LABEL, "operator": "In", "values": list(zones)})
    return {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": expressions}]}}


def placeholder(replicas, pool, zones):
    """The article's prepare-nodes Deployment: pods apart by hostname spread and anti-affinity, on the new pool
    (and the batch's zone), with its small requests; pause instead of sleeping debian."""
    labels = {"app": PLACEHOLDER}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": PLACEHOLDER}, "spec": {
        "replicas": replicas, "selector": {"matchLabels": labels},
        "template": {"metadata": {"labels": labels}, "spec": {
            "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": HOSTNAME_LABEL,
                                           "whenUnsatisfiable": "DoNotSchedule",
                                           "labelSelector": {"matchLabels": labels}}],
            "affinity": {
                "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": labels}, "topologyKey": HOSTNAME_LABEL}]},
                "nodeAffinity": pool_affinity([pool], zones)},
            "terminationGracePeriodSeconds": 0,
            "containers": [{"name": PLACEHOLDER, "image": PAUSE,
                            "resources": {"requests": PLACEHOLDER_RESOURCES, "limits": PLACEHOLDER_RESOURCES}}]}}}}


class Scenario(RotationScenario):
    """One run's namespace, old pool (its first 20% to rotate) and new pool, and the rotation's variables."""

    def __init__(self, kubeconfig, scenario_id, nodes, slots, batch_size, web_max_unavailable=1):
        super().__init__(kubeconfig)
        self.id = scenario_id
        self.namespace = scenario_id
        self.old_pool = scenario_id + "-old"
        self.new_pool = scenario_id + "-new"
        self.zones = {"%s-n%02d" % (scenario_id, index): ZONES[index % len(ZONES)] for index in range(nodes)}
        self.rotated = list(self.zones)[:max(1, round(nodes * SHARE_ROTATED))]
        self.capacity = {"cpu": "%dm" % (slots * POD_MILLICPU), "memory": "16Gi", "pods": "110"}
        self._zones_seen = dict(self.zones)
        self._stuck_since = None
        self.specs = workloads(nodes * slots, web_max_unavailable)
        # The manual sequence's batches: the nodes to rotate by zone, batch_size at a time, as ours plans them.
        self.batches = []
        for zone in ZONES:
            in_zone = [name for name in self.rotated if self.zones[name] == zone]
            self.batches += [in_zone[start:start + batch_size] for start in range(0, len(in_zone), batch_size)]
        self.rotation = {
            "rotate_nodes_id": scenario_id,
            "rotate_nodes_node_selector": "%s=%s" % (POOL_LABEL, self.old_pool),
            "rotate_nodes_wanted_labels": {VERSION_LABEL: "v2"},
            "rotate_nodes_batch_size": str(batch_size),
            # kwok nodes: no instance behind them, and no NodeClaim or Machine to delete.
            "rotate_nodes_retire": "delete_node",
            "rotate_nodes_pool_node_selector": {POOL_LABEL: self.new_pool},
            "rotate_nodes_template_capacity": dict(self.capacity),
            "rotate_nodes_delete_emptydir_data": True,
        }

    def build(self):
        """The old pool's nodes, the namespace, the DaemonSet and the workloads under their PDBs, all Ready and
        every slot taken; no node of the new pool yet."""
        for name, zone in self.zones.items():
            self.core.create_node(fake_node(name, {
                POOL_LABEL: self.old_pool, ZONE_LABEL: zone,
                VERSION_LABEL: "v1" if name in self.rotated else "v2"}, self.capacity))
        self.core.create_namespace({"metadata": {"name": self.namespace}})
        self.wait(lambda: any(sa.metadata.name == "default" for sa in
                              self.core.list_namespaced_service_account(self.namespace).items), "the namespace")
        self.wait(self._nodes_ready, "the nodes of %s to take pods" % self.id)
        pools = (self.old_pool, self.new_pool)
        agent = daemon_set(DAEMON, {})
        agent["spec"]["template"]["spec"]["affinity"] = {"nodeAffinity": pool_affinity(pools)}
        agent["spec"]["template"]["spec"]["containers"][0]["resources"] = {}  # room for it on every node
        self.apps.create_namespaced_daemon_set(self.namespace, agent)
        for app, spec in self.specs.items():
            annotations = {DO_NOT_DISRUPT: "true"} if spec["do_not_disrupt"] else None
            if spec["kind"] == "StatefulSet":
                manifest = stateful_set(app, spec["replicas"], {})
                manifest["spec"]["template"]["metadata"]["annotations"].update(annotations or {})
            else:
                manifest = deployment(app, spec["replicas"], {}, annotations=annotations, volumes=spec["volumes"])
            manifest["spec"]["template"]["spec"]["affinity"] = {"nodeAffinity": pool_affinity(pools)}
            create = (self.apps.create_namespaced_stateful_set if spec["kind"] == "StatefulSet"
                      else self.apps.create_namespaced_deployment)
            create(self.namespace, manifest)
            if spec["pdb"]:
                self.policy.create_namespaced_pod_disruption_budget(self.namespace, pdb(app, {"app": app},
                                                                                        **spec["pdb"]))
        # The control plane on two cores starts a few pods a second at most: a large cluster's take minutes,
        # watched first by the workloads' counts (a list of every pod, read often, would take the cores from it).
        pods = sum(spec["replicas"] for spec in self.specs.values())
        for _attempt in range(NEW_NODE_CLEARINGS + 1):
            self.wait(self._workloads_ready, "the workloads of %s to be Ready" % self.id,
                      timeout=max(SETTLE_TIMEOUT, pods * 0.3), interval=2)
            self.wait(self.settled, "the pods of %s to be Ready" % self.id, timeout=SETTLE_TIMEOUT)
            if not self.new_nodes():
                return
            # Pods made again (above) that the scheduler, lagging, found no room for got nodes of the new pool
            # from the provisioner: taken away, so that they come back where their slots are free.
            self._clear_new_nodes()
        raise RuntimeError("the pods of %s did not fit on the old pool: %s" % (self.id, self.new_nodes()))

    def _clear_new_nodes(self):
        names = set(self.new_nodes())
        for pod in self.pods(self.namespace):
            if pod.spec.node_name in names:
                self.core.delete_namespaced_pod(pod.metadata.name, self.namespace, grace_period_seconds=0)
        for name in names:
            self.core.delete_node(name)

    def _workloads_ready(self):
        """Every workload's status counts its replicas Ready. A pod that kwok failed to make Ready is deleted, for
        its workload to make it again: under load, kwok 0.8 may give a pod a second IP of the same family in its
        pod-ready stage, which the API server refuses, and it does not try again."""
        workloads = self.apps.list_namespaced_deployment(self.namespace).items + \
            self.apps.list_namespaced_stateful_set(self.namespace).items
        ready = {item.metadata.name: item.status.ready_replicas or 0 for item in workloads}
        if all(ready.get(app, 0) >= spec["replicas"] for app, spec in self.specs.items()):
            return True
        self._stuck_since = self._stuck_since or time.monotonic()
        if time.monotonic() - self._stuck_since > STUCK_SECONDS:
            for name in self._not_ready_for(STUCK_SECONDS):
                self.core.delete_namespaced_pod(name, self.namespace, grace_period_seconds=0)
            self._stuck_since = None
        return False

    def _not_ready_for(self, seconds):
        """The pods of the namespace scheduled more than ``seconds`` ago and still not Ready."""
        now = datetime.datetime.now(datetime.timezone.utc)
        return [pod.metadata.name for pod in self.pods(self.namespace)
                if pod.spec.node_name and not is_ready(pod)
                and (now - pod.metadata.creation_timestamp).total_seconds() > seconds]

    def _nodes_ready(self):
        """All the old pool's nodes Ready and without the node lifecycle controller's not-ready taint."""
        nodes = self.core.list_node(label_selector="%s=%s" % (POOL_LABEL, self.old_pool)).items
        return len(nodes) == len(self.zones) and all(
            any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or [])
            and not any(taint.key == "node.kubernetes.io/not-ready" for taint in node.spec.taints or [])
            for node in nodes)

    def app_pods(self):
        """The workloads' pods: neither the DaemonSet's nor the placeholders'."""
        return [pod for pod in self.pods(self.namespace)
                if (pod.metadata.labels or {}).get("app") in self.specs]

    def settled(self):
        """Every workload has exactly its replicas, all Ready, nothing Terminating or Pending."""
        pods = self.app_pods()
        if any(not is_ready(pod) for pod in pods):
            return False
        counts = {}
        for pod in pods:
            counts[pod.metadata.labels["app"]] = counts.get(pod.metadata.labels["app"], 0) + 1
        return all(counts.get(app, 0) == spec["replicas"] for app, spec in self.specs.items())

    def zones_by_app(self):
        """{app: {zone: its Ready pods there}}, the DaemonSet's and the placeholders' aside."""
        zones = {app: {} for app in self.specs}
        for pod in self.app_pods():
            if is_ready(pod) and pod.metadata.deletion_timestamp is None:
                zone = self.node_zone(pod.spec.node_name)
                app_zones = zones[pod.metadata.labels["app"]]
                app_zones[zone] = app_zones.get(zone, 0) + 1
        return zones

    def node_zone(self, name):
        if name not in self._zones_seen:
            for node in self.core.list_node().items:
                self._zones_seen[node.metadata.name] = (node.metadata.labels or {}).get(ZONE_LABEL)
        return self._zones_seen.get(name)

    def on_rotated(self):
        """The workloads' pods on the nodes to rotate, Terminating ones included."""
        rotated = set(self.rotated)
        return [pod for pod in self.app_pods() if pod.spec.node_name in rotated]

    def rotated_left(self):
        """The nodes to rotate that still exist."""
        old_pool = {node.metadata.name for node in self.core.list_node(
            label_selector="%s=%s" % (POOL_LABEL, self.old_pool)).items}
        return sorted(name for name in self.rotated if name in old_pool)

    def new_nodes(self):
        return sorted(node.metadata.name for node in self.core.list_node(
            label_selector="%s=%s" % (POOL_LABEL, self.new_pool)).items)

    def remove(self):
        """Delete what the run made, so that the next run finds the cluster as this one did: the workloads and
        their pods (grace 0), the PDBs, ours' placeholders if a failure left them, and both pools' nodes (the
        provisioner lets its own go). The namespace stays, empty (the namespace controller's cleanup would
        fall into the next run's measurements)."""
        for delete in (self.apps.delete_collection_namespaced_deployment,
                       self.apps.delete_collection_namespaced_stateful_set,
                       self.apps.delete_collection_namespaced_replica_set,
                       self.apps.delete_collection_namespaced_daemon_set):
            delete(self.namespace, propagation_policy="Background")
        self.wait(self._delete_pods_now, "the pods of %s to be deleted" % self.namespace)
        self.policy.delete_collection_namespaced_pod_disruption_budget(self.namespace)
        if any(item.metadata.name == WARM_NAMESPACE for item in self.core.list_namespace().items):
            for item in self.apps.list_namespaced_deployment(WARM_NAMESPACE).items:
                if item.metadata.name.startswith("rotation-%s" % self.id):
                    self.apps.delete_namespaced_deployment(item.metadata.name, WARM_NAMESPACE)
        for pool in (self.old_pool, self.new_pool):
            for node in self.core.list_node(label_selector="%s=%s" % (POOL_LABEL, pool)).items:
                self.core.delete_node(node.metadata.name)
        self.wait(lambda: not self.core.list_node(label_selector="%s in (%s,%s)" % (
            POOL_LABEL, self.old_pool, self.new_pool)).items, "the nodes of %s to be deleted" % self.id)

    def _delete_pods_now(self):
        """Delete the pods left (the garbage collector may still be deleting some gracefully); True once none is."""
        self.core.delete_collection_namespaced_pod(self.namespace, grace_period_seconds=0)
        return not self.pods(self.namespace)


class StepFailed(Exception):
    """A kubectl command of the manual sequence failed; ``completed`` is its process."""

    def __init__(self, completed):
        super().__init__(completed.returncode)
        self.completed = completed


class Kubectl:
    """The cluster's own kubectl, as the operator runs it: each command logged with its time; one that fails
    raises StepFailed, as a script under `set -e` stops."""

    def __init__(self, kubeconfig, cache_dir, log):
        self.base = [local_cluster.binary("kubectl"), "--kubeconfig", kubeconfig, "--cache-dir", cache_dir]
        self.log = log
        self.commands = 0
        self.last = None

    def __call__(self, *args, stdin=None, quiet=False):
        self.log.write("$ kubectl %s\n" % " ".join(args))
        started = time.monotonic()
        completed = subprocess.run(self.base + list(args), input=stdin, capture_output=True, text=True,
                                   timeout=TIMEOUT + 60, check=False)
        self.commands += 1
        self.last = completed
        output = "" if quiet else completed.stdout
        seconds = time.monotonic() - started
        self.log.write("%s%s(rc %d, %.1f s)\n" % (output, completed.stderr, completed.returncode, seconds))
        if completed.returncode != 0:
            raise StepFailed(completed)
        return completed

    def json(self, *args):
        return json.loads(self(*args, "-o", "json", quiet=True).stdout)


def protected_targets(pods, workloads_list):
    """The workloads to restart, as kubectl names them (deployment/x, statefulset/y): the owners of ``pods``
    whose pod carries do-not-disrupt or that run a single replica. ``workloads_list``: kubectl get
    deployments,statefulsets,replicasets -o json."""
    by_key = {(item["kind"], item["metadata"]["name"]): item for item in workloads_list["items"]}
    targets = []
    for pod in pods:
        owners = pod["metadata"].get("ownerReferences") or []
        if not owners:
            continue
        owner = by_key.get((owners[0]["kind"], owners[0]["name"]))
        if owner and owner["kind"] == "ReplicaSet":
            parents = owner["metadata"].get("ownerReferences") or []
            owner = by_key.get((parents[0]["kind"], parents[0]["name"])) if parents else None
        if not owner or owner["kind"] not in ("Deployment", "StatefulSet"):
            continue
        protected = DO_NOT_DISRUPT in (pod["metadata"].get("annotations") or {}) or owner["spec"]["replicas"] == 1
        target = "%s/%s" % (owner["kind"].lower(), owner["metadata"]["name"])
        if protected and target not in targets:
            targets.append(target)
    return sorted(targets)


def nodes_needed(pods, capacity):
    """New nodes for ``pods``: their cpu requests over what a new node has beside a placeholder."""
    requested = sum(millicpu(((container.get("resources") or {}).get("requests") or {}).get("cpu", "0"))
                    for pod in pods for container in pod["spec"]["containers"])
    room = millicpu(capacity["cpu"]) - millicpu(PLACEHOLDER_RESOURCES["cpu"])
    return max(1, math.ceil(requested / room))


def is_daemon_pod(pod):
    return any(owner["kind"] == "DaemonSet" for owner in pod["metadata"].get("ownerReferences") or [])


class Bench(ClusterBench):
    """The contenders: each returns its completed process (the failed one when it fails) and writes its output
    to ``log``; ``details`` receives what it says about itself (per batch). With ``profile``, ours runs each
    module call under cProfile (module_profiles), its profiles in ``details["profile_dir"]``."""

    def __init__(self, kubeconfig, work_dir, audit_log=None, profile=False):
        super().__init__(kubeconfig, work_dir, audit_log)
        self.profile = profile

    def ours(self, scenario, log, details):
        run_dir = os.path.join(self.work_dir, scenario.id)
        junit_dir = os.path.join(LOGS, scenario.id + "-junit")
        shutil.rmtree(junit_dir, ignore_errors=True)
        os.makedirs(run_dir, exist_ok=True)
        os.makedirs(junit_dir)
        enabled = [name for name in os.environ.get("ANSIBLE_CALLBACKS_ENABLED", "").split(",") if name.strip()]
        extra = {}
        if self.profile:
            details["profile_dir"] = os.path.join(LOGS, scenario.id + "-profiles")
            shutil.rmtree(details["profile_dir"], ignore_errors=True)
            extra["ansible_python_interpreter"] = profiling_interpreter(
                sys.executable, details["profile_dir"], os.path.join(run_dir, "python-profiled"))
        completed = scenario.run_rotation(run_dir, extra, environment={
            "ANSIBLE_CALLBACKS_ENABLED": ",".join(enabled + ["ansible.builtin.junit"]),
            "JUNIT_OUTPUT_DIR": junit_dir, "JUNIT_HIDE_TASK_ARGUMENTS": "true"})
        log.write(completed.stdout + completed.stderr)
        details.update(report_file=os.path.join(run_dir, "rotation-report.json"), junit_dir=junit_dir)
        return completed

    def manual(self, scenario, log, details):
        kubectl = Kubectl(self.kubeconfig, os.path.join(self.work_dir, "kubectl-cache"), log)
        namespace = ("-n", scenario.namespace)
        details["batches"] = []
        try:
            for nodes in scenario.batches:
                batch = {"nodes": nodes, "seconds": {}}
                details["batches"].append(batch)
                commands = kubectl.commands
                started = time.monotonic()
                kubectl("cordon", *nodes)
                batch["seconds"]["cordon"] = time.monotonic() - started
                step = time.monotonic()
                pods = [pod for pod in kubectl.json("get", "pods", *namespace)["items"]
                        if pod["spec"].get("nodeName") in nodes and not is_daemon_pod(pod)]
                owners = kubectl.json("get", "deployments,statefulsets,replicasets", *namespace)
                zones = sorted({scenario.zones[name] for name in nodes})
                batch["placeholders"] = nodes_needed(pods, scenario.capacity)
                kubectl("apply", *namespace, "-f", "-", stdin=json.dumps(
                    placeholder(batch["placeholders"], scenario.new_pool, zones)))
                kubectl("rollout", "status", "deployment/" + PLACEHOLDER, *namespace, "--timeout=%ds" % TIMEOUT)
                batch["seconds"]["warm"] = time.monotonic() - step
                step = time.monotonic()
                batch["restarted"] = protected_targets(pods, owners)
                if batch["restarted"]:
                    kubectl("rollout", "restart", *batch["restarted"], *namespace)
                    for target in batch["restarted"]:
                        kubectl("rollout", "status", target, *namespace, "--timeout=%ds" % TIMEOUT)
                batch["seconds"]["restart"] = time.monotonic() - step
                step = time.monotonic()
                kubectl("drain", *nodes, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=%ds" % TIMEOUT)
                batch["seconds"]["drain"] = time.monotonic() - step
                step = time.monotonic()
                kubectl("delete", "deployment", PLACEHOLDER, *namespace)
                kubectl("delete", "node", *nodes)
                batch["seconds"]["retire"] = time.monotonic() - step
                batch["seconds"]["batch"] = time.monotonic() - started
                batch["commands"] = kubectl.commands - commands
        except StepFailed as failed:
            return failed.completed
        finally:
            details["commands"] = kubectl.commands
        return kubectl.last


CONTENDERS = {OURS: Bench.ours, MANUAL: Bench.manual}


def junit_tasks(junit_dir):
    """Each task ansible-playbook ran, from the junit callback's XML: name, batch (None outside the batches),
    status, seconds, and from its result api_requests (only the collection's modules return it) and
    elapsed_seconds."""
    tasks = []
    for path in sorted(glob.glob(os.path.join(junit_dir, "*.xml"))):
        for case in ElementTree.parse(path).iter("testcase"):
            # "[localhost] <play>: <role> : <task>"
            name = case.get("name", "").split(": ", 1)[-1].split(" : ", 1)[-1]
            failure = case.find("failure")
            if failure is None:
                failure = case.find("error")
            status = "skipped" if case.find("skipped") is not None else "ok" if failure is None else "failed"
            try:
                result = json.loads(case.findtext("system-out") or (failure.text if failure is not None else "")
                                    or "{}")
            except ValueError:
                result = {}
            result = result if isinstance(result, dict) else {}
            batch = BATCH_TASK.search(name)
            tasks.append({"name": name, "batch": batch.group(1) if batch else None, "status": status,
                          "seconds": float(case.get("time") or 0), "api_requests": result.get("api_requests"),
                          "elapsed_seconds": result.get("elapsed_seconds")})
    return tasks


def ours_batches(report, tasks):
    """Per batch of ours: its seconds, the waiting in it, the overhead (seconds less waiting), and the tasks
    and module calls it ran (see the docstring)."""
    batches = []
    for batch in report.get("batches") or []:
        index = str(batch["batch"])
        ran = [task for task in tasks if task["batch"] == index and task["status"] != "skipped"]
        waited = sum(float(batch.get(key) or 0) for key in ("warm_seconds", "replace_seconds", "evict_seconds"))
        seconds = float(batch["seconds"])
        batches.append({
            "batch": index, "nodes": batch["nodes"], "seconds": seconds, "waited": waited,
            "overhead": seconds - waited,
            "warm_seconds": float(batch.get("warm_seconds") or 0),
            "replace_seconds": float(batch.get("replace_seconds") or 0),
            "evict_seconds": float(batch.get("evict_seconds") or 0),
            "tasks_run": len(ran),
            "module_calls": sum(1 for task in ran if task["api_requests"] is not None),
            "module_api_requests": sum(task["api_requests"] or 0 for task in ran),
            "task_seconds": sum(task["seconds"] for task in ran),
            "replacements_done": batch.get("replacements_done"), "evicted": batch.get("evicted"),
        })
    return batches


def mean(values):
    values = list(values)
    return sum(values) / len(values) if values else None


def read_ours(result, details, problems):
    """Ours' report and junit tasks into the run's result; the report's own differences into ``problems``."""
    try:
        with open(details["report_file"]) as handle:
            report = json.load(handle)
    except (KeyError, OSError, ValueError):
        problems.append("no report from the role")
        return
    shutil.copy(details["report_file"], os.path.join(LOGS, result["scenario"] + "-report.json"))
    tasks = junit_tasks(details["junit_dir"])
    batches = ours_batches(report, tasks)
    ran = [task for task in tasks if task["status"] != "skipped"]
    result.update(
        batches=batches, batches_n=len(batches), tasks=tasks,
        tasks_run=len(ran), module_calls=sum(1 for task in ran if task["api_requests"] is not None),
        module_api_requests=sum(task["api_requests"] or 0 for task in ran),
        batch_seconds=mean(batch["seconds"] for batch in batches),
        waited_per_batch=mean(batch["waited"] for batch in batches),
        overhead_per_batch=mean(batch["overhead"] for batch in batches),
        tasks_per_batch=mean(batch["tasks_run"] for batch in batches),
        calls_per_batch=mean(batch["module_calls"] for batch in batches),
        outside_batches_seconds=result["wall"] - sum(batch["seconds"] for batch in batches))
    problems.extend(report_problems(report))


def read_manual(result, details):
    batches = details.get("batches") or []
    for batch in batches:
        batch["seconds"] = {step: round(seconds, 2) for step, seconds in batch["seconds"].items()}
    done = [batch for batch in batches if "commands" in batch]
    result.update(batches=batches, batches_n=len(batches), commands=details.get("commands"),
                  batch_seconds=mean(batch["seconds"]["batch"] for batch in done),
                  calls_per_batch=mean(batch["commands"] for batch in done))


def run_once(bench, tool, trial, args):
    scenario = Scenario(bench.kubeconfig, "t%d-%s" % (trial, TOOL_IDS[tool]), args.nodes, args.slots,
                        args.batch_size, args.web_max_unavailable)
    scenario.build()
    to_move = {pod.metadata.uid for pod in scenario.on_rotated()}
    templates_before = workload_templates(scenario, scenario.namespace)
    zones_before = scenario.zones_by_app()
    log_path = os.path.join(LOGS, scenario.id + ".log")
    result = {"scenario": scenario.id, "rotated_nodes": scenario.rotated, "pods_to_move": len(to_move),
              "log": log_path}
    details = {}
    with DeletionWatcher(scenario, scenario.namespace) as watcher, open(log_path, "w") as log, \
            PeakMemory() as memory:
        completed, started, measures = measured(
            bench, lambda: CONTENDERS[tool](bench, scenario, log, details), args.idle, AGENTS[tool])
        result.update(measures)
        result["peak_memory_mb"] = dict(memory.peaks)
        try:
            scenario.wait(lambda: not scenario.on_rotated() and scenario.settled(), "the workloads to settle",
                          timeout=SETTLE_TIMEOUT)
            result["settled"] = time.monotonic() - started
        except RuntimeError:
            result["settled"] = None
    templates_after = workload_templates(scenario, scenario.namespace)
    # A restart changes restartedAt; a scale (ours, replacing pods first) changes the generation only.
    result["restarts"] = {key: templates_after[key][0] - generation if templates_after[key][1] != stamp else 0
                          for key, (generation, stamp) in templates_before.items() if key in templates_after}
    result["restarted_at_changed"] = {key: templates_after[key][1] != stamp
                                      for key, (_generation, stamp) in templates_before.items()
                                      if key in templates_after}
    result["restarts_total"] = sum(result["restarts"].values())
    moved = [app for app, _node in watcher.deleted.values() if app in scenario.specs]
    moved_uids = {uid for uid, (app, _node) in watcher.deleted.items() if app in scenario.specs}
    # Each pod moved once: every pod deleted was one of those on the rotated nodes (none of their replacements).
    result["moved_again"] = len(moved_uids - to_move)
    result["zones_before"], result["zones_after"] = zones_before, scenario.zones_by_app()
    result["zones_off"] = {app: zones for app, zones in result["zones_after"].items()
                           if any(abs(zones.get(zone, 0) - zones_before.get(app, {}).get(zone, 0)) > 1
                                  for zone in ZONES)}
    result["pods_moved"] = len(moved)
    result["moved_by_app"] = {app: moved.count(app) for app in scenario.specs}
    requests = result["net_requests"] if result["net_requests"] is not None else result["requests"]
    result["requests_per_moved_pod"] = requests / len(moved) if moved else None
    result["own_requests_per_moved_pod"] = per_moved_pod(result.get("own_requests"), len(moved))
    result["min_ready"] = {app: watcher.min_ready.get(app) for app in scenario.specs}
    result["violations"] = sum(1 for app, spec in scenario.specs.items()
                               if spec["min_ready"] is not None and watcher.min_ready.get(app, 0) < spec["min_ready"])
    result["new_nodes"] = len(scenario.new_nodes())
    result["rotated_left"] = scenario.rotated_left()
    result["left_on_rotated"] = len(scenario.on_rotated())
    problems = []
    if completed.returncode != 0:
        problems.append("exited %d" % completed.returncode)
    if result["settled"] is None:
        problems.append("not settled after %d s" % SETTLE_TIMEOUT)
    if result["left_on_rotated"]:
        problems.append("%d pod(s) left on the rotated nodes" % result["left_on_rotated"])
    if result["rotated_left"]:
        problems.append("old nodes left: %s" % ", ".join(result["rotated_left"]))
    if tool == OURS and result["moved_again"]:
        problems.append("%d pod(s) moved that were not on the rotated nodes" % result["moved_again"])
    if tool == OURS and result["zones_off"]:
        problems.append("pods per zone changed by more than 1: %s" % result["zones_off"])
    if tool == OURS:
        read_ours(result, details, problems)
        if details.get("profile_dir"):
            result["profiles"] = summarize_profiles(details["profile_dir"])
        if result["violations"]:
            problems.append("a PDB minimum was crossed: fewest Ready %s" % result["min_ready"])
        twice = {key: count for key, count in result["restarts"].items() if count > 1}
        if twice:
            problems.append("restarted more than once: %s" % twice)
    else:
        read_manual(result, details)
    result["ok"] = not problems
    result["problems"] = problems
    return scenario, result


SUMMARY_KEYS = ("wall", "settled", "pods_moved", "pods_to_move", "restarts_total", "requests", "net_requests",
                "requests_per_moved_pod", "own_requests", "own_requests_per_moved_pod", "eviction_requests",
                "evictions_429", "new_nodes", "batches_n",
                "batch_seconds", "waited_per_batch", "overhead_per_batch", "tasks_per_batch", "calls_per_batch",
                "outside_batches_seconds", "module_calls", "module_api_requests", "commands")


def summarize(runs_by_tool):
    summaries = {}
    for tool, runs in runs_by_tool.items():
        summary = {key: median(runs, key) for key in SUMMARY_KEYS}
        workload_keys = sorted({key for run in runs for key in run["restarts"]})
        summary["restarts"] = {key: median([run["restarts"] for run in runs if key in run["restarts"]], key)
                               for key in workload_keys}
        summary["step_seconds"] = {step: median([batch["seconds"] for run in runs for batch in run.get("batches", [])
                                                 if isinstance(batch.get("seconds"), dict)
                                                 and step in batch["seconds"]], step) for step in STEPS}
        summary["violations"] = sum(run["violations"] for run in runs)
        summary["failed"] = sum(1 for run in runs if not run["ok"])
        summary["trials"] = len(runs)
        summaries[tool] = summary
    return add_ratios(summaries, OURS, ("wall", "settled", "pods_moved", "requests", "requests_per_moved_pod",
                                        "own_requests_per_moved_pod"))


def print_run(trial, tool, result):
    net = "" if result["net_requests"] is None else " (net ~%.0f)" % result["net_requests"]
    print("trial %d  %-30s wall %6.1f s  settled %s s  moved %d of %d  restarts %s  requests %5d%s  "
          "own %s (%s/moved)  new nodes %d  violations %d%s" % (
              trial, tool, result["wall"], fmt(result["settled"], "6.1f"), result["pods_moved"],
              result["pods_to_move"], json.dumps({key.split("/")[1]: count for key, count in
                                                  result["restarts"].items()}, sort_keys=True),
              result["requests"], net, fmt(result.get("own_requests"), "4d"),
              fmt(result["own_requests_per_moved_pod"], ".1f"), result["new_nodes"], result["violations"],
              "  FAILED: %s (%s)" % ("; ".join(result["problems"]), result["log"]) if result["problems"] else ""),
          flush=True)
    memory = result.get("peak_memory_mb")
    if memory:
        pods = sum(sum(zones.values()) for zones in result["zones_before"].values())
        print("         peak resident memory, MB (KB per workload pod, %d pods): %s; moved again %d; zones off by "
              "more than 1: %s" % (pods, ", ".join(
                  "%s %.0f (%.1f)" % (kind, megabytes, megabytes * 1024 / max(pods, 1))
                  for kind, megabytes in sorted(memory.items(), key=lambda item: -item[1])),
                  result["moved_again"], result["zones_off"] or "none"), flush=True)


def print_table(summaries):
    header = "%-30s %8s %6s %9s %6s %9s %8s %9s %8s %9s %6s %8s %9s %6s %6s %10s %6s" % (
        "tool", "wall s", "ratio", "settled s", "ratio", "moved/of", "restarts", "requests", "net req",
        "req/moved", "ratio", "own req", "own/moved", "ratio", "nodes+", "violations", "failed")
    print(header)
    print("-" * len(header))
    for tool, row in summaries.items():
        moved = "%s/%s" % (fmt(row["pods_moved"], ".0f"), fmt(row["pods_to_move"], ".0f"))
        print("%-30s %8s %6s %9s %6s %9s %8s %9s %8s %9s %6s %8s %9s %6s %6s %10d %6d" % (
            tool, fmt(row["wall"], "8.1f"), fmt(row["wall_ratio_to_ours"], "6.2f"), fmt(row["settled"], "9.1f"),
            fmt(row["settled_ratio_to_ours"], "6.2f"), moved, fmt(row["restarts_total"], "8.0f"),
            fmt(row["requests"], "9.0f"), fmt(row["net_requests"], "8.0f"), fmt(row["requests_per_moved_pod"], "9.1f"),
            fmt(row["requests_per_moved_pod_ratio_to_ours"], "6.2f"), fmt(row["own_requests"], "8.0f"),
            fmt(row["own_requests_per_moved_pod"], "9.1f"),
            fmt(row["own_requests_per_moved_pod_ratio_to_ours"], "6.2f"),
            fmt(row["new_nodes"], "6.0f"),
            row["violations"], row["failed"]))


def print_details(summaries):
    ours = summaries.get(OURS)
    if ours and ours["batches_n"]:
        print("\n%s, per batch (medians): %s s a batch = waiting %s s (warm + replace + evict, the modules' "
              "elapsed_seconds) + overhead %s s; %s tasks run, %s of them module calls; outside the batches %s s; "
              "%s module calls in all, whose own API requests: %s" % (
                  OURS, fmt(ours["batch_seconds"], ".1f"), fmt(ours["waited_per_batch"], ".1f"),
                  fmt(ours["overhead_per_batch"], ".1f"), fmt(ours["tasks_per_batch"], ".1f"),
                  fmt(ours["calls_per_batch"], ".1f"), fmt(ours["outside_batches_seconds"], ".1f"),
                  fmt(ours["module_calls"], ".0f"), fmt(ours["module_api_requests"], ".0f")))
    manual = summaries.get(MANUAL)
    if manual and manual["batches_n"]:
        print("%s, per batch (medians): %s s a batch, %s kubectl commands; steps: %s" % (
            MANUAL, fmt(manual["batch_seconds"], ".1f"), fmt(manual["calls_per_batch"], ".1f"),
            ", ".join("%s %s s" % (step, fmt(manual["step_seconds"][step], ".1f")) for step in STEPS)))
    keys = sorted({key for summary in summaries.values() for key in summary["restarts"]})
    print("\nrestarts per workload (medians; generation changes of the workloads restarted): " + "; ".join(
        "%s %s" % (key, " / ".join("%s %s" % (TOOL_IDS[tool], fmt(summary["restarts"].get(key), ".0f"))
                                   for tool, summary in summaries.items())) for key in keys))


def pools_file(path, scenario_ids, nodes, slots):
    """The provisioner's pools: one new pool per run, over both zones, nodes of the old pool's size."""
    pools = [{"name": scenario_id + "-new", "labels": {}, "zones": list(ZONES),
              "capacity": {"cpu": "%dm" % (slots * POD_MILLICPU), "memory": "16Gi", "pods": "110"},
              "max_nodes": nodes} for scenario_id in scenario_ids]
    with open(path, "w") as handle:
        yaml.safe_dump({"pool_label": POOL_LABEL, "upcoming_seconds": 15, "pools": pools}, handle, sort_keys=False)
    return path


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, help="nodes of the old pool (default 20, --quick 5); 20%% rotate")
    parser.add_argument("--slots", type=int, help="pods per node, all taken (default 5, --quick 3)")
    parser.add_argument("--batch-size", type=int, help="nodes per batch (default 2, --quick 1)")
    parser.add_argument("--trials", type=int, help="runs per tool (default 3, --quick 1)")
    parser.add_argument("--api-qps", type=int, help="the controllers' client rate limit, for a large cluster "
                        "(default theirs: 20 and 50 requests a second; 500 nodes: 200)")
    parser.add_argument("--web-max-unavailable", default=1, type=lambda text: text if text.endswith("%") else int(text),
                        help="web's PDB maxUnavailable, a count or a percent (default %(default)s; a large run: 10%%)")
    parser.add_argument("--tools", nargs="+", choices=list(TOOLS), help="the contenders (default both)")
    parser.add_argument("--idle", type=float, help="seconds of the idle window before each run that measures the "
                        "background request rate (default 5, --quick 0: none)")
    parser.add_argument("--json", help="where the results go (default %s, --quick %s)" % (
        os.path.relpath(RESULTS, REPO), os.path.relpath(QUICK_RESULTS, REPO)))
    parser.add_argument("--quick", action="store_true", help="a smoke run: 5 nodes, 3 slots, 1 trial")
    parser.add_argument("--profile", action="store_true", help="run ours' module calls under cProfile and print where "
                        "their time goes, per module (tests/bench/module_profiles.py); the profiler slows our "
                        "Python down, so time such runs apart from the others")
    args = parser.parse_args(argv)
    defaults = {"nodes": 5, "slots": 3, "batch_size": 1, "trials": 1, "idle": 0, "json": QUICK_RESULTS} \
        if args.quick else {"nodes": 20, "slots": 5, "batch_size": 2, "trials": 3, "idle": 5, "json": RESULTS}
    defaults["tools"] = list(TOOLS)
    for key, value in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if args.nodes < 5:
        parser.error("--nodes must be 5 or more, so that 20%% is at least one node")
    if args.slots < 3 or args.batch_size < 1 or args.trials < 1 or args.idle < 0:
        parser.error("--slots must be 3 or more, --batch-size and --trials 1 or more, --idle 0 or more")
    args.tools = [TOOLS[tool_id] for tool_id in TOOLS if tool_id in args.tools]
    return args


def main(argv=None):
    args = parse_args(argv)
    os.makedirs(LOGS, exist_ok=True)
    started = time.monotonic()
    work_dir = tempfile.mkdtemp(prefix="kubeops-bench-")
    cluster_dir = os.path.join(work_dir, "cluster")
    order = trial_order(args.trials, args.tools)
    pools = pools_file(os.path.join(work_dir, "pools.yaml"), ["t%d-%s" % (trial, TOOL_IDS[tool])
                                                              for trial, tool in order], args.nodes, args.slots)
    state = local_cluster.up(cluster_dir, provisioner_pools=pools, die_with_parent=True, audit=True,
                             python=sys.executable, api_qps=args.api_qps)
    runs = {tool: [] for tool in args.tools}
    try:
        bench = Bench(state["kubeconfig"], work_dir, state["audit_log"], args.profile)
        # kubectl's discovery cache, filled once, as an operator's ~/.kube/cache is.
        subprocess.run([local_cluster.binary("kubectl"), "--kubeconfig", bench.kubeconfig, "--cache-dir",
                        os.path.join(work_dir, "kubectl-cache"), "api-resources"], capture_output=True, check=False)
        for index, (trial, tool) in enumerate(order):
            scenario, result = run_once(bench, tool, trial, args)
            runs[tool].append(result)
            print_run(trial, tool, result)
            if index < len(order) - 1:  # the cluster goes down after the last
                scenario.remove()
    finally:
        local_cluster.down(cluster_dir)
    summaries = summarize(runs)
    rotated = max(1, round(args.nodes * SHARE_ROTATED))
    print("\n%d nodes of %d pods (web under a PDB, guard and db do-not-disrupt, solo under a PDB, a DaemonSet), "
          "%d rotated in batches of %d; medians of %d trial(s); ratios to ours; req/moved: %s requests per pod "
          "moved; nodes+: new nodes; violations: all trials" % (
              args.nodes, args.slots, rotated, args.batch_size, args.trials, "net" if args.idle else "all"))
    print_table(summaries)
    print_details(summaries)
    for result in runs.get(OURS, []):
        if result.get("profiles"):
            print("\n%s, where its module calls' time goes (cProfile; profiles in %s):" % (result["scenario"], LOGS))
            print_report(result["profiles"])
    found = {"kubeops.rotation": collection_version(INSTALLED_COLLECTIONS, "kubeops", "rotation"),
             "kubectl": kubectl_version(local_cluster.binary("kubectl"))}
    with open(args.json, "w") as handle:
        json.dump({"nodes": args.nodes, "slots": args.slots, "rotated": rotated, "batch_size": args.batch_size,
                   "trials": args.trials, "idle_seconds": args.idle, "quick": args.quick,
                   "workloads": workloads(args.nodes * args.slots, args.web_max_unavailable),
                   "placeholder": placeholder(
                       "<new nodes>", "<new pool>", ["<batch zone>"]),
                   "versions": found, "summaries": summaries, "runs": runs,
                   "seconds": round(time.monotonic() - started, 1)}, handle, indent=2)
    print("\n%s; results in %s, logs in %s (%.0f s in all)" % (
        ", ".join("%s %s" % item for item in found.items() if item[1]), args.json, LOGS, time.monotonic() - started))
    if any(summary["failed"] for summary in summaries.values()):
        sys.exit(1)


if __name__ == "__main__":
    main()
