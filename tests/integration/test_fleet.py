"""A fleet of three local control planes (playbook kubeops.rotation.rotate_fleet): a canary cluster alone, then a
wave of two at once. A gate that trips in the canary after its last batch stops the fleet before the wave, which
never starts; the rerun once it clears finishes the fleet, every pod of every cluster moved, the wave's two clusters
rotated side by side, and one report of the fleet."""

from __future__ import annotations

import json
import os
import sys

import yaml
from ansible_run import run_collection_playbook
from conftest import CLUSTER_DIR
from test_rotate_nodes import _small_scenario

sys.path.insert(0, CLUSTER_DIR)
import cluster as local_cluster  # noqa: E402

TRIPWIRE = """---
- name: Trip after a batch while the tripwire of this cluster is there
  ansible.builtin.assert:
    that: not (tripwire_dir ~ '/' ~ inventory_hostname) is exists
    fail_msg: the tripwire of {{ inventory_hostname }} is there
  when: rotate_nodes_gate_stage is match('after batch')
"""


def _clients(kubeconfig):
    from kubernetes import client, config

    return client.CoreV1Api(config.new_client_from_config(config_file=kubeconfig))


def test_a_fleet_goes_canary_first_stops_when_its_gate_trips_and_a_rerun_finishes_the_wave_side_by_side(
        cluster, tmp_path_factory, test_id, tmp_path):
    dirs = [str(tmp_path_factory.mktemp(name)) for name in ("second-cluster", "third-cluster")]
    extra = [local_cluster.up(state_dir, die_with_parent=True) for state_dir in dirs]
    try:
        kubeconfigs = {"first": cluster.kubeconfig, "second": extra[0]["kubeconfig"], "third": extra[1]["kubeconfig"]}
        inventory = {"all": {"children": {"clusters": {"hosts": {}}, "kubeops_fleet_canary": {"hosts": {"first": {}}}}}}
        for host, kubeconfig in kubeconfigs.items():
            _small_scenario(kubeconfig, test_id)
            # By a selector, not by name: a rerun finds none left where the rotation is done.
            _clients(kubeconfig).patch_node(test_id + "-old", {"metadata": {"labels": {"kubeops.io/pool": test_id}}})
            inventory["all"]["children"]["clusters"]["hosts"][host] = {
                "kubeops_kubeconfig": kubeconfig, "ansible_connection": "local",
                "ansible_python_interpreter": sys.executable}
        (tmp_path / "inventory.yml").write_text(yaml.safe_dump(inventory))
        (tmp_path / "tripwire.yml").write_text(TRIPWIRE)
        tripwires = tmp_path / "tripwires"
        tripwires.mkdir()
        (tripwires / "first").write_text("")
        before = {host: {pod.metadata.uid for pod in _clients(kubeconfig).list_namespaced_pod(test_id).items}
                  for host, kubeconfig in kubeconfigs.items()}
        fleet_dir = tmp_path / "fleet"
        fleet = {"kubeops_fleet_id": test_id, "kubeops_fleet_wave_size": 2, "kubeops_fleet_report_dir": str(fleet_dir),
                 "rotate_nodes_warm": False, "rotate_nodes_node_selector": "kubeops.io/pool=" + test_id,
                 "rotate_nodes_retire": "delete_node", "rotate_nodes_gate_tasks": str(tmp_path / "tripwire.yml"),
                 "tripwire_dir": str(tripwires)}

        stopped = run_collection_playbook("kubeops.rotation.rotate_fleet", fleet, str(tmp_path),
                                          inventory=str(tmp_path / "inventory.yml"))
        assert stopped.returncode != 0, stopped.stdout[-4000:]
        assert "The fleet %s stopped: first, second, third did not finish" % test_id in stopped.stdout, \
            stopped.stdout[-4000:]
        assert "Not started: the fleet stopped before its wave (wave 1: first did not finish" in stopped.stdout
        report = json.loads((fleet_dir / "fleet.json").read_text())
        assert report["waves"] == [["first"], ["second", "third"]]
        assert [(entry["cluster"], entry["outcome"]) for entry in report["clusters"]] == [
            ("first", "stopped"), ("second", "not started"), ("third", "not started")]
        for host in ("second", "third"):
            names = {node.metadata.name for node in _clients(kubeconfigs[host]).list_node().items}
            assert test_id + "-old" in names, "the wave never started"
            assert not _clients(kubeconfigs[host]).read_node(test_id + "-old").spec.unschedulable

        os.remove(tripwires / "first")
        again = run_collection_playbook("kubeops.rotation.rotate_fleet", fleet, str(tmp_path),
                                        inventory=str(tmp_path / "inventory.yml"))
        assert again.returncode == 0, again.stdout[-4000:]
        report = json.loads((fleet_dir / "fleet.json").read_text())
        assert report["outcome"] == "finished"
        assert [(entry["cluster"], entry["outcome"]) for entry in report["clusters"]] == [
            ("first", "finished"), ("second", "finished"), ("third", "finished")]
        assert {entry["cluster"]: entry["nodes_rotated"] for entry in report["clusters"]} == {
            "first": 0, "second": 1, "third": 1}, "the canary was done in the first run"
        second, third = report["clusters"][1:]
        assert second["started"] < third["ended"] and third["started"] < second["ended"], "the wave ran side by side"
        assert (fleet_dir / "second.json").exists() and (fleet_dir / "third.json").exists()
        assert (fleet_dir / "fleet.md").read_text().startswith("# Fleet %s (finished)" % test_id)
        for host, kubeconfig in kubeconfigs.items():
            core = _clients(kubeconfig)
            assert test_id + "-old" not in {node.metadata.name for node in core.list_node().items}, host
            pods = core.list_namespaced_pod(test_id, label_selector="app=web").items
            assert len(pods) == 2 and {pod.spec.node_name for pod in pods} == {test_id + "-new"}, host
            assert not before[host] & {pod.metadata.uid for pod in pods}, "every pod of %s moved" % host
    finally:
        for state_dir in dirs:
            local_cluster.down(state_dir)
        cluster.core.delete_node(test_id + "-new")
