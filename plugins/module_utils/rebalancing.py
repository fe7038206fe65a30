# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Pure planning of a rebalance pass: which pods to move, from where, to where, and the spread it gives.

Takes a snapshot (nodes, pods, ReplicaSet owners as API JSON) and returns
plain data; no client, no clock. Three strategies, applied in this order, all
placing pods through ``placement.Room`` so that every move is one the
scheduler's filters would allow:

- ``topology_spread``: pods that break their own DoNotSchedule topology
  spread constraints (any topology key), moved from the most to the least
  populated domains;
- ``duplicates``: replicas of one owner piled on some nodes while other
  nodes that can run them have fewer, until max minus min per node is at
  most ``max_skew``;
- ``utilization``: nodes whose requests are far above the average (by the
  most used of cpu, memory and pods) give their largest pods to nodes far
  below it.

Each move goes to the node that has the fewest pods of the owner (or of
the constraint) among those the pod fits, so the plan is the fewest moves
that reach the target: every move lowers the max by one where it is highest.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from ansible_collections.kubeops.rotation.plugins.module_utils.nodes import ZONE_LABEL, is_ready
from ansible_collections.kubeops.rotation.plugins.module_utils.placement import (
    Room,
    bound_volume,
    domain_counts,
    hard_spread_constraints,
    in_zones,
    node_accepts,
    node_labels,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.pods import (
    FilterOptions,
    controller_of,
    judge,
    namespace_filter,
    pod_key,
    selector_matches,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.warm import RESOURCES, pod_requests

STRATEGIES = ("topology_spread", "duplicates", "utilization")


@dataclass(frozen=True)
class RebalanceSettings:
    strategies: tuple = ("topology_spread", "duplicates")
    max_skew: int = 1
    utilization_deviation: float = 20.0
    max_evictions: int | None = None
    max_per_owner: int | None = None
    options: FilterOptions = field(default_factory=FilterOptions)


def owner_key(pod, replica_set_owners):
    """"namespace/Kind/name" of the pod's controller, a Deployment for its ReplicaSets; None for a bare pod."""
    owner = controller_of(pod)
    if not owner:
        return None
    namespace = pod["metadata"]["namespace"]
    deployment = replica_set_owners.get((namespace, owner["name"])) if owner["kind"] == "ReplicaSet" else None
    if deployment:
        return "%s/Deployment/%s" % (namespace, deployment)
    return "%s/%s/%s" % (namespace, owner["kind"], owner["name"])


def in_scope(nodes):
    """(nodes a pass moves pods between: Ready and schedulable, those left out with the reason)."""
    kept, left_out = [], []
    for node in sorted(nodes, key=lambda n: n["metadata"]["name"]):
        name = node["metadata"]["name"]
        if (node.get("spec") or {}).get("unschedulable"):
            left_out.append({"name": name, "reason": "cordoned"})
        elif not is_ready(node):
            left_out.append({"name": name, "reason": "not Ready"})
        else:
            kept.append(node)
    return kept, left_out


def live_pods(pods, node_names):
    return [pod for pod in pods if (pod.get("spec") or {}).get("nodeName") in node_names
            and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
            and not pod["metadata"].get("deletionTimestamp")]


def _skew(counts):
    return max(counts.values()) - min(counts.values()) if counts else 0


def owner_groups(pods, replica_set_owners):
    """Owner key -> its pods, DaemonSets aside (one pod per node by design)."""
    groups = {}
    for pod in pods:
        key = owner_key(pod, replica_set_owners)
        if key and key.split("/")[1] != "DaemonSet":
            groups.setdefault(key, []).append(pod)
    return groups


def selection(pods, options, selected=None):
    """The pods a pass balances: those of the options' namespaces and, when ``selected`` (pod keys) is
    given, only those. The others still take room on their nodes."""
    return [pod for pod in pods if (selected is None or pod_key(pod) in selected)
            and namespace_filter(pod, options) is None]


def spread(nodes, pods, replica_set_owners, options=FilterOptions(), selected=None):
    """How evenly things are spread on ``nodes`` (in scope): per owner and per zone, per topology
    spread constraint, and utilization per node. Pure; used for the skew before, predicted and measured.

    An owner's skew is max minus min of its pods per node, over the nodes
    that hold its pods or that its pods' selectors, affinity and tolerations
    accept; its zone skew is the same per zone. Owners and constraints are
    those of the selected pods (see ``selection``).
    """
    names = {node["metadata"]["name"] for node in nodes}
    everything = live_pods(pods, names)
    pods = selection(everything, options, selected)
    pods_by_node = {name: [] for name in names}
    for pod in everything:
        pods_by_node[pod["spec"]["nodeName"]].append(pod)
    zones = {node["metadata"]["name"]: node_labels(node).get(ZONE_LABEL) for node in nodes}
    owners = {}
    for key, members in sorted(owner_groups(pods, replica_set_owners).items()):
        per_node = {node["metadata"]["name"]: 0 for node in nodes if node_accepts(members[0], node)}
        for pod in members:
            per_node[pod["spec"]["nodeName"]] = per_node.get(pod["spec"]["nodeName"], 0) + 1
        per_zone = {}
        for name, count in per_node.items():
            if zones.get(name):
                per_zone[zones[name]] = per_zone.get(zones[name], 0) + count
        owners[key] = {"pods": len(members), "nodes": per_node, "skew": _skew(per_node),
                       "zones": per_zone, "zone_skew": _skew(per_zone)}
    constraints = []
    for constraint_key, (pod, constraint) in sorted(_constraints(pods).items()):
        counts = domain_counts(pod, constraint, nodes, pods_by_node)
        constraints.append({"constraint": constraint_key, "max_skew": constraint.get("maxSkew", 1),
                            "domains": counts, "skew": _skew(counts)})
    room = Room(nodes, everything)
    utilization = {name: round(room_utilization(room, name), 1) for name in sorted(names)}
    return {
        "owners": owners,
        "max_skew": max([entry["skew"] for entry in owners.values()] or [0]),
        "max_zone_skew": max([entry["zone_skew"] for entry in owners.values()] or [0]),
        "constraints": constraints,
        "utilization": utilization,
        "utilization_spread": round(max(utilization.values()) - min(utilization.values()), 1) if utilization else 0,
    }


def _constraints(pods):
    """Distinct DoNotSchedule constraints of ``pods`` by "namespace topologyKey selector", each with a pod that has it."""
    found = {}
    for pod in pods:
        for constraint in hard_spread_constraints(pod):
            key = "%s %s %s maxSkew=%s" % (pod["metadata"]["namespace"], constraint.get("topologyKey"),
                                           json.dumps(constraint.get("labelSelector") or {}, sort_keys=True),
                                           constraint.get("maxSkew", 1))
            found.setdefault(key, (pod, constraint))
    return found


def room_utilization(room, name):
    """The most used of cpu, memory and pods on node ``name``, in percent of its allocatable."""
    shares = [100.0 * (room.allocatable[name][r] - room.free[name][r]) / room.allocatable[name][r]
              for r in RESOURCES if room.allocatable[name][r] > 0]
    return max(shares or [0.0])


class Planner:
    """One pass of planning over a snapshot; ``plan`` returns the moves and what could not be done."""

    def __init__(self, nodes, pods, replica_set_owners, settings, selected=None, claim_zones=None):
        self.nodes = nodes
        self.claim_zones = claim_zones or {}
        self.settings = settings
        self.replica_set_owners = replica_set_owners
        everything = live_pods(pods, {node["metadata"]["name"] for node in nodes})
        self.pods = selection(everything, settings.options, selected)
        self.room = Room(nodes, everything)
        self.moves = []
        self.moved = set()
        self.per_owner = {}
        self.stuck = []
        self.unmovable = {}
        for pod in self.pods:
            verdict = judge(pod, settings.options).verdict
            if verdict.action != "evict":
                self.unmovable[pod_key(pod)] = "%s: %s" % (verdict.reason, verdict.detail) if verdict.detail \
                    else verdict.reason

    def plan(self):
        strategies = {"topology_spread": self.topology_spread, "duplicates": self.duplicates,
                      "utilization": self.utilization}
        for name in STRATEGIES:
            if name in self.settings.strategies:
                strategies[name]()
        return self.moves, self.stuck

    # -- moving one pod ---------------------------------------------------

    def _budget_left(self, owner):
        limits = self.settings
        if limits.max_evictions is not None and len(self.moves) >= limits.max_evictions:
            return "max_evictions (%d) reached" % limits.max_evictions
        if limits.max_per_owner is not None and self.per_owner.get(owner, 0) >= limits.max_per_owner:
            return "max_per_owner (%d) reached for %s" % (limits.max_per_owner, owner)
        return None

    def _movable(self, pods):
        """The pods that may be moved now, and why the others may not."""
        movable, reasons = [], []
        for pod in pods:
            key = pod_key(pod)
            owner = owner_key(pod, self.replica_set_owners)
            if key in self.moved:
                continue
            if key in self.unmovable:
                reasons.append("%s stays (%s)" % (key, self.unmovable[key]))
                continue
            spent = self._budget_left(owner)
            if spent:
                reasons.append(spent)
                continue
            movable.append(pod)
        return movable, reasons

    def _try(self, pods, targets, strategy, reason):
        """Move the first of ``pods`` that fits on one of ``targets`` (in order); the reasons when none does."""
        movable, reasons = self._movable(pods)
        for pod in movable:
            source = pod["spec"]["nodeName"]
            self.room.remove(pod, source)
            for target in targets:
                if target == source:
                    continue
                why = self._volume_zone_conflict(pod, target) or self.room.why_not(pod, target)
                if why is None:
                    self._record(pod, source, target, strategy, reason)
                    return None
                reasons.append("%s cannot go to %s: %s" % (pod_key(pod), target, why))
            self.room.add(pod, source)
        return reasons

    def _volume_zone_conflict(self, pod, target):
        """Why a pod's PersistentVolume cannot follow it to ``target`` (bound to another zone), or None."""
        bound = bound_volume(pod, self.claim_zones)
        if bound and not in_zones(self.room.nodes[target], bound[1]):
            return "its volume %s is bound to zone %s" % bound
        return None

    def _record(self, pod, source, target, strategy, reason):
        moved = dict(pod, spec=dict(pod["spec"], nodeName=target))
        self.room.add(moved, target)
        owner = owner_key(pod, self.replica_set_owners)
        self.moved.add(pod_key(pod))
        self.per_owner[owner] = self.per_owner.get(owner, 0) + 1
        self.moves.append({"pod": pod_key(pod), "owner": owner, "from": source, "to": target,
                           "strategy": strategy, "reason": reason})

    def _stuck(self, strategy, target, skew, reasons):
        unique = list(dict.fromkeys(reasons))
        self.stuck.append({"strategy": strategy, "target": target, "skew": skew,
                           "reason": "; ".join(unique[:5]) + ("; ..." if len(unique) > 5 else "")
                           if unique else "no pod to move"})

    # -- strategies -------------------------------------------------------

    def topology_spread(self):
        for key, (sample, constraint) in sorted(_constraints(self.pods).items()):
            max_skew = constraint.get("maxSkew", 1)
            topology_key = constraint.get("topologyKey")
            namespace = sample["metadata"]["namespace"]
            while True:
                counts = domain_counts(sample, constraint, self.nodes, self.room.pods_by_node)
                if _skew(counts) <= max_skew:
                    break
                high = max(sorted(counts), key=lambda domain: counts[domain])
                members = {pod_key(pod) for pods in self.room.pods_by_node.values() for pod in pods
                           if pod["metadata"]["namespace"] == namespace
                           and selector_matches(constraint.get("labelSelector"), pod["metadata"].get("labels"))}
                donors = [pod for pod in self.pods if pod_key(pod) in members
                          and self._domain(pod["spec"]["nodeName"], topology_key) == high]
                targets = self._spread_targets(counts, members, topology_key, counts[high] - 2)
                reasons = self._try(sorted(donors, key=pod_key), targets, "topology_spread",
                                    "%s: %s has %d, max skew %d" % (topology_key, high, counts[high], max_skew))
                if reasons is not None:
                    self._stuck("topology_spread", key, _skew(counts), reasons)
                    break

    def _spread_targets(self, counts, members, topology_key, most):
        """Nodes of the domains with at most ``most`` members, the emptiest domain and node first."""
        ranked = []
        for name in self.room.nodes:
            domain = self._domain(name, topology_key)
            if domain in counts and counts[domain] <= most:
                here = sum(1 for pod in self.room.pods_by_node[name] if pod_key(pod) in members)
                ranked.append((counts[domain], here, name))
        return [name for _count, _here, name in sorted(ranked)]

    def _domain(self, name, topology_key):
        return node_labels(self.room.nodes[name]).get(topology_key)

    def duplicates(self):
        for owner, members in sorted(owner_groups(self.pods, self.replica_set_owners).items()):
            feasible = [name for name, node in sorted(self.room.nodes.items()) if node_accepts(members[0], node)]
            while True:
                keys = {pod_key(pod) for pod in members}
                counts = {name: 0 for name in feasible}
                for name, residents in self.room.pods_by_node.items():
                    here = sum(1 for pod in residents if pod_key(pod) in keys)
                    if here or name in counts:
                        counts[name] = here
                lowest = min(counts[name] for name in feasible) if feasible else 0
                if not feasible or max(counts.values()) - lowest <= self.settings.max_skew:
                    break
                reasons, moved = [], False
                for donor in sorted(counts, key=lambda name: (-counts[name], name)):
                    if counts[donor] - lowest < 2:
                        break
                    targets = sorted((name for name in feasible if counts[donor] - counts[name] >= 2),
                                     key=lambda name: (counts[name], -self.room.free[name]["cpu"], name))
                    here = [pod for pod in members if pod["spec"]["nodeName"] == donor and pod_key(pod) not in
                            self.moved]
                    failed = self._try(sorted(here, key=pod_key), targets, "duplicates",
                                       "%s has %d on %s, %d on %s" % (owner, counts[donor], donor,
                                                                      counts[targets[0]] if targets else lowest,
                                                                      targets[0] if targets else "-"))
                    if failed is None:
                        moved = True
                        break
                    reasons.extend(failed)
                if not moved:
                    self._stuck("duplicates", owner, max(counts.values()) - lowest, reasons)
                    break

    def utilization(self):
        names = sorted(self.room.nodes)
        if not names:
            return
        average = sum(room_utilization(self.room, name) for name in names) / len(names)
        deviation = self.settings.utilization_deviation
        for donor in sorted(names, key=lambda name: -room_utilization(self.room, name)):
            while room_utilization(self.room, donor) > average + deviation:
                receivers = sorted((name for name in names if room_utilization(self.room, name) < average - deviation),
                                   key=lambda name: (room_utilization(self.room, name), name))
                here = sorted(self.room.pods_by_node[donor], key=lambda pod: (-pod_requests(pod)["cpu"],
                                                                              -pod_requests(pod)["memory"],
                                                                              pod_key(pod)))
                reasons = self._try_within_average(here, receivers, average, donor)
                if reasons is not None:
                    self._stuck("utilization", donor, round(room_utilization(self.room, donor) - average, 1),
                                reasons or ["no node is far below the average %.0f%%" % average])
                    break

    def _try_within_average(self, pods, receivers, average, donor):
        """Like _try, but a receiver may not end above the average: moving must not make a new hot node."""
        reason = "%s uses %.0f%%, the average is %.0f%%" % (donor, room_utilization(self.room, donor), average)
        reasons = []
        for receiver in receivers:
            for pod in self._movable(pods)[0]:
                self.room.add(pod, receiver)
                above = room_utilization(self.room, receiver) > average
                self.room.remove(pod, receiver)
                if above:
                    reasons.append("%s would take %s above the average" % (pod_key(pod), receiver))
                    continue
                failed = self._try([pod], [receiver], "utilization", reason)
                if failed is None:
                    return None
                reasons.extend(failed)
        return reasons


def plan_rebalance(nodes, pods, replica_set_owners, settings, selected=None, claim_zones=None):
    """The whole rebalance plan over ``nodes`` (the nodes in scope) and the pods on them. Pure.

    ``selected`` limits the pods to balance to those keys (a pod selector's
    pods); the namespaces of ``settings.options`` limit them too.
    ``claim_zones`` maps "namespace/claim" to the zone(s) its volume is bound to.
    """
    scope, left_out = in_scope(nodes)
    planner = Planner(scope, pods, replica_set_owners, settings, selected, claim_zones)
    moves, stuck = planner.plan()
    destinations = {move["pod"]: move["to"] for move in moves}
    after = [dict(pod, spec=dict(pod["spec"], nodeName=destinations[pod_key(pod)])) if pod_key(pod) in destinations
             else pod for pod in pods]
    plan = {
        "moves": moves,
        "stuck": stuck,
        "left_out": left_out,
        "nodes": [node["metadata"]["name"] for node in scope],
        "before": spread(scope, pods, replica_set_owners, settings.options, selected),
        "predicted": spread(scope, after, replica_set_owners, settings.options, selected),
    }
    plan["summary"] = summarize(plan)
    return plan


def summarize(plan):
    """The few lines a person reads: skew before and after, moves per strategy, what is stuck."""
    per_strategy = {}
    for move in plan["moves"]:
        per_strategy[move["strategy"]] = per_strategy.get(move["strategy"], 0) + 1
    lines = ["Rebalance over %d node(s): %d move(s)%s; max skew per owner %d -> %d, per zone %d -> %d." % (
        len(plan["nodes"]), len(plan["moves"]),
        " (%s)" % ", ".join("%s %d" % item for item in sorted(per_strategy.items())) if per_strategy else "",
        plan["before"]["max_skew"], plan["predicted"]["max_skew"],
        plan["before"]["max_zone_skew"], plan["predicted"]["max_zone_skew"])]
    for move in plan["moves"]:
        lines.append("move %(pod)s (%(owner)s): %(from)s -> %(to)s [%(strategy)s]" % move)
    for entry in plan["stuck"]:
        lines.append("cannot even out %(target)s (%(strategy)s, skew %(skew)s): %(reason)s" % entry)
    return lines


def landings(moves, before_pods, after_pods, replica_set_owners):
    """Where the replacements of the moved pods landed, against the plan. Pure.

    A replacement is a pod of the same owner that did not exist before; each
    move is matched to a replacement on its planned node when there is one,
    otherwise to one elsewhere. Returns the moves with ``landed_on`` and
    ``as_planned``, and the replacements that went back to a node a pod
    of their owner was moved from.
    """
    known = {pod["metadata"]["uid"] for pod in before_pods}
    fresh = {}
    for pod in after_pods:
        if pod["metadata"]["uid"] not in known and (pod.get("spec") or {}).get("nodeName"):
            fresh.setdefault(owner_key(pod, replica_set_owners), []).append(pod["spec"]["nodeName"])
    for nodes in fresh.values():
        nodes.sort()
    result, back_on_source = [], []
    for owner in sorted({move["owner"] for move in moves}):
        landed = fresh.get(owner, [])
        mine = [move for move in moves if move["owner"] == owner]
        unmatched = []
        for move in mine:
            if move["to"] in landed:
                landed.remove(move["to"])
                result.append(dict(move, landed_on=move["to"], as_planned=True))
            else:
                unmatched.append(move)
        sources = {move["from"] for move in mine}
        for move in unmatched:
            node = landed.pop(0) if landed else None
            result.append(dict(move, landed_on=node, as_planned=False))
            if node in sources:
                back_on_source.append({"owner": owner, "node": node})
    order = {move["pod"]: index for index, move in enumerate(moves)}
    result.sort(key=lambda move: order[move["pod"]])
    return result, back_on_source
