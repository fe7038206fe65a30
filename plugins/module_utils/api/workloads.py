# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The API calls of each workload kind, behind one lookup, and reads of one workload."""

from __future__ import annotations

from collections import namedtuple

from ansible_collections.kubeops.rotation.plugins.module_utils.api.errors import ApiException, is_not_found
from ansible_collections.kubeops.rotation.plugins.module_utils.api.watch import Informer
from ansible_collections.kubeops.rotation.plugins.module_utils.model.keys import SURGE_LABEL
from ansible_collections.kubeops.rotation.plugins.module_utils.model.owners import Workload
from ansible_collections.kubeops.rotation.plugins.module_utils.model.pods import controller_of

KindApi = namedtuple("KindApi", "read patch list_namespaced list_all")

_METHODS = {
    "Deployment": ("apps", "deployment"),
    "StatefulSet": ("apps", "stateful_set"),
    "DaemonSet": ("apps", "daemon_set"),
    "ReplicaSet": ("apps", "replica_set"),
    "ReplicationController": ("core", "replication_controller"),
}


def kind_api(client, kind):
    """The read, patch and list calls of a workload kind."""
    group, suffix = _METHODS[kind]
    api = getattr(client, group)
    return KindApi(getattr(api, "read_namespaced_%s" % suffix), getattr(api, "patch_namespaced_%s" % suffix),
                   getattr(api, "list_namespaced_%s" % suffix), getattr(api, "list_%s_for_all_namespaces" % suffix))


def read_workload(client, workload):
    """The workload (a Workload) as a dict, or None when it is gone."""
    return client.read_or_none(kind_api(client, workload.kind).read, workload.name, workload.namespace)


def deployment_of(client, namespace, replica_set):
    """The Workload of the Deployment that owns a ReplicaSet, or None (gone, or a ReplicaSet of its own)."""
    obj = read_workload(client, Workload("ReplicaSet", namespace, replica_set))
    owner = controller_of(obj) if obj else None
    return Workload("Deployment", namespace, owner["name"]) if owner and owner.get("kind") == "Deployment" else None


def patch_workload(client, workload, body):
    """Patch the workload (a merge of ``body``); its new state as a dict."""
    return client.call_json(kind_api(client, workload.kind).patch, workload.name, workload.namespace, body)


def surging_deployments(client):
    """Every Deployment that carries the surge label (model.keys.SURGE_LABEL), as dicts."""
    return client.list_all(client.apps.list_deployment_for_all_namespaces, label_selector=SURGE_LABEL)


def autoscalers_in(client, namespace):
    """The HorizontalPodAutoscalers (autoscaling/v2) of a namespace, as dicts."""
    return client.list_all(client.autoscaling.list_namespaced_horizontal_pod_autoscaler, namespace=namespace)


def patch_autoscaler(client, namespace, name, body):
    return client.call_json(client.autoscaling.patch_namespaced_horizontal_pod_autoscaler, name, namespace, body)


def pdbs_in(client, namespace):
    return client.list_all(client.policy.list_namespaced_pod_disruption_budget, namespace=namespace)


def patch_pod(client, namespace, name, body):
    """Patch a pod; False when it is gone."""
    try:
        client.call_json(client.core.patch_namespaced_pod, name, namespace, body)
        return True
    except ApiException as exc:
        if is_not_found(exc):
            return False
        raise


def evict_pod(client, pod, delete_options=None):
    """Ask the Eviction API to remove ``pod``, with ``delete_options`` (by default, this very pod: its uid as a
    precondition)."""
    metadata = pod["metadata"]
    client.core.create_namespaced_pod_eviction(metadata["name"], metadata["namespace"], {
        "apiVersion": "policy/v1", "kind": "Eviction",
        "metadata": {"name": metadata["name"], "namespace": metadata["namespace"]},
        "deleteOptions": delete_options or {"preconditions": {"uid": metadata["uid"]}}})


def is_removed(client, pod):
    """Whether ``pod`` is gone or being deleted: read before an eviction or deletion whose answer was lost is
    asked again, so that no pod is evicted twice."""
    metadata = pod["metadata"]
    current = client.read_or_none(client.core.read_namespaced_pod, metadata["name"], metadata["namespace"])
    return current is None or current["metadata"].get("uid") != metadata["uid"] or \
        bool(current["metadata"].get("deletionTimestamp"))


def pods_informer(client, namespace):
    """An Informer of the pods of a namespace."""
    return Informer(client, client.core.list_namespaced_pod, namespace=namespace)


def workload_informer(client, workload):
    """An Informer of one workload."""
    return Informer(client, kind_api(client, workload.kind).list_namespaced, namespace=workload.namespace,
                    field_selector="metadata.name=%s" % workload.name)
