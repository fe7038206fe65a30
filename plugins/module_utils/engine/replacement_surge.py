# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Replacement first for a Deployment: a surge of exactly its leaving pods and back, recorded on the Deployment
first (model.keys.SURGE_ANNOTATION) so that the next run finishes it after a kill."""

from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.module_utils.api.workloads import (
    autoscalers_in,
    patch_autoscaler,
    patch_pod,
    patch_workload,
    read_workload,
    workload_informer,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.replacement_pods import (
    ReplicasTaken,
    WorkloadPods,
    WorkloadReplacement,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.model.errors import Blocked, TimedOut
from ansible_collections.kubeops.rotation.plugins.module_utils.model.keys import (
    DELETION_COST,
    LEAVING_ANNOTATION,
    MANAGER,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.model.owners import Workload
from ansible_collections.kubeops.rotation.plugins.module_utils.model.pods import annotations_of, node_of, pod_key
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.replacement import (
    hpa_bounds,
    hpa_record,
    hpa_restored,
    is_leaving,
    leaving_patch,
    replicas_managers,
    scale_back_step,
    scale_target,
    surge_marks,
    surge_marks_removed,
    surge_record,
    surge_step,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.restart import Rollout, rollout_status

# After a failure, how long putting a surge back may take before it is left to the next run.
UNDO_SECONDS = 60.0
# The marks that make a pod the one the ReplicaSet removes, taken off.
UNMARKED = {"metadata": {"annotations": {DELETION_COST: None, LEAVING_ANNOTATION: None}}}


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
        """Replace the Deployment's leaving pods: record it, mark them, surge by their number and scale back, so
        that the ReplicaSet removes the marked pods; Blocked when it kept one."""
        workload = progress.workload
        record = surge_record(obj)
        if record is None:
            obj = self.rolled_out(workload, obj)
            autoscaler = next((hpa for hpa in autoscalers_in(self.client, workload.namespace)
                               if scale_target(hpa) == workload), None)
            record = {"replicas": (obj.get("spec") or {}).get("replicas", 1),
                      "hpa": hpa_record(autoscaler) if autoscaler else None}
            obj = patch_workload(self.client, workload, surge_marks(self.run_id, record["replicas"], record["hpa"]))
        progress.autoscaler = (record.get("hpa") or {}).get("name")
        progress.replicas_managers = replicas_managers(obj, MANAGER)
        spec = obj.get("spec") or {}
        state = WorkloadPods(self.replacing, workload, spec)
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
        state = WorkloadPods(self.replacing, workload, spec)
        leaving = [pod_key(pod) for pod in state.mine() if LEAVING_ANNOTATION in annotations_of(pod)]
        replicas = spec.get("replicas", 1)
        # Finished, not undone: its replacements stay and its leaving pods (on the nodes it was rotating) go, so
        # that no pod it made goes again.
        self.surge_and_put_back(progress, state, record, replicas,
                                max(replicas, record["replicas"] + len(leaving)), leaving)
        progress.replaced = sorted(set(leaving) - {pod_key(pod) for pod in state.mine()})
        return progress
