# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Pure planning of a node rotation: which nodes, in which batches, how each pod moves, and whether it fits.

Everything here takes plain data (the API's JSON for nodes, pods, PDBs and
workloads) and returns plain data; no client, no clock (``now`` is passed in).
"""

from __future__ import annotations

import math
import re

from ansible_collections.kubeops.rotation.plugins.module_utils.nodes import ZONE_LABEL, is_schedulable
from ansible_collections.kubeops.rotation.plugins.module_utils.placement import bound_volume, fit, in_zones
from ansible_collections.kubeops.rotation.plugins.module_utils.pods import (
    DO_NOT_DISRUPT,
    SAFE_TO_EVICT,
    FilterOptions,
    controller_of,
    judge,
    pdbs_for,
    pod_key,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.times import parse_time
from ansible_collections.kubeops.rotation.plugins.module_utils.warm import RESOURCES, nodes_needed

ROTATION_ID = "kubeops.io/rotation-id"
ROTATION_PHASE = "kubeops.io/rotation-phase"
FINISHED_PHASES = ("drained", "retired")
_DURATION = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(text):
    """Seconds in "90", "45m", "12h", "7d" or "2w"."""
    match = re.match(r"^\s*(\d+)\s*([smhdw]?)\s*$", str(text))
    if not match:
        raise ValueError("not a duration: %r (use 45m, 12h, 7d...)" % (text,))
    return int(match.group(1)) * _DURATION[match.group(2) or "s"]


def version_tuple(text):
    """(1, 34, 2) from "v1.34.2" or "v1.34.2-eks-abc"; missing parts are 0."""
    numbers = re.findall(r"\d+", str(text).split("-", maxsplit=1)[0])
    return tuple(int(n) for n in (numbers + ["0", "0", "0"])[:3])


def drift_reasons(node, rules, now):
    """Why ``node`` drifted from what ``rules`` want; an empty list when it did not."""
    metadata = node.get("metadata") or {}
    labels = metadata.get("labels") or {}
    annotations = metadata.get("annotations") or {}
    reasons = []
    target = rules.get("target_kubelet_version")
    kubelet = ((node.get("status") or {}).get("nodeInfo") or {}).get("kubeletVersion")
    if target and kubelet and version_tuple(kubelet) < version_tuple(target):
        reasons.append("kubelet %s is older than %s" % (kubelet, target))
    for key, wanted in sorted((rules.get("labels") or {}).items()):
        if labels.get(key) != wanted:
            reasons.append("label %s is %s, not %s" % (key, labels.get(key), wanted))
    if rules.get("max_node_age") and metadata.get("creationTimestamp"):
        age = (now - parse_time(metadata["creationTimestamp"])).total_seconds()
        if age > parse_duration(rules["max_node_age"]):
            reasons.append("%d s old, more than %s" % (age, rules["max_node_age"]))
    for key in rules.get("annotations") or []:
        if key in annotations:
            reasons.append("annotated %s" % key)
    taint_keys = {taint.get("key") for taint in (node.get("spec") or {}).get("taints") or []}
    for key in rules.get("taints") or []:
        if key in taint_keys:
            reasons.append("tainted %s" % key)
    return reasons


def has_drift_rules(rules):
    return any(rules.get(key) for key in ("target_kubelet_version", "labels", "max_node_age", "annotations",
                                          "taints"))


def choose_nodes(candidates, rules, rotation_id, now, named=()):
    """(to rotate: [(node, reasons)], left out: [{name, reason}]) from the candidate nodes."""
    chosen, left_out = [], []
    for node in sorted(candidates, key=lambda n: n["metadata"]["name"]):
        name = node["metadata"]["name"]
        annotations = node["metadata"].get("annotations") or {}
        if rotation_id and annotations.get(ROTATION_ID) == rotation_id and \
                annotations.get(ROTATION_PHASE) in FINISHED_PHASES:
            left_out.append({"name": name, "reason": "already rotated by %s (%s)" % (
                rotation_id, annotations.get(ROTATION_PHASE))})
            continue
        if name in named:
            chosen.append((node, ["named"]))
            continue
        reasons = drift_reasons(node, rules, now) if has_drift_rules(rules) else ["selected"]
        if reasons:
            chosen.append((node, reasons))
        else:
            left_out.append({"name": name, "reason": "no drift"})
    return chosen, left_out


def batch_count(size, total):
    """Nodes per batch from a count ("2") or a percent of ``total`` ("25%", rounded down as
    Kubernetes rounds maxUnavailable, so fewer nodes go at once), at least 1."""
    text = str(size).strip()
    if text.endswith("%"):
        return max(1, int(math.floor(total * float(text[:-1]) / 100)))
    return max(1, int(text))


def make_batches(chosen, size, pods_per_node, most_disruptive="last"):
    """Batches of node names: one zone at a time, at most ``size`` nodes each.

    Within a zone, nodes with fewer movable pods go first (``most_disruptive="last"``)
    or last (``"first"``); zones follow in name order.
    """
    per_batch = batch_count(size, len(chosen))
    zones = {}
    for node, _reasons in chosen:
        zones.setdefault((node["metadata"].get("labels") or {}).get(ZONE_LABEL) or "", []).append(
            node["metadata"]["name"])
    batches = []
    for zone in sorted(zones):
        names = sorted(zones[zone], key=lambda name: (pods_per_node.get(name, 0), name),
                       reverse=(most_disruptive == "first"))
        for start in range(0, len(names), per_batch):
            batches.append({"zone": zone or None, "nodes": names[start:start + per_batch]})
    return batches


def workload_of(pod, replica_set_owners):
    """(kind, namespace, name) of the Deployment or StatefulSet that owns the pod, or None."""
    owner = controller_of(pod)
    if not owner:
        return None
    namespace = pod["metadata"]["namespace"]
    if owner["kind"] == "ReplicaSet":
        deployment = replica_set_owners.get((namespace, owner["name"]))
        return ("Deployment", namespace, deployment) if deployment else None
    if owner["kind"] == "StatefulSet":
        return ("StatefulSet", namespace, owner["name"])
    return None


def move_of(pod, workload, replicas, pdbs, options):
    """How one pod leaves its node: (method, reason), method one of restart, evict, stays, blocked.

    Rollout restart is the only safe way for do-not-disrupt pods, single
    replicas, and pods whose PDB allows no disruption now: the controller
    surges a replacement before the old pod goes.
    """
    judged = judge(pod, FilterOptions(force=options.force, delete_emptydir_data=options.delete_emptydir_data,
                                      respect_do_not_disrupt=False, evict_system_critical=options.evict_system_critical))
    verdict = judged.verdict
    if verdict.action in ("skip", "delete"):
        return "stays", verdict.reason
    annotations = pod["metadata"].get("annotations") or {}
    if workload:
        if any(annotations.get(key) == value for key, value in (DO_NOT_DISRUPT, SAFE_TO_EVICT)):
            return "restart", "do-not-disrupt"
        if replicas == 1:
            return "restart", "single replica"
        blocking = [pdb["metadata"]["name"] for pdb in pdbs_for(pod, pdbs)
                    if ((pdb.get("status") or {}).get("disruptionsAllowed") or 0) == 0]
        if blocking:
            return "restart", "PDB %s allows no disruption now" % ", ".join(blocking)
    if verdict.action == "refuse":
        return "blocked", "%s: %s" % (verdict.reason, verdict.detail)
    if any(annotations.get(key) == value for key, value in (DO_NOT_DISRUPT, SAFE_TO_EVICT)):
        return "blocked", "do-not-disrupt pod without a Deployment or StatefulSet to restart"
    return "evict", "evictable"


def warm_template(name, labels, allocatable, taints=()):
    """A node that does not exist yet, for the fit check: the pool's labels and a template's allocatable."""
    return {"metadata": {"name": name, "labels": dict(labels, **{"kubernetes.io/hostname": name})},
            "spec": {"taints": list(taints)}, "status": {"allocatable": dict(allocatable)}}


def plan_rotation(nodes, pods, pdbs, replica_set_owners, replicas, settings, now, claim_zones=None):
    """The whole rotation plan. Pure.

    ``nodes`` are the candidate nodes plus every other node of the cluster
    (``settings["candidates"]`` names the candidates); ``replicas`` maps
    (kind, namespace, name) to desired replicas; ``claim_zones`` maps
    "namespace/claim" to the zone its volume is bound to.
    """
    candidates = [node for node in nodes if node["metadata"]["name"] in settings["candidates"]]
    chosen, left_out = choose_nodes(candidates, settings.get("rules") or {}, settings.get("rotation_id"), now,
                                    set(settings.get("named") or ()))
    rotating = {node["metadata"]["name"] for node, _reasons in chosen}
    options = settings["options"]
    moves = {}
    for pod in pods:
        if (pod.get("spec") or {}).get("nodeName") in rotating:
            workload = workload_of(pod, replica_set_owners)
            moves[pod_key(pod)] = (pod, workload) + move_of(pod, workload, replicas.get(workload), pdbs, options)
    pods_per_node = {}
    for pod, _workload, method, _reason in moves.values():
        if method != "stays":
            node_name = pod["spec"]["nodeName"]
            pods_per_node[node_name] = pods_per_node.get(node_name, 0) + 1
    batches = make_batches(chosen, settings.get("batch_size") or 1, pods_per_node,
                           settings.get("most_disruptive") or "last")
    targets = [node for node in nodes if node["metadata"]["name"] not in rotating and is_schedulable(node)]
    residents = [pod for pod in pods if (pod.get("spec") or {}).get("nodeName") not in rotating
                 and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
    pool_labels = settings.get("pool_labels") or {}
    template = settings.get("template_allocatable")
    for index, batch in enumerate(batches, start=1):
        batch_nodes = set(batch["nodes"])
        batch_moves = [m for m in moves.values() if m[0]["spec"]["nodeName"] in batch_nodes]
        movers = [pod for pod, _w, method, _r in batch_moves if method in ("restart", "evict")]
        warm_count, warm_free = 0, {}
        if template:
            warm_count, computed = nodes_needed([pod for pod, _w, _m, _r in batch_moves], template, pool_labels)
            batch["warm_computed"] = computed["summary"]
            # What a warm node offers once its DaemonSet pods run there too.
            warm_free = {resource: "%r" % (computed["node_allocatable"][resource]
                                           - computed["daemonset_requests_per_node"][resource])
                         for resource in RESOURCES}
        warm = [warm_template("warm-%d-%d" % (index, n), pool_labels, warm_free) for n in range(warm_count)]
        zones = {}
        for pod in movers:
            bound = bound_volume(pod, claim_zones or {})
            if bound:
                zones[pod_key(pod)] = bound[1]
        placement, unplaced = fit([p for p in movers if pod_key(p) not in zones], targets + warm, residents)
        for pod in [p for p in movers if pod_key(p) in zones]:
            zone_targets = [node for node in targets + warm if in_zones(node, zones[pod_key(pod)])]
            extra_placement, extra_unplaced = fit([pod], zone_targets, residents)
            placement.update(extra_placement)
            unplaced.extend(dict(entry, reason="its volume is bound to zone %s: %s" % (
                zones[pod_key(pod)], entry["reason"])) for entry in extra_unplaced)
        restarts = {}
        for pod, workload, method, reason in batch_moves:
            if method == "restart":
                target = {"kind": workload[0], "namespace": workload[1], "name": workload[2]}
                entry = restarts.setdefault(workload, dict(target, target=target, reason=reason, pods=[]))
                entry["pods"].append(pod_key(pod))
        batch.update(
            index=index,
            restart=[restarts[key] for key in sorted(restarts)],
            evict=sorted(pod_key(pod) for pod, _w, method, _r in batch_moves if method == "evict"),
            blocked=sorted(({"pod": pod_key(pod), "reason": reason} for pod, _w, method, reason in batch_moves
                            if method == "blocked"), key=lambda entry: entry["pod"]),
            stays=sorted(pod_key(pod) for pod, _w, method, _r in batch_moves if method == "stays"),
            warm_nodes=warm_count,
            fits=not unplaced,
            unplaced=unplaced,
        )
        # The next batch sees this one's pods where they were placed, and its warm nodes.
        targets = targets + warm
        residents = residents + [dict(pod, spec=dict(pod["spec"], nodeName=placement[pod_key(pod)]))
                                 for pod in movers if pod_key(pod) in placement]
    plan = {
        "rotation_id": settings.get("rotation_id"),
        "nodes": [{"name": node["metadata"]["name"],
                   "zone": (node["metadata"].get("labels") or {}).get(ZONE_LABEL),
                   "reasons": reasons} for node, reasons in chosen],
        "left_out": left_out,
        "batches": batches,
        "fits": all(batch["fits"] for batch in batches),
        "safe": not any(batch["blocked"] for batch in batches),
        "abort_reasons": abort_reasons(pods, pdbs, settings.get("abort_if"), now),
    }
    plan["summary"] = summarize_plan(plan)
    return plan


def summarize_plan(plan):
    """The few lines a person reads before a rotation starts."""
    lines = ["Rotation %s: %d node(s) in %d batch(es)%s." % (
        plan["rotation_id"] or "(no id)", len(plan["nodes"]), len(plan["batches"]),
        "; %d left out" % len(plan["left_out"]) if plan["left_out"] else "")]
    for batch in plan["batches"]:
        lines.append("batch %d/%d (zone %s): %s; restart %d workload(s), evict %d pod(s), %d warm node(s)%s%s" % (
            batch["index"], len(plan["batches"]), batch["zone"] or "-", ", ".join(batch["nodes"]),
            len(batch["restart"]), len(batch["evict"]), batch["warm_nodes"],
            "; DOES NOT FIT: %s" % "; ".join("%s (%s)" % (u["pod"], u["reason"]) for u in batch["unplaced"])
            if batch["unplaced"] else "",
            "; BLOCKED: %s" % "; ".join("%s (%s)" % (b["pod"], b["reason"]) for b in batch["blocked"])
            if batch["blocked"] else ""))
    return lines


def abort_reasons(pods, pdbs, abort_if, now):
    """Why a rotation should stop before its next batch, by ``abort_if``; [] to go on. Pure.

    ``abort_if`` may hold ``pending_pods_for`` (a pod Pending longer than
    that, placeholders aside) and ``pdb_blocked_for`` (a PDB whose
    disruptions have not been allowed for longer than that).
    """
    reasons = []
    limit = (abort_if or {}).get("pending_pods_for")
    if limit:
        seconds = parse_duration(limit)
        for pod in pods:
            metadata = pod.get("metadata") or {}
            if (pod.get("status") or {}).get("phase") != "Pending" or metadata.get("deletionTimestamp") or \
                    "kubeops.io/warm-set" in (metadata.get("labels") or {}) or not metadata.get("creationTimestamp"):
                continue
            age = (now - parse_time(metadata["creationTimestamp"])).total_seconds()
            if age > seconds:
                reasons.append("pod %s has been Pending for %d s (abort_if pending_pods_for %s)" % (
                    pod_key(pod), age, limit))
    limit = (abort_if or {}).get("pdb_blocked_for")
    if limit:
        seconds = parse_duration(limit)
        for pdb in pdbs:
            status = pdb.get("status") or {}
            condition = next((c for c in status.get("conditions") or [] if c.get("type") == "DisruptionAllowed"), {})
            if status.get("disruptionsAllowed", 0) or condition.get("status") != "False" or \
                    not condition.get("lastTransitionTime"):
                continue
            age = (now - parse_time(condition["lastTransitionTime"])).total_seconds()
            if age > seconds:
                reasons.append("PDB %s/%s has allowed no disruption for %d s (abort_if pdb_blocked_for %s)" % (
                    pdb["metadata"]["namespace"], pdb["metadata"]["name"], age, limit))
    return reasons
