"""One run at a time: the cluster's Lease refuses a second rotation before it writes anything.

Autoscaler: the test provisioner (tests/cluster/provisioner.py), node-group style: a fixed pool that scales up
from pending pods, as cluster-autoscaler with an ASG does. The rotation and warm nodes on the real Karpenter
are in test_karpenter.py.
"""

from __future__ import annotations

import os
import signal

from ansible_run import run_collection_playbook
from conftest import wait_until

LEASE = ("kubeops-rotation", "kube-system")


def lease_holder(cluster):
    try:
        lease = cluster.coordination.read_namespaced_lease(*LEASE)
    except Exception:  # pylint: disable=broad-except  # not created yet
        return None
    return lease.spec.holder_identity


def test_a_second_rotation_is_refused_before_any_write_and_a_killed_one_is_taken_over(cluster, demo, tmp_path):
    rotation = dict(demo.rotation, kubeops_kubeconfig=cluster.kubeconfig, rotate_nodes_lease_seconds=20)
    first = run_collection_playbook("kubeops.rotation.rotate_nodes", rotation, str(tmp_path), background=True)
    try:
        wait_until(lambda: (lease_holder(cluster) or "").startswith(rotation["rotate_nodes_id"]), 120,
                   "the first rotation to hold the Lease")
        second = run_collection_playbook("kubeops.rotation.rotate_nodes", dict(
            rotation, rotate_nodes_id="other-" + rotation["rotate_nodes_id"]), str(tmp_path))
        assert second.returncode != 0
        assert "Another run holds the Lease kube-system/kubeops-rotation: %s" % rotation["rotate_nodes_id"] \
            in second.stdout, second.stdout[-3000:]
        # It wrote nothing: the first run is still the one recorded on every node that is left.
        for node in cluster.core.list_node(label_selector="kubeops.io/pool=" + demo.old_pool).items:
            assert (node.metadata.annotations or {}).get("kubeops.io/rotation-id") != \
                "other-" + rotation["rotate_nodes_id"]
        assert (lease_holder(cluster) or "").startswith(rotation["rotate_nodes_id"]), "the first run keeps it"
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
    # Killed: its Lease is still held. A rerun with its id takes it over at once and finishes.
    assert (lease_holder(cluster) or "").startswith(rotation["rotate_nodes_id"])
    completed, watcher, _seconds = demo.rotate(str(tmp_path), extra={"rotate_nodes_lease_seconds": 20})
    assert completed.returncode == 0, completed.stdout[-4000:]
    assert demo.verify(watcher) == []
    assert lease_holder(cluster) is None, "the Lease is released at the end"
