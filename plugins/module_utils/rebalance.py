# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""One rebalance pass against the cluster: snapshot, plan (rebalancing.py), steer, evict, measure.

Steering: while the pods move, every node of the pass that receives no pod
in the plan carries the taint ``kubeops.io/rebalancing`` (PreferNoSchedule
by default), so the scheduler puts the replacements on the planned nodes
rather than back where they came from. The taints are removed when the
pass ends, fails or times out; a pass killed in between leaves them, and
the next pass removes them before it plans.
"""

from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.module_utils.client import ApiException
from ansible_collections.kubeops.rotation.plugins.module_utils.eviction import (
    EvictionRun,
    Limits,
    Settings,
    SelectionError,
    claim_zones,
    summarize_entries,
    timeout_message,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.nodes import guarded
from ansible_collections.kubeops.rotation.plugins.module_utils.pods import judge, pod_key
from ansible_collections.kubeops.rotation.plugins.module_utils.rebalancing import (
    in_scope,
    landings,
    plan_rebalance,
    spread,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.rotation import replica_set_owners

STEERING_TAINT_KEY = "kubeops.io/rebalancing"


def _steering_taints(node):
    return [taint for taint in (node.get("spec") or {}).get("taints") or [] if taint.get("key") == STEERING_TAINT_KEY]


def without_steering(node):
    """The node as the scheduler will see it once the pass's taints are gone."""
    spec = dict(node.get("spec") or {})
    spec["taints"] = [taint for taint in spec.get("taints") or [] if taint.get("key") != STEERING_TAINT_KEY]
    return dict(node, spec=spec)


def steering_patch(node, effect):
    """The guarded JSON patch that puts the steering taint with ``effect`` on the node, or takes it
    off (``effect`` None); [] when the node is that way already. Pure."""
    taints = (node.get("spec") or {}).get("taints") or []
    wanted = [taint for taint in taints if taint.get("key") != STEERING_TAINT_KEY]
    if effect:
        wanted.append({"key": STEERING_TAINT_KEY, "value": "true", "effect": effect})
    return guarded(node, [{"op": "add", "path": "/spec/taints", "value": wanted}] if wanted != taints else [])


def set_steering(client, names, effect):
    """Put the steering taint with ``effect`` on nodes ``names``, or take it off (``effect`` None);
    a node deleted meanwhile is left alone."""
    for name in names:
        try:
            client.update_node(client.to_dict(client.core.read_node(name)),
                               lambda node: (None, steering_patch(node, effect)))
        except ApiException as exc:
            if exc.status != 404:
                raise


def _selected(client, pod_selector):
    """Keys of the pods a pod selector picks, or None (every pod) without one."""
    if not pod_selector:
        return None
    return {pod_key(pod) for pod in client.list_all(client.core.list_pod_for_all_namespaces,
                                                    label_selector=pod_selector)}


def _snapshot(client, params):
    nodes = client.list_all(client.core.list_node, label_selector=params.get("node_selector"))
    pods = client.list_all(client.core.list_pod_for_all_namespaces)
    return nodes, pods


def rebalance(client, params, settings, check_mode=False):
    """Plan one pass and, unless ``check_mode`` or there is nothing to do, carry it out and measure it.

    Returns the module's result; ``error: True`` with ``msg`` when evictions
    failed or the deadline passed (the steering taints are removed all the same).
    """
    nodes, pods = _snapshot(client, params)
    if params.get("node_selector") and not nodes:
        raise SelectionError("No node matches node_selector %s; nothing was changed." % params["node_selector"])
    leftover = sorted(node["metadata"]["name"] for node in nodes if _steering_taints(node))
    if leftover and not check_mode:
        set_steering(client, leftover, None)
    owners = replica_set_owners(client)
    selected = _selected(client, params.get("pod_selector"))
    names = {node["metadata"]["name"] for node in nodes}
    zones = claim_zones(client, [pod for pod in pods if (pod.get("spec") or {}).get("nodeName") in names])
    plan = plan_rebalance([without_steering(node) for node in nodes], pods, owners, settings, selected, zones)
    result = {
        "changed": bool(leftover),
        "moves": plan["moves"],
        "stuck": plan["stuck"],
        "left_out": plan["left_out"],
        "nodes": plan["nodes"],
        "skew_before": plan["before"],
        "skew_predicted": plan["predicted"],
        "removed_leftover_taints": leftover,
        "summary": plan["summary"],
        "elapsed_seconds": 0.0,
    }
    if check_mode or not plan["moves"]:
        return result
    by_key = {pod_key(pod): pod for pod in pods}
    pod_plans = [judge(by_key[move["pod"]], settings.options) for move in plan["moves"]]
    receivers = {move["to"] for move in plan["moves"]}
    steered = [name for name in plan["nodes"] if name not in receivers] if params["steering"] != "none" else []
    run = EvictionRun(client, Settings(
        timeout=params["timeout"], wait=True, wait_for_replacements=True,
        limits=Limits(max_in_flight=params.get("max_in_flight"),
                      max_unavailable_per_owner=params.get("max_unavailable_per_owner")),
        reason=params.get("reason") or ""))
    try:
        set_steering(client, steered, params["steering"] if steered else None)
        states = run.run(pod_plans)
    finally:
        set_steering(client, steered, None)
    outcomes = {state.plan.key: state.result() for state in states}
    after_nodes, after_pods = _snapshot(client, params)
    scope, _left_out = in_scope(after_nodes)
    evicted = [move for move in plan["moves"] if outcomes[move["pod"]]["outcome"] == "evicted"]
    landed, back = landings(evicted, pods, after_pods, owners)
    landed_by_pod = {move["pod"]: move for move in landed}
    result.update(
        changed=run.evictions > 0 or bool(leftover),
        moves=[dict(landed_by_pod.get(move["pod"], dict(move, landed_on=None, as_planned=False)),
                    outcome=outcomes[move["pod"]]["outcome"], detail=outcomes[move["pod"]]["detail"])
               for move in plan["moves"]],
        steered_nodes=steered,
        skew_after=spread(scope, after_pods, owners, settings.options, _selected(client, params.get("pod_selector"))),
        back_on_source=back,
        evictions=summarize_entries(list(outcomes.values())),
        elapsed_seconds=run.elapsed,
    )
    result["summary"] = plan["summary"] + [measured_line(result)]
    failed = [state for state in states if state.outcome == "failed"]
    if run.timed_out:
        result.update(error=True, msg=timeout_message(run, states, params["timeout"]))
    elif failed:
        result.update(error=True, msg="%d pod(s) could not be evicted: %s. Rerunning plans again from there." % (
            len(failed), "; ".join("%s: %s" % (state.plan.key, state.detail) for state in failed)))
    return result


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
