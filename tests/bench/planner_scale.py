"""Benchmark (a script, not a test): how the pure planners scale with the size of the cluster.

Builds synthetic clusters with a fixed seed and times ``plan_rotation`` and
``plan_rebalance`` on them, each size in a child process of its own so that
its peak RSS (``resource.getrusage(RUSAGE_SELF).ru_maxrss``, which includes
the synthetic snapshot itself) is that of the size alone. The clusters:

  nodes     16 cpu / 64Gi / 110 pods, round robin over 3 zones; every node
            runs one DaemonSet pod (100m); the other pods are Deployments of
            40 replicas (100m, 256Mi), 10 Deployments per namespace, each
            with a PDB of maxUnavailable 1 (one disruption allowed)
  spread    every third Deployment has a DoNotSchedule zone topology spread
            constraint on its own app label, 5 % have required hostname
            pod anti-affinity on it
  affinity  with --affinity-every N, every N-th Deployment (but the first of
            its namespace) has required pod affinity terms instead, in
            turn: hostname anti-affinity on its own app, zone pod affinity
            to the first Deployment of its namespace, hostname anti-affinity
            against that one (issue 39's goal: --spread-every 1
            --affinity-every 3)
  rotation  pods on every node, spread constraints kept; 20 % of the nodes
            run an old kubelet (drifted), batch_size "10%", warm nodes sized
            from a template node
  rebalance pods on 80 % of the nodes (the other 20 % just joined), one
            spread Deployment in 10 piled on its first zone; strategies
            topology_spread and duplicates

Sizes are nodes (pods = 20 per node). Times are the median of --runs runs,
wall and CPU seconds of the process (steadier on a busy machine; the ratio
to the previous size is of CPU time). ns/pod is the cheapest pass over the
pods: what memory alone costs per pod at that size, which rises once the
snapshot outgrows the CPU's caches, so that even a linear pass then takes
more than twice as long for twice the pods. The digest of each plan (sha256
of its JSON) shows whether two versions of the code plan the same thing.
Run from the repository root:

  .venv/bin/python tests/bench/planner_scale.py [--quick] [--sizes 250,500] [--json PATH]
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "cluster"))

from checkout import expose_checkout_as_collection  # noqa: E402

SIZES = (250, 500, 1000, 2000)
PODS_PER_NODE = 20
REPLICAS = 40
ZONES = ("zone-a", "zone-b", "zone-c")
ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
NODE_ALLOCATABLE = {"cpu": "16", "memory": "64Gi", "pods": "110"}
NOW = datetime.datetime(2026, 12, 3, tzinfo=datetime.timezone.utc)
# Every pod gets these from the DefaultTolerationSeconds admission plugin.
DEFAULT_TOLERATIONS = (("node.kubernetes.io/not-ready", 300), ("node.kubernetes.io/unreachable", 300))


def make_node(name, zone, kubelet):
    return {"metadata": {"name": name, "creationTimestamp": "2026-11-01T00:00:00Z", "resourceVersion": "1",
                         "labels": {HOSTNAME: name, ZONE: zone, "node.kubernetes.io/instance-type": "m7i.4xlarge"}},
            "spec": {"taints": []},
            "status": {"nodeInfo": {"kubeletVersion": kubelet}, "allocatable": dict(NODE_ALLOCATABLE),
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def make_pod(name, namespace, node, labels, owner_kind, owner_name, cpu="100m", memory="256Mi", **spec):
    """A fresh dict per pod, nothing shared between pods, as the API's JSON would be."""
    tolerations = [{"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": seconds}
                   for key, seconds in DEFAULT_TOLERATIONS]
    return {"metadata": {"name": name, "namespace": namespace, "uid": "uid-%s-%s" % (namespace, name),
                         "labels": dict(labels), "creationTimestamp": "2026-11-02T00:00:00Z",
                         "ownerReferences": [{"kind": owner_kind, "name": owner_name, "controller": True}]},
            "spec": dict({"nodeName": node, "tolerations": tolerations, "containers": [
                {"name": "main", "image": "registry.example/app:1",
                 "resources": {"requests": {"cpu": cpu, "memory": memory}, "limits": {"memory": memory}}}]},
                **spec),
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}


def affinity_terms(index, app, first_app):
    """The required pod affinity terms of the ``index``-th Deployment with affinity terms (see the docstring)."""
    term = {"topologyKey": HOSTNAME, "labelSelector": {"matchLabels": {"app": app}}}
    kind = index % 3
    if kind == 1:
        term = {"topologyKey": ZONE, "labelSelector": {"matchLabels": {"app": first_app}}}
        return {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    if kind == 2:
        term = dict(term, labelSelector={"matchLabels": {"app": first_app}})
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def build_cluster(node_count, occupied, skew_every, spread_every=3, seed=13, affinity_every=0):
    """Nodes, pods, PDBs, ReplicaSet owners and replicas of a synthetic cluster (see the module's docstring).

    ``occupied`` is the share of the nodes that run the Deployments' pods; every ``spread_every``-th
    Deployment has a zone spread constraint; every ``skew_every``-th spread Deployment is piled on its first
    zone (0: none is); every ``affinity_every``-th has affinity terms (0: none has)."""
    rng = random.Random(seed)
    nodes = [make_node("node-%05d" % index, ZONES[index % len(ZONES)], "v1.35.4") for index in range(node_count)]
    for node in rng.sample(nodes, node_count // 5):
        node["status"]["nodeInfo"]["kubeletVersion"] = "v1.34.2"
    used = sorted(rng.sample(range(node_count), int(node_count * occupied)))
    by_zone = {zone: [nodes[index]["metadata"]["name"] for index in used if index % len(ZONES) == ZONES.index(zone)]
               for zone in ZONES}
    anywhere = [name for zone in ZONES for name in by_zone[zone]]
    pods = [make_pod("agent-%s" % node["metadata"]["name"], "kube-system", node["metadata"]["name"],
                     {"app": "agent"}, "DaemonSet", "agent") for node in nodes]
    pdbs, owners, replicas = [], {}, {}
    remaining, index, spread_index = node_count * (PODS_PER_NODE - 1), 0, 0
    while remaining > 0:
        count = min(REPLICAS, remaining)
        remaining -= count
        app, namespace = "app-%04d" % index, "team-%03d" % (index // 10)
        spread, anti = index % spread_every == 0, index % 20 == 1 and spread_every > 1
        spec = {}
        with_affinity = affinity_every and index % affinity_every == 0 and index % 10
        if with_affinity:
            anti = False
            spec["affinity"] = affinity_terms(index // affinity_every, app, "app-%04d" % (index // 10 * 10))
        if spread:
            spec["topologySpreadConstraints"] = [{"maxSkew": 1, "topologyKey": ZONE,
                                                  "whenUnsatisfiable": "DoNotSchedule",
                                                  "labelSelector": {"matchLabels": {"app": app}}}]
            piled = skew_every and spread_index % skew_every == 0
            spread_index += 1
            zones = [ZONES[0] if piled and n % 2 == 0 else ZONES[n % len(ZONES)] for n in range(count)]
            placed = [rng.choice(by_zone[zone]) for zone in zones]
            if with_affinity:
                # Each zone's share on nodes of their own: right for hostname anti-affinity on its own app.
                shares = {zone: iter(rng.sample(by_zone[zone], zones.count(zone))) for zone in sorted(set(zones))}
                placed = [next(shares[zone]) for zone in zones]
        elif anti:
            spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": HOSTNAME, "labelSelector": {"matchLabels": {"app": app}}}]}}
            placed = rng.sample(anywhere, count)
        else:
            placed = [rng.choice(anywhere) for _n in range(count)]
        replica_set = "%s-5d8f7c" % app
        owners[(namespace, replica_set)] = app
        replicas[("Deployment", namespace, app)] = count
        pods.extend(make_pod("%s-%05d" % (replica_set, n), namespace, node, {"app": app, "pod-template-hash": "5d8f7c"},
                             "ReplicaSet", replica_set, **spec) for n, node in enumerate(placed))
        pdbs.append({"metadata": {"name": app, "namespace": namespace},
                     "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": app}}},
                     "status": {"disruptionsAllowed": 1, "currentHealthy": count, "desiredHealthy": count - 1,
                                "expectedPods": count}})
        index += 1
    return {"nodes": nodes, "pods": pods, "pdbs": pdbs, "owners": owners, "replicas": replicas}


def digest(plan):
    return hashlib.sha256(json.dumps(plan, sort_keys=True, default=str).encode()).hexdigest()[:12]


def timed(runs, call):
    """(median wall seconds, median CPU seconds of this process, the last result) of ``runs`` calls."""
    walls, cpus, result = [], [], None
    for _run in range(runs):
        started, cpu_started = time.perf_counter(), time.process_time()
        result = call()
        walls.append(time.perf_counter() - started)
        cpus.append(time.process_time() - cpu_started)
    return statistics.median(walls), statistics.median(cpus), result


def touch_every_pod(pods):
    """Nanoseconds per pod of the cheapest pass a planner can make over the pods (best of 5): what memory
    costs at this size, whatever the algorithm."""
    best = float("inf")
    for _run in range(5):
        started = time.perf_counter()
        for pod in pods:
            (pod.get("spec") or {}).get("nodeName")
        best = min(best, time.perf_counter() - started)
    return best / len(pods) * 1e9


def measure(node_count, runs, spread_every=3, affinity_every=0):
    """One size, in this process: the timings, what was planned, and the peak RSS."""
    expose_checkout_as_collection()
    from ansible_collections.kubeops.rotation.plugins.module_utils.model.owners import Workload
    from ansible_collections.kubeops.rotation.plugins.module_utils.plan.rebalance.planner import (
        RebalanceSettings,
        plan_rebalance,
    )
    from ansible_collections.kubeops.rotation.plugins.module_utils.plan.rotation import (
        DriftRules,
        RotationFacts,
        RotationSettings,
        plan_rotation,
    )

    result = {"nodes": node_count}
    cluster = build_cluster(node_count, occupied=1.0, skew_every=0, spread_every=spread_every,
                            affinity_every=affinity_every)
    result["pods"] = len(cluster["pods"])
    result["rss_snapshot_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    result["touch_ns_per_pod"] = touch_every_pod(cluster["pods"])
    replicas = {Workload(*key): count for key, count in cluster["replicas"].items()}
    settings = RotationSettings(candidates=frozenset(node["metadata"]["name"] for node in cluster["nodes"]),
                                rules=DriftRules(target_kubelet_version="v1.35.0"), rotation_id="bench",
                                batch_size="10%", template_allocatable=dict(NODE_ALLOCATABLE))
    facts = RotationFacts(cluster["nodes"], cluster["pods"], cluster["pdbs"], cluster["owners"], replicas)
    result["rotation_s"], result["rotation_cpu_s"], plan = timed(runs, lambda: plan_rotation(facts, settings, NOW))
    result["rotation"] = {"batches": len(plan["batches"]), "nodes": len(plan["nodes"]), "fits": plan["fits"],
                          "evict": sum(len(batch["evict"]) for batch in plan["batches"]),
                          "unplaced": sum(len(batch["unplaced"]) for batch in plan["batches"]),
                          "digest": digest(plan)}
    del cluster, plan
    cluster = build_cluster(node_count, occupied=0.8, skew_every=10, spread_every=spread_every,
                            affinity_every=affinity_every)
    result["rebalance_s"], result["rebalance_cpu_s"], plan = timed(runs, lambda: plan_rebalance(
        cluster["nodes"], cluster["pods"], cluster["owners"], RebalanceSettings()))
    per_strategy = {}
    for move in plan["moves"]:
        per_strategy[move["strategy"]] = per_strategy.get(move["strategy"], 0) + 1
    result["rebalance"] = {"moves": per_strategy, "stuck": len(plan["stuck"]),
                           "max_skew": [plan["before"]["max_skew"], plan["predicted"]["max_skew"]],
                           "digest": digest(plan)}
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    return result


def run_child(node_count, runs, spread_every, affinity_every=0):
    completed = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", str(node_count),
                                "--runs", str(runs), "--spread-every", str(spread_every),
                                "--affinity-every", str(affinity_every)],
                               capture_output=True, text=True, check=False)
    if completed.returncode != 0:
        raise SystemExit("size %d failed:\n%s" % (node_count, completed.stderr))
    return json.loads(completed.stdout)


def ratio(results, index, field):
    if index == 0 or not results[index - 1][field]:
        return "-"
    return "%.2f" % (results[index][field] / results[index - 1][field])


def print_table(results):
    print("%6s %6s  %-16s %5s  %-16s %5s  %8s  %6s %7s" % (
        "nodes", "pods", "rotation s (cpu)", "x cpu", "rebalance s (cpu)", "x cpu", "ns/pod", "rss MB", "peak MB"))
    for index, entry in enumerate(results):
        print("%6d %6d  %6.3f (%6.3f)  %5s  %6.3f (%6.3f)   %5s  %8.0f  %6.0f %7.0f" % (
            entry["nodes"], entry["pods"], entry["rotation_s"], entry["rotation_cpu_s"],
            ratio(results, index, "rotation_cpu_s"), entry["rebalance_s"], entry["rebalance_cpu_s"],
            ratio(results, index, "rebalance_cpu_s"), entry["touch_ns_per_pod"], entry["rss_snapshot_mb"],
            entry["peak_rss_mb"]))
    print("s: median wall seconds of the plan (CPU seconds of the process in parentheses); x cpu: CPU time "
          "against the previous size; ns/pod: the cheapest pass over the pods, per pod (memory alone); rss MB: "
          "ru_maxrss of the size's own process with the rotation's snapshot built, before planning; peak MB: at "
          "the end")
    for entry in results:
        rotation, rebalance = entry["rotation"], entry["rebalance"]
        print("%6d: rotation %d nodes in %d batches, %d evictions, %d unplaced [%s]; rebalance %s, %d stuck, "
              "max skew %d -> %d [%s]" % (
                  entry["nodes"], rotation["nodes"], rotation["batches"], rotation["evict"], rotation["unplaced"],
                  rotation["digest"],
                  ", ".join("%s %d" % item for item in sorted(rebalance["moves"].items())) or "no moves",
                  rebalance["stuck"], rebalance["max_skew"][0], rebalance["max_skew"][1], rebalance["digest"]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sizes", default=",".join(str(size) for size in SIZES),
                        help="node counts, comma separated (pods are %d per node)" % PODS_PER_NODE)
    parser.add_argument("--quick", action="store_true", help="the two smallest sizes only")
    parser.add_argument("--runs", type=int, default=3, help="runs per planner and size; the median is reported")
    parser.add_argument("--spread-every", type=int, default=3,
                        help="every N-th Deployment has a zone spread constraint (1: all; then none has "
                             "anti-affinity)")
    parser.add_argument("--affinity-every", type=int, default=0,
                        help="every N-th Deployment has required pod affinity or anti-affinity terms (0: none)")
    parser.add_argument("--json", metavar="PATH", help="also write the results there")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child, args.runs, args.spread_every, args.affinity_every)))
        return
    sizes = SIZES[:2] if args.quick else tuple(int(size) for size in args.sizes.split(","))
    results = []
    for size in sizes:
        results.append(run_child(size, args.runs, args.spread_every, args.affinity_every))
        print("%d nodes: rotation %.3f s, rebalance %.3f s" % (
            size, results[-1]["rotation_s"], results[-1]["rebalance_s"]), file=sys.stderr, flush=True)
    print_table(results)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"runs": args.runs, "seconds": "median wall (_s) and CPU (_cpu_s) seconds per plan",
                       "rss": "ru_maxrss of a child process per size", "results": results},
                      handle, indent=2, sort_keys=True)


if __name__ == "__main__":
    main()
