# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The evict module's work: select pods, judge them, evict them through the engine, check what is left."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from ansible_collections.kubeops.rotation.plugins.module_utils.api.client import each_concurrently
from ansible_collections.kubeops.rotation.plugins.module_utils.api.nodes import list_nodes
from ansible_collections.kubeops.rotation.plugins.module_utils.api.snapshot import (
    claim_zones,
    every_node_and_pod,
    pods_on_nodes,
    select_pods,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.api.watch import BackgroundInformer
from ansible_collections.kubeops.rotation.plugins.module_utils.api.workloads import pods_informer
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.events import EventRecorder
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.steering import (
    MovingPods,
    SteeringAcrossSteps,
    steering_while_moving,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.eviction import EvictionRun
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.eviction_waits import WAITED_FOR
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.replacement import replace_pods
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.warm import ensure_warm_nodes
from ansible_collections.kubeops.rotation.plugins.module_utils.model.errors import (
    Blocked,
    InvalidInput,
    KubeopsError,
    Refused,
    TimedOut,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.model.inputs import (
    field_selector_error,
    first_error,
    names_error,
    selector_error,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.model.nodes import is_cordoned, node_name
from ansible_collections.kubeops.rotation.plugins.module_utils.model.pods import node_of, pod_key, pods_of_named_nodes
from ansible_collections.kubeops.rotation.plugins.module_utils.model.quantities import pod_requests
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.capacity import smallest_request, total_requests
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.eviction import (
    EvictionSettings,
    Outcome,
    summarize_entries,
    timeout_message,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.filters import (
    FilterOptions,
    judge_all,
    left_behind,
    refusal_message,
    refused,
)


# Rounds of eviction for the pods that reach the drained nodes after they were read (_evict_with_late_arrivals).
LATE_ROUNDS = 2


@dataclass(frozen=True)
class PodSelection:
    """Which pods to judge: those on nodes (by name or selector), in namespaces, matching selectors."""

    nodes: tuple = ()
    node_selector: str | None = None
    namespaces: tuple = ()
    pod_selector: str | None = None
    field_selector: str | None = None

    @property
    def only_named_nodes(self):
        """Whether these are the pods of the nodes named, with nothing else narrowing them."""
        return bool(self.nodes) and self == PodSelection(nodes=self.nodes)


@dataclass(frozen=True)
class DrainJob:
    """What one drain does: the pods it selects, how it judges them (``options``) and evicts them (``settings``),
    whether pods that refuse to leave are left (``skip_refused``) rather than stopping it, and where the
    replacements may not go: ``avoid_nodes``, and with ``keep_zones`` outside the zones of the drained nodes."""

    selection: PodSelection
    options: FilterOptions
    settings: EvictionSettings
    skip_refused: bool = False
    keep_zones: bool = False
    avoid_nodes: tuple = ()

    @classmethod
    def from_params(cls, params, prefix=""):
        """The drain of the evict module's parameters (its eviction settings EvictionSettings.from_params), or
        InvalidInput naming the first option that makes no sense (``prefix`` before its name), before anything is
        read or changed."""
        error = first_error(
            names_error(prefix + "nodes", params["nodes"], "node"),
            selector_error(prefix + "node_selector", params["node_selector"]),
            names_error(prefix + "namespaces", params["namespaces"], "namespace"),
            names_error(prefix + "exclude_namespaces", params["exclude_namespaces"] or None, "namespace"),
            selector_error(prefix + "pod_selector", params["pod_selector"]),
            names_error(prefix + "avoid_nodes", params["avoid_nodes"] or None, "node"),
            field_selector_error(prefix + "field_selector", params["field_selector"]))
        if error:
            raise InvalidInput(error)
        selection = PodSelection(tuple(params["nodes"] or ()), params["node_selector"],
                                 tuple(params["namespaces"] or ()), params["pod_selector"], params["field_selector"])
        options = FilterOptions(
            force=params["force"], delete_emptydir_data=params["delete_emptydir_data"],
            respect_do_not_disrupt=params["respect_do_not_disrupt"],
            evict_system_critical=params["evict_system_critical"], namespaces=tuple(params["namespaces"] or ()),
            exclude_namespaces=tuple(params["exclude_namespaces"]))
        return cls(selection, options, EvictionSettings.from_params(params, prefix), params["skip_refused"],
                   params["keep_zones"], tuple(params["avoid_nodes"]))


def _outcome(pod_plan):
    if pod_plan.removes:
        return "planned"
    return {"skip": "skipped", "wait": "terminating"}.get(pod_plan.verdict.action, "refused")


def moved_diff(moves):
    """The diff of pods that leave their nodes: ``moves`` are (pod key, its node, where it goes or None)."""
    moves = sorted(moves)
    return {"before": {key: node for key, node, _to in moves}, "after": {key: to for key, _node, to in moves}}


def _removed(entries, outcomes):
    return moved_diff(("%s/%s" % (entry["namespace"], entry["name"]), entry["node"], None)
                      for entry in entries if entry["outcome"] in outcomes)


def move(client, job, check_mode=False, warming=None, replacing=None, clock=time.monotonic):
    """What drain does with ``job`` (a DrainJob), after nodes are warmed for the pods with ``warming``
    (engine.warm.WarmSettings) and the pods ``replacing`` (engine.replacement.ReplaceSettings) are replaced first, as
    warm_nodes, replace_pods and drain do one after the other. With either, every pod is listed once for all of them, while the nodes warm, and followed
    meanwhile (api.watch.BackgroundInformer), not listed again by each; the replacement's steering stays on for the drain,
    which changes only the nodes it steers otherwise, and comes off once, at the end (engine.steering.SteeringAcrossSteps).
    Returns drain's result with ``warmed`` and ``replaced``, warm_nodes' and replace_pods'; an error of any step
    carries what was done so far the same way."""
    if warming is None and replacing is None:
        return drain(client, job, check_mode)
    deadline = clock() + sum(step.timeout for step in (warming, replacing) if step is not None) + job.settings.timeout
    done = {}
    with BackgroundInformer(pods_informer(client), deadline) as every_pod, SteeringAcrossSteps(client) as held_steering:
        step = "warmed"
        try:
            if warming is not None:
                done[step] = ensure_warm_nodes(client, warming, check_mode)
                held_steering.warm_hosts.update(done[step].get("nodes") or ())
            # The list, taken while the nodes warmed, is waited for here: outside the next steps' clocks.
            every_pod.ready()
            step = "replaced"
            if replacing is not None:
                replacing = replace(replacing, avoid_nodes=tuple(job.avoid_nodes), keep_zones=job.keep_zones)
                done[step] = replace_pods(client, replacing, check_mode, every_pod=every_pod,
                                          held_steering=held_steering)
            step = None
            result = drain(client, job, check_mode, every_pod=every_pod, held_steering=held_steering)
        except KubeopsError as exc:
            exc.result = _with_steps(exc.result, done) if step is None else \
                _with_steps({"changed": False}, dict(done, **{step: exc.result}))
            raise
    return _with_steps(result, done)


def _with_steps(result, done):
    """Drain's ``result`` with the results of the steps ``done`` before it (``warmed``, ``replaced``): changed if
    any changed; the replacement's diff and warnings are the call's, with drain's."""
    result = dict(result or {}, **done)
    if "replaced" in done:
        replaced = dict(done["replaced"] or {})
        evicted = result.get("diff") or {"before": {}, "after": {}}
        moved = replaced.pop("diff", None) or {"before": {}, "after": {}}
        result.update(replaced=replaced, warnings=replaced.pop("warnings", []),
                      diff={side: {**moved[side], **evicted[side]} for side in ("before", "after")})
    result["changed"] = any(bool((step or {}).get("changed")) for step in [result] + list(done.values()))
    return result


def drain(client, job, check_mode=False, every_pod=None, held_steering=None):
    """Select, judge and (unless ``check_mode``) evict the pods of ``job`` (a DrainJob); returns the result.

    While the pods leave, the replacements are kept off ``job.avoid_nodes`` and, with ``job.keep_zones``, steered
    away from the nodes outside the zones of the selected nodes, so that they stay in their zone where it
    has room (engine.steering). With ``every_pod`` (api.watch.BackgroundInformer), the steering reads every pod from it;
    with ``held_steering`` (engine.steering.SteeringAcrossSteps), it takes over the steering of the step before.

    Raises Refused (a Blocked) when pods are refused (nothing evicted), Blocked when evictions
    failed, TimedOut at the deadline; each carries the result.
    """
    selection, options, settings = job.selection, job.options, job.settings
    steers = bool(job.avoid_nodes or job.keep_zones) and not check_mode
    (pods, node_names), listed = _select(client, selection, steers, every_pod)
    if every_pod is not None:
        # Read for the last time: its watch ends rather than follow every pod the evictions move.
        every_pod.stop()
    plans = judge_all(pods, options, claim_zones(client, pods))
    result = {"changed": False, "nodes": node_names}
    if refused(plans) and not job.skip_refused:
        entries = [dict(p.summary(), outcome="refused" if p.verdict.action == "refuse" else "not attempted")
                   for p in plans]
        result.update(elapsed_seconds=0.0, pods=entries, summary=summarize_entries(entries))
        raise Refused(refusal_message(plans), result)
    if check_mode:
        entries = [dict(p.summary(), outcome=_outcome(p), attempts=0, pdbs=[]) for p in plans]
        result.update(pods=entries, summary=summarize_entries(entries), elapsed_seconds=0.0,
                      diff=_removed(entries, ("planned",)))
        return result
    removed = tuple(p.pod for p in plans if p.removes)
    moving = MovingPods(request=smallest_request(pod_requests(pod) for pod in removed),
                        needs=total_requests(removed), pods=removed)
    with steering_while_moving(client, job.avoid_nodes, node_names if job.keep_zones else (), moving,
                               listed=listed, held=held_steering) as steered:
        runs, states, on_nodes = _evict_with_late_arrivals(client, selection, options, settings, plans, node_names)
    run = runs[-1]
    evictions = sum(each.evictions for each in runs)
    result["steered_nodes"] = steered
    entries = sorted((state.result() for state in states), key=lambda e: (e["node"] or "", e["namespace"], e["name"]))
    result.update(changed=evictions > 0, pods=entries, summary=summarize_entries(entries),
                  elapsed_seconds=round(sum(each.elapsed for each in runs), 2),
                  waited_seconds={kind: round(sum(each.waits.waited[kind] for each in runs), 2) for kind in WAITED_FOR},
                  diff=_removed(entries, ("evicted", "deleted")))
    if node_names and settings.wait:
        # The pods that a drain should have removed: all but DaemonSet, mirror and terminal pods.
        if on_nodes is None or selection.pod_selector or selection.field_selector:
            on_nodes = pods_on_nodes(client, node_names)
        result["remaining"] = left_behind(judge_all(on_nodes, options))
        result["summary"]["remaining"] = len(result["remaining"])
    failed = [s for s in states if s.outcome is Outcome.FAILED]
    if run.timed_out:
        raise TimedOut(timeout_message(states, settings.timeout, run.waiting_for), result)
    if failed:
        wanted = sum(1 for s in states if s.plan.removes)
        reasons = "; ".join("%s: %s" % (pod_key(s.pod), s.detail) for s in failed)
        raise Blocked("%d pod(s) could not be evicted: %s. %d of %d pods evicted; rerunning continues from here."
                      % (len(failed), reasons, evictions, wanted), result)
    return result


def _select(client, selection, steers, every_pod=None):
    """select_pods, and (every node, every pod) for the steering when the drain ``steers`` (else None). The
    steering's lists are taken while the drained nodes' pods are listed, not after them; a drain of named nodes
    alone (a rotation's batch) takes its nodes and their pods from those lists instead. With ``every_pod``
    (api.watch.BackgroundInformer), every pod is read from it, and the drained nodes' pods are still listed: what is
    followed may be an event behind the step before, which a pod to judge must not be."""
    if steers and selection.only_named_nodes and every_pod is not None:
        nodes, pods = each_concurrently(lambda read: read(), [
            lambda: list_nodes(client), lambda: pods_on_nodes(client, selection.nodes)])
        return pods_of_named_nodes(selection.nodes, nodes, pods), (nodes, every_pod.objects())
    if steers and selection.only_named_nodes:
        listed = every_node_and_pod(client)
        return pods_of_named_nodes(selection.nodes, *listed), listed
    return each_concurrently(lambda read: read(), [
        lambda: select_pods(client, selection.nodes, selection.node_selector, selection.namespaces,
                            selection.pod_selector, selection.field_selector),
        lambda: every_node_and_pod(client) if steers else None])


def _on_cordoned_nodes(client, plans):
    """The ``plans`` whose pods are on cordoned nodes (their nodes read only when there are any)."""
    if not plans:
        return plans
    cordoned = {node_name(node) for node in client.read_nodes(sorted({node_of(p.pod) for p in plans}))[0]
                if is_cordoned(node)}
    return [p for p in plans if node_of(p.pod) in cordoned]


def _evict_with_late_arrivals(client, selection, options, settings, plans, node_names):
    """Evict the ``plans``; then, while the run waits on nodes and went through, up to LATE_ROUNDS times, the pods
    found on the nodes, cordoned, that it did not plan: a scheduler whose view lagged placed them after the nodes
    were cordoned and read (on a node left schedulable, they are the evicted pods' replacements, and stay). Each
    round within what is left of the timeout; returns the runs, every pod's state and the pods on the nodes as
    listed after the last run (None when not listed then)."""
    runs, states = [], []
    todo = plans
    while True:
        left = max(1.0, settings.timeout - sum(each.elapsed for each in runs))
        run = EvictionRun(client, replace(settings, timeout=left), hooks=[EventRecorder(client, settings.reason)])
        runs.append(run)
        states.extend(run.run(todo, node_names))
        if run.timed_out or not node_names or not settings.wait or len(runs) > LATE_ROUNDS or \
                any(state.outcome is Outcome.FAILED for state in states):
            return runs, states, None
        planned = {state.uid for state in states}
        found = pods_on_nodes(client, node_names, selection.pod_selector, selection.field_selector)
        # Only the pods not planned yet are judged: their volumes' zones are read, not those of every pod found.
        arrived = [pod for pod in found if pod["metadata"]["uid"] not in planned]
        todo = _on_cordoned_nodes(client, [p for p in judge_all(arrived, options, claim_zones(client, arrived))
                                           if p.removes])
        if not todo:
            return runs, states, found
