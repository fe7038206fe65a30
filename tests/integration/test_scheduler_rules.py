"""The plan sees what the scheduler sees, and a batch ends only when its pods run again, on the real control plane:
a resident's anti-affinity that leaves a batch's pods nowhere to go refuses the rotation in its plan, with nothing
touched; pods whose replacements the scheduler cannot place fail the eviction step with its reason, the nodes kept;
a pool whose pods ask for an extended resource and for zone anti-affinity rotates with every pod moved once."""

from __future__ import annotations

import json
import re

import pytest
from conftest import TEST_LABEL, wait_until
from kube import deployment, eviction_requests, evictions_since, pdb, running_pods
from test_rotation_moves_once import Scenario, watched_rotation

from fakenodes import fake_node

GPU = "example.com/gpu"
ZONE = "topology.kubernetes.io/zone"
GPU_CAPACITY = {"cpu": "4", "memory": "16Gi", "pods": "110", GPU: "2"}


def kept_out_by(app, topology_key="kubernetes.io/hostname"):
    """A pod affinity that keeps the pods labelled app=``app`` off its topology domain (required)."""
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": topology_key, "labelSelector": {"matchLabels": {"app": app}}}]}}


def guarded(cluster, namespace, make_nodes, test_id):
    """Deployment x (2 pods) on the node to go; the only other node runs a guard whose anti-affinity shuts x out."""
    (old,) = make_nodes(1, prefix="old")
    cluster.apps.create_namespaced_deployment(namespace, deployment("x", 2, {TEST_LABEL: test_id}))
    wait_until(lambda: running_pods(cluster, namespace, "app=x", 2), 60, "2 x pods")
    (other,) = make_nodes(1, prefix="other")
    guard = deployment("guard", 1, {TEST_LABEL: test_id})
    guard["spec"]["template"]["spec"]["affinity"] = kept_out_by("x")
    cluster.apps.create_namespaced_deployment(namespace, guard)
    wait_until(lambda: running_pods(cluster, namespace, "app=guard", 1), 60, "the guard")
    return old, other


def test_a_residents_anti_affinity_that_leaves_a_batch_nowhere_to_go_refuses_the_rotation_with_nothing_touched(
        cluster, namespace, make_nodes, run_playbook, test_id, tmp_path):
    old, _other = guarded(cluster, namespace, make_nodes, test_id)
    before = eviction_requests(cluster)
    completed = run_playbook("kubeops.rotation.rotate_nodes", {
        "rotate_nodes_id": test_id, "rotate_nodes_nodes": [old], "rotate_nodes_warm": False,
        "rotate_nodes_retire": "delete_node", "rotate_nodes_report_file": str(tmp_path / "report.json")})
    assert completed.returncode != 0, completed.stdout[-3000:]
    assert "The plan cannot be carried out; nothing was changed." in completed.stdout, completed.stdout[-3000:]
    assert re.search(r"DOES NOT FIT: %s/x-\S+ \(the pod anti-affinity of %s/guard-\S+ on kubernetes.io/hostname "
                     r"leaves no node\)" % (namespace, namespace), completed.stdout), completed.stdout[-3000:]
    assert evictions_since(cluster, before) == 0
    assert not cluster.core.read_node(old).spec.unschedulable
    assert running_pods(cluster, namespace, "app=x", 2)


def test_an_eviction_whose_pods_the_scheduler_cannot_place_again_fails_naming_them_and_its_reason(
        cluster, namespace, make_nodes, run_play, test_id):
    old, _other = guarded(cluster, namespace, make_nodes, test_id)
    cluster.kubectl("cordon", old)
    play = run_play([{"kubeops.rotation.evict": {"nodes": [old], "wait_for_replacements": True, "timeout": 20}}])
    step = play.steps[0]
    assert step["failed"] is True, step
    assert "Deployment/x in %s has 0 of the 2 Ready pods it had" % namespace in step["msg"], step["msg"]
    assert "Pending: 0/" in step["msg"] and "anti-affinity" in step["msg"], step["msg"]


@pytest.fixture
def gpu_pool(cluster, test_id):
    cluster.need_provisioner()
    scenario = Scenario(cluster, test_id, {"zone-a": 2, "zone-b": 2})
    scenario.pod_pools = [scenario.pool, "warm-gpu"]
    scenario.rotation.update(rotate_nodes_pool_node_selector={"kubeops.io/pool": "warm-gpu"},
                             rotate_nodes_template_capacity=GPU_CAPACITY)
    for name, zone in scenario.old_nodes.items():
        cluster.core.create_node(fake_node(name, {"kubeops.io/pool": scenario.pool, ZONE: zone}, GPU_CAPACITY))
    cluster.core.create_namespace({"metadata": {"name": scenario.namespace}})
    wait_until(lambda: scenario._ready_nodes() == len(scenario.old_nodes), 60, "the old nodes to be Ready")
    trainer = deployment("trainer", 6, {})
    trainer["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"][GPU] = "1"
    trainer["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] = {GPU: "1"}
    scenario.add("Deployment", trainer, 6)
    scenario.add("PodDisruptionBudget", pdb("trainer", {"app": "trainer"}, max_unavailable=1), 0)
    zonal = deployment("zonal", 2, {})
    zonal["spec"]["template"]["spec"]["affinity"] = kept_out_by("zonal", ZONE)
    scenario.add("Deployment", zonal, 2)
    scenario.add("Deployment", deployment("web", 4, {}), 4)
    yield scenario
    scenario.cleanup()


def test_a_pool_whose_pods_ask_for_gpus_and_zone_anti_affinity_rotates_every_pod_once(cluster, gpu_pool, tmp_path):
    scenario = gpu_pool
    completed, watcher, restarts, evictions_before, zones_before = watched_rotation(cluster, scenario, tmp_path)
    assert completed.returncode == 0, completed.stdout[-6000:]
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["outcome"] == "finished"
    assert all(batch["fits"] for batch in report["planned_batches"]), report["planned_batches"]
    assert scenario.remaining_old_nodes() == []
    assert all(count == 0 for count in restarts.restarts().values())
    rotated = set(scenario.old_nodes)
    now = {pod.metadata.uid for pod in cluster.pods(scenario.namespace)}
    assert [uid for uid, (_app, node) in watcher.first.items() if node in rotated and uid in now] == []
    assert {app: count for app, count in watcher.churned.items() if app} == {}, "a pod moved twice"
    assert evictions_since(cluster, evictions_before) == 12, "each pod evicted once"
    assert watcher.min_ready["trainer"] >= 5, "the PDB (maxUnavailable 1) was crossed"
    after = scenario.zones()
    assert after == zones_before, (zones_before, after, completed.stdout[-5000:])
    assert sorted(after["zonal"]) == ["zone-a", "zone-b"]
