"""What a person sees while a long step waits: a drain held by a PodDisruptionBudget, run as AWX runs a job
(through ansible-runner), says in the job's output at least every 30 s what it waits for; the pod carries an
Event that says which PDB holds it; the cluster's Lease carries the same line for kubectl to show."""

from __future__ import annotations

import datetime
import os
import sys
import threading

import ansible_runner
import yaml
from ansible_run import INSTALLED_COLLECTIONS
from conftest import TEST_LABEL, wait_until
from kube import deployment, pdb, running_pods

HELD_SECONDS = 50
PLAYBOOK = """
- name: Drain, as a job template would
  hosts: localhost
  gather_facts: false
  module_defaults:
    group/kubeops.rotation.k8s:
      kubeconfig: "{{ kubeconfig }}"
  roles:
    - role: kubeops.rotation.drain_node
"""


def progress_annotation(cluster):
    lease = cluster.coordination.read_namespaced_lease("kubeops-rotation", "kube-system")
    return (lease.metadata.annotations or {}).get("kubeops.io/progress")


def created(event):
    return datetime.datetime.fromisoformat(event["created"])


def test_a_drain_held_by_a_pdb_says_what_it_waits_for_in_the_job_output_on_the_pod_and_on_the_lease(
        cluster, namespace, make_nodes, tmp_path, test_id):
    (old,) = make_nodes(1, prefix="old")
    cluster.apps.create_namespaced_deployment(namespace, deployment("db", 1, {TEST_LABEL: test_id}))
    cluster.apps.create_namespaced_deployment(namespace, deployment("web", 1, {TEST_LABEL: test_id}))
    cluster.policy.create_namespaced_pod_disruption_budget(namespace, pdb("db", {"app": "db"}, max_unavailable=0))
    wait_until(lambda: running_pods(cluster, namespace, "app=db", 1), 60, "the db pod")
    wait_until(lambda: running_pods(cluster, namespace, "app=web", 1), 60, "the web pod")
    base = str(tmp_path / "job")
    for folder in ("env", "inventory", "project"):
        os.makedirs(os.path.join(base, folder))
    (tmp_path / "job" / "project" / "drain.yml").write_text(PLAYBOOK)
    (tmp_path / "job" / "inventory" / "hosts").write_text(
        "localhost ansible_connection=local ansible_python_interpreter=%s\n" % sys.executable)
    (tmp_path / "job" / "env" / "extravars").write_text(yaml.safe_dump({
        "kubeconfig": cluster.kubeconfig, "drain_node_nodes": [old], "drain_node_timeout": HELD_SECONDS,
        "drain_node_run_id": test_id}))
    seen_on_lease = []
    stop = threading.Event()

    def sample_lease():
        while not stop.wait(2):
            try:
                seen_on_lease.append(progress_annotation(cluster))
            except Exception:  # pylint: disable=broad-except  # not taken yet
                continue

    sampler = threading.Thread(target=sample_lease, daemon=True)
    sampler.start()
    try:
        runner = ansible_runner.run(private_data_dir=base, playbook="drain.yml", quiet=True, timeout=300,
                                    envvars={"ANSIBLE_COLLECTIONS_PATH": INSTALLED_COLLECTIONS,
                                             "PATH": os.path.dirname(sys.executable) + os.pathsep +
                                             os.environ.get("PATH", "")})
    finally:
        stop.set()
        sampler.join(5)
    assert runner.rc != 0, "the PDB never allows the eviction: the drain times out"
    events = list(runner.events)
    evict_started = next(event for event in events if event["event"] == "playbook_on_task_start"
                         and "Evict" in event["event_data"].get("task", ""))
    evict_ended = next(event for event in events if event["event"] in ("runner_on_failed", "runner_on_ok")
                       and "Evict" in event["event_data"].get("task", ""))
    lines = [event for event in events if event["event"] == "verbose" and "evicting:" in (event.get("stdout") or "")]
    assert lines, "no progress line in the job output: %s" % [event.get("stdout") for event in events][-20:]
    held = "held by PDB %s/db" % namespace
    assert all(held in event["stdout"] for event in lines), [event["stdout"] for event in lines]
    # web, which nothing holds, is gone at once, and seen gone while db waits.
    assert "evicting: 1 of 2 pods gone; waiting: 1 held by PDB" in lines[-1]["stdout"], lines[-1]["stdout"]
    moments = [created(evict_started)] + [created(event) for event in lines] + [created(evict_ended)]
    gaps = [(later - earlier).total_seconds() for earlier, later in zip(moments, moments[1:])]
    assert max(gaps) <= 30, "a line at least every 30 s while it waits: gaps %s" % gaps

    pod = running_pods(cluster, namespace, "app=db", 1)[0]
    pod_events = cluster.core.list_namespaced_event(
        namespace, field_selector="involvedObject.name=%s" % pod.metadata.name).items
    held_events = [event for event in pod_events if event.reason == "EvictionHeld"]
    assert len(held_events) == 1 and "PDB %s/db" % namespace in held_events[0].message, \
        [(event.reason, event.message) for event in pod_events]
    assert any(line and held in line for line in seen_on_lease), seen_on_lease
