# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""A rebalance pass planned without a cluster: which pods to move, from where, to where, and the spread it gives.

Takes a snapshot (nodes, pods, ReplicaSet owners as API JSON) and returns
plain data; no client, no clock. Seven strategies (one file each), applied in this order, all
placing pods through ``plan.placement.PlacementSimulator`` so that every move is one the
scheduler's filters would allow:

- ``node_taints``: pods under a NoSchedule taint they do not tolerate;
- ``node_affinity``: pods whose node no longer satisfies their node
  selector or required node affinity, and pods another node satisfies
  better by their preferred node affinity;
- ``pod_anti_affinity``: pods that run in the topology domain (node, zone,
  ...) of a pod their required pod anti-affinity excludes;

- ``topology_spread``: pods that break their own DoNotSchedule topology
  spread constraints (any topology key), moved from the most to the least
  populated domains;
- ``duplicates``: replicas of one owner piled on some nodes while other
  nodes that can run them have fewer, until max minus min per node is at
  most ``max_skew``;
- ``utilization``: nodes whose requests are far above the average (by the
  most used of cpu, memory and pods) give their largest pods to nodes far
  below it;
- ``compaction``: nodes used below a threshold are emptied onto the
  fullest nodes that take their pods, for an autoscaler to remove.

Each move goes to the node that has the fewest pods of the owner (or of
the constraint) among those the pod fits, so the plan is the fewest moves
that reach the target: every move lowers the max by one where it is highest.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ansible_collections.kubeops.rotation.plugins.module_utils.model.errors import InvalidInput
from ansible_collections.kubeops.rotation.plugins.module_utils.model.inputs import first_error, names_error, number_error
from ansible_collections.kubeops.rotation.plugins.module_utils.model.nodes import node_labels, node_name
from ansible_collections.kubeops.rotation.plugins.module_utils.model.owners import owner_of
from ansible_collections.kubeops.rotation.plugins.module_utils.model.pods import moved_to, node_of, pod_key
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.filters import FilterOptions, judge
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.placement import PlacementSimulator, bound_volume, in_zones
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.rebalance import (
    compaction,
    duplicates,
    node_affinity,
    node_taints,
    pod_anti_affinity,
    topology_spread,
    utilization,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.rebalance.spread import (
    constraints_of,
    in_scope,
    live_pods,
    owner_groups,
    room_spread,
    selection,
    spread,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.rebalance.strategy import RuleStrategy

# The registry of strategies: (the name the rebalance module's ``strategies`` option takes, its module, a
# strategy.Strategy), in the order a pass runs them. A new strategy is a module of this folder and a line here.
# Rules broken first, then evenness: a pod that must leave its node is placed before the spread is counted.
STRATEGIES = (
    ("node_taints", node_taints),
    ("node_affinity", node_affinity),
    ("pod_anti_affinity", pod_anti_affinity),
    ("topology_spread", topology_spread),
    ("duplicates", duplicates),
    ("utilization", utilization),
    ("compaction", compaction),
)
STRATEGY_NAMES = tuple(name for name, _strategy in STRATEGIES)
# The strategies that fix a rule a pod breaks where it runs: those with a ``violations`` (strategy.RuleStrategy).
RULE_STRATEGIES = tuple((name, strategy) for name, strategy in STRATEGIES if isinstance(strategy, RuleStrategy))


def owner_key(pod, replica_set_owners):
    """The key ("namespace/Kind/name") of the Workload that owns ``pod``, or None for a bare pod."""
    owner = owner_of(pod, replica_set_owners)
    return owner.key if owner else None


@dataclass(frozen=True)
class RebalanceSettings:
    strategies: tuple = ("topology_spread", "duplicates")
    max_skew: int = 1
    utilization_deviation: float = 20.0
    compaction_threshold: float = 20.0
    max_evictions: int | None = None
    max_per_owner: int | None = None
    options: FilterOptions = field(default_factory=FilterOptions)

    @classmethod
    def from_params(cls, params, prefix=""):
        """The settings from the rebalance module's parameters (one it does not get keeps its default here), or
        InvalidInput naming the first that makes no sense, with ``prefix`` before its name."""
        given = {key: value for key, value in params.items() if value is not None}
        default, filters = cls(), FilterOptions()
        strategies = tuple(given.get("strategies", default.strategies))
        if not strategies:
            raise InvalidInput("%sstrategies must name at least one strategy." % prefix)
        error = first_error(
            names_error(prefix + "namespaces", given.get("namespaces"), "namespace"),
            names_error(prefix + "exclude_namespaces", given.get("exclude_namespaces") or None, "namespace"),
            number_error(prefix + "max_skew", given.get("max_skew"), 1),
            number_error(prefix + "max_per_owner", given.get("max_per_owner"), 1),
            number_error(prefix + "max_evictions", given.get("max_evictions"), 0),
            *("%s%s must be between 1 and 99, got %s." % (prefix, name, given[name])
              for name in ("utilization_deviation", "compaction_threshold") if not 0 < given.get(name, 20) < 100))
        if error:
            raise InvalidInput(error)
        spreading = sorted({"duplicates", "utilization"} & set(strategies))
        if "compaction" in strategies and spreading:
            raise InvalidInput("%sstrategies: compaction packs pods where %s spread%s them; run them in passes of "
                               "their own." % (prefix, " and ".join(spreading), "" if len(spreading) == 2 else "s"))
        return cls(strategies=strategies, max_skew=given.get("max_skew", default.max_skew),
                   utilization_deviation=float(given.get("utilization_deviation", default.utilization_deviation)),
                   compaction_threshold=float(given.get("compaction_threshold", default.compaction_threshold)),
                   max_evictions=given.get("max_evictions"), max_per_owner=given.get("max_per_owner"),
                   options=FilterOptions(
                       delete_emptydir_data=given.get("delete_emptydir_data", filters.delete_emptydir_data),
                       respect_do_not_disrupt=given.get("respect_do_not_disrupt", filters.respect_do_not_disrupt),
                       evict_system_critical=given.get("evict_system_critical", filters.evict_system_critical),
                       namespaces=tuple(given.get("namespaces", ())),
                       exclude_namespaces=tuple(given.get("exclude_namespaces", ()))))


class Budget:
    """max_evictions and max_per_owner over one pass: the moves counted, in all and per owner, and what is left."""

    def __init__(self, settings, replica_set_owners):
        self.max_evictions = settings.max_evictions
        self.max_per_owner = settings.max_per_owner
        self.replica_set_owners = replica_set_owners
        self.moves = 0
        self.per_owner = {}

    def count(self, owner):
        """One more move of a pod of ``owner`` (an owner_key)."""
        self.moves += 1
        self.per_owner[owner] = self.per_owner.get(owner, 0) + 1

    def spent_for(self, owner):
        """Why no more pod of ``owner`` may move, or None."""
        if self.max_evictions is not None and self.moves >= self.max_evictions:
            return "max_evictions (%d) reached" % self.max_evictions
        if self.max_per_owner is not None and self.per_owner.get(owner, 0) >= self.max_per_owner:
            return "max_per_owner (%d) reached for %s" % (self.max_per_owner, owner)
        return None

    def spent_by(self, pods):
        """What ``pods`` moved all together would exceed of max_evictions and max_per_owner, as reasons."""
        reasons = []
        if self.max_evictions is not None and self.moves + len(pods) > self.max_evictions:
            reasons.append("max_evictions (%d) would be exceeded" % self.max_evictions)
        if self.max_per_owner is not None:
            owners = [owner_key(pod, self.replica_set_owners) for pod in pods]
            reasons.extend("max_per_owner (%d) would be exceeded for %s" % (self.max_per_owner, owner)
                           for owner in sorted(set(owners), key=str)
                           if self.per_owner.get(owner, 0) + owners.count(owner) > self.max_per_owner)
        return reasons


class PodGroups:
    """What the planner groups the selected pods by, each worked out once, when first asked for (a move changes
    no pod's owner nor its constraints)."""

    def __init__(self, pods, replica_set_owners):
        self.pods = pods
        self.replica_set_owners = replica_set_owners
        self._by_owner = None
        self._constraints = None
        self._siblings = None

    def by_owner(self):
        """owner_groups of the selected pods."""
        if self._by_owner is None:
            self._by_owner = owner_groups(self.pods, self.replica_set_owners)
        return self._by_owner

    def constraints(self):
        """constraints_of the selected pods."""
        if self._constraints is None:
            self._constraints = constraints_of(self.pods)
        return self._constraints

    def siblings_of(self, pod):
        """The keys of the pods of ``pod``'s owner (just its own for a bare pod)."""
        if self._siblings is None:
            self._siblings = {}
            for members in self.by_owner().values():
                keys = frozenset(pod_key(member) for member in members)
                self._siblings.update(dict.fromkeys(keys, keys))
        return self._siblings.get(pod_key(pod), (pod_key(pod),))


class Planner:
    """One pass of planning over a snapshot; ``plan`` returns the moves and what could not be done.

    The strategies (``STRATEGIES``, each a strategy.Strategy) plan on it: they read ``pods``, ``room``,
    ``settings`` and ``groups``, and move pods through ``relocate``, ``try_move`` or ``note_move``."""

    def __init__(self, nodes, pods, replica_set_owners, settings, selected=None, claim_zones=None):
        self.nodes = nodes
        self.claim_zones = claim_zones or {}
        self.settings = settings
        self.replica_set_owners = replica_set_owners
        everything = live_pods(pods, {node_name(node) for node in nodes})
        self.pods = selection(everything, settings.options, selected)
        self.pods_by_key = {pod_key(pod): pod for pod in self.pods}
        self.groups = PodGroups(self.pods, replica_set_owners)
        self.room = PlacementSimulator(nodes, everything)
        self.budget = Budget(settings, replica_set_owners)
        self.moves = []
        self.moved = set()
        self.stuck = []
        # Pod key -> why it may not be evicted (None: it may), judged once a strategy wants to move it.
        self._unmovable = {}
        # The nodes the compaction strategy empties.
        self.emptied = []

    def plan(self):
        for name, strategy in STRATEGIES:
            if name in self.settings.strategies:
                strategy.balance(self)
        return self.moves, self.stuck

    # -- moving one pod ---------------------------------------------------

    def unmovable(self, pod):
        """Why ``pod`` may not be evicted, or None; only the selected pods are judged."""
        key = pod_key(pod)
        if key not in self.pods_by_key:
            return None
        if key not in self._unmovable:
            verdict = judge(self.pods_by_key[key], self.settings.options).verdict
            self._unmovable[key] = None if verdict.action == "evict" else \
                "%s: %s" % (verdict.reason, verdict.detail) if verdict.detail else verdict.reason
        return self._unmovable[key]

    def movable(self, pods):
        """The pods that may be moved now, and why the others may not."""
        movable, reasons = [], []
        for pod in pods:
            key = pod_key(pod)
            owner = owner_key(pod, self.replica_set_owners)
            if key in self.moved:
                continue
            unmovable = self.unmovable(pod)
            if unmovable:
                reasons.append("%s stays (%s)" % (key, unmovable))
                continue
            spent = self.budget.spent_for(owner)
            if spent:
                reasons.append(spent)
                continue
            movable.append(pod)
        return movable, reasons

    def try_move(self, pods, targets, strategy, reason):
        """Move the first of ``pods`` that fits on one of ``targets`` (in order); the reasons when none does."""
        movable, reasons = self.movable(pods)
        for pod in movable:
            source = pod["spec"]["nodeName"]
            self.room.remove(pod, source)
            for target in targets:
                if target == source:
                    continue
                why = self.why_not_move(pod, target)
                if why is None:
                    self._record(pod, source, target, strategy, reason)
                    return None
                reasons.append("%s cannot go to %s: %s" % (pod_key(pod), target, why))
            self.room.add(pod, source)
        return reasons

    def relocate(self, pod, strategy, reason, candidates=None, first=None, quiet=False):
        """Move ``pod`` off its node to one of ``candidates`` (default: the nodes whose labels and taints accept
        it) ordered by ``first(name)`` when given, then the fewest pods of its owner (a move that fixes one
        rule makes no pile), the most free cpu, the name. A pod no node takes is recorded stuck, unless
        ``quiet`` (the move would be better, not needed)."""
        if pod_key(pod) in self.moved:
            return
        source = node_of(pod)
        siblings = self.room.located(self.groups.siblings_of(pod))
        names = sorted((name for name in (self.room.accepting(pod) if candidates is None else candidates)
                        if name != source),
                       key=lambda name: (first(name) if first else 0, siblings.get(name, 0),
                                         -self.room.free[name]["cpu"], name))
        reasons = self.try_move([pod], names, strategy, reason)
        if reasons is not None and not quiet:
            self.record_stuck(strategy, pod_key(pod), None, reasons or ["no other node accepts it"])

    def why_not_move(self, pod, target):
        """None when ``pod``, taken off its node, may go to node ``target``; otherwise why not."""
        return self._volume_zone_conflict(pod, target) or self.room.why_not(pod, target)

    def _volume_zone_conflict(self, pod, target):
        """Why a pod's PersistentVolume cannot follow it to ``target`` (bound to another zone), or None."""
        bound = bound_volume(pod, self.claim_zones)
        if bound and not in_zones(self.room.nodes[target], bound[1]):
            return "its volume %s is bound to zone %s" % bound
        return None

    def _record(self, pod, source, target, strategy, reason):
        self.room.add(moved_to(pod, target), target)
        self.note_move(pod, source, target, strategy, reason)

    def note_move(self, pod, source, target, strategy, reason):
        """Records a move the PlacementSimulator already shows."""
        owner = owner_key(pod, self.replica_set_owners)
        self.moved.add(pod_key(pod))
        self.budget.count(owner)
        self.moves.append({"pod": pod_key(pod), "owner": owner, "from": source, "to": target,
                           "strategy": strategy, "reason": reason})

    def record_stuck(self, strategy, target, skew, reasons):
        unique = list(dict.fromkeys(reasons))
        self.stuck.append({"strategy": strategy, "target": target, "skew": skew,
                           "reason": "; ".join(unique[:5]) + ("; ..." if len(unique) > 5 else "")
                           if unique else "no pod to move"})

    def domain(self, name, topology_key):
        return node_labels(self.room.nodes[name]).get(topology_key)


def plan_rebalance(nodes, pods, replica_set_owners, settings, selected=None, claim_zones=None):
    """The whole rebalance plan over ``nodes`` (the nodes in scope) and the pods on them. Pure.

    ``selected`` limits the pods to balance to those keys (a pod selector's
    pods); the namespaces of ``settings.options`` limit them too.
    ``claim_zones`` maps "namespace/claim" to the zone(s) its volume is bound to.
    """
    scope, left_out = in_scope(nodes)
    planner = Planner(scope, pods, replica_set_owners, settings, selected, claim_zones)
    # Until the first move, the planner's PlacementSimulator is the one spread() would build for the spread before.
    before = room_spread(planner.room, scope, planner.groups.by_owner(), planner.groups.constraints())
    moves, stuck = planner.plan()
    destinations = {move["pod"]: move["to"] for move in moves}
    after = [moved_to(pod, destinations[pod_key(pod)]) if pod_key(pod) in destinations else pod for pod in pods]
    plan = {
        "moves": moves,
        "stuck": stuck,
        "left_out": left_out,
        "nodes": [node["metadata"]["name"] for node in scope],
        "before": before,
        "predicted": spread(scope, after, replica_set_owners, settings.options, selected),
    }
    chosen = [moved_to(pod, destinations[pod_key(pod)]) if pod_key(pod) in destinations else pod
              for pod in planner.pods]
    plan["violations_before"] = rule_violations(scope, planner.pods, settings.strategies)
    plan["violations_predicted"] = rule_violations(scope, chosen, settings.strategies)
    if "compaction" in settings.strategies:
        names = set(plan["nodes"])
        plan["compaction"] = {
            "threshold": settings.compaction_threshold, "emptied": planner.emptied,
            "empty_before": compaction.empty_nodes(scope, live_pods(pods, names)),
            "empty_predicted": compaction.empty_nodes(scope, live_pods(after, names))}
    plan["summary"] = summarize(plan)
    return plan


def compaction_line(compacted, empty_after=None):
    """"Compaction: empties n1, n2; nodes with no pod to move 1 -> 3": the nodes an autoscaler may remove."""
    return "Compaction (below %g%%): %s; nodes an autoscaler may remove %d -> %d%s." % (
        compacted["threshold"], "empties %s" % ", ".join(compacted["emptied"]) if compacted["emptied"]
        else "empties no node", len(compacted["empty_before"]), len(compacted["empty_predicted"]),
        "" if empty_after is None else ", measured %d" % len(empty_after))


def rule_violations(nodes, pods, strategies):
    """Strategy -> {pod key: where it breaks the rule} for the rule strategies among ``strategies``. Pure."""
    return {name: module.violations(nodes, pods) for name, module in RULE_STRATEGIES if name in strategies}


def violations_line(before, after, measured=False):
    """"node_taints 3 -> 0, node_affinity 1 -> 0": the pods breaking each rule, before and after."""
    return "%s: %s." % ("Measured violations" if measured else "Violations", ", ".join(
        "%s %d -> %d" % (name, len(before[name]), len(after.get(name, {}))) for name in before))


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
    if plan["violations_before"]:
        lines.append(violations_line(plan["violations_before"], plan["violations_predicted"]))
    if "compaction" in plan:
        lines.append(compaction_line(plan["compaction"]))
    for move in plan["moves"]:
        lines.append("move %(pod)s (%(owner)s): %(from)s -> %(to)s [%(strategy)s]" % move)
    for entry in plan["stuck"]:
        if entry["skew"] is None:
            lines.append("cannot move %(target)s (%(strategy)s): %(reason)s" % entry)
        else:
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
        if pod["metadata"]["uid"] not in known and node_of(pod):
            fresh.setdefault(owner_key(pod, replica_set_owners), []).append(node_of(pod))
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
