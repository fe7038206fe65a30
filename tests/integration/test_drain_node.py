"""The drain_node role through its playbook, ansible-playbook kubeops.rotation.drain_node."""

from __future__ import annotations

import os
import signal
import time

from ansible_run import run_collection_playbook
from conftest import TEST_LABEL, deployment_under_pdb, wait_until
from kube import daemon_set, deployment, eviction_requests, evictions_since, running_pods


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
    deployment_under_pdb(cluster, namespace, test_id, "db", 1, max_unavailable=0)

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


def state_and_parent(pid):
    """A process's state letter and parent pid from /proc, or None when it is gone."""
    try:
        with open("/proc/%s/stat" % pid) as handle:
            # "pid (comm) state ppid ...": comm may hold spaces and parentheses
            state, parent = handle.read().rsplit(")", 1)[1].split()[:2]
    except (OSError, IndexError, ValueError):
        return None
    return state, int(parent)


def runners_of(controller_pid):
    """The processes that run the modules of the ansible-playbook ``controller_pid``: its workers (a module that runs
    with ansible-playbook's own Python runs inside one) and the module processes of their own that name it."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/environ" % pid, "rb") as handle:
                environ = handle.read().split(b"\0")
        except OSError:
            continue
        known = state_and_parent(pid)
        if known and (known[1] == controller_pid
                      or ("KUBEOPS_CONTROLLER_PID=%d" % controller_pid).encode() in environ):
            found.append(int(pid))
    return found


def alive(pids):
    """The processes of ``pids`` still running (a zombie, ended and not yet reaped, is not)."""
    return [pid for pid in pids if (state_and_parent(pid) or ("Z",))[0] != "Z"]


def test_a_killed_drain_stops_its_module_and_evicts_nothing_after(cluster, namespace, make_nodes, test_id,
                                                                  tmp_path):
    (old,) = make_nodes(1, prefix="old")
    deployment_under_pdb(cluster, namespace, test_id, "db", 2, max_unavailable=0)
    make_nodes(1, prefix="new")
    before = eviction_requests(cluster)
    play = run_collection_playbook("kubeops.rotation.drain_node", {
        "kubeops_kubeconfig": cluster.kubeconfig, "drain_node_nodes": [old], "drain_node_timeout": 120},
        str(tmp_path), background=True)
    runners = []
    try:
        # ansible-core runs each task in a worker of a session of its own: killing the play's group does not reach
        # it, nor a module process it started
        wait_until(lambda: cluster.core.read_node(old).spec.unschedulable and runners_of(play.pid), 60,
                   "the drain's eviction to run")
        time.sleep(3)
        runners = runners_of(play.pid)
    finally:
        os.killpg(play.pid, signal.SIGKILL)
        play.wait()
    try:
        assert runners
        wait_until(lambda: not alive(runners), 10, "the module to stop with its play")
        # Were it still running, it would evict both pods as soon as the PDB allows it.
        cluster.policy.patch_namespaced_pod_disruption_budget("db", namespace, {"spec": {"maxUnavailable": 2}})
        time.sleep(5)
        assert evictions_since(cluster, before) == 0
        assert len([pod for pod in cluster.pods(namespace, "app=db") if pod.spec.node_name == old]) == 2
    finally:
        # killed, it could not release the cluster's Lease, which would refuse the next tests until it expires
        cluster.coordination.delete_namespaced_lease("kubeops-rotation", "kube-system")
