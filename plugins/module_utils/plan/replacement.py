# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Replacement first, decided without a cluster: how the pods that leave a node get their replacements Ready
before they go, and by how many pods each step may change a workload without taking it below a
PodDisruptionBudget.

A Deployment surges exactly the leaving pods: its replicas go up by their number (in steps no PDB would call
a disruption), the replacements become Ready, then the replicas come back down (in steps each PDB allows)
and the ReplicaSet removes the leaving pods, which ``controller.kubernetes.io/pod-deletion-cost`` makes it
choose. A StatefulSet cannot surge, nor may a Deployment whose strategy is Recreate: one pod at a time, when
every pod is Ready and the PDBs allow one disruption. Pure.
"""

from __future__ import annotations

import json
from collections import namedtuple
from dataclasses import dataclass

from ansible_collections.kubeops.rotation.plugins.module_utils.model.keys import (
    DELETION_COST,
    LEAVING_ANNOTATION,
    MANAGER,
    SURGE_ANNOTATION,
    SURGE_LABEL,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.model.owners import Workload
from ansible_collections.kubeops.rotation.plugins.module_utils.model.pods import annotation_json, annotations_of
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.limits import scaled_count

SURGE = "surge"
ONE_AT_A_TIME = "one_at_a_time"
# The lowest pod-deletion-cost there is: a leaving pod goes before any pod a user ranked.
LEAVING_COST = str(-(2 ** 31))


@dataclass(frozen=True)
class Budget:
    """A PDB as one workload's steps see it: the pods it selects outside the workload count as they are now."""

    pdb: dict
    others_expected: int = 0
    others_ready: int = 0

    @property
    def name(self):
        return "%s/%s" % (self.pdb["metadata"]["namespace"], self.pdb["metadata"]["name"])


def desired_healthy(pdb, expected):
    """How many pods the PDB wants Ready when ``expected`` pods are expected (its desiredHealthy; percents round up,
    as the disruption controller does)."""
    spec = pdb.get("spec") or {}
    if spec.get("maxUnavailable") is not None:
        return max(0, expected - scaled_count(spec["maxUnavailable"], expected, round_up=True))
    if spec.get("minAvailable") is not None:
        return scaled_count(spec["minAvailable"], expected, round_up=True)
    return 0


def _within(budgets, replicas, ready):
    return all(budget.others_ready + ready >= desired_healthy(budget.pdb, budget.others_expected + replicas)
               for budget in budgets)


def surge_step(replicas, ready, left, budgets):
    """How many replicas to add now, of the ``left`` still to add: the most for which every PDB's desiredHealthy
    stays within the pods Ready now (a PDB counts a replica not yet Ready as unavailable), at least 1."""
    for step in range(left, 0, -1):
        if _within(budgets, replicas + step, ready):
            return step
    return min(1, left)


def scale_back_step(replicas, target, ready, budgets):
    """How many replicas to take away now, down to ``target``; 0 to wait. The ReplicaSet removes the pods not
    Ready first, then the leaving ones: the step keeps the Ready pods at or above every PDB's desiredHealthy,
    both for the new count and for the count its status still shows until it catches up."""
    not_ready = max(0, replicas - ready)
    for step in range(replicas - target, 0, -1):
        ready_after = ready - max(0, step - not_ready)
        if all(budget.others_ready + ready_after >= max(
                desired_healthy(budget.pdb, budget.others_expected + replicas - step),
                _while_status_lags(budget, replicas, ready)) for budget in budgets):
            return step
    return 0


def _while_status_lags(budget, replicas, ready):
    """The Ready pods a PDB's status asks for until it counts the step: its desiredHealthy at the count before.
    Nothing for a PDB that allows no disruption at any count (maxUnavailable 0, minAvailable 100%): its status
    asks for every pod, which no step down keeps, and a scale back to the workload's own replicas is no
    disruption of it."""
    expected = budget.others_expected + replicas
    before = desired_healthy(budget.pdb, expected)
    if before >= expected:
        return 0
    return min(budget.others_ready + ready, before)


def one_may_go(replicas, ready, budgets):
    """Whether a workload that cannot surge may lose one pod now: every pod Ready, every PDB allowing one."""
    return ready >= replicas and _within(budgets, replicas, ready - 1)


def never_allows_one(pdb):
    """Whether the PDB, with every pod it expects Ready, still allows no disruption (as its status counts)."""
    expected = (pdb.get("status") or {}).get("expectedPods")
    return expected is not None and expected > 0 and desired_healthy(pdb, expected) > expected - 1


def replacement_method(kind, obj_spec):
    """SURGE for a Deployment that rolls, ONE_AT_A_TIME for a StatefulSet or a Deployment whose strategy is
    Recreate (its owner asked for no two pods at once)."""
    if kind == "Deployment" and ((obj_spec or {}).get("strategy") or {}).get("type", "RollingUpdate") != "Recreate":
        return SURGE
    return ONE_AT_A_TIME


def surge_record(obj):
    """What a surge changed on the workload, from its annotation: {"run_id", "replicas", "hpa"}; None without."""
    record = annotation_json(obj, SURGE_ANNOTATION)
    return record if record and isinstance(record.get("replicas"), int) else None


def surge_marks(run_id, replicas, hpa=None):
    """The merge patch that records a surge on the workload before anything of it changes."""
    record = {"run_id": run_id, "replicas": replicas, "hpa": hpa}
    return {"metadata": {"labels": {SURGE_LABEL: "true"},
                         "annotations": {SURGE_ANNOTATION: json.dumps(record, sort_keys=True)}}}


def surge_marks_removed():
    return {"metadata": {"labels": {SURGE_LABEL: None}, "annotations": {SURGE_ANNOTATION: None}}}


def hpa_record(hpa):
    """The bounds of an HorizontalPodAutoscaler that a surge raises, to put back afterwards."""
    spec = hpa.get("spec") or {}
    return {"name": hpa["metadata"]["name"], "minReplicas": spec.get("minReplicas", 1),
            "maxReplicas": spec.get("maxReplicas")}


def hpa_bounds(record, replicas):
    """The HPA's spec bounds while the workload surges at ``replicas``: pinned there, so that the HPA neither takes
    the surge back (it enforces its bounds without metrics) nor scales beside it, and the annotation that says what
    they were."""
    return {"spec": {"minReplicas": replicas, "maxReplicas": replicas},
            "metadata": {"annotations": {SURGE_ANNOTATION: json.dumps(
                {"minReplicas": record["minReplicas"], "maxReplicas": record["maxReplicas"]}, sort_keys=True)}}}


def hpa_restored(record):
    """The HPA's own bounds again, and no annotation."""
    return {"spec": {"minReplicas": record["minReplicas"], "maxReplicas": record["maxReplicas"]},
            "metadata": {"annotations": {SURGE_ANNOTATION: None}}}


def leaving_patch(run_id):
    return {"metadata": {"annotations": {DELETION_COST: LEAVING_COST, LEAVING_ANNOTATION: run_id}}}


def is_leaving(pod, run_id):
    annotations = annotations_of(pod)
    return annotations.get(LEAVING_ANNOTATION) == run_id and annotations.get(DELETION_COST) == LEAVING_COST


def scale_target(hpa):
    """The Deployment or StatefulSet (a Workload) an HorizontalPodAutoscaler scales, or None."""
    target = (hpa.get("spec") or {}).get("scaleTargetRef") or {}
    if target.get("kind") not in ("Deployment", "StatefulSet") or not target.get("name"):
        return None
    return Workload(target["kind"], hpa["metadata"]["namespace"], target["name"])


def replicas_managers(obj, ours):
    """The field managers other than ``ours`` that own the workload's spec.replicas (managedFields): who would set
    it back."""
    found = set()
    for entry in (obj.get("metadata") or {}).get("managedFields") or []:
        fields = (entry.get("fieldsV1") or {}).get("f:spec") or {}
        if "f:replicas" in fields and entry.get("manager") and entry["manager"] != ours:
            found.add(entry["manager"])
    return sorted(found)


# Field managers of GitOps controllers, which set a workload's replicas back to what their source says.
GITOPS_MANAGERS = ("argocd", "kustomize-controller", "helm-controller", "flux", "fleet-agent")


def gitops_managers(obj, ours):
    """The field managers of ``obj``'s spec.replicas that are GitOps controllers (GITOPS_MANAGERS)."""
    return [manager for manager in replicas_managers(obj, ours)
            if any(known in manager.lower() for known in GITOPS_MANAGERS)]


WorkloadFacts = namedtuple("WorkloadFacts", "replicas one_at_a_time autoscalers gitops")


def workload_facts(deployments, stateful_sets, hpas, ours=MANAGER):
    """What the plan needs to know of the workloads, from the Deployments, StatefulSets and HPAs as listed:
    ``replicas`` per Workload, those replaced ``one_at_a_time``, ``autoscalers`` (scale target -> HPA name) and
    ``gitops`` (Workload -> the managers other than ``ours`` that own its replicas). Pure."""
    replicas, one_at_a_time, gitops = {}, set(), {}
    for kind, objects in (("Deployment", deployments), ("StatefulSet", stateful_sets)):
        for obj in objects:
            workload = Workload(kind, obj["metadata"]["namespace"], obj["metadata"]["name"])
            replicas[workload] = obj["spec"].get("replicas", 1)
            if replacement_method(kind, obj["spec"]) == ONE_AT_A_TIME:
                one_at_a_time.add(workload)
            syncing = gitops_managers(obj, ours)
            if syncing:
                gitops[workload] = syncing
    autoscalers = {scale_target(hpa): hpa["metadata"]["name"] for hpa in hpas if scale_target(hpa)}
    return WorkloadFacts(replicas, frozenset(one_at_a_time), autoscalers, gitops)
