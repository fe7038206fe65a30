"""Retirement by the node's real owner, on the local control plane: a Cluster API node by deleting its Machine,
a node that nothing owns left cordoned and drained unless its Node object is asked for by name, in check mode
and for real. (The Karpenter NodeClaim case runs on the real Karpenter: test_karpenter.py.)

Cluster API itself does not run here (its providers need machines to create): the Machine CRD is installed
with the fields the collection reads, and the test does the Machine controller's one part that matters, removing
the Node once its Machine is deleted."""

from __future__ import annotations

import threading

import pytest
from ansible_run import WITH_KUBERNETES_CORE
from conftest import wait_until
from kubernetes import client as k8s_client
from kubernetes.client.rest import ApiException

GROUP, VERSION = "cluster.x-k8s.io", "v1beta1"
MACHINE_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "machines.cluster.x-k8s.io"},
    "spec": {"group": GROUP, "scope": "Namespaced",
             "names": {"plural": "machines", "singular": "machine", "kind": "Machine", "listKind": "MachineList"},
             "versions": [{"name": VERSION, "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                 "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]},
}


@pytest.fixture
def machines(cluster):
    extensions = k8s_client.ApiextensionsV1Api(cluster.api_client)
    custom = k8s_client.CustomObjectsApi(cluster.api_client)
    try:
        extensions.create_custom_resource_definition(MACHINE_CRD)
    except ApiException as exc:
        if exc.status != 409:
            raise

    def served():
        try:
            custom.list_cluster_custom_object(GROUP, VERSION, "machines")
            return True
        except ApiException:
            return False

    wait_until(served, 30, "the Machine CRD to be served")
    yield custom
    extensions.delete_custom_resource_definition(MACHINE_CRD["metadata"]["name"])


def remove_nodes_of_deleted_machines(cluster, custom, namespace, stop):
    """The Machine controller's part: once a Machine is gone, its Node goes."""
    known = {}
    while not stop.wait(0.5):
        current = {m["metadata"]["name"]: m["status"]["nodeRef"]["name"]
                   for m in custom.list_namespaced_custom_object(GROUP, VERSION, namespace, "machines")["items"]}
        for name, node in known.items():
            if name not in current:
                try:
                    cluster.core.delete_node(node)
                except ApiException:
                    pass
        known = current


def phase(cluster, name):
    return (cluster.core.read_node(name).metadata.annotations or {}).get("kubeops.io/rotation-phase")


def test_a_machines_node_is_retired_by_deleting_the_machine_and_an_ownerless_one_only_when_asked(
        cluster, namespace, make_nodes, machines, run_play, test_id):
    owned, ownerless = make_nodes(2, prefix="retire")
    machine = {"apiVersion": "%s/%s" % (GROUP, VERSION), "kind": "Machine",
               "metadata": {"name": "workers-" + test_id, "namespace": namespace},
               "spec": {"clusterName": "c1"}, "status": {"nodeRef": {"kind": "Node", "name": owned}}}
    machines.create_namespaced_custom_object(GROUP, VERSION, namespace, "machines", machine)
    retire = {"nodes": [owned, ownerless], "rotation_id": "r-" + test_id, "phase": "retired", "delete": True,
              "timeout": 60}
    key = "%s/workers-%s" % (namespace, test_id)

    checked = run_play([{"kubeops.rotation.rotation_state": retire, "diff": True}], check=True)
    assert checked.rc == 0, checked
    by_name = {entry["name"]: entry for entry in checked.steps[0]["nodes"]}
    assert by_name[owned]["action"] == "deleted Machine %s" % key and by_name[owned]["machine"] == key
    assert by_name[ownerless]["action"] == "left"
    assert "no NodeClaim or Cluster API Machine owns it" in by_name[ownerless]["retire"]
    assert checked.steps[0]["diff"]["after"][owned] == {"rotation_id": "r-" + test_id, "phase": "retired",
                                                        "deleted": "Machine %s" % key}
    assert checked.steps[0]["diff"]["after"][ownerless]["phase"] == "drained"
    assert machines.get_namespaced_custom_object(GROUP, VERSION, namespace, "machines", "workers-" + test_id)
    assert phase(cluster, owned) is None and phase(cluster, ownerless) is None, "check mode changed nothing"

    stop = threading.Event()
    controller = threading.Thread(target=remove_nodes_of_deleted_machines,
                                  args=(cluster, machines, namespace, stop), daemon=True)
    controller.start()
    try:
        done = run_play([{"kubeops.rotation.rotation_state": retire}])
    finally:
        stop.set()
        controller.join(5)
    assert done.rc == 0, done
    assert "%s: left cordoned and drained" % ownerless in done.stdout + done.stderr, "a warning says which stays"
    names = {node.metadata.name for node in cluster.core.list_node().items}
    assert owned not in names, "the module returns once the Machine's Node is gone"
    assert ownerless in names and phase(cluster, ownerless) == "drained"

    asked = run_play([{"kubeops.rotation.rotation_state": dict(retire, nodes=[ownerless],
                                                               delete_node_without_owner=True)}])
    assert asked.rc == 0, asked
    assert asked.steps[0]["nodes"][0]["action"] == "deleted"
    assert ownerless not in {node.metadata.name for node in cluster.core.list_node().items}


def test_kubernetes_core_connection_habits_reach_the_collections_modules(cluster, run_play):
    """module_defaults for kubernetes.core's group, and kubernetes.core's environment variable names; the
    process's own KUBECONFIG points at nothing, so only they can connect the module."""
    nowhere = {"KUBECONFIG": "/nonexistent"}
    by_group = run_play([{"kubeops.rotation.cluster_info": {}, "environment": nowhere,
                          "module_defaults": {"group/kubernetes.core.k8s": {"kubeconfig": cluster.kubeconfig}}}],
                        connection={"kubeconfig": "{{ omit }}"}, collections_path=WITH_KUBERNETES_CORE)
    assert by_group.rc == 0, by_group
    by_environment = run_play([{"kubeops.rotation.cluster_info": {},
                                "environment": dict(nowhere, K8S_AUTH_KUBECONFIG=cluster.kubeconfig)}],
                              connection={"kubeconfig": "{{ omit }}"})
    assert by_environment.rc == 0, by_environment
    unconnected = run_play([{"kubeops.rotation.cluster_info": {}, "environment": nowhere}],
                           connection={"kubeconfig": "{{ omit }}"})
    assert unconnected.rc != 0, "without them nothing connects: the two above are not vacuous"
