"""warm_nodes with the test provisioner playing the autoscaler.

Autoscaler: the test provisioner (tests/cluster/provisioner.py), node-group style: a fixed pool that scales up
from pending pods, as cluster-autoscaler with an ASG does. The rotation and warm nodes on the real Karpenter
are in test_karpenter.py.
"""

from __future__ import annotations

import pytest
from conftest import TEST_LABEL, delete_pool_nodes, wait_until
from kube import PAUSE, daemon_set, running_pods

POOL = {"kubeops.io/pool": "warm"}


@pytest.fixture
def provisioner(cluster):
    """Skip without a provisioner; delete the pool nodes it made for the test afterwards."""
    cluster.need_provisioner()
    yield
    delete_pool_nodes(cluster)


def warm(namespace, test_id, **options):
    return {"kubeops.rotation.warm_nodes": dict(
        {"name": "warm", "namespace": namespace, "node_selector": POOL, "priority_class": test_id, "timeout": 90},
        **options)}


def test_three_warm_nodes_are_made_returned_kept_and_cleaned_up(cluster, namespace, provisioner, run_play, test_id):
    play = run_play([warm(namespace, test_id, count=3), warm(namespace, test_id, count=3)])
    assert play.rc == 0, play
    first, second = play.steps
    assert first["changed"] is True and first["action"] == "created"
    assert first["created"] == ["PriorityClass %s" % test_id]
    assert len(first["nodes"]) == 3
    for name in first["nodes"]:
        node = cluster.core.read_node(name)
        assert node.metadata.labels["kubeops.io/provisioned-by"] == "test-provisioner"
        assert node.metadata.labels["kubeops.io/pool"] == "warm"
    assert second["changed"] is False and second["action"] == "unchanged"
    assert second["nodes"] == first["nodes"]
    placeholder = cluster.pods(namespace, "kubeops.io/warm-set=warm")[0]
    assert placeholder.metadata.annotations["karpenter.sh/do-not-disrupt"] == "true"
    assert placeholder.spec.priority == -10

    play = run_play([warm(namespace, test_id, state="absent"), warm(namespace, test_id, state="absent")])
    assert play.rc == 0, play
    assert play.steps[0]["removed"] == ["Deployment %s/warm" % namespace, "PriorityClass %s" % test_id]
    assert play.steps[1]["changed"] is False
    assert not cluster.apps.list_namespaced_deployment(namespace).items
    assert test_id not in {pc.metadata.name for pc in k8s_scheduling(cluster).list_priority_class().items}
    wait_until(lambda: not cluster.pods(namespace, "kubeops.io/warm-set=warm"), 30, "the placeholders to go")


def k8s_scheduling(cluster):
    from kubernetes import client

    return client.SchedulingV1Api(cluster.api_client)


def test_capacity_for_nodes_counts_the_requests_of_the_pods_on_them(cluster, namespace, make_nodes, run_play, test_id):
    (old,) = make_nodes(1, capacity={"cpu": "16", "memory": "64Gi"}, prefix="old")
    spec = {"nodeName": old, "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "app", "image": PAUSE, "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}
    labels = {"app": "web"}
    cluster.apps.create_namespaced_deployment(namespace, {"metadata": {"name": "web"}, "spec": {
        "replicas": 6, "selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels}, "spec": spec}}})
    ssd = {"app": "ssd"}
    cluster.apps.create_namespaced_deployment(namespace, {
        "metadata": {"name": "ssd"}, "spec": {"replicas": 1, "selector": {"matchLabels": ssd}, "template": {
            "metadata": {"labels": ssd}, "spec": dict(spec, nodeSelector={"disk": "ssd"})}}})
    agent = daemon_set("agent", {"kubeops.io/test": test_id})
    agent["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "400m", "memory": "1Gi"}
    cluster.apps.create_namespaced_daemon_set(namespace, agent)
    wait_until(lambda: running_pods(cluster, namespace, "app in (web,agent)", 7), 60, "7 pods on the old node")

    play = run_play([warm(namespace, test_id, capacity_for_nodes=[old],
                          template_capacity={"cpu": "4", "memory": "16Gi", "pods": "110"})], check=True)
    assert play.rc == 0, play
    step = play.steps[0]
    computed = step["computed"]
    # 6 pods x 1 cpu on nodes with 4 - 0.4 = 3.6 cpu free: 2 nodes; memory 6 GiB on 15 GiB: 1 node.
    assert step["count"] == 2
    assert computed["nodes_by_resource"] == {"cpu": 2, "memory": 1, "pods": 1}
    assert computed["pods"] == 6 and computed["requests"]["cpu"] == 6
    assert computed["daemonset_requests_per_node"]["cpu"] == 0.4
    assert len(computed["not_for_pool"]) == 1 and "/ssd-" in computed["not_for_pool"][0]
    assert step["changed"] is True and step["action"] == "created"
    assert not cluster.apps.list_namespaced_deployment(namespace, label_selector="kubeops.io/warm-set").items


def test_real_pods_preempt_the_placeholders(cluster, namespace, provisioner, run_play, test_id):
    play = run_play([warm(namespace, test_id, count=1, requests={"cpu": "3", "memory": "1Gi"})])
    assert play.rc == 0, play
    (warm_node,) = play.steps[0]["nodes"]
    (placeholder,) = cluster.pods(namespace, "kubeops.io/warm-set=warm")
    cluster.core.create_namespaced_pod(namespace, {"metadata": {"name": "real"}, "spec": {
        "nodeSelector": POOL, "terminationGracePeriodSeconds": 0,
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [warm_node]}]}]}}},
        "containers": [{"name": "app", "image": PAUSE, "resources": {"requests": {"cpu": "2"}}}]}})
    wait_until(lambda: cluster.core.read_namespaced_pod("real", namespace).status.phase == "Running", 60,
               "the real pod to run on the warm node")
    assert cluster.core.read_namespaced_pod("real", namespace).spec.node_name == warm_node
    assert placeholder.metadata.uid not in {pod.metadata.uid for pod in cluster.pods(namespace)}
    run_play([warm(namespace, test_id, state="absent")])


def test_role_warms_and_releases(cluster, namespace, provisioner, run_play, test_id):
    role_vars = {"warm_nodes_name": "by-role", "warm_nodes_namespace": namespace, "warm_nodes_count": 2,
                 "warm_nodes_node_selector": POOL, "warm_nodes_priority_class": test_id, "warm_nodes_timeout": 90}
    play = run_play([
        {"ansible.builtin.include_role": {"name": "kubeops.rotation.warm_nodes"}, "vars": role_vars},
        {"ansible.builtin.set_fact": {"warmed": "{{ warm_nodes_result.nodes }}"}},
        {"ansible.builtin.include_role": {"name": "kubeops.rotation.warm_nodes"},
         "vars": dict(role_vars, warm_nodes_state="absent")},
    ])
    assert play.rc == 0, play
    assert len(play.steps[1]["ansible_facts"]["warmed"]) == 2
    assert not cluster.apps.list_namespaced_deployment(namespace).items


def test_evict_warms_first_then_moves_the_pods_in_one_call(cluster, namespace, provisioner, make_nodes, run_play,
                                                           test_id):
    (old,) = make_nodes(1, prefix="old")
    # On the test's old node, or on the pool's.
    terms = [{"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]}
             for key, value in [(TEST_LABEL, test_id)] + list(POOL.items())]
    labels = {"app": "web"}
    cluster.apps.create_namespaced_deployment(namespace, {"metadata": {"name": "web"}, "spec": {
        "replicas": 1, "selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels}, "spec": {
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": terms}}},
            "terminationGracePeriodSeconds": 0, "containers": [{"name": "app", "image": PAUSE}]}}}})
    (web,) = wait_until(lambda: running_pods(cluster, namespace, "app=web", 1), 60, "web on the old node")
    cluster.kubectl("cordon", old)

    play = run_play([{"kubeops.rotation.evict": {
        "nodes": [old], "timeout": 60, "avoid_nodes": [old],
        "warm_first": {"name": "warm", "namespace": namespace, "count": 1, "node_selector": POOL,
                       "exclude_nodes": [old], "timeout": 90}}}])
    assert play.rc == 0, play
    step = play.steps[0]
    (warm_node,) = step["warmed"]["nodes"]
    assert step["warmed"]["action"] == "created" and step["changed"] is True
    assert cluster.core.read_node(warm_node).metadata.labels["kubeops.io/provisioned-by"] == "test-provisioner"
    assert [(e["name"], e["outcome"]) for e in step["pods"]] == [(web.metadata.name, "evicted")]
    assert step["remaining"] == []
    (moved,) = wait_until(lambda: running_pods(cluster, namespace, "app=web", 1), 60, "web on the warm node")
    assert moved.metadata.uid != web.metadata.uid and moved.spec.node_name == warm_node, "it took the warm node"
    run_play([warm(namespace, test_id, state="absent")])
