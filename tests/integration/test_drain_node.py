"""The drain_node role through its playbook, ansible-playbook kubeops.rotation.drain_node."""

from __future__ import annotations

from conftest import TEST_LABEL, wait_until
from kube import daemon_set, deployment, pdb, running_pods


def test_playbook_drains_the_node_leaving_only_daemonset_pods(cluster, namespace, make_nodes, run_playbook, test_id):
    (old,) = make_nodes(1, prefix="old")
    pinned = {TEST_LABEL: test_id}
    cluster.apps.create_namespaced_deployment(namespace, deployment("web", 2, pinned))
    cluster.apps.create_namespaced_daemon_set(namespace, daemon_set("agent", pinned))
    wait_until(lambda: running_pods(cluster, namespace, None, 3), 60, "3 pods on the old node")
    (new,) = make_nodes(1, prefix="new")

    completed = run_playbook("kubeops.rotation.drain_node", {"drain_node_nodes": [old], "drain_node_timeout": 120,
                                                             "drain_node_reason": "test " + test_id})
    assert completed.returncode == 0, completed.stdout[-3000:]
    node = cluster.core.read_node(old)
    assert node.spec.unschedulable is True
    assert node.metadata.annotations["kubeops.io/cordon-reason"] == "test " + test_id
    left = [pod for pod in cluster.pods(namespace) if pod.spec.node_name == old]
    assert [pod.metadata.owner_references[0].kind for pod in left] == ["DaemonSet"]
    wait_until(lambda: running_pods(cluster, namespace, "app=web", 2), 60, "web running on the new node")
    assert {pod.spec.node_name for pod in cluster.pods(namespace, "app=web")} == {new}


def test_failed_drain_leaves_the_node_cordoned_or_uncordons_when_asked(
        cluster, namespace, make_nodes, run_playbook, test_id):
    (old,) = make_nodes(1, prefix="old")
    cluster.apps.create_namespaced_deployment(namespace, deployment("db", 1, {TEST_LABEL: test_id}))
    cluster.policy.create_namespaced_pod_disruption_budget(namespace, pdb("db", {"app": "db"}, max_unavailable=0))
    wait_until(lambda: running_pods(cluster, namespace, "app=db", 1), 60, "the db pod")

    kept = run_playbook("kubeops.rotation.drain_node", {"drain_node_nodes": [old], "drain_node_timeout": 5})
    assert kept.returncode != 0
    assert "blocked by PDB %s/db" % namespace in kept.stdout
    assert "The nodes are left cordoned; rerun the role to continue." in kept.stdout
    assert cluster.core.read_node(old).spec.unschedulable is True

    restored = run_playbook("kubeops.rotation.drain_node", {"drain_node_nodes": [old], "drain_node_timeout": 5,
                                                            "drain_node_uncordon_on_failure": True})
    assert restored.returncode != 0
    assert "The nodes were uncordoned again." in restored.stdout
    assert not cluster.core.read_node(old).spec.unschedulable
    assert len(running_pods(cluster, namespace, "app=db", 1)) == 1
