# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Replacement first, carried out: the pods asked for get their replacements Ready before they go, and no other
pod of their workloads moves (plan.replacement decides every step).

A Deployment is surged by exactly its leaving pods and scaled back; what was changed is recorded on it first
(model.keys.SURGE_ANNOTATION) and put back at the end, by this run or by the next one after a kill. A
StatefulSet, or a Deployment whose strategy is Recreate, loses one pod at a time through the Eviction API,
when all its pods are Ready and its PDBs allow it, and gets it back Ready before the next.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from ansible_collections.kubeops.rotation.plugins.module_utils.api.errors import (
    ApiException,
    ConnectionFailed,
    api_message,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.api.workloads import (
    autoscalers_in,
    deployment_of,
    evict_pod,
    patch_autoscaler,
    patch_pod,
    patch_workload,
    pdbs_in,
    pod_now,
    pods_informer,
    read_workload,
    surging_deployments,
    workload_informer,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.progress import ProgressParts
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.steering import steering_while_moving
from ansible_collections.kubeops.rotation.plugins.module_utils.model.errors import Blocked, InvalidInput, TimedOut
from ansible_collections.kubeops.rotation.plugins.module_utils.model.inputs import (
    first_error,
    names_error,
    number_error,
    pod_keys_error,
    text_error,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.model.keys import (
    DELETION_COST,
    LEAVING_ANNOTATION,
    MANAGER,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.model.owners import Workload, owner_of
from ansible_collections.kubeops.rotation.plugins.module_utils.model.pods import (
    annotations_of,
    is_ready,
    is_terminal,
    is_terminating,
    node_of,
    pod_key,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.model.quantities import pod_requests
from ansible_collections.kubeops.rotation.plugins.module_utils.model.selectors import index_label, selector_matches
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.capacity import smallest_request, total_requests
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.eviction import found_removed
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.replacement import (
    SURGE,
    Budget,
    gitops_managers,
    hpa_bounds,
    hpa_record,
    hpa_restored,
    is_leaving,
    leaving_patch,
    one_may_go,
    replacement_method,
    replicas_managers,
    scale_back_step,
    scale_target,
    surge_marks,
    surge_marks_removed,
    surge_record,
    surge_step,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.progress import not_ready_text
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.restart import Rollout, rollout_status

# How often a wait for pods also reads the workload again, to see whether someone else set its replicas.
RECHECK_SECONDS = 5.0
# After a failure, how long putting a surge back may take before it is left to the next run.
UNDO_SECONDS = 60.0
UNMARKED = {"metadata": {"annotations": {DELETION_COST: None, LEAVING_ANNOTATION: None}}}


@dataclass(frozen=True)
class ReplaceSettings:
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


@dataclass
class WorkloadReplacement:
    """One workload's way through: which of its pods leave, how, and what came of it."""

    workload: Workload
    leaving: list = field(default_factory=list)
    method: str = SURGE
    action: str = "planned"
    replaced: list = field(default_factory=list)
    replacements: list = field(default_factory=list)
    replicas_steps: list = field(default_factory=list)
    autoscaler: str | None = None
    replicas_managers: list = field(default_factory=list)
    detail: str = ""
    seconds: float = 0.0

    def result(self):
        return dict(self.workload.target(), method=self.method, action=self.action, leaving=sorted(self.leaving),
                    replaced=sorted(self.replaced), replacements=sorted(self.replacements),
                    replicas_steps=self.replicas_steps, autoscaler=self.autoscaler,
                    replicas_managers=self.replicas_managers, detail=self.detail, seconds=self.seconds)


class ReplicasTaken(Blocked):
    """Someone else set the workload's replicas while it surged."""


class Replacing:
    """Replaces pods workload by workload, each namespace's one after another (they may share PDBs): reads the
    namespaces' pods and PDBs as they change and waits on them, and replaces the pods of StatefulSets and Recreate
    Deployments one at a time (Surge scales the other Deployments)."""

    def __init__(self, client, run_id, deadline, clock=time.monotonic, sleep=time.sleep, every_pod=None):
        self.client = client
        self.run_id = run_id
        self.deadline = deadline
        self.clock = clock
        self.sleep = sleep
        self.every_pod = every_pod
        self._pods = {}
        self._pdbs = {}
        # What each workload replaced now waits for (namespaces run at once).
        self.progress = ProgressParts("replacing first")

    def pods(self, namespace):
        """The Informer of the namespace's pods: listed, or taken from ``every_pod`` (api.watch.Followed) when the
        caller follows every pod, and watched from there."""
        if namespace not in self._pods:
            informer = pods_informer(self.client, namespace)
            if self.every_pod is None:
                informer.relist()
            else:
                version, objects = self.every_pod.snapshot()
                informer.start_from(version, {uid: pod for uid, pod in objects.items()
                                              if pod["metadata"].get("namespace") == namespace})
            self._pods[namespace] = informer
        return self._pods[namespace]

    def budgets(self, namespace, template_labels, mine):
        """The Budgets of the PDBs that select the workload's pods, its own pods (uids ``mine``) left out."""
        if namespace not in self._pdbs:
            self._pdbs[namespace] = [(pdb, _Selected(self.pods(namespace), (pdb.get("spec") or {}).get("selector")))
                                     for pdb in pdbs_in(self.client, namespace)]
        budgets = []
        for pdb, selected in self._pdbs[namespace]:
            if not selector_matches(selected.selector, template_labels):
                continue
            others = [pod for pod in selected() if pod["metadata"]["uid"] not in mine]
            budgets.append(Budget(pdb, len(others), sum(1 for pod in others if is_ready(pod))))
        return budgets

    def wait(self, state, replicas, deadline, until):
        """``until()`` over the namespace's pods as they change; reads the workload when it holds and every
        RECHECK_SECONDS, and raises ReplicasTaken when its replicas are no longer ``replicas`` (so that no step
        is taken from a count someone else set), TimedOut at ``deadline``."""
        while True:
            self.progress.tell(state.workload, "%s: %s" % (state.workload.label, state.describe(replicas)))
            found = state.informer.wait(lambda _objects, _change: until(),
                                        min(deadline, self.clock() + RECHECK_SECONDS))
            current = read_workload(self.client, state.workload)
            if current is None:
                raise Blocked("%s was deleted while its pods were replaced." % state.workload.label)
            if (current.get("spec") or {}).get("replicas") != replicas:
                raise ReplicasTaken("%s: spec.replicas was set to %s while this run had set it to %d, by %s; its pods "
                                    "cannot be replaced first against that." % (
                                        state.workload.label, (current.get("spec") or {}).get("replicas"), replicas,
                                        ", ".join(replicas_managers(current, MANAGER)) or "another client"))
            if found:
                return found
            if self.clock() >= deadline:
                raise TimedOut("%s: %s" % (state.workload.label, state.describe(replicas)))

    def rolled_out(self, workload, obj):
        """The Deployment once no rollout of it is under way: a surge scales one ReplicaSet, not two."""
        if rollout_status(workload.kind, obj).state is Rollout.DONE:
            return obj
        found = workload_informer(self.client, workload).wait(
            lambda objects, _change: next(
                (o for o in objects.values() if rollout_status(workload.kind, o).state is Rollout.DONE), None),
            self.deadline)
        if not found:
            raise TimedOut("%s was still rolling out when the time was up: %s; nothing of it was changed." % (
                workload.label, rollout_status(workload.kind, read_workload(self.client, workload) or obj).message))
        return found

    # StatefulSets and Recreate Deployments: one pod at a time.

    def one_at_a_time(self, progress, obj):
        workload = progress.workload
        spec = obj.get("spec") or {}
        state = _Pods(self, workload, spec)
        replicas = spec.get("replicas", 1)
        leaving = set(state.leaving_now(progress.leaving, self.run_id))
        # Each pod by its uid, as it is now: once it is gone, a new pod takes its name.
        uids = {pod_key(pod): pod["metadata"]["uid"] for pod in state.mine() if pod_key(pod) in leaving}
        for key, uid in sorted(uids.items(), reverse=True):
            while state.by_uid(uid) is not None:
                self.wait(state, replicas, self.deadline, lambda: one_may_go(replicas, state.ready(), state.budgets()))
                pod = state.by_uid(uid)
                if pod is None:
                    break
                try:
                    evict_pod(self.client, pod)
                except ConnectionFailed:
                    # Its answer was lost: asked again only if it was not applied, so that it is evicted once.
                    if found_removed(pod_now(self.client, pod)) is None:
                        self.sleep(1)
                        continue
                except ApiException as exc:
                    if exc.status == 429:  # a PDB counted differently; wait for the next change
                        self.sleep(1)
                        continue
                    if exc.status not in (404, 409):
                        raise Blocked("%s: evicting %s failed: %s" % (workload.label, key, api_message(exc)))
                self.wait(state, replicas, self.deadline, lambda: uid not in state.informer.objects
                          and state.ready() >= replicas)
                progress.replaced.append(key)
                replacement = state.pod(key)
                if replacement is not None:
                    progress.replacements.append("%s on %s" % (key, node_of(replacement)))
                break
        progress.action = "replaced"


class Surge:
    """Deployments: a surge of exactly the leaving pods and back, each step taken when the waits of a Replacing
    allow it."""

    def __init__(self, replacing):
        self.replacing = replacing
        self.client = replacing.client
        self.run_id = replacing.run_id
        self.deadline = replacing.deadline
        self.clock = replacing.clock

    def replace(self, progress, obj):
        workload = progress.workload
        record = surge_record(obj)
        if record is None:
            obj = self.replacing.rolled_out(workload, obj)
            autoscaler = next((hpa for hpa in autoscalers_in(self.client, workload.namespace)
                               if scale_target(hpa) == workload), None)
            record = {"replicas": (obj.get("spec") or {}).get("replicas", 1),
                      "hpa": hpa_record(autoscaler) if autoscaler else None}
            obj = patch_workload(self.client, workload, surge_marks(self.run_id, record["replicas"], record["hpa"]))
        progress.autoscaler = (record.get("hpa") or {}).get("name")
        progress.replicas_managers = replicas_managers(obj, MANAGER)
        spec = obj.get("spec") or {}
        state = _Pods(self.replacing, workload, spec)
        leaving = state.leaving_now(progress.leaving, self.run_id)
        for pod in state.mine():
            if pod_key(pod) in leaving and not is_leaving(pod, self.run_id):
                patch_pod(self.client, workload.namespace, pod["metadata"]["name"], leaving_patch(self.run_id))
            elif pod_key(pod) not in leaving and LEAVING_ANNOTATION in annotations_of(pod):
                # Chosen by a run that was killed, and not leaving now: it must not be the one the ReplicaSet takes.
                patch_pod(self.client, workload.namespace, pod["metadata"]["name"], UNMARKED)
        before = {pod["metadata"]["uid"] for pod in state.mine()}
        replicas = spec.get("replicas", 1)
        self.surge_and_put_back(progress, state, record, replicas, record["replicas"] + len(leaving), leaving)
        mine = state.mine()
        progress.replaced = sorted(key for key in leaving if key not in {pod_key(pod) for pod in mine})
        progress.replacements = sorted("%s on %s" % (pod_key(pod), node_of(pod)) for pod in mine
                                       if pod["metadata"]["uid"] not in before)
        stayed = sorted(set(leaving) - set(progress.replaced))
        if stayed:
            raise Blocked("%s was scaled back but the ReplicaSet kept %s (is the PodDeletionCost feature off?)" % (
                workload.label, ", ".join(stayed)))
        progress.action = "replaced"

    def surge_and_put_back(self, progress, state, record, replicas, surged, leaving):
        """From ``replicas`` up to ``surged``, back down to the recorded replicas without the ``leaving`` pods, and
        the workload put back; undone when a step times out or its replicas were taken."""
        try:
            replicas = self.scale(progress, state, record, replicas, surged, leaving)
            self.scale(progress, state, record, replicas, record["replicas"], leaving)
        except (TimedOut, ReplicasTaken):
            self.undo(progress, state, record, leaving)
            raise
        self.put_back(state.workload, record)

    def scale(self, progress, state, record, replicas, target, leaving, deadline=None):
        """Step the replicas from ``replicas`` to ``target``, each step within the PDBs and once the pods of the
        last one are Ready (up) or gone (down); returns ``target``."""
        deadline = deadline or self.deadline
        while replicas != target:
            if replicas < target:
                self.replacing.wait(state, replicas, deadline, lambda: state.replacements_ready(replicas, leaving))
                step = surge_step(replicas, state.ready(), target - replicas, state.budgets())
                replicas += step
            else:
                found = self.replacing.wait(state, replicas, deadline, lambda: state.removed(replicas) and
                                            scale_back_step(replicas, target, state.ready(), state.budgets()))
                replicas -= found
            self.set_replicas(state.workload, record, replicas)
            progress.replicas_steps.append(replicas)
        if target > record["replicas"]:
            self.replacing.wait(state, replicas, deadline, lambda: state.replacements_ready(replicas, leaving))
        else:
            self.replacing.wait(state, replicas, deadline, lambda: state.removed(replicas))
        return replicas

    def set_replicas(self, workload, record, replicas):
        """The HPA's bounds first (pinned to the step), so that it does not take the step back; then the workload."""
        if record.get("hpa"):
            patch_autoscaler(self.client, workload.namespace, record["hpa"]["name"],
                             hpa_bounds(record["hpa"], replicas))
        patch_workload(self.client, workload, {"spec": {"replicas": replicas}})

    def put_back(self, workload, record):
        """The HPA's own bounds, and the workload at its recorded replicas without the surge's marks."""
        if record.get("hpa"):
            patch_autoscaler(self.client, workload.namespace, record["hpa"]["name"], hpa_restored(record["hpa"]))
        body = surge_marks_removed()
        body["spec"] = {"replicas": record["replicas"]}
        patch_workload(self.client, workload, body)

    def undo(self, progress, state, record, leaving):
        """After a failure: the leaving pods unmarked, so that the scale-back takes the replacements, and the
        replicas back where they were, within the PDBs, for at most UNDO_SECONDS; what is not undone by then is
        left recorded on the workload for the next run."""
        for pod in state.mine():
            if pod_key(pod) in leaving:
                patch_pod(self.client, state.workload.namespace, pod["metadata"]["name"], UNMARKED)
        current = read_workload(self.client, state.workload)
        if current is None:
            return
        replicas = (current.get("spec") or {}).get("replicas", record["replicas"])
        try:
            if replicas > record["replicas"]:
                self.scale(progress, state, record, replicas, record["replicas"], (),
                           deadline=self.clock() + UNDO_SECONDS)
            self.put_back(state.workload, record)
            progress.detail = "the surge was undone"
        except (TimedOut, ReplicasTaken) as exc:
            progress.detail = "the surge could not be undone (%s); the next run of the rotation finishes it" % exc

    def finish_left_over(self, obj):
        """A surge a killed run left, finished: up to its recorded replicas plus its leaving pods, then back to its
        recorded replicas without them, marks removed."""
        workload = Workload("Deployment", obj["metadata"]["namespace"], obj["metadata"]["name"])
        progress = WorkloadReplacement(workload, action="finished")
        record = surge_record(obj)
        if record is None:
            patch_workload(self.client, workload, surge_marks_removed())
            return progress
        spec = obj.get("spec") or {}
        state = _Pods(self.replacing, workload, spec)
        leaving = [pod_key(pod) for pod in state.mine() if LEAVING_ANNOTATION in annotations_of(pod)]
        replicas = spec.get("replicas", 1)
        # Finished, not undone: its replacements stay and its leaving pods (on the nodes it was rotating) go, so
        # that no pod it made goes again.
        self.surge_and_put_back(progress, state, record, replicas,
                                max(replicas, record["replicas"] + len(leaving)), leaving)
        progress.replaced = sorted(set(leaving) - {pod_key(pod) for pod in state.mine()})
        return progress


class _Selected:
    """The pods of an Informer that a selector selects, those ended or ending left out. Followed event by event, and
    worked out again from all pods only after a list: each test of a wait asks for them several times, and a
    namespace may hold thousands of pods."""

    def __init__(self, informer, selector):
        self.informer = informer
        self.selector = selector
        self.index = index_label(selector)
        self.selected = {}
        self.pods = ()
        self.seen = None

    def __call__(self):
        changes = self.informer.changes
        if self.seen != changes:
            last = self.informer.last_change
            if last is not None and self.seen == changes - 1:
                uid, pod = last
                if pod is not None and self.wanted(pod):
                    self.selected[uid] = pod
                else:
                    self.selected.pop(uid, None)
            else:
                self.selected = {uid: pod for uid, pod in self.informer.objects.items() if self.wanted(pod)}
            self.pods = tuple(self.selected.values())
            self.seen = changes
        return self.pods

    def wanted(self, pod):
        """One label of the selector looked at first: it turns away at once the many pods of other workloads."""
        labels = pod["metadata"].get("labels") or {}
        return (self.index is None or labels.get(self.index[0]) == self.index[1]) and \
            selector_matches(self.selector, labels) and not is_terminal(pod) and not is_terminating(pod)


class _Pods:
    """One workload's pods as the namespace's Informer sees them."""

    def __init__(self, replacing, workload, spec):
        self.replacing = replacing
        self.workload = workload
        self.template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        self.informer = replacing.pods(workload.namespace)
        self._mine = _Selected(self.informer, spec.get("selector"))

    def mine(self):
        return self._mine()

    def pod(self, key):
        return next((pod for pod in self.mine() if pod_key(pod) == key), None)

    def by_uid(self, uid):
        return next((pod for pod in self.mine() if pod["metadata"]["uid"] == uid), None)

    def leaving_now(self, asked, run_id):
        """The asked pods still here, and those a killed run of ``run_id`` marked that still are."""
        return sorted(pod_key(pod) for pod in self.mine() if pod_key(pod) in asked or is_leaving(pod, run_id))

    def ready(self):
        return sum(1 for pod in self.mine() if is_ready(pod))

    def budgets(self):
        return self.replacing.budgets(self.workload.namespace, self.template_labels,
                                      {pod["metadata"]["uid"] for pod in self.mine()})

    def replacements_ready(self, replicas, leaving):
        """Every pod that stays is Ready: the replacements of the steps so far are."""
        mine = self.mine()
        staying = [pod for pod in mine if pod_key(pod) not in leaving]
        return len(staying) >= replicas - (len(mine) - len(staying)) and all(is_ready(pod) for pod in staying)

    def removed(self, replicas):
        return len(self.mine()) <= replicas

    def describe(self, replicas):
        mine = self.mine()
        not_ready = [pod for pod in mine if not is_ready(pod) and not pod["metadata"].get("deletionTimestamp")]
        return "%d of %d pods Ready at %d replicas%s" % (
            self.ready(), len(mine), replicas, "; %s" % not_ready_text(not_ready) if not_ready else "")


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
    run left. With ``every_pod`` (api.watch.Followed), every pod is read from it, not listed; with
    ``held_steering`` (engine.steering.HeldSteering), the steering stays on for the step after. Raises TimedOut
    or Blocked carrying the result."""
    started = clock()
    replacing = Replacing(client, settings.run_id, started + settings.timeout, clock, every_pod=every_pod)
    asked = set(settings.pods)
    pods = []
    for namespace in sorted({key.split("/", 1)[0] for key in asked}):
        pods.extend(replacing.pods(namespace).objects.values())
    present = [pod for pod in pods if not is_terminating(pod)]
    if settings.avoid_nodes:
        # A StatefulSet's pod keeps its name when it is replaced: an asked name whose pod no longer runs on the nodes
        # being left is a replacement already (a killed run's, say), not a pod to move again.
        avoid = set(settings.avoid_nodes)
        present = [pod for pod in present if pod_key(pod) not in asked or node_of(pod) in avoid]
    groups, gone = _workloads_of(client, present, asked)
    progresses = []
    for workload, keys in sorted(groups.items()):
        obj = read_workload(client, workload)
        progress = WorkloadReplacement(workload, keys, replacement_method(workload.kind, (obj or {}).get("spec")))
        progresses.append((progress, obj))
    left_over = [obj for obj in surging_deployments(client)
                 if Workload("Deployment", obj["metadata"]["namespace"], obj["metadata"]["name"]) not in groups]
    finished = []
    errors = []
    if not check_mode:
        leaving = [key for progress, _obj in progresses for key in progress.leaving]
        nodes = sorted({node_of(pod) for pod in pods if pod_key(pod) in asked and node_of(pod)})
        request = smallest_request(pod_requests((obj.get("spec") or {}).get("template") or {})
                                   for _progress, obj in progresses if obj)
        surge = Surge(replacing)
        finished = [surge.finish_left_over(obj) for obj in left_over]
        with steering_while_moving(client, settings.avoid_nodes if progresses else (),
                                   nodes if settings.keep_zones else (), request, leaving,
                                   total_requests(pod for pod in pods if pod_key(pod) in asked),
                                   every_pod=every_pod, held=held_steering) as steered:
            errors = _run_by_namespace(replacing, surge, progresses, settings.max_concurrent, clock)
    else:
        steered = []
        for progress, obj in progresses:
            progress.detail = "would be replaced, replacement first (%s)" % progress.method.replace("_", " ")
        finished = [WorkloadReplacement(Workload("Deployment", obj["metadata"]["namespace"], obj["metadata"]["name"]),
                                        action="planned", detail="a surge a killed run left; it would be finished")
                    for obj in left_over]
    entries = [progress.result() for progress, _obj in progresses]
    nodes_of = {pod_key(pod): node_of(pod) for pod in present}
    leaving = [key for entry in entries for key in (entry["leaving"] if check_mode else entry["replaced"])]
    result = {
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
        "elapsed_seconds": round(clock() - started, 2),
        "warnings": ["%s: its replicas are synced by %s; if that sets them back during the surge, the surge stops "
                     "and is undone" % (progress.workload.label, ", ".join(gitops_managers(obj, MANAGER)))
                     for progress, obj in progresses
                     if obj and progress.method == SURGE and gitops_managers(obj, MANAGER)],
    }
    if errors:
        error = errors[0]
        raise type(error)("%s %d of %d workloads replaced their pods; a rerun replaces the rest." % (
            "; ".join(str(e) for e in errors), sum(1 for entry in entries if entry["action"] == "replaced"),
            len(entries)), result)
    return result


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
                    replacing.one_at_a_time(progress, obj)
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
