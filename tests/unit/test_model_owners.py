from __future__ import annotations

import pytest

from ansible_collections.kubeops.rotation.plugins.module_utils.model.owners import (
    Workload,
    owner_of,
    replica_set_owners,
    workload_from_key,
)
from builders import pod, replica_set


def test_workload_names_itself_for_results_messages_and_restart_targets():
    workload = Workload("Deployment", "shop", "web")
    assert workload.key == "shop/Deployment/web"
    assert workload.label == "Deployment shop/web"
    assert workload.target() == {"kind": "Deployment", "namespace": "shop", "name": "web"}


def test_workloads_are_values_that_sort_by_kind_namespace_name():
    assert Workload("Deployment", "ns", "web") == Workload("Deployment", "ns", "web")
    assert len({Workload("Deployment", "ns", "web"), Workload("Deployment", "ns", "web")}) == 1
    unordered = [Workload("StatefulSet", "a", "db"), Workload("Deployment", "b", "web"),
                 Workload("Deployment", "a", "web")]
    assert sorted(unordered) == [Workload("Deployment", "a", "web"), Workload("Deployment", "b", "web"),
                                 Workload("StatefulSet", "a", "db")]


def test_replica_set_owners_maps_only_replica_sets_of_deployments():
    owners = replica_set_owners([replica_set("web-abc", "web"), replica_set("solo", None),
                                 replica_set("api-1", "api", namespace="other")])
    assert owners == {("ns", "web-abc"): "web", ("other", "api-1"): "api"}


def test_owner_of_sees_a_replica_set_through_to_its_deployment():
    owners = {("ns", "web-abc"): "web"}
    assert owner_of(pod(owner="web-abc"), owners) == Workload("Deployment", "ns", "web")
    assert owner_of(pod(owner="web-abc", namespace="other"), owners) == Workload("ReplicaSet", "other", "web-abc")
    assert owner_of(pod(owner="orphan-rs"), owners) == Workload("ReplicaSet", "ns", "orphan-rs")
    assert owner_of(pod(kind="StatefulSet", owner="db"), owners) == Workload("StatefulSet", "ns", "db")
    assert owner_of(pod(kind=None), owners) is None


def test_workload_from_key_reads_back_a_workloads_key():
    assert workload_from_key("shop/StatefulSet/db") == Workload("StatefulSet", "shop", "db")
    workload = Workload("Deployment", "ns", "web")
    assert workload_from_key(workload.key) == workload


@pytest.mark.parametrize("key", ["ns/web", "ns/Deployment/web/extra", "ns//web", "/Deployment/web", "", None])
def test_workload_from_key_is_none_for_what_is_not_namespace_kind_name(key):
    assert workload_from_key(key) is None
