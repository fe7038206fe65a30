"""The local control plane is a real cluster: the real scheduler, controllers and Eviction API."""

from __future__ import annotations

import collections

import pytest
from conftest import TEST_LABEL, wait_until
from kube import deployment, running_pods
from kubernetes.client.rest import ApiException


def test_kwok_nodes_become_ready_with_their_capacity(cluster, make_nodes):
    names = make_nodes(2, capacity={"cpu": "8"})
    node = cluster.core.read_node(names[0])
    assert node.status.allocatable["cpu"] == "8"
    assert [c.status for c in node.status.conditions if c.type == "Ready"] == ["True"]


def test_scheduler_spreads_a_deployment_across_nodes_and_pods_run(cluster, namespace, make_nodes, test_id):
    nodes = make_nodes(3)
    cluster.apps.create_namespaced_deployment(namespace, deployment("web", 6, {TEST_LABEL: test_id}, spread=True))
    pods = wait_until(lambda: running_pods(cluster, namespace, "app=web", 6), 60, "6 running web pods")
    per_node = collections.Counter(pod.spec.node_name for pod in pods)
    assert per_node == {name: 2 for name in nodes}
    assert all(pod.status.pod_ip for pod in pods)


def test_cordoned_node_gets_no_new_pods(cluster, namespace, make_nodes, test_id):
    cordoned, *others = make_nodes(3)
    cluster.kubectl("cordon", cordoned)
    cluster.apps.create_namespaced_deployment(namespace, deployment("web", 9, {TEST_LABEL: test_id}))
    pods = wait_until(lambda: running_pods(cluster, namespace, "app=web", 9), 60, "9 running web pods")
    assert {pod.spec.node_name for pod in pods} <= set(others)


def eviction(pod):
    return {"apiVersion": "policy/v1", "kind": "Eviction",
            "metadata": {"name": pod.metadata.name, "namespace": pod.metadata.namespace}}


def pdb_status(cluster, namespace, name):
    status = cluster.policy.read_namespaced_pod_disruption_budget(name, namespace).status
    return status.current_healthy, status.desired_healthy, status.disruptions_allowed


def test_pdb_at_its_minimum_makes_eviction_answer_429_and_status_follows(cluster, namespace, make_nodes, test_id):
    make_nodes(2)
    cluster.apps.create_namespaced_deployment(namespace, deployment("db", 3, {TEST_LABEL: test_id}))
    cluster.policy.create_namespaced_pod_disruption_budget(namespace, {
        "metadata": {"name": "db-pdb"},
        "spec": {"minAvailable": 3, "selector": {"matchLabels": {"app": "db"}}}})
    pods = wait_until(lambda: running_pods(cluster, namespace, "app=db", 3), 60, "3 running db pods")
    wait_until(lambda: pdb_status(cluster, namespace, "db-pdb") == (3, 3, 0), 30, "PDB status 3/3/0")

    with pytest.raises(ApiException) as refused:
        cluster.core.create_namespaced_pod_eviction(pods[0].metadata.name, namespace, eviction(pods[0]))
    assert refused.value.status == 429
    assert "disruption budget" in refused.value.body

    cluster.apps.patch_namespaced_deployment_scale("db", namespace, {"spec": {"replicas": 4}})
    wait_until(lambda: pdb_status(cluster, namespace, "db-pdb") == (4, 3, 1), 60, "PDB status 4/3/1")
    cluster.core.create_namespaced_pod_eviction(pods[0].metadata.name, namespace, eviction(pods[0]))
    wait_until(lambda: pods[0].metadata.name not in {pod.metadata.name for pod in cluster.pods(namespace, "app=db")},
               30, "the evicted pod to be gone")


def test_rollout_restart_replaces_every_pod_and_completes(cluster, namespace, make_nodes, test_id):
    make_nodes(2)
    cluster.apps.create_namespaced_deployment(namespace, deployment("web", 4, {TEST_LABEL: test_id}))
    before = {pod.metadata.name for pod in wait_until(
        lambda: running_pods(cluster, namespace, "app=web", 4), 60, "4 running web pods")}

    cluster.kubectl("-n", namespace, "rollout", "restart", "deployment/web")
    status = cluster.kubectl("-n", namespace, "rollout", "status", "deployment/web", "--timeout=90s")
    assert "successfully rolled out" in status.stdout

    after = {pod.metadata.name for pod in wait_until(
        lambda: running_pods(cluster, namespace, "app=web", 4), 60, "4 running web pods after the restart")}
    assert not before & after


def test_provisioner_adds_pool_nodes_for_pending_pods_and_finishes_their_deletion(cluster, namespace):
    cluster.need_provisioner()
    cluster.apps.create_namespaced_deployment(
        namespace, deployment("placeholder", 2, {"kubeops.io/pool": "warm-zone-b"}, anti_affinity=True))
    pods = wait_until(lambda: running_pods(cluster, namespace, "app=placeholder", 2), 90, "2 running placeholders")
    new_nodes = {pod.spec.node_name for pod in pods}
    assert len(new_nodes) == 2
    for name in new_nodes:
        node = cluster.core.read_node(name)
        assert node.metadata.labels["kubeops.io/pool"] == "warm-zone-b"
        assert node.metadata.labels["topology.kubernetes.io/zone"] == "zone-b"

    cluster.apps.delete_namespaced_deployment("placeholder", namespace)
    for name in new_nodes:
        cluster.core.delete_node(name)

    def all_gone():
        return not {node.metadata.name for node in cluster.core.list_node().items} & new_nodes

    wait_until(all_gone, 30, "the provisioner to finish deleting %s" % sorted(new_nodes))
