# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Rollout restart decided without a cluster: whether to restart under a restart id, the patch, and
rollout status the way ``kubectl rollout status`` decides it."""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass

from ansible_collections.kubeops.rotation.plugins.module_utils.model.keys import (
    RESTART_ID,
    RESTART_STRATEGY,
    RESTARTED_AT,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.model.owners import RESTARTABLE_KINDS, owner_of
from ansible_collections.kubeops.rotation.plugins.module_utils.model.pods import annotation_json, node_of
from ansible_collections.kubeops.rotation.plugins.module_utils.model.selectors import selector_matches
from ansible_collections.kubeops.rotation.plugins.module_utils.model.times import parse_time
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.limits import scaled_count
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.replacement import desired_healthy


class Rollout(str, enum.Enum):
    """How a rollout stands; the value is what results show."""

    DONE = "done"
    PROGRESSING = "progressing"
    # Waiting would not help: reported, not waited on.
    STUCK = "stuck"
    TIMEOUT = "timeout"

    def __str__(self):
        return self.value


@dataclass(frozen=True)
class Status:
    state: Rollout
    message: str


def _condition(obj, condition_type):
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition.get("type") == condition_type:
            return condition
    return {}


def rollout_status(kind, obj):
    """Whether a Deployment, StatefulSet or DaemonSet has finished rolling out, by kubectl's rules."""
    metadata = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    name = "%s %s/%s" % (kind, metadata.get("namespace"), metadata.get("name"))
    observed = metadata.get("generation", 0) <= status.get("observedGeneration", 0)
    if kind == "Deployment":
        if spec.get("paused"):
            return Status(Rollout.STUCK, "%s is paused; resume it to let the rollout go on" % name)
        if not observed:
            return Status(Rollout.PROGRESSING, "waiting for %s spec update to be observed" % name)
        progressing = _condition(obj, "Progressing")
        if progressing.get("reason") == "ProgressDeadlineExceeded":
            return Status(Rollout.STUCK, "%s exceeded its progress deadline: %s" % (name, progressing.get("message")))
        replicas = spec.get("replicas", 1)
        updated = status.get("updatedReplicas", 0)
        if updated < replicas:
            return Status(Rollout.PROGRESSING, "%s: %d out of %d new replicas have been updated" % (name, updated, replicas))
        if status.get("replicas", 0) > updated:
            return Status(Rollout.PROGRESSING, "%s: %d old replicas are pending termination" % (
                name, status.get("replicas", 0) - updated))
        if status.get("availableReplicas", 0) < updated:
            return Status(Rollout.PROGRESSING, "%s: %d of %d updated replicas are available" % (
                name, status.get("availableReplicas", 0), updated))
        return Status(Rollout.DONE, "%s successfully rolled out" % name)
    strategy = (spec.get("updateStrategy") or {}).get("type", "RollingUpdate")
    if strategy != "RollingUpdate":
        return Status(Rollout.STUCK, "%s has updateStrategy %s: its pods change only when deleted" % (name, strategy))
    if kind == "StatefulSet":
        if not status.get("observedGeneration") or not observed:
            return Status(Rollout.PROGRESSING, "waiting for %s spec update to be observed" % name)
        replicas = spec.get("replicas", 1)
        if status.get("readyReplicas", 0) < replicas:
            return Status(Rollout.PROGRESSING, "%s: waiting for %d pods to be ready" % (
                name, replicas - status.get("readyReplicas", 0)))
        partition = ((spec.get("updateStrategy") or {}).get("rollingUpdate") or {}).get("partition") or 0
        if partition:
            if status.get("updatedReplicas", 0) < replicas - partition:
                return Status(Rollout.PROGRESSING, "%s: waiting for partitioned roll out to finish: %d out of %d new pods "
                              "have been updated" % (name, status.get("updatedReplicas", 0), replicas - partition))
            return Status(Rollout.DONE, "%s: partitioned roll out complete" % name)
        if status.get("updateRevision") != status.get("currentRevision"):
            return Status(Rollout.PROGRESSING, "%s: waiting for rolling update to complete %d pods at revision %s" % (
                name, status.get("updatedReplicas", 0), status.get("updateRevision")))
        return Status(Rollout.DONE, "%s rolling update complete" % name)
    if not observed:
        return Status(Rollout.PROGRESSING, "waiting for %s spec update to be observed" % name)
    desired = status.get("desiredNumberScheduled", 0)
    if status.get("updatedNumberScheduled", 0) < desired:
        return Status(Rollout.PROGRESSING, "%s: %d out of %d new pods have been updated" % (
            name, status.get("updatedNumberScheduled", 0), desired))
    if status.get("numberAvailable", 0) < desired:
        return Status(Rollout.PROGRESSING, "%s: %d of %d updated pods are available" % (
            name, status.get("numberAvailable", 0), desired))
    return Status(Rollout.DONE, "%s successfully rolled out" % name)


def restart_plan(obj, restart_id=None, restarted_after=None):
    """(restart?, reason): a workload already restarted under ``restart_id``, or since ``restarted_after``
    (RFC 3339), is not restarted again, so that a rerun of a rotation never restarts a workload twice."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    template_annotations = (((obj.get("spec") or {}).get("template") or {}).get("metadata") or {}).get(
        "annotations") or {}
    if restart_id and annotations.get(RESTART_ID) == restart_id:
        return False, "already restarted under restart_id %s at %s" % (restart_id, template_annotations.get(
            RESTARTED_AT))
    restarted_at = template_annotations.get(RESTARTED_AT)
    if restarted_after and restarted_at and parse_time(restarted_at) >= parse_time(restarted_after):
        return False, "already restarted at %s, after %s" % (restarted_at, restarted_after)
    return True, "restarted"


def restarted_at(obj):
    """The time of the workload's last ``kubectl rollout restart`` (its pod template's annotation), or None."""
    return ((((obj or {}).get("spec") or {}).get("template") or {}).get("metadata") or {}).get(
        "annotations", {}).get(RESTARTED_AT)


def restart_patch(now, restart_id=None):
    """The strategic merge patch of ``kubectl rollout restart``, plus our restart id on the workload."""
    patch = {"spec": {"template": {"metadata": {"annotations": {RESTARTED_AT: now}}}}}
    if restart_id:
        patch["metadata"] = {"annotations": {RESTART_ID: restart_id}}
    return patch


def owners_on_nodes(pods, replica_set_owners, include_daemonsets=False):
    """The Workloads owning ``pods`` that a rollout restart can move, each with its pods
    ("namespace/name on node"). ``replica_set_owners`` maps (namespace, ReplicaSet name) to its
    Deployment; a ReplicaSet of its own is left out."""
    owners = {}
    for pod in pods:
        owner = owner_of(pod, replica_set_owners)
        if not owner or owner.kind not in RESTARTABLE_KINDS or (owner.kind == "DaemonSet" and not include_daemonsets):
            continue
        owners.setdefault(owner, []).append(
            "%s/%s on %s" % (owner.namespace, pod["metadata"]["name"], node_of(pod)))
    return owners


def paced_strategy(obj, pdbs):
    """(patch, original): the rolling update a restart of the Deployment ``obj`` keeps to so that it takes no PDB
    that selects its pods (``pdbs``, API JSON) below its desiredHealthy: maxUnavailable cut to what they allow with
    every pod Ready, and maxSurge at least 1 when that is 0. ``original`` is the rollingUpdate to put back, and the
    patch records it on the Deployment (RESTART_STRATEGY) while it lasts. (None, None) when the strategy keeps to
    them already, or is not a rolling update."""
    spec = obj.get("spec") or {}
    strategy = spec.get("strategy") or {}
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        return None, None
    replicas = spec.get("replicas", 1)
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    allowed = [replicas - desired_healthy(pdb, replicas) for pdb in pdbs
               if selector_matches((pdb.get("spec") or {}).get("selector"), labels)]
    rolling = strategy.get("rollingUpdate") or {}
    unavailable = scaled_count(rolling.get("maxUnavailable", "25%"), replicas, round_up=False)
    if not allowed or unavailable <= max(0, min(allowed)):
        return None, None
    paced = {"maxUnavailable": max(0, min(allowed)), "maxSurge": rolling.get("maxSurge", "25%")}
    if paced["maxUnavailable"] == 0 and scaled_count(paced["maxSurge"], replicas, round_up=True) < 1:
        paced["maxSurge"] = 1
    original = {"maxUnavailable": rolling.get("maxUnavailable"), "maxSurge": rolling.get("maxSurge")}
    return {"spec": {"strategy": {"rollingUpdate": paced}},
            "metadata": {"annotations": {RESTART_STRATEGY: json.dumps(original, sort_keys=True)}}}, original


def strategy_put_back(obj):
    """The patch that puts back the rolling update a paced restart recorded on ``obj``; None when none is."""
    original = annotation_json(obj, RESTART_STRATEGY)
    if original is None:
        return None
    return {"spec": {"strategy": {"rollingUpdate": {"maxUnavailable": original.get("maxUnavailable"),
                                                    "maxSurge": original.get("maxSurge")}}},
            "metadata": {"annotations": {RESTART_STRATEGY: None}}}
