# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The API calls of each workload kind, behind one lookup, and reads of one workload."""

from __future__ import annotations

from collections import namedtuple

from ansible_collections.kubeops.rotation.plugins.module_utils.api.errors import ApiException, is_not_found
from ansible_collections.kubeops.rotation.plugins.module_utils.api.watch import Informer, list_resource_version
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


def read_workload(client, workload, required=False):
    """The workload (a Workload) as a dict; None when it is gone, or with ``required`` the API's 404."""
    read = kind_api(client, workload.kind).read
    if required:
        return client.call_json(read, workload.name, workload.namespace)
    return client.read_or_none(read, workload.name, workload.namespace)


def workloads_in(client, kind, namespace=None, label_selector=None):
    """The workloads of ``kind`` in a namespace (None: in every one) matching a label selector, as dicts (with
    their managedFields: who else sets spec.replicas)."""
    calls = kind_api(client, kind)
    if namespace is None:
        return client.list_all(calls.list_all, label_selector=label_selector, managed_fields=True)
    return client.list_all(calls.list_namespaced, namespace=namespace, label_selector=label_selector,
                           managed_fields=True)


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
    return client.list_all(client.apps.list_deployment_for_all_namespaces, label_selector=SURGE_LABEL,
                           managed_fields=True)


def autoscalers_in(client, namespace):
    """The HorizontalPodAutoscalers (autoscaling/v2) of a namespace, as dicts."""
    return client.list_all(client.autoscaling.list_namespaced_horizontal_pod_autoscaler, namespace=namespace)


def patch_autoscaler(client, namespace, name, body):
    return client.call_json(client.autoscaling.patch_namespaced_horizontal_pod_autoscaler, name, namespace, body)


def pdbs_in(client, namespace=None):
    """The PodDisruptionBudgets of a namespace (None: of every one), as dicts."""
    if namespace is None:
        return client.list_all(client.policy.list_pod_disruption_budget_for_all_namespaces)
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


def pod_now(client, pod):
    """``pod`` as it is now, or None when it is gone (or a new pod took its name): read before an eviction or
    deletion whose answer was lost is asked again, so that no pod is evicted twice."""
    metadata = pod["metadata"]
    current = client.read_or_none(client.core.read_namespaced_pod, metadata["name"], metadata["namespace"])
    return current if current is not None and current["metadata"].get("uid") == metadata["uid"] else None


def delete_pod(client, pod, delete_options):
    metadata = pod["metadata"]
    client.core.delete_namespaced_pod(metadata["name"], metadata["namespace"], body=delete_options)


def _pods_list(client, namespace=None, node=None, label_selector=None):
    """(list call, its arguments) of the pods of a namespace (None: of every one), on a node, matching a selector."""
    kwargs = {}
    if node:
        kwargs["field_selector"] = "spec.nodeName=%s" % node
    if label_selector:
        kwargs["label_selector"] = label_selector
    if namespace is None:
        return client.core.list_pod_for_all_namespaces, kwargs
    return client.core.list_namespaced_pod, dict(kwargs, namespace=namespace)


def pods_informer(client, namespace=None, node=None, label_selector=None, clock=None):
    """An Informer of the pods of a namespace (None: of every one), on one node, matching a label selector."""
    list_method, kwargs = _pods_list(client, namespace, node, label_selector)
    return Informer(client, list_method, clock, **kwargs)


def pods_in(client, namespace=None, label_selector=None):
    """The pods of a namespace (None: of every one) matching a label selector, as dicts."""
    if namespace is None:
        return client.list_all(client.core.list_pod_for_all_namespaces, label_selector=label_selector)
    return client.list_all(client.core.list_namespaced_pod, namespace=namespace, label_selector=label_selector)


def pods_version(client, namespace=None, node=None):
    """The resourceVersion a watch of those pods starts from to miss nothing that happens after this call."""
    list_method, kwargs = _pods_list(client, namespace, node)
    return list_resource_version(list_method, **kwargs)


def pdbs_informer(client, namespace=None):
    """An Informer of the PodDisruptionBudgets of a namespace (None: of every one)."""
    if namespace is None:
        return Informer(client, client.policy.list_pod_disruption_budget_for_all_namespaces)
    return Informer(client, client.policy.list_namespaced_pod_disruption_budget, namespace=namespace)


def workload_informer(client, workload, clock=None):
    """An Informer of one workload."""
    return Informer(client, kind_api(client, workload.kind).list_namespaced, clock, namespace=workload.namespace,
                    field_selector="metadata.name=%s" % workload.name)
