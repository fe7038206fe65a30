"""A fleet of three local control planes (playbook kubeops.rotation.rotate_fleet): a canary cluster alone, then a
wave of two at once. A gate that trips in the canary after its last batch stops the fleet before the wave, which
never starts; the rerun once it clears finishes the fleet, every pod of every cluster moved, the wave's two clusters
rotated side by side, and one report of the fleet. The same fleet as AWX runs it (ansible-runner, as
test_awx_runner.py): a check first, then a workflow of waves, a job per wave limited to it, the wave's job cancelled
once its clusters started and launched again; each cluster finishes once."""

from __future__ import annotations

import json
import os
import sys

import ansible_runner
import pytest
import yaml
from ansible_run import run_collection_playbook
from conftest import CLUSTER_DIR, Cluster
from kube import eviction_requests, evictions_since
from kubernetes.client.rest import ApiException
from test_awx_runner import describe, job_artifacts, private_data_dir, run_job, task_results
from test_rotate_nodes import _small_scenario, remove_small_scenario_nodes

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


@pytest.fixture
def fleet_kubeconfigs(cluster, tmp_path_factory, test_id):
    """Three clusters, {host: kubeconfig}: the shared one and two local control planes of their own, each with the
    smallest rotation (_small_scenario), its old node chosen by a selector (kubeops.io/pool=<test id>): a rerun by
    selector finds none left where the rotation is done. They go, and the shared cluster's nodes with them, however
    the test ends."""
    dirs = [str(tmp_path_factory.mktemp(name)) for name in ("second-cluster", "third-cluster")]
    extra = [local_cluster.up(state_dir, die_with_parent=True) for state_dir in dirs]
    try:
        kubeconfigs = {"first": cluster.kubeconfig, "second": extra[0]["kubeconfig"], "third": extra[1]["kubeconfig"]}
        for kubeconfig in kubeconfigs.values():
            _small_scenario(kubeconfig, test_id)
            _clients(kubeconfig).patch_node(test_id + "-old", {"metadata": {"labels": {"kubeops.io/pool": test_id}}})
        yield kubeconfigs
    finally:
        for state_dir in dirs:
            local_cluster.down(state_dir)
        remove_small_scenario_nodes(cluster, test_id)


def test_a_fleet_goes_canary_first_stops_when_its_gate_trips_and_a_rerun_finishes_the_wave_side_by_side(
        fleet_kubeconfigs, test_id, tmp_path):
    kubeconfigs = fleet_kubeconfigs
    inventory = {"all": {"children": {"clusters": {"hosts": {}}, "kubeops_fleet_canary": {"hosts": {"first": {}}}}}}
    for host, kubeconfig in kubeconfigs.items():
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


def _merged_kubeconfig(kubeconfigs, path):
    """One kubeconfig with a context per cluster, named after it: what one kubeconfig credential of AWX holds."""
    merged = {"apiVersion": "v1", "kind": "Config", "clusters": [], "users": [], "contexts": []}
    for name, kubeconfig in kubeconfigs.items():
        with open(kubeconfig) as handle:
            config = yaml.safe_load(handle)
        merged["clusters"].append({"name": name, "cluster": config["clusters"][0]["cluster"]})
        merged["users"].append({"name": name, "user": config["users"][0]["user"]})
        merged["contexts"].append({"name": name, "context": {"cluster": name, "user": name}})
    merged["current-context"] = next(iter(kubeconfigs))
    path.write_text(yaml.safe_dump(merged))
    return str(path)


def test_a_fleet_as_an_awx_workflow_of_waves_checks_then_goes_canary_first_and_a_wave_killed_midway_finishes_once(
        cluster, fleet_kubeconfigs, test_id, tmp_path):
    kubeconfigs = fleet_kubeconfigs
    clusters = {host: Cluster(kubeconfig, cluster.kubectl_binary, False) for host, kubeconfig in kubeconfigs.items()}
    before = {host: {pod.metadata.uid for pod in _clients(kubeconfig).list_namespaced_pod(test_id).items}
              for host, kubeconfig in kubeconfigs.items()}
    evictions_before = {host: eviction_requests(clusters[host]) for host in clusters}
    # AWX's inventory of the clusters: a context each, one kubeconfig credential for all (K8S_AUTH_KUBECONFIG).
    host = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    inventory = {"all": {"children": {
        "clusters": {"hosts": {name: dict(host, kubeops_context=name) for name in kubeconfigs}},
        "kubeops_fleet_canary": {"hosts": {"first": {}}},
        "wave_2": {"hosts": {"second": {}, "third": {}}}}}}
    credential = {"K8S_AUTH_KUBECONFIG": _merged_kubeconfig(kubeconfigs, tmp_path / "fleet-kubeconfig")}
    fleet = {"kubeops_fleet_id": test_id, "kubeops_fleet_wave_size": 2,
             "kubeops_fleet_report_dir": str(tmp_path / "fleet"), "rotate_nodes_warm": False,
             "rotate_nodes_node_selector": "kubeops.io/pool=" + test_id, "rotate_nodes_retire": "delete_node"}

    def job(name, **options):
        base = private_data_dir(str(tmp_path / name), "rotate_fleet.yml", fleet, credential, inventory)
        return run_job(base, "rotate_fleet.yml", **options)

    checked = job("check", cmdline="--check")
    assert (checked.status, checked.rc) == ("successful", 0), describe(checked)
    report = job_artifacts(checked)["kubeops_fleet_report"]
    assert (report["outcome"], report["waves"]) == ("check", [["first"], ["second", "third"]])
    assert {entry["cluster"]: entry["outcome"] for entry in report["clusters"]} == dict.fromkeys(kubeconfigs, "check")
    plans = task_results(checked, "Show the plan")
    assert len(plans) == 3 and all("1 node(s) in 1 batch(es)" in result["msg"][0] for result in plans), plans
    for name, core in ((name, _clients(kubeconfig)) for name, kubeconfig in kubeconfigs.items()):
        assert not core.read_node(test_id + "-old").spec.unschedulable, "check mode cordoned %s" % name
        assert {pod.metadata.uid for pod in core.list_namespaced_pod(test_id).items} == before[name]

    canary = job("canary", limit="kubeops_fleet_canary")
    assert (canary.status, canary.rc) == ("successful", 0), describe(canary)
    report = job_artifacts(canary)["kubeops_fleet_report"]
    assert [(entry["cluster"], entry["outcome"], entry["nodes_rotated"]) for entry in report["clusters"]] == [
        ("first", "finished", 1)]
    assert not _clients(kubeconfigs["second"]).read_node(test_id + "-old").spec.unschedulable, "the wave waits"

    # The wave's job is cancelled once both of its clusters started (their old nodes cordoned), as a person
    # cancels a job in AWX or its execution node dies.
    def started():
        return all(_clients(kubeconfigs[name]).read_node(test_id + "-old").spec.unschedulable
                   for name in ("second", "third"))
    thread, killed = job("wave", run=ansible_runner.run_async, limit="wave_2",
                         cancel_callback=lambda: _started_or_gone(started),
                         # How often the cancel is looked at (5 s by default); it kills the job's process group.
                         settings={"pexpect_timeout": 0.2})
    thread.join(300)
    assert killed.status == "canceled", describe(killed)
    assert any(test_id + "-old" in {node.metadata.name for node in _clients(kubeconfigs[name]).list_node().items}
               for name in ("second", "third")), "the kill came before the wave finished"

    rerun = job("wave-again", limit="wave_2")
    assert (rerun.status, rerun.rc) == ("successful", 0), describe(rerun)
    report = job_artifacts(rerun)["kubeops_fleet_report"]
    assert [(entry["cluster"], entry["outcome"]) for entry in report["clusters"]] == [
        ("second", "finished"), ("third", "finished")]
    for name, kubeconfig in kubeconfigs.items():
        core = _clients(kubeconfig)
        assert test_id + "-old" not in {node.metadata.name for node in core.list_node().items}, name
        pods = core.list_namespaced_pod(test_id, label_selector="app=web").items
        assert len(pods) == 2 and not before[name] & {pod.metadata.uid for pod in pods}, name
        assert evictions_since(clusters[name], evictions_before[name]) == 2, "each pod of %s evicted once" % name


def _started_or_gone(started):
    """Whether to cancel the job: once ``started`` holds; a node already gone (its cluster done) counts."""
    try:
        return started()
    except ApiException as exc:
        if exc.status == 404:
            return True
        raise
