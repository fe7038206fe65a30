# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""A node rotation planned without a cluster: which nodes, in which batches, how each pod moves, and
whether it fits.

Everything here takes plain data (the API's JSON for nodes, pods and PDBs)
and returns plain data; no client, no clock (``now`` is passed in).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ansible_collections.kubeops.rotation.plugins.module_utils.model.karpenter import (
    claim_pool,
    claims_by_node,
    drift_reason,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.model.keys import (
    DO_NOT_DISRUPT,
    HOSTNAME_LABEL,
    NODEPOOL_LABEL,
    ZONE_LABEL,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.model.nodes import (
    is_schedulable,
    node_labels,
    node_name,
    zone_of,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.model.errors import InvalidInput
from ansible_collections.kubeops.rotation.plugins.module_utils.model.owners import (
    OwnerCache,
    owner_of,
    workload_from_key,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.model.pdbs import (
    PdbIndex,
    disruptions_allowed,
    pdbs_for,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.model.pods import (
    do_not_disrupt_annotation,
    is_placeholder,
    is_terminal,
    is_terminating,
    moved_to,
    node_of,
    pod_key,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.model.times import parse_duration, parse_time
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.budgets import allowed_disruptions
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.capacity import nodes_needed
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.filters import FilterOptions, judge
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.limits import batch_count
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.phases import (
    FINISHED_PHASES,
    recorded_phase,
    way_back,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.placement import (
    PlacementSimulator,
    bound_volume,
    in_zones,
    unmodelled,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.replacement import (
    ONE_AT_A_TIME,
    SURGE,
    never_allows_one,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.rotation_inputs import rotation_plan_error

# Workloads that can replace a pod before it goes (plan.replacement says how).
REPLACING_KINDS = ("Deployment", "StatefulSet")
# The methods (move_of) of the pods that leave their node, and so need room elsewhere.
LEAVING_METHODS = ("evict", "replace")


@dataclass(frozen=True)
class DriftRules:
    """What a node must be; a node that is not has drifted."""

    target_kubelet_version: str | None = None
    labels: dict = field(default_factory=dict)
    max_node_age: str | None = None
    annotations: tuple = ()
    taints: tuple = ()
    # Karpenter's own verdict: the node's NodeClaim is Drifted (in one of ``nodepools``, when given).
    karpenter_drifted: bool = False
    nodepools: tuple = ()

    def __bool__(self):
        return bool(self.target_kubelet_version or self.labels or self.max_node_age or self.annotations
                    or self.taints or self.karpenter_drifted)


@dataclass(frozen=True)
class AbortIf:
    """When a rotation stops before its next batch: a pod Pending, or a PDB blocked, for longer than this."""

    pending_pods_for: str | None = None
    pdb_blocked_for: str | None = None


@dataclass(frozen=True)
class RotationSettings:
    """How to plan a rotation; ``candidates`` are the nodes it may rotate, ``named`` those asked for by name."""

    candidates: frozenset = frozenset()
    named: frozenset = frozenset()
    rules: DriftRules = field(default_factory=DriftRules)
    rotation_id: str | None = None
    batch_size: str = "1"
    # The first batch's own size (count or percent), when the rotation starts with a canary batch; None: none.
    canary_size: str | None = None
    most_disruptive: str = "last"
    options: FilterOptions = field(default_factory=FilterOptions)
    pool_labels: dict = field(default_factory=dict)
    # The zones the pool can bring nodes up in (a Karpenter NodePool's requirements, a node group's zones); None: any.
    pool_zones: tuple | None = None
    template_allocatable: dict | None = None
    abort_if: AbortIf = field(default_factory=AbortIf)
    zone_counts_of: tuple = ()
    # Batches no larger than the chosen nodes' NodePools let Karpenter disrupt for Drifted now.
    karpenter_budgets: bool = False
    # Pods ("namespace/name") an earlier plan of this rotation evicts: the check of a batch keeps them evicted while
    # their PDB is only spent for now (the last batch's pods not Ready yet); the eviction waits for it.
    planned_evictions: frozenset = frozenset()

    @classmethod
    def from_params(cls, params, prefix=""):
        """The settings from the rotation_plan module's parameters (one left out keeps its default here), or
        InvalidInput with the first reason plan.rotation_inputs finds, naming the option with ``prefix``. The
        candidates, the nodes named and the pool node's size are the engine's, from the cluster."""
        error = rotation_plan_error(params, lambda option: prefix + option)
        if error:
            raise InvalidInput(error)
        given = {key: value for key, value in params.items() if value is not None}
        default, rules = cls(), DriftRules()
        return cls(
            rules=DriftRules(target_kubelet_version=given.get("target_kubelet_version"),
                             labels=given.get("wanted_labels") or {}, max_node_age=given.get("max_node_age"),
                             annotations=tuple(given.get("with_annotations", ())),
                             taints=tuple(given.get("with_taints", ())),
                             karpenter_drifted=given.get("karpenter_drifted", rules.karpenter_drifted),
                             nodepools=tuple(given.get("karpenter_nodepools", ()))),
            rotation_id=given.get("rotation_id"), batch_size=given.get("batch_size", default.batch_size),
            canary_size=given.get("canary_size"),
            most_disruptive=given.get("most_disruptive", default.most_disruptive),
            options=FilterOptions(force=given.get("force", False),
                                  delete_emptydir_data=given.get("delete_emptydir_data", False),
                                  evict_system_critical=given.get("evict_system_critical", False)),
            pool_labels=given.get("pool_node_selector") or {}, abort_if=AbortIf(**(given.get("abort_if") or {})),
            pool_zones=tuple(given["pool_zones"]) if "pool_zones" in given else None,
            zone_counts_of=tuple(workload_from_key(key) for key in given.get("zone_counts_of", ())),
            karpenter_budgets=given.get("karpenter_budgets", default.karpenter_budgets),
            planned_evictions=frozenset(given.get("planned_evictions", ())))


@dataclass(frozen=True)
class RotationFacts:
    """What a rotation is planned from: the API's JSON of the cluster's objects, and what was read out of them."""

    # The candidate nodes plus every other node of the cluster (RotationSettings.candidates names the candidates).
    nodes: list
    pods: list
    pdbs: list
    # (namespace, ReplicaSet) -> the name of the Deployment that owns it.
    replica_set_owners: dict
    # Each Workload's desired replicas.
    replicas: dict
    # "namespace/claim" -> the zone its volume is bound to.
    claim_zones: dict | None = None
    # Karpenter's NodeClaims and NodePools, for its drift and its budgets.
    node_claims: tuple = ()
    node_pools: tuple = ()
    # The Workloads that cannot surge besides StatefulSets (Recreate Deployments).
    one_at_a_time: frozenset = frozenset()
    # Workload -> the name of its HorizontalPodAutoscaler.
    autoscalers: dict | None = None
    # Workload -> the GitOps controllers that manage its replicas.
    gitops: dict | None = None


def version_tuple(text):
    """(1, 34, 2) from "v1.34.2" or "v1.34.2-eks-abc"; missing parts are 0."""
    numbers = re.findall(r"\d+", str(text).split("-", maxsplit=1)[0])
    return tuple(int(n) for n in (numbers + ["0", "0", "0"])[:3])


def drift_reasons(node, rules, now, claim=None):
    """Why ``node`` drifted from what ``rules`` (DriftRules) want; an empty list when it did not. ``claim`` is
    the node's Karpenter NodeClaim, if it has one."""
    metadata = node.get("metadata") or {}
    labels = metadata.get("labels") or {}
    annotations = metadata.get("annotations") or {}
    reasons = []
    target = rules.target_kubelet_version
    kubelet = ((node.get("status") or {}).get("nodeInfo") or {}).get("kubeletVersion")
    if target and kubelet and version_tuple(kubelet) < version_tuple(target):
        reasons.append("kubelet %s is older than %s" % (kubelet, target))
    for key, wanted in sorted((rules.labels or {}).items()):
        if labels.get(key) != wanted:
            reasons.append("label %s is %s, not %s" % (key, labels.get(key), wanted))
    if rules.max_node_age and metadata.get("creationTimestamp"):
        age = (now - parse_time(metadata["creationTimestamp"])).total_seconds()
        if age > parse_duration(rules.max_node_age):
            reasons.append("%d s old, more than %s" % (age, rules.max_node_age))
    for key in rules.annotations or ():
        if key in annotations:
            reasons.append("annotated %s" % key)
    taint_keys = {taint.get("key") for taint in (node.get("spec") or {}).get("taints") or []}
    for key in rules.taints or ():
        if key in taint_keys:
            reasons.append("tainted %s" % key)
    if rules.karpenter_drifted and claim and (not rules.nodepools or claim_pool(claim) in rules.nodepools):
        reason = drift_reason(claim)
        if reason:
            reasons.append(reason)
    return reasons


def choose_nodes(candidates, rules, rotation_id, now, named=(), claims=None):
    """(to rotate: [(node, reasons)], left out: [{name, reason}]) from the candidate nodes; ``claims`` maps
    node names to their Karpenter NodeClaims."""
    chosen, left_out = [], []
    for node in sorted(candidates, key=lambda n: n["metadata"]["name"]):
        name = node_name(node)
        phase = recorded_phase(node, rotation_id) if rotation_id else None
        if phase in FINISHED_PHASES:
            left_out.append({"name": name, "reason": "already rotated by %s (%s)" % (rotation_id, phase)})
            continue
        if name in named:
            chosen.append((node, ["named"]))
            continue
        reasons = drift_reasons(node, rules, now, (claims or {}).get(name)) if rules else ["selected"]
        if reasons:
            chosen.append((node, reasons))
        else:
            left_out.append({"name": name, "reason": "no drift"})
    return chosen, left_out


def make_batches(chosen, size, pods_per_node, most_disruptive="last", canary=None):
    """Batches of node names: one zone at a time, at most ``size`` nodes each.

    Within a zone, nodes with fewer movable pods go first (``most_disruptive="last"``)
    or last (``"first"``); zones follow in name order. With ``canary`` (a count or a
    percent), the first batch is a canary of that many of the first zone's nodes, marked
    ``canary``.
    """
    per_batch = batch_count(size, len(chosen))
    first = batch_count(canary, len(chosen)) if canary else 0
    zones = {}
    for node, _reasons in chosen:
        zones.setdefault(zone_of(node) or "", []).append(node_name(node))
    batches = []
    for zone in sorted(zones):
        names = sorted(zones[zone], key=lambda name: (pods_per_node.get(name, 0), name),
                       reverse=(most_disruptive == "first"))
        if first:
            batches.append({"zone": zone or None, "nodes": names[:first], "canary": True})
            names, first = names[first:], 0
        for start in range(0, len(names), per_batch):
            batches.append({"zone": zone or None, "nodes": names[start:start + per_batch]})
    return batches


def replacing_workload(pod, replica_set_owners):
    """The Deployment or StatefulSet (a Workload) that owns the pod and can replace it first, or None."""
    owner = owner_of(pod, replica_set_owners)
    return owner if owner and owner.kind in REPLACING_KINDS else None


def move_of(pod, workload, replicas, pdbs, options, one_at_a_time=False, planned_eviction=False):
    """How one pod leaves its node: (method, reason), method one of replace, evict, stays, blocked.

    Replacement first is the only safe way for do-not-disrupt pods, single
    replicas, and pods whose PDB allows no disruption now: a Deployment surges
    exactly its leaving pods; a workload that cannot surge (``one_at_a_time``:
    a StatefulSet, a Recreate Deployment) loses one pod at a time within its
    PDBs, which a PDB that allows nothing even with every pod Ready never lets
    happen. A ``planned_eviction`` stays one unless its PDB is of that kind:
    the eviction waits for a PDB that the rotation's own moves spent.
    """
    verdict = judge(pod, FilterOptions(force=options.force, delete_emptydir_data=options.delete_emptydir_data,
                                       respect_do_not_disrupt=False,
                                       evict_system_critical=options.evict_system_critical)).verdict
    if verdict.action in ("skip", "delete", "wait"):
        return "stays", verdict.reason
    protected = do_not_disrupt_annotation(pod) is not None
    if workload:
        selecting = pdbs_for(pod, pdbs)
        reason = None
        if protected:
            reason = "do-not-disrupt"
        elif replicas == 1:
            reason = "single replica"
        else:
            blocking = [pdb["metadata"]["name"] for pdb in selecting if disruptions_allowed(pdb) == 0
                        and (not planned_eviction or never_allows_one(pdb))]
            if blocking:
                reason = "PDB %s allows no disruption now" % ", ".join(blocking)
        if reason:
            never = [pdb["metadata"]["name"] for pdb in selecting if never_allows_one(pdb)]
            if one_at_a_time and never:
                return "blocked", ("%s, and its %s cannot surge while PDB %s allows no disruption even with every "
                                   "pod Ready" % (reason, workload.kind, ", ".join(never)))
            return "replace", reason
    if verdict.action == "refuse":
        return "blocked", "%s: %s" % (verdict.reason, verdict.detail)
    if protected:
        return "blocked", "do-not-disrupt pod without a Deployment or StatefulSet to replace it first"
    return "evict", "evictable"


def warm_template(name, labels, allocatable, taints=()):
    """A node that does not exist yet, for the fit check: the pool's labels and a template's allocatable."""
    return {"metadata": {"name": name, "labels": dict(labels, **{HOSTNAME_LABEL: name})},
            "spec": {"taints": list(taints)}, "status": {"allocatable": dict(allocatable)}}


def zone_counts(pods, owners, zone_by_node, replica_set_owners):
    """Owner key -> {zone: live pods}, for the Workloads ``owners``."""
    counts = {owner.key: {} for owner in owners}
    cache = OwnerCache(replica_set_owners)
    for pod in pods:
        owner = cache.owner_of(pod)
        if owner in owners and node_of(pod) and not is_terminal(pod) and not is_terminating(pod):
            zone = zone_by_node.get(node_of(pod)) or "-"
            counts[owner.key][zone] = counts[owner.key].get(zone, 0) + 1
    return counts


def warm_zone(source_zone, pool_labels, pool_zones):
    """Where a pod leaving ``source_zone`` is warmed for: the zone the pool is pinned to by its labels, its own
    zone when the pool serves it (``pool_zones`` None: any), otherwise the first zone the pool serves."""
    pinned = pool_labels.get(ZONE_LABEL)
    if pinned:
        return pinned
    if pool_zones is None or source_zone in pool_zones or not pool_zones:
        return source_zone or ""
    return sorted(pool_zones)[0]


def _warm_for_batch(index, movers, daemon_pods, template, pool_labels, zone_by_node, pool_zones=None):
    """The warm nodes a batch adds, per zone of the pods they take in: ({zone: count}, template nodes,
    explanation, {zone: free allocatable of a warm node there}). ``daemon_pods`` are the DaemonSet pods of the
    rotation's nodes; those on the nodes a zone's pods come from size the room they take on each warm node."""
    groups = {}
    for pod in movers:
        groups.setdefault(warm_zone(zone_by_node.get(node_of(pod)), pool_labels, pool_zones), []).append(pod)
    counts, warm, explanations, free_by_zone = {}, [], [], {}
    for zone in sorted(groups):
        sources = {node_of(pod) for pod in groups[zone]}
        daemons = [pod for pod in daemon_pods if node_of(pod) in sources]
        count, computed = nodes_needed(groups[zone] + daemons, template, pool_labels)
        counts[zone] = count
        explanations.append("zone %s: %s" % (zone or "-", computed["summary"]) if zone else computed["summary"])
        # What a warm node offers once its DaemonSet pods run there too.
        free_by_zone[zone] = {resource: "%r" % (computed["node_allocatable"][resource]
                                                - computed["daemonset_requests_per_node"][resource])
                              for resource in computed["node_allocatable"]}
        warm.extend(_warm_node(index, zone, n, pool_labels, free_by_zone[zone]) for n in range(count))
    return counts, warm, "; ".join(explanations), free_by_zone


def _warm_node(index, zone, number, pool_labels, free):
    labels = dict(pool_labels, **({ZONE_LABEL: zone} if zone else {}))
    return warm_template("warm-%d-%s%d" % (index, zone + "-" if zone else "", number), labels, free)


def plan_rotation(facts, settings, now):
    """The whole rotation plan of the cluster's ``facts`` (RotationFacts) under ``settings`` (RotationSettings). Pure.

    Every pod of a rotated node moves once and no other pod moves: a pod that
    may not simply be evicted is replaced first, in the batch of its node
    (plan.replacement), the others are evicted. No pod is placed on a node
    of the rotation. Warm nodes are asked for per zone, in the zones of the
    pods they take in where the pool serves them (``settings.pool_zones``),
    as many as the placement needs (requests first, then a node more while
    a pod is left out by anti-affinity or spread), and each pod is placed
    in its own zone first.
    """
    candidates = [node for node in facts.nodes if node_name(node) in settings.candidates]
    chosen, left_out = choose_nodes(candidates, settings.rules, settings.rotation_id, now, settings.named,
                                    claims_by_node(facts.node_claims))
    batch_size, budget_notes, budget_stops = _batch_size(chosen, facts, settings, now)
    rotating = {node_name(node): node for node, _reasons in chosen}
    moves = _pod_moves(facts, settings, rotating)
    batches = _batches(chosen, candidates, moves, batch_size, settings)
    zone_by_node = {node_name(node): zone_of(node) for node in facts.nodes}
    placer = _BatchPlacer(facts, settings, rotating, moves, zone_by_node)
    for index, batch in enumerate(batches, start=1):
        placer.place(index, batch)
    moving_owners = _moving_owners(moves, facts.replica_set_owners, settings.zone_counts_of)
    pool_labels, pool_zones = settings.pool_labels or {}, _pool_zones(settings)
    plan = {
        "rotation_id": settings.rotation_id,
        "nodes": [_node_entry(node, reasons) for node, reasons in chosen],
        "left_out": left_out,
        "batches": batches,
        "fits": all(batch["fits"] for batch in batches),
        "safe": not any(batch["blocked"] for batch in batches),
        "abort_reasons": abort_reasons(facts.pods, facts.pdbs, settings.abort_if, now) + budget_stops,
        "zone_counts": zone_counts(facts.pods, moving_owners, zone_by_node, facts.replica_set_owners),
        "zone_counts_planned": placer.zone_counts_planned(moving_owners),
        "warnings": zone_warnings(chosen, pool_labels, pool_zones) + unmodelled_warnings(
            pod for pod, _w, method, _r in moves.values() if method in LEAVING_METHODS),
        "budgets": budget_notes,
        "pool_zones": None if pool_zones is None else sorted(pool_zones),
        "way_back": way_back(facts.nodes, settings.rotation_id, pool_labels) if settings.rotation_id else None,
    }
    plan["summary"] = summarize_plan(plan)
    return plan


def _pool_zones(settings):
    """The set of zones the pool brings nodes up in, or None: any."""
    return None if settings.pool_zones is None else set(settings.pool_zones)


def _batch_size(chosen, facts, settings, now):
    """(batch size, budget notes, reasons to stop): ``settings.batch_size``, cut to the NodePools' budgets if asked."""
    if settings.karpenter_budgets:
        return budget_batch_size(chosen, facts.nodes, facts.node_pools, settings.batch_size or 1, now)
    return settings.batch_size or 1, [], []


def _cannot_surge(workload, one_at_a_time):
    """Whether ``workload`` loses its pods one at a time rather than surging: a StatefulSet, or in ``one_at_a_time``."""
    return workload is not None and (workload.kind == "StatefulSet" or workload in one_at_a_time)


def _pod_moves(facts, settings, rotating):
    """Pod key -> (pod, replacing Workload or None, method, reason) of each pod on a ``rotating`` node (move_of)."""
    pdb_index = PdbIndex(facts.pdbs)
    moves = {}
    for pod in facts.pods:
        if node_of(pod) in rotating:
            workload = replacing_workload(pod, facts.replica_set_owners)
            moves[pod_key(pod)] = (pod, workload) + move_of(
                pod, workload, facts.replicas.get(workload), pdb_index.candidates(pod), settings.options,
                _cannot_surge(workload, facts.one_at_a_time), pod_key(pod) in settings.planned_evictions)
    return moves


def _batches(chosen, candidates, moves, batch_size, settings):
    """The batches of the ``chosen`` nodes (make_batches), ordered by the pods that leave each node."""
    pods_per_node = _counted(node_of(pod) for pod, _w, method, _r in moves.values() if method != "stays")
    # A canary only where the rotation starts: a rerun of one begun (its nodes marked by it) goes on without.
    begun = settings.rotation_id and any(recorded_phase(node, settings.rotation_id) for node in candidates)
    return make_batches(chosen, batch_size, pods_per_node, settings.most_disruptive or "last",
                        None if begun else settings.canary_size)


def _moving_owners(moves, replica_set_owners, zone_counts_of):
    """The Workloads whose pods per zone the plan counts: the owners of the pods that leave, and ``zone_counts_of``."""
    return ({owner_of(pod, replica_set_owners) for pod, _w, method, _r in moves.values() if method in LEAVING_METHODS}
            - {None}) | set(zone_counts_of)


def _node_entry(node, reasons):
    """A rotated node as the plan lists it: its name, zone and reasons, and a note if Karpenter may not disrupt it."""
    entry = {"name": node_name(node), "zone": zone_of(node), "reasons": reasons}
    note = protected_node_note(node)
    if note:
        entry["notes"] = [note]
    return entry


def _batch_moves(here, facts):
    """What a batch does with the pods of its nodes (``here``, their moves): replace, evict, blocked, stays."""
    return {
        "replace": _replacements(here, facts),
        "evict": sorted(pod_key(pod) for pod, _w, method, _r in here if method == "evict"),
        "evict_by_workload": _counted(workload.label if workload else "bare pods"
                                      for _pod, workload, method, _r in here if method == "evict"),
        "blocked": sorted(({"pod": pod_key(pod), "reason": reason} for pod, _w, method, reason in here
                           if method == "blocked"), key=lambda entry: entry["pod"]),
        "stays": sorted(pod_key(pod) for pod, _w, method, _r in here if method == "stays"),
    }


def _replacements(here, facts):
    """A batch's workloads to replace first, in Workload order: each with its pods, method and reason."""
    autoscalers, gitops = facts.autoscalers or {}, facts.gitops or {}
    replace = {}
    for pod, workload, method, reason in here:
        if method != "replace":
            continue
        entry = replace.setdefault(workload, dict(
            workload.target(), reason=reason, pods=[],
            method=ONE_AT_A_TIME if _cannot_surge(workload, facts.one_at_a_time) else SURGE,
            **dict({"autoscaler": autoscalers[workload]} if workload in autoscalers else {},
                   **({"gitops": gitops[workload]} if workload in gitops else {}))))
        entry["pods"].append(pod_key(pod))
    return [replace[key] for key in sorted(replace)]


class _BatchWork:
    """One batch while it is placed: the pods it moves, where they come from and may go, and its warm nodes."""

    def __init__(self, index, movers, zone_by_node, claim_zones):
        self.index, self.movers = index, movers
        self.by_key = {pod_key(pod): pod for pod in movers}
        self.bound_zones = {}
        for pod in movers:
            bound = bound_volume(pod, claim_zones)
            if bound:
                self.bound_zones[pod_key(pod)] = bound[1]
        self.source_zone = {pod_key(pod): zone_by_node.get(node_of(pod)) for pod in movers}
        # The warm nodes, how many of them in each zone, and what a warm node of each zone offers.
        self.warm, self.warm_new, self.free_by_zone = [], {}, {}

    def source_zone_of(self, pod):
        """The zone ``pod`` leaves."""
        return self.source_zone.get(pod_key(pod))

    def out_of_its_zone(self, pod, node):
        """Whether ``node`` is out of the zone ``pod`` leaves: placement tries such nodes last."""
        return zone_of(node) != self.source_zone_of(pod)

    def in_its_volume_zones(self, pod, nodes):
        """Those of ``nodes`` in the zones ``pod``'s volume is bound to; all of them when it is bound to none."""
        zones = self.bound_zones.get(pod_key(pod))
        return [node for node in nodes if in_zones(node, zones)] if zones else nodes


class _BatchPlacer:
    """Places a rotation's batches in turn in one PlacementSimulator, each after the pods and warm nodes of those before it."""

    def __init__(self, facts, settings, rotating, moves, zone_by_node):
        self.facts, self.settings, self.zone_by_node = facts, settings, zone_by_node
        self.pool_labels, self.pool_zones = settings.pool_labels or {}, _pool_zones(settings)
        self.targets = [node for node in facts.nodes if node_name(node) not in rotating and is_schedulable(node)]
        self.residents = [pod for pod in facts.pods if node_of(pod) not in rotating and not is_terminal(pod)]
        self.daemons = [pod for pod, _w, _method, reason in moves.values() if reason == "daemonset"]
        self.warm_total, self.warmed = {}, []
        # The moves of each node, and where each move is in ``moves``: a batch takes its own without going through
        # all of them, in the same order.
        self.position = {key: index for index, key in enumerate(moves)}
        self.moves_on = {}
        for move in moves.values():
            self.moves_on.setdefault(node_of(move[0]), []).append(move)
        # One PlacementSimulator for the whole plan: the nodes of later batches take no pod, but their pods still count for
        # topology spread until they move; a batch's nodes leave as it starts.
        self.room = PlacementSimulator(self.targets + list(rotating.values()), self.residents + [
            pod for pod in facts.pods if node_of(pod) in rotating and not is_terminal(pod) and not is_terminating(pod)])

    def place(self, index, batch):
        """Fills in ``batch``, the index-th: how its pods move, the warm nodes it adds, and whether its pods fit."""
        here = sorted((move for name in batch["nodes"] for move in self.moves_on.get(name, ())),
                      key=lambda move: self.position[pod_key(move[0])])
        movers = [pod for pod, _w, method, _r in here if method in LEAVING_METHODS]
        work = _BatchWork(index, movers, self.zone_by_node, self.facts.claim_zones or {})
        if self.settings.template_allocatable:
            # A pod whose volume is in a zone the pool does not serve can only go to a node of that zone that stays.
            work.warm_new, work.warm, batch["warm_computed"], work.free_by_zone = self._warm_for(
                index, [pod for pod in work.movers
                        if pod_key(pod) not in work.bound_zones or self._served(work.bound_zones[pod_key(pod)])])
        for name in batch["nodes"]:
            self.room.remove_node(name)
        for node in work.warm:
            self.room.add_node(node)
        placement, unplaced = self._place(work)
        if unplaced and self.settings.template_allocatable:
            # Requests alone undercount what the scheduler needs: a node more in the pod's zone while that
            # places a pod that required anti-affinity or spread left out.
            more, unplaced = self._place_on_more_warm_nodes(work, unplaced)
            placement.update(more)
        unplaced = self._with_volume_zones(work, unplaced)
        for zone, count in work.warm_new.items():
            self.warm_total[zone] = self.warm_total.get(zone, 0) + count
        batch.update(index=index, **_batch_moves(here, self.facts), **self._warm_entry(work), fits=not unplaced,
                     unplaced=unplaced)
        # The next batch sees this one's pods where they were placed (in the PlacementSimulator already), and its warm nodes.
        self.warmed = self.warmed + work.warm
        self.residents.extend(moved_to(pod, placement[pod_key(pod)]) for pod in work.movers
                              if pod_key(pod) in placement)

    def _served(self, zones):
        """Whether the pool brings nodes up in one of ``zones`` ("a" or "a,b")."""
        return self.pool_zones is None or any(zone in self.pool_zones for zone in zones.split(","))

    def _warm_for(self, index, movers):
        """_warm_for_batch of ``movers``, for the index-th batch, from the pool's template."""
        return _warm_for_batch(index, movers, self.daemons, self.settings.template_allocatable, self.pool_labels,
                               self.zone_by_node, self.pool_zones)

    def _place(self, work):
        """(placement, unplaced) of the batch's pods: in their own zone first, one with a bound volume in its zones."""
        places = self.targets + self.warmed + work.warm
        placement, unplaced = self.room.place([p for p in work.movers if pod_key(p) not in work.bound_zones], places,
                                              work.out_of_its_zone, work.source_zone_of)
        for pod in [p for p in work.movers if pod_key(p) in work.bound_zones]:
            more, left = self.room.place([pod], work.in_its_volume_zones(pod, places), work.out_of_its_zone)
            placement.update(more)
            unplaced.extend(left)
        return placement, unplaced

    def _place_on_more_warm_nodes(self, work, unplaced):
        """(placement, still unplaced) of the ``unplaced`` pods, each on a warm node more of its zone if it fits."""
        places = self.targets + self.warmed + work.warm
        placement, still = {}, []
        for entry in unplaced:
            pod = work.by_key[entry["pod"]]
            bound = work.bound_zones.get(entry["pod"])
            if bound and not self._served(bound):
                still.append(entry)
                continue
            zone = next((zone for zone in bound.split(",") if self._served(zone)), None) if bound else \
                warm_zone(work.source_zone_of(pod), self.pool_labels, self.pool_zones)
            if zone not in work.free_by_zone:
                work.free_by_zone[zone] = self._warm_for(work.index, [pod])[3].get(zone)
            extra = _warm_node(work.index, zone, work.warm_new.get(zone, 0), self.pool_labels,
                               work.free_by_zone[zone] or {})
            self.room.add_node(extra)
            more, left = self.room.place([pod], work.in_its_volume_zones(pod, places + [extra]), work.out_of_its_zone)
            if more and more[entry["pod"]] == node_name(extra):
                work.warm.append(extra)
                places.append(extra)
                work.warm_new[zone] = work.warm_new.get(zone, 0) + 1
            else:
                self.room.remove_node(node_name(extra))
                # Why not even a node of the pool's own: what the pool would have to change.
                still.extend(left)
            placement.update(more)
        return placement, still

    def _with_volume_zones(self, work, unplaced):
        """``unplaced``, the reason of each pod with a bound volume saying its zone and whether the pool serves it."""
        said = []
        for entry in unplaced:
            if entry["pod"] in work.bound_zones:
                zones = work.bound_zones[entry["pod"]]
                entry = dict(entry, reason="its volume is bound to zone %s%s: %s" % (
                    zones, "" if self._served(zones) else ", where the pool provides no node", entry["reason"]))
            said.append(entry)
        return said

    def _warm_entry(self, work):
        """The batch's warm nodes as the plan says them: in all, per zone, and per zone so far in the rotation."""
        return {
            "warm_nodes": sum(work.warm_new.values()),
            "warm_new": {zone or "-": count for zone, count in work.warm_new.items() if count},
            "warm_zones": [{"zone": zone or None, "count": self.warm_total[zone]} for zone in sorted(self.warm_total)],
        }

    def zone_counts_planned(self, owners):
        """zone_counts of ``owners`` once every batch has been placed: on the nodes that stay and the warm ones."""
        placed_zones = {node_name(node): zone_of(node) for node in self.targets + self.warmed}
        return zone_counts(self.residents, owners, dict(self.zone_by_node, **placed_zones),
                           self.facts.replica_set_owners)


def budget_batch_size(chosen, nodes, node_pools, batch_size, now):
    """(batch size, notes, reasons to stop): ``batch_size`` cut to what the chosen nodes' NodePools allow for
    Drifted now, counting each pool's nodes as Karpenter does. A pool that allows none stops the rotation
    (the batches keep one node so that the plan still shows them)."""
    pools = {pool["metadata"]["name"]: pool for pool in node_pools or ()}
    size = batch_count(batch_size, len(chosen))
    notes, stops = [], []
    for name in sorted({node_labels(node).get(NODEPOOL_LABEL) for node, _reasons in chosen} - {None}):
        if name not in pools:
            continue
        pool_nodes = sum(1 for node in nodes if node_labels(node).get(NODEPOOL_LABEL) == name)
        allowed, note = allowed_disruptions(pools[name], pool_nodes, now)
        notes.append(note)
        if allowed is not None:
            if allowed < 1:
                stops.append(note)
            size = min(size, max(allowed, 1))
    return str(size), notes, stops


def protected_node_note(node):
    """Why a node annotated karpenter.sh/do-not-disrupt ("true" or a duration, not "false") is rotated all
    the same, or None."""
    annotation = do_not_disrupt_annotation(node)
    if not annotation or annotation[0] != DO_NOT_DISRUPT[0]:
        return None
    return ("annotated %s: %s; Karpenter will not disrupt it, this rotation does because it was selected, moving "
            "its pods by replacement first or eviction as planned" % annotation)


def zone_warnings(chosen, pool_labels, pool_zones=None):
    """Zones the pool cannot warm nodes in, so that their pods change zones."""
    pool_zone = pool_labels.get(ZONE_LABEL)
    served = {pool_zone} if pool_zone else pool_zones
    if not served:
        return []
    others = sorted({zone_of(node) for node, _reasons in chosen if zone_of(node) and zone_of(node) not in served})
    return ["the pool provisions only in zone(s) %s: the pods of zone(s) %s move there, or to other nodes of "
            "their own zone" % (", ".join(sorted(served)), ", ".join(others))] if others else []


def unmodelled_warnings(movers):
    """For each scheduling rule the plan does not model (plan.placement.unmodelled), the moving pods that ask for
    it: their fit is the scheduler's word alone."""
    asking = {}
    for pod in movers:
        for rule in unmodelled(pod):
            asking.setdefault(rule, []).append(pod_key(pod))
    return ["the plan does not model %s, which %s ask(s) for: whether they fit is known only once they are "
            "scheduled again, which each batch waits for" % (rule, _some(sorted(keys)))
            for rule, keys in sorted(asking.items())]


def _some(names, shown=5):
    return ", ".join(names[:shown]) + (" and %d more" % (len(names) - shown) if len(names) > shown else "")


def _counted(names):
    counts = {}
    for name in names:
        counts[name] = counts.get(name, 0) + 1
    return counts


SHOWN_WORKLOADS = 5


def summarize_plan(plan):
    """The few lines a person reads before a rotation starts."""
    lines = ["Rotation %s: %d node(s) in %d batch(es)%s." % (
        plan["rotation_id"] or "(no id)", len(plan["nodes"]), len(plan["batches"]),
        "; %d left out" % len(plan["left_out"]) if plan["left_out"] else "")]
    for batch in plan["batches"]:
        warm_zones = ", ".join("%s %d" % item for item in sorted(batch["warm_new"].items()) if item[0] != "-")
        lines.append("batch %d/%d (zone %s%s): %s; replace first %d pod(s) of %d workload(s), evict %d pod(s), "
                     "%d warm node(s)%s%s%s" % (
                         batch["index"], len(plan["batches"]), batch["zone"] or "-",
                         ", canary" if batch.get("canary") else "", ", ".join(batch["nodes"]),
                         sum(len(entry["pods"]) for entry in batch["replace"]), len(batch["replace"]),
                         len(batch["evict"]), batch["warm_nodes"], " (%s)" % warm_zones if warm_zones else "",
                         "; DOES NOT FIT: %s" % "; ".join("%s (%s)" % (u["pod"], u["reason"])
                                                          for u in batch["unplaced"]) if batch["unplaced"] else "",
                         "; BLOCKED: %s" % "; ".join("%s (%s)" % (b["pod"], b["reason"]) for b in batch["blocked"])
                         if batch["blocked"] else ""))
        lines.extend("  %s %s: %s %d pod(s) (%s)%s" % (
            entry["kind"], "%s/%s" % (entry["namespace"], entry["name"]),
            "surge by" if entry["method"] == SURGE else "one at a time,", len(entry["pods"]), entry["reason"],
            "; HPA %s: its bounds follow the surge and come back after" % entry["autoscaler"]
            if entry.get("autoscaler") else "") + (
            "; its replicas are synced by %s: pause that sync for the rotation, or the surge is undone and the batch "
            "stops" % ", ".join(entry["gitops"]) if entry.get("gitops") and entry["method"] == SURGE else "")
            for entry in batch["replace"])
        evicted = sorted((batch.get("evict_by_workload") or {}).items(), key=lambda item: (-item[1], item[0]))
        if evicted:
            rest = sum(count for _name, count in evicted[SHOWN_WORKLOADS:])
            lines.append("  evict: %s%s" % (", ".join("%s %d" % item for item in evicted[:SHOWN_WORKLOADS]),
                                            ", %d more of %d other workload(s)" % (
                                                rest, len(evicted) - SHOWN_WORKLOADS) if rest else ""))
        lines.extend("  retire %s: %s" % item for item in sorted((batch.get("retire") or {}).items()))
    for node in plan["nodes"]:
        lines.extend("node %s: %s" % (node["name"], note) for note in node.get("notes") or [])
    lines.extend("budget: %s" % note for note in plan["budgets"])
    lines.extend("warning: %s" % warning for warning in plan["warnings"])
    return lines


def abort_reasons(pods, pdbs, abort_if, now):
    """Why a rotation should stop before its next batch, by ``abort_if`` (AbortIf); [] to go on. Pure.

    A pod Pending longer than ``pending_pods_for`` (placeholders aside), or a
    PDB whose disruptions have not been allowed for longer than
    ``pdb_blocked_for``.
    """
    reasons = []
    limit = abort_if.pending_pods_for
    if limit:
        seconds = parse_duration(limit)
        for pod in pods:
            metadata = pod.get("metadata") or {}
            if (pod.get("status") or {}).get("phase") != "Pending" or is_terminating(pod) or \
                    is_placeholder(pod) or not metadata.get("creationTimestamp"):
                continue
            age = (now - parse_time(metadata["creationTimestamp"])).total_seconds()
            if age > seconds:
                reasons.append("pod %s has been Pending for %d s (abort_if pending_pods_for %s)" % (
                    pod_key(pod), age, limit))
    limit = abort_if.pdb_blocked_for
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
