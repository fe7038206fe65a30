# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Replacement first, carried out: the pods asked for get their replacements Ready before they go, and no other
pod of their workloads moves (plan.replacement decides every step).

A Deployment is surged by exactly its leaving pods and scaled back (engine.replacement_surge); what was changed
is recorded on it first (model.keys.SURGE_ANNOTATION) and put back at the end, by this run or by the next one
after a kill. A StatefulSet, or a Deployment whose strategy is Recreate, loses one pod at a time through the
Eviction API, when all its pods are Ready and its PDBs allow it, and gets it back Ready before the next
(engine.replacement_one_by_one). Both wait on what engine.replacement_pods follows.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from ansible_collections.kubeops.rotation.plugins.module_utils.api.workloads import (
    deployment_of,
    read_workload,
    surging_deployments,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.replacement_one_by_one import one_at_a_time
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.replacement_pods import (
    Replacing,
    WorkloadReplacement,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.replacement_surge import Surge
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.steering import MovingPods, steering_while_moving
from ansible_collections.kubeops.rotation.plugins.module_utils.model.errors import Blocked, InvalidInput, TimedOut
from ansible_collections.kubeops.rotation.plugins.module_utils.model.inputs import (
    first_error,
    names_error,
    number_error,
    pod_keys_error,
    text_error,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.model.keys import MANAGER
from ansible_collections.kubeops.rotation.plugins.module_utils.model.owners import Workload, owner_of
from ansible_collections.kubeops.rotation.plugins.module_utils.model.pods import is_terminating, node_of, pod_key
from ansible_collections.kubeops.rotation.plugins.module_utils.model.quantities import pod_requests
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.capacity import smallest_request, total_requests
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.replacement import (
    SURGE,
    gitops_managers,
    replacement_method,
)


@dataclass(frozen=True)
class ReplaceSettings:
    """What replace_pods is asked: the pods ("namespace/name"), the run that marks them, how long it may take,
    the nodes the replacements keep off, whether they stay in their zone, and how many namespaces go at once."""

    pods: tuple = ()
    run_id: str = ""
    timeout: int = 900
    avoid_nodes: tuple = ()
    keep_zones: bool = False
    max_concurrent: int = 4

    @classmethod
    def from_params(cls, params, prefix=""):
        """The settings from a module's parameters (replace_pods', or evict's ``replace_first``, whose names
        ``prefix`` gives in errors), or InvalidInput before anything is read."""
        error = first_error(
            pod_keys_error(prefix + "pods", params["pods"]),
            text_error(prefix + "run_id", params["run_id"], optional=False),
            names_error("avoid_nodes", params.get("avoid_nodes") or None, "node"),
            number_error(prefix + "timeout", params["timeout"], 1),
            number_error(prefix + "max_concurrent", params["max_concurrent"], 1))
        if error:
            raise InvalidInput(error)
        return cls(pods=tuple(params["pods"]), run_id=params["run_id"].strip(), timeout=params["timeout"],
                   avoid_nodes=tuple(params.get("avoid_nodes") or ()), keep_zones=bool(params.get("keep_zones")),
                   max_concurrent=params["max_concurrent"])


def _workloads_of(client, pods, asked):
    """{Workload: [pod keys]} for the asked pods found in ``pods``, and the asked pods that are gone; InvalidInput
    naming those without a Deployment or StatefulSet."""
    found = {pod_key(pod): pod for pod in pods if pod_key(pod) in asked}
    replica_sets, groups, refused = {}, {}, []
    for key in sorted(found):
        pod = found[key]
        owner = owner_of(pod, {})
        if owner and owner.kind == "ReplicaSet":
            if (owner.namespace, owner.name) not in replica_sets:
                replica_sets[(owner.namespace, owner.name)] = deployment_of(client, owner.namespace, owner.name)
            owner = replica_sets[(owner.namespace, owner.name)]
        if owner is None or owner.kind not in ("Deployment", "StatefulSet"):
            refused.append(key)
        else:
            groups.setdefault(owner, []).append(key)
    if refused:
        raise InvalidInput("Only pods of Deployments and StatefulSets can be replaced first; not %s. Nothing was "
                           "changed." % ", ".join(refused))
    return groups, sorted(set(asked) - set(found))


def replace_pods(client, settings, check_mode=False, clock=time.monotonic, every_pod=None, held_steering=None):
    """Replace the pods ``settings.pods`` ("namespace/name"), replacement first; finish first any surge a killed
    run left. With ``every_pod`` (api.watch.BackgroundInformer), every pod is read from it, not listed; with
    ``held_steering`` (engine.steering.SteeringAcrossSteps), the steering stays on for the step after. Raises
    TimedOut or Blocked carrying the result."""
    started = clock()
    replacing = Replacing(client, settings.run_id, started + settings.timeout, clock, every_pod=every_pod)
    asked = set(settings.pods)
    pods, present = _asked_pods(replacing, asked, settings.avoid_nodes)
    groups, gone = _workloads_of(client, present, asked)
    progresses = _progresses(client, groups)
    left_over = [obj for obj in surging_deployments(client) if _deployment(obj) not in groups]
    if check_mode:
        steered, errors = [], []
        finished = _would_finish(progresses, left_over)
    else:
        moving, nodes = _moving(pods, asked, progresses)
        surge = Surge(replacing)
        finished = [surge.finish_left_over(obj) for obj in left_over]
        with steering_while_moving(client, settings.avoid_nodes if progresses else (),
                                   nodes if settings.keep_zones else (), moving,
                                   every_pod=every_pod, held=held_steering) as steered:
            errors = _run_by_namespace(replacing, surge, progresses, settings.max_concurrent, clock)
    result = _result(progresses, present, gone, finished, steered, check_mode, round(clock() - started, 2))
    if errors:
        entries = result["workloads"]
        raise type(errors[0])("%s %d of %d workloads replaced their pods; a rerun replaces the rest." % (
            "; ".join(str(e) for e in errors), sum(1 for entry in entries if entry["action"] == "replaced"),
            len(entries)), result)
    return result


def _deployment(obj):
    return Workload("Deployment", obj["metadata"]["namespace"], obj["metadata"]["name"])


def _asked_pods(replacing, asked, avoid_nodes):
    """Every pod of the ``asked`` pods' namespaces, and those of them still present: not terminating and, with
    ``avoid_nodes``, the asked ones only while they run on a node being left."""
    pods = []
    for namespace in sorted({key.split("/", 1)[0] for key in asked}):
        pods.extend(replacing.pods(namespace).objects.values())
    present = [pod for pod in pods if not is_terminating(pod)]
    if avoid_nodes:
        # A StatefulSet's pod keeps its name when it is replaced: an asked name whose pod no longer runs on the nodes
        # being left is a replacement already (a killed run's, say), not a pod to move again.
        avoid = set(avoid_nodes)
        present = [pod for pod in present if pod_key(pod) not in asked or node_of(pod) in avoid]
    return pods, present


def _progresses(client, groups):
    """For each workload, its WorkloadReplacement (with the method its kind and spec call for) and the workload as
    read now (None when gone)."""
    progresses = []
    for workload, keys in sorted(groups.items()):
        obj = read_workload(client, workload)
        progress = WorkloadReplacement(workload, keys, replacement_method(workload.kind, (obj or {}).get("spec")))
        progresses.append((progress, obj))
    return progresses


def _moving(pods, asked, progresses):
    """The pods that move, as the steering needs them (engine.steering.MovingPods), and the nodes they leave."""
    leaving = [key for progress, _obj in progresses for key in progress.leaving]
    nodes = sorted({node_of(pod) for pod in pods if pod_key(pod) in asked and node_of(pod)})
    request = smallest_request(pod_requests((obj.get("spec") or {}).get("template") or {})
                               for _progress, obj in progresses if obj)
    moving = tuple(pod for pod in pods if pod_key(pod) in asked)
    return MovingPods(request, leaving, total_requests(moving), moving), nodes


def _would_finish(progresses, left_over):
    """Check mode: what each workload would go through, and the left-over surges that would be finished."""
    for progress, _obj in progresses:
        progress.detail = "would be replaced, replacement first (%s)" % progress.method.replace("_", " ")
    return [WorkloadReplacement(_deployment(obj), action="planned",
                                detail="a surge a killed run left; it would be finished")
            for obj in left_over]


def _result(progresses, present, gone, finished, steered, check_mode, elapsed):
    """The module's result: each workload's way through, the pods asked for that were gone, the left-over surges
    finished, the steered nodes, and the pods moved as the diff."""
    entries = [progress.result() for progress, _obj in progresses]
    nodes_of = {pod_key(pod): node_of(pod) for pod in present}
    leaving = [key for entry in entries for key in (entry["leaving"] if check_mode else entry["replaced"])]
    return {
        # Each pod that leaves (in check mode, would leave) its node; its replacement is a new pod elsewhere.
        "diff": {"before": {key: nodes_of.get(key) for key in leaving}, "after": {key: None for key in leaving}},
        "changed": bool(finished and not check_mode) or any(entry["replaced"] or entry["replicas_steps"]
                                                            for entry in entries),
        "workloads": entries,
        "gone": gone,
        "finished_left_over": [progress.result() for progress in finished],
        "steered_nodes": steered,
        "summary": {"workloads": len(entries), "pods": sum(len(entry["leaving"]) for entry in entries),
                    "replaced": sum(len(entry["replaced"]) for entry in entries), "gone": len(gone),
                    "left_over_finished": len(finished)},
        "elapsed_seconds": elapsed,
        "warnings": ["%s: its replicas are synced by %s; if that sets them back during the surge, the surge stops "
                     "and is undone" % (progress.workload.label, ", ".join(gitops_managers(obj, MANAGER)))
                     for progress, obj in progresses
                     if obj and progress.method == SURGE and gitops_managers(obj, MANAGER)],
    }


def _run_by_namespace(replacing, surge, progresses, max_concurrent, clock):
    """Each namespace's workloads one after another, namespaces ``max_concurrent`` at a time; the errors."""
    by_namespace = {}
    for progress, obj in progresses:
        by_namespace.setdefault(progress.workload.namespace, []).append((progress, obj))
    errors = []

    def run(items):
        for progress, obj in items:
            started = clock()
            try:
                if obj is None:
                    progress.action, progress.detail = "gone", "the workload is gone"
                elif progress.method == SURGE:
                    surge.replace(progress, obj)
                else:
                    one_at_a_time(replacing, progress, obj)
            except (TimedOut, Blocked) as exc:
                progress.action = "failed"
                progress.detail = "%s%s" % (exc, "; " + progress.detail if progress.detail else "")
                errors.append(exc)
            finally:
                progress.seconds = round(clock() - started, 2)
                replacing.progress.drop(progress.workload)

    with ThreadPoolExecutor(max_workers=max(1, max_concurrent)) as pool:
        list(pool.map(run, list(by_namespace.values())))
    return errors
