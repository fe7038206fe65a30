"""The way back, on the real control plane: a rotation that keeps its old nodes (rotate_nodes_keep_old_nodes),
stopped after its second batch and rolled back (that rollback killed once a first pod is back, and run again),
has every pod back on the old nodes, each moved once more and no
more, no PDB crossed, the new capacity released and the old nodes uncordoned; not rolled back, it retires the old
nodes only after the gates after its last batch."""

from __future__ import annotations

import json

import pytest
from ansible_run import kill_if_running, run_collection_playbook
from conftest import wait_until
from kube import DisruptionWatcher, eviction_requests, evictions_since
from test_rotation_moves_once import web_scenario

STOP_AFTER_BATCH_2 = """---
- name: Stop the rotation after batch 2, as a gate of yours would
  ansible.builtin.fail:
    msg: the test stops the rotation here
  when: rotate_nodes_gate_stage is match('after batch 2/')
"""
NOTE_THE_STAGE = """---
- name: Note the stage
  ansible.builtin.debug:
    msg: "gate tasks ran {{ rotate_nodes_gate_stage }}"
"""


@pytest.fixture
def three_batches(cluster, test_id):
    scenario = web_scenario(cluster, test_id, {"zone-a": 3}, solo=True)
    yield scenario
    scenario.cleanup()


def pods_by_node(cluster, namespace):
    return {pod.metadata.uid: pod.spec.node_name for pod in cluster.pods(namespace) if pod.spec.node_name}


def test_a_rotation_kept_and_rolled_back_after_its_second_batch_puts_every_pod_back_once(
        cluster, three_batches, tmp_path):
    scenario = three_batches
    stop = tmp_path / "stop-after-batch-2.yml"
    stop.write_text(STOP_AFTER_BATCH_2)
    keep = {"rotate_nodes_keep_old_nodes": True, "rotate_nodes_gate_tasks": str(stop)}
    with DisruptionWatcher(cluster, scenario.namespace) as rotating:
        first = scenario.rotate(str(tmp_path), keep)
    assert first.returncode != 0, first.stdout[-3000:]
    assert {app: count for app, count in rotating.churned.items() if app} == {}, "a pod moved twice"
    assert "the test stops the rotation here" in first.stdout, first.stdout[-3000:]
    old = sorted(scenario.old_nodes)
    assert scenario.remaining_old_nodes() == old, "kept, not retired"
    kept = [name for name in old if (cluster.core.read_node(name).metadata.annotations or {}).get("kubeops.io/kept-by")]
    assert len(kept) == 2 and all(cluster.core.read_node(name).spec.unschedulable for name in kept)
    assert (cluster.core.read_node(kept[0]).metadata.annotations or {}).get("karpenter.sh/do-not-disrupt") == "true"
    moved = {uid: node for uid, node in pods_by_node(cluster, scenario.namespace).items() if node not in old}
    assert moved, "batches 1 and 2 moved pods off their nodes"

    before = eviction_requests(cluster)
    on_old = sum(1 for node in pods_by_node(cluster, scenario.namespace).values() if node in old)
    rollback = dict(scenario.rotation, rotate_nodes_rollback=True, rotate_nodes_report_file=str(tmp_path / "report.json"))
    with DisruptionWatcher(cluster, scenario.namespace) as watcher:
        # Killed once a first pod came back to an old node, and run again: it goes on from where it was.
        killed = run_collection_playbook("kubeops.rotation.rotate_nodes", rollback, str(tmp_path), background=True)
        try:
            wait_until(lambda: killed.poll() is not None or sum(
                1 for node in pods_by_node(cluster, scenario.namespace).values() if node in old) > on_old,
                180, "a first pod back on an old node")
        finally:
            kill_if_running(killed)
        back = scenario.rotate(str(tmp_path), {"rotate_nodes_rollback": True})
    assert back.returncode == 0, back.stdout[-4000:]
    report = json.loads((tmp_path / "report.json").read_text())
    # The rerun's way back: the rotation's nodes; those it kept may already be given back by the killed run.
    assert report["outcome"] == "rolled back" and report["way_back"]["nodes"] == old
    assert set(report["way_back"]["kept"]) <= set(kept)
    now = pods_by_node(cluster, scenario.namespace)
    assert set(now.values()) <= set(old), "every pod back on the old nodes: %s" % now
    assert not set(moved) & set(now), "each pod on a new node moved back"
    # Each pod on a new node went once: evicted, or replaced first (solo, a single replica under minAvailable 1, and
    # any pod whose PDB allowed nothing when the rerun planned, after the kill).
    assert evictions_since(cluster, before) <= len(moved)
    for watched in (rotating, watcher):
        assert watched.min_ready["web"] >= 5 and watched.min_ready["solo"] >= 1, "a PDB was crossed"
    assert {app: count for app, count in watcher.churned.items() if app} == {}, "a pod moved back twice"
    for name in old:
        node = cluster.core.read_node(name)
        assert not node.spec.unschedulable, name
        assert not any(taint.key == "kubeops.io/rotating" for taint in node.spec.taints or []), name
        assert "kubeops.io/kept-by" not in (node.metadata.annotations or {}), name
    wait_until(lambda: not [node for node in report["way_back"]["new"]
                            if node in {n.metadata.name for n in cluster.core.list_node().items}],
               120, "the new nodes to be released")
    assert not cluster.apps.list_namespaced_deployment("kubeops-warm").items, "placeholders released"


def test_a_rotation_that_keeps_its_old_nodes_retires_them_only_after_the_gates_after_its_last_batch(
        cluster, three_batches, tmp_path):
    scenario = three_batches
    note = tmp_path / "note-the-stage.yml"
    note.write_text(NOTE_THE_STAGE)
    done = scenario.rotate(str(tmp_path), {"rotate_nodes_keep_old_nodes": True, "rotate_nodes_gate_tasks": str(note)})
    assert done.returncode == 0, done.stdout[-4000:]
    output = done.stdout
    last_gate = output.index("gate tasks ran after batch 3/3")
    assert output.index("Retire kept: take their keep off") > last_gate
    assert output.count("Retire: record that it is drained") == 3
    assert scenario.remaining_old_nodes() == [], "retired at the end"
