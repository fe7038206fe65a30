"""Replacement first without a cluster: what a PDB wants Ready, by how many pods each step may change a
workload, whether a workload that cannot surge may lose a pod, and the records a surge leaves behind."""

from __future__ import annotations

import json

import pytest

from ansible_collections.kubeops.rotation.plugins.module_utils.model.keys import SURGE_ANNOTATION, SURGE_LABEL
from ansible_collections.kubeops.rotation.plugins.module_utils.model.owners import Workload
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.replacement import (
    ONE_AT_A_TIME,
    SURGE,
    Budget,
    desired_healthy,
    gitops_managers,
    hpa_bounds,
    hpa_record,
    hpa_restored,
    is_leaving,
    leaving_patch,
    never_allows_one,
    one_may_go,
    replacement_method,
    replicas_managers,
    scale_back_step,
    scale_target,
    surge_marks,
    surge_marks_removed,
    surge_record,
    workload_facts,
    surge_step,
)
from builders import pdb


def budget(**spec):
    return Budget(pdb("web", **spec))


@pytest.mark.parametrize("spec, expected, healthy", [
    ({"min_available": 2}, 5, 2),
    ({"min_available": "50%"}, 5, 3),
    ({"min_available": "10%"}, 12, 2),
    ({"min_available": "50%"}, 4, 2),
    ({"max_unavailable": 1}, 5, 4),
    ({"max_unavailable": "25%"}, 5, 3),
    ({"max_unavailable": "50%"}, 4, 2),
    ({"max_unavailable": 3}, 2, 0),
    ({}, 5, 0),
])
def test_desired_healthy_scales_percents_rounding_up_as_the_disruption_controller_does(spec, expected, healthy):
    assert desired_healthy(pdb("web", **spec), expected) == healthy


def test_a_budget_counts_the_pods_its_pdb_selects_outside_the_workload():
    shared = Budget(pdb("web", max_unavailable=1), others_expected=2, others_ready=2)
    assert shared.name == "ns/web"
    assert surge_step(3, 3, 2, [shared]) == 1
    assert one_may_go(3, 3, [shared]) and not one_may_go(3, 3, [Budget(pdb("web", min_available=5), 2, 2)])


def test_a_surge_under_max_unavailable_1_adds_one_replica_at_a_time():
    assert surge_step(12, 12, 3, [budget(max_unavailable=1)]) == 1
    assert surge_step(13, 13, 2, [budget(max_unavailable=1)]) == 1


def test_a_surge_under_min_available_adds_every_replica_the_ready_pods_cover():
    assert surge_step(12, 12, 3, [budget(min_available=11)]) == 3
    assert surge_step(12, 12, 3, [budget(min_available="90%")]) == 1, "90% of 13 is 12, of 14 already 13"


def test_a_surge_without_pdb_adds_all_at_once_and_always_at_least_one():
    assert surge_step(12, 12, 3, []) == 3
    assert surge_step(12, 10, 3, [budget(max_unavailable=1)]) == 1, "already below its PDB: one, not none"
    assert surge_step(12, 12, 0, []) == 0


def test_scale_back_under_max_unavailable_1_removes_one_replica_at_a_time():
    assert scale_back_step(15, 12, 15, [budget(max_unavailable=1)]) == 1
    assert scale_back_step(15, 12, 15, []) == 3


def test_scale_back_of_a_single_replica_under_min_available_1_steps_once_both_pods_are_ready():
    assert scale_back_step(2, 1, 2, [budget(min_available=1)]) == 1


def test_scale_back_waits_while_the_ready_pods_are_at_the_pdb_minimum():
    assert scale_back_step(3, 2, 3, [budget(min_available=3)]) == 0
    assert scale_back_step(13, 12, 12, [budget(max_unavailable=1)]) == 1, "the one not Ready goes first"
    assert scale_back_step(13, 12, 11, [budget(max_unavailable=1)]) == 1
    assert scale_back_step(14, 12, 12, [budget(max_unavailable=0)]) == 2
    assert scale_back_step(12, 12, 12, []) == 0


def test_a_surge_under_a_pdb_that_allows_no_disruption_scales_back_once_its_replacements_are_ready():
    # the status asks for every pod until it counts the step: the step is the workload's own count again
    assert scale_back_step(3, 2, 3, [budget(max_unavailable=0)]) == 1
    assert scale_back_step(3, 2, 2, [budget(max_unavailable=0)]) == 1, "the one not Ready goes"
    assert scale_back_step(3, 2, 3, [budget(min_available="100%")]) == 1


def test_scale_back_removes_not_ready_replicas_first_without_counting_them_against_the_pdb():
    assert scale_back_step(15, 12, 12, [budget(max_unavailable=1)]) == 3
    assert scale_back_step(15, 12, 13, [budget(max_unavailable=1)]) == 2


def test_a_workload_that_cannot_surge_loses_one_pod_only_with_every_pod_ready_and_each_pdb_allowing_one():
    assert one_may_go(3, 3, [budget(max_unavailable=1)])
    assert not one_may_go(3, 2, [budget(max_unavailable=1)])
    assert not one_may_go(3, 3, [budget(min_available=3)])
    assert one_may_go(1, 1, [])
    assert not one_may_go(1, 0, [])


def test_a_pdb_never_allows_one_when_even_all_its_expected_pods_ready_leave_no_disruption():
    assert never_allows_one(pdb("db", min_available=1, expected=1))
    assert never_allows_one(pdb("db", min_available="100%", expected=3))
    assert never_allows_one(pdb("db", max_unavailable=0, expected=3))
    assert not never_allows_one(pdb("db", max_unavailable=1, expected=1))
    assert not never_allows_one(pdb("db", min_available=2, expected=3))
    assert not never_allows_one(pdb("db", min_available=1)), "without expectedPods it cannot say"
    assert not never_allows_one(pdb("db", min_available=1, expected=0))


def test_deployments_surge_unless_recreate_and_statefulsets_go_one_at_a_time():
    assert replacement_method("Deployment", {"strategy": {"type": "Recreate"}}) == ONE_AT_A_TIME
    assert replacement_method("StatefulSet", {"updateStrategy": {"type": "RollingUpdate"}}) == ONE_AT_A_TIME
    assert replacement_method("Deployment", {"strategy": {"type": "RollingUpdate"}}) == SURGE
    assert replacement_method("Deployment", {}) == SURGE
    assert replacement_method("Deployment", None) == SURGE


def test_a_surge_record_reads_back_what_the_marks_wrote():
    hpa = {"name": "web", "minReplicas": 2, "maxReplicas": 5}
    marks = surge_marks("r1", 3, hpa)
    assert marks["metadata"]["labels"] == {SURGE_LABEL: "true"}
    assert surge_record(marks) == {"run_id": "r1", "replicas": 3, "hpa": hpa}
    assert surge_record(surge_marks("r1", 3)) == {"run_id": "r1", "replicas": 3, "hpa": None}
    assert surge_marks_removed() == {"metadata": {"labels": {SURGE_LABEL: None},
                                                  "annotations": {SURGE_ANNOTATION: None}}}


@pytest.mark.parametrize("annotations", [{}, {SURGE_ANNOTATION: ""}, {SURGE_ANNOTATION: "{not json"},
                                         {SURGE_ANNOTATION: '["r1", 3]'}, {SURGE_ANNOTATION: '{"replicas": "3"}'}])
def test_without_a_readable_surge_record_there_is_none(annotations):
    assert surge_record({"metadata": {"annotations": annotations}}) is None


def test_hpa_bounds_are_pinned_to_each_step_of_the_surge_and_restored_after():
    record = hpa_record({"metadata": {"name": "web"}, "spec": {"minReplicas": 2, "maxReplicas": 5}})
    assert record == {"name": "web", "minReplicas": 2, "maxReplicas": 5}
    pinned = hpa_bounds(record, 4)
    assert pinned["spec"] == {"minReplicas": 4, "maxReplicas": 4}
    assert json.loads(pinned["metadata"]["annotations"][SURGE_ANNOTATION]) == {"minReplicas": 2, "maxReplicas": 5}
    assert hpa_bounds(record, 7)["spec"] == {"minReplicas": 7, "maxReplicas": 7}
    assert hpa_restored(record) == {"spec": {"minReplicas": 2, "maxReplicas": 5},
                                    "metadata": {"annotations": {SURGE_ANNOTATION: None}}}


def test_an_hpa_without_min_replicas_counts_as_one():
    record = hpa_record({"metadata": {"name": "web"}, "spec": {"maxReplicas": 4}})
    assert record["minReplicas"] == 1
    assert hpa_restored(record)["spec"] == {"minReplicas": 1, "maxReplicas": 4}


def test_a_leaving_pod_is_recognised_by_its_run_and_lowest_deletion_cost():
    marked = leaving_patch("r1")
    assert is_leaving(marked, "r1") and not is_leaving(marked, "r2")
    assert not is_leaving({"metadata": {}}, "r1")


def test_replicas_managers_names_who_else_owns_spec_replicas():
    managed = [{"manager": "kubeops-rotation", "fieldsV1": {"f:spec": {"f:replicas": {}}}},
               {"manager": "argocd-controller", "fieldsV1": {"f:spec": {"f:replicas": {}, "f:template": {}}}},
               {"manager": "kubectl", "fieldsV1": {"f:spec": {"f:template": {}}}},
               {"manager": "helm", "fieldsV1": {"f:spec": {"f:replicas": {}}}},
               {"manager": "helm", "fieldsV1": {"f:spec": {"f:replicas": {}}}},
               {"fieldsV1": {"f:spec": {"f:replicas": {}}}},
               {"manager": "status", "fieldsV1": {"f:status": {"f:replicas": {}}}}]
    assert replicas_managers({"metadata": {"managedFields": managed}}, "kubeops-rotation") == [
        "argocd-controller", "helm"]
    assert replicas_managers({"metadata": {}}, "kubeops-rotation") == []


def test_only_gitops_controllers_count_as_syncing_the_replicas():
    managed = {"metadata": {"managedFields": [
        {"manager": "argocd-controller", "fieldsV1": {"f:spec": {"f:replicas": {}}}},
        {"manager": "kubectl-client-side-apply", "fieldsV1": {"f:spec": {"f:replicas": {}}}},
        {"manager": "kubeops.rotation", "fieldsV1": {"f:spec": {"f:replicas": {}}}}]}}
    assert gitops_managers(managed, "kubeops.rotation") == ["argocd-controller"]


def test_an_hpa_scales_the_deployment_or_statefulset_its_target_names():
    hpa = {"metadata": {"name": "web", "namespace": "ns"},
           "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}}}
    assert scale_target(hpa) == Workload("Deployment", "ns", "web")
    assert scale_target({"metadata": {"name": "x", "namespace": "ns"},
                         "spec": {"scaleTargetRef": {"kind": "ReplicaSet", "name": "x"}}}) is None


def test_the_workloads_facts_come_from_the_objects_as_listed():
    def workload(kind, name, replicas=None, strategy=None, manager=None):
        spec = {} if replicas is None else {"replicas": replicas}
        if strategy:
            spec["strategy"] = {"type": strategy}
        managed = [{"manager": manager, "fieldsV1": {"f:spec": {"f:replicas": {}}}}] if manager else []
        return {"metadata": {"namespace": "shop", "name": name, "managedFields": managed}, "spec": spec}

    hpa = {"metadata": {"namespace": "shop", "name": "web-hpa"},
           "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}}}
    facts = workload_facts([workload("Deployment", "web", 3, manager="argocd-controller"),
                            workload("Deployment", "batch", strategy="Recreate")],
                           [workload("StatefulSet", "db", 2)], [hpa])
    web, batch, db = (Workload("Deployment", "shop", "web"), Workload("Deployment", "shop", "batch"),
                      Workload("StatefulSet", "shop", "db"))
    assert facts.replicas == {web: 3, batch: 1, db: 2}
    assert facts.one_at_a_time == {batch, db}
    assert facts.autoscalers == {web: "web-hpa"} and facts.gitops == {web: ["argocd-controller"]}
