"""The rotation end to end: ansible-playbook kubeops.rotation.rotate_nodes on the demo scenario.

Autoscaler: the test provisioner (tests/cluster/provisioner.py), node-group style: a fixed pool that scales up
from pending pods, as cluster-autoscaler with an ASG does. The rotation and warm nodes on the real Karpenter
are in test_karpenter.py.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

import yaml
from ansible_run import run_collection_playbook
from conftest import CLUSTER_DIR, TEST_LABEL, wait_until
from kube import deployment, running_pods, surge_leftovers, unless_missing

sys.path.insert(0, CLUSTER_DIR)

import cluster as local_cluster  # noqa: E402
from fakenodes import fake_node  # noqa: E402

RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"


def restarted_at(cluster, namespace):
    stamps = {}
    for item in cluster.apps.list_namespaced_deployment(namespace).items:
        stamps["Deployment/" + item.metadata.name] = (item.spec.template.metadata.annotations or {}).get(RESTARTED_AT)
    for item in cluster.apps.list_namespaced_stateful_set(namespace).items:
        stamps["StatefulSet/" + item.metadata.name] = (item.spec.template.metadata.annotations or {}).get(RESTARTED_AT)
    return stamps


def test_rotation_moves_everything_to_the_new_pool_without_disruption(cluster, demo, tmp_path):
    completed, watcher, _seconds = demo.rotate(str(tmp_path))
    assert completed.returncode == 0, completed.stdout[-4000:]
    assert demo.verify(watcher) == []
    assert watcher.min_ready["checkout"] >= 1 and watcher.min_ready["web"] >= 3
    report = json.loads((tmp_path / "rotation-report.json").read_text())
    assert [len(batch["nodes"]) for batch in report["batches"]] == [2, 2]
    assert "| 2/2 |" in completed.stdout and "batch 2/2: 2 nodes" in completed.stdout
    assert not cluster.apps.list_namespaced_deployment("kubeops-warm").items, "placeholders are released"

    again, _watcher, _seconds = demo.rotate(str(tmp_path), extra={"rotate_nodes_report_file": ""})
    assert again.returncode == 0, again.stdout[-4000:]
    assert "changed=0" in again.stdout.split("PLAY RECAP")[1], "a finished rotation, rerun, changes nothing"
    assert "Rotation %s: 0 node(s) in 0 batch(es)" % demo.rotation["rotate_nodes_id"] in again.stdout


def test_rotation_killed_in_batch_two_resumes_without_restarting_any_workload(cluster, demo, tmp_path):
    batch_two = [name for name, zone in demo.old_nodes.items() if zone == "zone-b"]
    process = run_collection_playbook(
        "kubeops.rotation.rotate_nodes", dict(demo.rotation, kubeops_kubeconfig=cluster.kubeconfig), str(tmp_path),
        background=True)

    def batch_two_started():
        annotations = cluster.core.read_node(batch_two[0]).metadata.annotations or {}
        return annotations.get("kubeops.io/rotation-phase") == "cordoned"

    try:
        wait_until(batch_two_started, 180, "batch 2 to start")
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
    completed, watcher, _seconds = demo.rotate(str(tmp_path))
    assert completed.returncode == 0, completed.stdout[-4000:]
    assert "in 1 batch(es)" in completed.stdout, "the rerun plans only what is left"
    # Replacement first scales; it never restarts a workload, in the killed run or in the rerun.
    assert set(restarted_at(cluster, demo.namespace).values()) == {None}
    assert surge_leftovers(cluster, demo.namespace) == []
    assert demo.verify(watcher) == []


def test_check_mode_changes_nothing(cluster, demo, tmp_path):
    before = {pod.metadata.uid for pod in cluster.pods(demo.namespace)}
    replicas = {item.metadata.name: item.spec.replicas
                for item in cluster.apps.list_namespaced_deployment(demo.namespace).items}
    completed, _watcher, _seconds = demo.rotate(str(tmp_path), check=True)
    assert completed.returncode == 0, completed.stdout[-4000:]
    assert "batch 1/2" in completed.stdout
    assert "did not do what its plan said" not in completed.stdout, "check mode does nothing, by design"
    assert "StatefulSet %s/db: one at a time" % demo.namespace in completed.stdout
    for name in demo.old_nodes:
        assert "retire %s: delete the Node object only" % name in completed.stdout, "the plan says how each goes"
    report = json.loads((tmp_path / "rotation-report.json").read_text())
    assert report["outcome"] == "check" and report["check_mode"] and len(report["batches"]) == 2
    assert (tmp_path / "rotation-report.md").read_text().startswith("# Rotation ")
    assert {item.metadata.name: item.spec.replicas
            for item in cluster.apps.list_namespaced_deployment(demo.namespace).items} == replicas
    assert surge_leftovers(cluster, demo.namespace) == []
    for name in demo.old_nodes:
        node = cluster.core.read_node(name)
        assert not node.spec.unschedulable
        assert not [key for key in node.metadata.annotations or {} if key.startswith("kubeops.io/")]
    assert {pod.metadata.uid for pod in cluster.pods(demo.namespace)} == before


def test_a_plan_that_does_not_fit_fails_before_cordoning(cluster, demo, tmp_path):
    completed, _watcher, _seconds = demo.rotate(str(tmp_path), extra={
        "rotate_nodes_template_capacity": {"cpu": "150m", "memory": "16Gi", "pods": "110"}})
    assert completed.returncode != 0
    assert "The plan cannot be carried out; nothing was changed." in completed.stdout
    assert "DOES NOT FIT" in completed.stdout
    report = json.loads((tmp_path / "rotation-report.json").read_text())
    assert report["outcome"] == "refused by its plan" and report["batches"] == []
    assert not any(cluster.core.read_node(name).spec.unschedulable for name in demo.old_nodes)


def test_two_clusters_in_one_inventory(cluster, tmp_path_factory, test_id, tmp_path):
    second_dir = str(tmp_path_factory.mktemp("second-cluster"))
    second = local_cluster.up(second_dir, die_with_parent=True)
    try:
        inventory = {"clusters": {"hosts": {}}}
        for host, kubeconfig in (("first", cluster.kubeconfig), ("second", second["kubeconfig"])):
            _small_scenario(kubeconfig, test_id)
            inventory["clusters"]["hosts"][host] = {
                "kubeops_kubeconfig": kubeconfig, "ansible_connection": "local",
                "ansible_python_interpreter": sys.executable}
        inventory_file = tmp_path / "inventory.yml"
        inventory_file.write_text(yaml.safe_dump(inventory))
        completed = run_collection_playbook("kubeops.rotation.rotate_nodes", {
            "kubeops_clusters": "clusters", "rotate_nodes_id": test_id, "rotate_nodes_warm": False,
            "rotate_nodes_nodes": [test_id + "-old"], "rotate_nodes_retire": "delete_node"}, str(tmp_path), inventory=str(inventory_file))
        failed = [line for line in completed.stdout.splitlines() if line.startswith("fatal:")]
        assert completed.returncode == 0, failed or completed.stdout[-4000:]
        for kubeconfig in (cluster.kubeconfig, second["kubeconfig"]):
            from kubernetes import client, config

            core = client.CoreV1Api(config.new_client_from_config(config_file=kubeconfig))
            assert test_id + "-old" not in {node.metadata.name for node in core.list_node().items}
            pods = core.list_namespaced_pod(test_id).items
            assert pods and {pod.spec.node_name for pod in pods} == {test_id + "-new"}
    finally:
        local_cluster.down(second_dir)
        remove_small_scenario_nodes(cluster, test_id)


def remove_small_scenario_nodes(cluster, name):
    """The nodes of _small_scenario on the shared cluster, the old one too where a rotation that failed left it: no
    later test may place pods there."""
    for node in (name + "-old", name + "-new"):
        unless_missing(cluster.core.delete_node, node)


def _small_scenario(kubeconfig, name):
    """One old node with a Deployment of 2, one new node: the smallest rotation."""
    from kubernetes import client, config

    api_client = config.new_client_from_config(config_file=kubeconfig)
    core, apps = client.CoreV1Api(api_client), client.AppsV1Api(api_client)
    core.create_node(fake_node(name + "-old", {TEST_LABEL: name}))
    core.create_namespace({"metadata": {"name": name}})
    deadline = time.monotonic() + 30
    while not [sa for sa in core.list_namespaced_service_account(name).items if sa.metadata.name == "default"]:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    apps.create_namespaced_deployment(name, deployment("web", 2, {TEST_LABEL: name}))

    class View:
        def pods(self, namespace, selector=None):
            return core.list_namespaced_pod(namespace, label_selector=selector).items

    wait_until(lambda: running_pods(View(), name, "app=web", 2), 60, "web on the old node")
    core.create_node(fake_node(name + "-new", {TEST_LABEL: name}))


def test_abort_if_that_holds_at_the_start_stops_before_anything_changes_and_names_the_cause(cluster, demo, tmp_path):
    time.sleep(2)  # the single replica's PDB has allowed no disruption since it was made
    completed, _watcher, _seconds = demo.rotate(str(tmp_path), extra={"rotate_nodes_abort_if": {
        "pdb_blocked_for": "1s"}})
    assert completed.returncode != 0
    # Any PDB of the cluster counts: others, of other namespaces, may be named too.
    assert "The plan cannot be carried out; nothing was changed." in completed.stdout
    assert "PDB %s/checkout has allowed no disruption" % demo.namespace in completed.stdout
    for name in demo.old_nodes:
        node = cluster.core.read_node(name)
        assert not node.spec.unschedulable
        assert "kubeops.io/rotating" not in (node.metadata.labels or {}), "no node was marked"
        assert not any(taint.key == "kubeops.io/rotating" for taint in node.spec.taints or [])
