# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""One rebalance pass against the cluster: snapshot, plan (plan.rebalance), steer, evict, measure.

Steering: while the pods move, every node of the pass that receives no pod
in the plan carries the taint ``kubeops.io/rebalancing`` (PreferNoSchedule
by default), so the scheduler puts the replacements on the planned nodes
rather than back where they came from. The taints are removed when the
pass ends, fails or times out; a pass killed in between leaves them, and
the next pass removes them before it plans. A compaction pass steers the nodes
it empties with NoSchedule, whatever the steering asked, even none (a scheduler
that spreads by default would choose them), and keeps the nodes it fills from
autoscalers (plan.rebalance.compaction.KEEP_NODE) until it ends.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ansible_collections.kubeops.rotation.plugins.module_utils.api.errors import ApiException, is_not_found
from ansible_collections.kubeops.rotation.plugins.module_utils.api.nodes import list_nodes
from ansible_collections.kubeops.rotation.plugins.module_utils.api.snapshot import claim_zones, owners_of_replica_sets
from ansible_collections.kubeops.rotation.plugins.module_utils.api.workloads import pods_in
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.drain import moved_diff
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.events import EventRecorder
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.steering import (
    clear_steering,
    set_steering,
    steer,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.eviction import EvictionRun
from ansible_collections.kubeops.rotation.plugins.module_utils.model.errors import (
    Blocked,
    InvalidInput,
    NotFound,
    TimedOut,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.model.inputs import first_error, selector_error
from ansible_collections.kubeops.rotation.plugins.module_utils.model.nodes import node_name
from ansible_collections.kubeops.rotation.plugins.module_utils.model.pods import node_of, pod_key
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.eviction import (
    EvictionSettings,
    Outcome,
    summarize_entries,
    timeout_message,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.filters import judge
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.rebalance.compaction import (
    empty_nodes,
    is_kept_by_pass,
    keep_node_patch,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.rebalance.planner import (
    RebalanceSettings,
    compaction_line,
    landings,
    plan_rebalance,
    rule_violations,
    violations_line,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.rebalance.spread import (
    in_scope,
    live_pods,
    selection,
    spread,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.steering import (
    is_steered,
    without_steering,
)


@dataclass(frozen=True)
class RebalanceRequest:
    """A pass: over which nodes and pods, what to plan, how to steer, and how to evict."""

    plan: RebalanceSettings = field(default_factory=RebalanceSettings)
    node_selector: str | None = None
    pod_selector: str | None = None
    steering: str = "PreferNoSchedule"
    eviction: EvictionSettings = field(default_factory=EvictionSettings)

    @classmethod
    def from_params(cls, params, prefix=""):
        """The pass of the rebalance module's parameters: the selectors, RebalanceSettings.from_params, and
        EvictionSettings.from_params of the options a pass takes (its evictions wait for the replacements), or
        InvalidInput before anything is read."""
        error = first_error(selector_error(prefix + "node_selector", params.get("node_selector")),
                            selector_error(prefix + "pod_selector", params.get("pod_selector")))
        if error:
            raise InvalidInput(error)
        evicting = {name: params.get(name) for name in ("timeout", "max_in_flight", "max_unavailable_per_owner",
                                                        "reason")}
        return cls(plan=RebalanceSettings.from_params(params, prefix), node_selector=params.get("node_selector"),
                   pod_selector=params.get("pod_selector"), steering=params.get("steering") or cls.steering,
                   eviction=EvictionSettings.from_params(dict(evicting, wait=True, wait_for_replacements=True),
                                                         prefix))


def _selected(client, pod_selector):
    """Keys of the pods a pod selector picks, or None (every pod) without one."""
    if not pod_selector:
        return None
    return {pod_key(pod) for pod in pods_in(client, label_selector=pod_selector)}


def _snapshot(client, node_selector):
    return list_nodes(client, node_selector), pods_in(client)


def rebalance(client, request, check_mode=False):
    """Plan one pass (a RebalanceRequest) and, unless ``check_mode`` or there is nothing to do, carry it
    out and measure it; returns the result.

    Raises Blocked when evictions failed and TimedOut when the deadline
    passed, both carrying the result; the steering taints are removed all
    the same.
    """
    nodes, pods = _snapshot(client, request.node_selector)
    if request.node_selector and not nodes:
        raise NotFound("No node matches node_selector %s; nothing was changed." % request.node_selector)
    leftover = _leftover_taken_off(client, nodes, check_mode)
    owners = owners_of_replica_sets(client)
    plan = _plan(client, request, nodes, pods, owners)
    result = _planned_result(plan, leftover)
    if check_mode or not plan["moves"]:
        return result
    run, states, steered = _carry_out(client, request, plan, pods, nodes, leftover)
    outcomes = {state.plan.key: state.result() for state in states}
    after = _measured(client, request, plan, pods, owners, outcomes)
    result.update(
        changed=run.evictions > 0 or bool(leftover),
        moves=after["moves"],
        steered_nodes=steered,
        skew_after=after["skew_after"],
        violations_after=after["violations_after"],
        back_on_source=after["back_on_source"],
        evictions=summarize_entries(list(outcomes.values())),
        elapsed_seconds=run.elapsed,
        diff=after["diff"],
    )
    result["summary"] = plan["summary"] + [measured_line(result)] + (
        [violations_line(result["violations_before"], result["violations_after"], measured=True)]
        if result["violations_before"] else [])
    if "compaction" in result:
        result["compaction"] = dict(result["compaction"], empty_after=after["empty_after"])
        result["summary"].append(compaction_line(result["compaction"], result["compaction"]["empty_after"]))
    if after["back_on_source"]:
        result["warnings"] = ["%d replacement(s) landed back on a node their owner's pods were moved from: %s" % (
            len(after["back_on_source"]), ", ".join("%(owner)s on %(node)s" % entry
                                                    for entry in after["back_on_source"]))]
    failed = [state for state in states if state.outcome is Outcome.FAILED]
    if run.timed_out:
        raise TimedOut(timeout_message(states, request.eviction.timeout, run.waiting_for), result)
    if failed:
        raise Blocked("%d pod(s) could not be evicted: %s. Rerunning plans again from there." % (
            len(failed), "; ".join("%s: %s" % (state.plan.key, state.detail) for state in failed)), result)
    return result


def _leftover_taken_off(client, nodes, check_mode):
    """The nodes a killed pass left steered or kept from autoscalers; unless ``check_mode``, their taints and
    annotations are taken off before the pass plans."""
    leftover = sorted(node_name(node) for node in nodes if is_steered(node) or is_kept_by_pass(node))
    if leftover and not check_mode:
        set_steering(client, [node for node in nodes if is_steered(node)], None)
        keep_nodes(client, [node for node in nodes if is_kept_by_pass(node)], False)
    return leftover


def _plan(client, request, nodes, pods, owners):
    """The pass planned (plan.rebalance.planner.plan_rebalance) over the nodes as they would be unsteered."""
    selected = _selected(client, request.pod_selector)
    names = {node_name(node) for node in nodes}
    zones = claim_zones(client, [pod for pod in pods if node_of(pod) in names])
    return plan_rebalance([without_steering(node) for node in nodes], pods, owners, request.plan, selected, zones)


def _planned_result(plan, leftover):
    """The result of the pass as planned: what check mode returns, and what the measures complete."""
    return {
        "changed": bool(leftover),
        "moves": plan["moves"],
        "stuck": plan["stuck"],
        "left_out": plan["left_out"],
        "nodes": plan["nodes"],
        "skew_before": plan["before"],
        "skew_predicted": plan["predicted"],
        "violations_before": plan["violations_before"],
        "violations_predicted": plan["violations_predicted"],
        **({"compaction": plan["compaction"]} if "compaction" in plan else {}),
        "removed_leftover_taints": leftover,
        "summary": plan["summary"],
        "elapsed_seconds": 0.0,
        "diff": moved_diff((move["pod"], move["from"], move["to"]) for move in plan["moves"]),
    }


def _steering_effects(plan, steering):
    """Node -> the effect of its steering taint, and the nodes kept from autoscalers meanwhile: the nodes that
    receive nothing get ``steering``, as asked; the nodes a compaction empties NoSchedule even without steering
    (a scheduler spreading by default sends the pods straight back), and it keeps the nodes it fills."""
    receivers = {move["to"] for move in plan["moves"]}
    effects = dict.fromkeys((name for name in plan["nodes"] if name not in receivers), steering) \
        if steering != "none" else {}
    emptied = (plan.get("compaction") or {}).get("emptied", ())
    effects.update(dict.fromkeys(emptied, "NoSchedule"))
    return effects, sorted(receivers) if emptied else []


def _carry_out(client, request, plan, pods, nodes, leftover):
    """Evict the planned pods while the steering taints (and a compaction's keep annotations) are on; they come
    off however the evictions end. Returns the EvictionRun, the states of its pods and the steered nodes."""
    by_key = {pod_key(pod): pod for pod in pods}
    pod_plans = [judge(by_key[move["pod"]], request.plan.options) for move in plan["moves"]]
    effects, kept = _steering_effects(plan, request.steering)
    steered = sorted(effects)
    run = EvictionRun(client, request.eviction, hooks=[EventRecorder(client, request.eviction.reason)])
    try:
        # Leftover taints were taken off above: those nodes as listed before would look steered already.
        current = list_nodes(client) if leftover else nodes
        keep_nodes(client, [node for node in current if node_name(node) in kept], True)
        steer(client, current, effects)
        states = run.run(pod_plans)
    finally:
        clear_steering(client, steered)
        if kept:
            keep_nodes(client, [node for node in list_nodes(client) if node_name(node) in kept], False)
    return run, states, steered


def _measured(client, request, plan, pods, owners, outcomes):
    """The pass measured on the cluster after it: where the evicted pods' replacements landed (and those back on
    a node their owner's pods left), the skew and rule violations now, and the nodes empty now."""
    settings = request.plan
    after_nodes, after_pods = _snapshot(client, request.node_selector)
    scope, _left_out = in_scope(after_nodes)
    evicted = [move for move in plan["moves"] if outcomes[move["pod"]]["outcome"] == Outcome.EVICTED]
    landed, back = landings(evicted, pods, after_pods, owners)
    landed_by_pod = {move["pod"]: move for move in landed}
    selected_after = _selected(client, request.pod_selector)
    on_scope = live_pods(after_pods, {node_name(node) for node in scope})
    return {
        "moves": [dict(landed_by_pod.get(move["pod"], dict(move, landed_on=None, as_planned=False)),
                       outcome=outcomes[move["pod"]]["outcome"], detail=outcomes[move["pod"]]["detail"])
                  for move in plan["moves"]],
        "skew_after": spread(scope, after_pods, owners, settings.options, selected_after),
        "violations_after": rule_violations(scope, selection(on_scope, settings.options, selected_after),
                                            settings.strategies),
        "back_on_source": back,
        "diff": moved_diff((move["pod"], move["from"], (landed_by_pod.get(move["pod"]) or {}).get("landed_on"))
                           for move in evicted),
        "empty_after": empty_nodes(scope, on_scope) if "compaction" in plan else None,
    }


def keep_nodes(client, nodes, keep):
    """Add the annotations that keep autoscalers from removing ``nodes`` (as listed), or take off those a pass
    added (``keep`` false); a node deleted meanwhile is left alone."""
    for node in nodes:
        try:
            client.update_node(node, lambda current: (None, keep_node_patch(current, keep)))
        except ApiException as exc:
            if not is_not_found(exc):
                raise


def measured_line(result):
    evicted = [move for move in result["moves"] if move["outcome"] == "evicted"]
    misplaced = [move for move in evicted if not move["as_planned"]]
    return ("Measured: max skew per owner %d -> %d, per zone %d -> %d; %d of %d move(s) made, %d replacement(s) "
            "where planned%s." % (
                result["skew_before"]["max_skew"], result["skew_after"]["max_skew"],
                result["skew_before"]["max_zone_skew"], result["skew_after"]["max_zone_skew"],
                len(evicted), len(result["moves"]), len(evicted) - len(misplaced),
                "; elsewhere: %s" % ", ".join("%s on %s" % (move["pod"], move["landed_on"] or "no node yet")
                                              for move in misplaced) if misplaced else ""))
