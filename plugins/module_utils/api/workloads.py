# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The API calls of each workload kind, behind one lookup, and reads of one workload."""

from __future__ import annotations

from collections import namedtuple

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
