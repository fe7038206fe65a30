# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Workloads: the one shape for "the object that owns a pod"."""

from __future__ import annotations

from dataclasses import dataclass

from ansible_collections.kubeops.rotation.plugins.module_utils.model.pods import controller_of

RESTARTABLE_KINDS = ("Deployment", "StatefulSet", "DaemonSet")
# Kinds that keep a replica count, so that an evicted pod comes back.
REPLICATED_KINDS = ("Deployment", "StatefulSet", "ReplicaSet", "ReplicationController")


@dataclass(frozen=True, order=True)
class Workload:
    """A pod's controller, a ReplicaSet seen through to the Deployment that owns it."""

    kind: str
    namespace: str
    name: str

    @property
    def key(self):
        """"namespace/Kind/name", how results name an owner."""
        return "%s/%s/%s" % (self.namespace, self.kind, self.name)

    @property
    def label(self):
        return "%s %s/%s" % (self.kind, self.namespace, self.name)

    def target(self):
        """The workload as rollout_restart's ``targets`` take it."""
        return {"kind": self.kind, "namespace": self.namespace, "name": self.name}


def workload_from_key(key):
    """The Workload of a "namespace/Kind/name" key, or None when the text is not one."""
    parts = str(key).split("/")
    if len(parts) != 3 or not all(parts):
        return None
    return Workload(parts[1], parts[0], parts[2])


def replica_set_owners(replica_sets):
    """(namespace, ReplicaSet name) -> name of the Deployment that owns it, for ``replica_sets`` (API JSON)."""
    owners = {}
    for replica_set in replica_sets:
        owner = controller_of(replica_set)
        if owner and owner.get("kind") == "Deployment":
            owners[(replica_set["metadata"]["namespace"], replica_set["metadata"]["name"])] = owner["name"]
    return owners


def owner_of(pod, replica_set_owners):
    """The Workload that owns ``pod`` (its ReplicaSet's Deployment when ``replica_set_owners`` knows
    one, otherwise the controller itself), or None for a bare pod."""
    owner = controller_of(pod)
    if not owner:
        return None
    namespace = pod["metadata"]["namespace"]
    if owner["kind"] == "ReplicaSet":
        deployment = replica_set_owners.get((namespace, owner["name"]))
        if deployment:
            return Workload("Deployment", namespace, deployment)
    return Workload(owner["kind"], namespace, owner["name"])


class OwnerCache:
    """owner_of for many pods: the Workload is worked out once per controller, not once per pod."""

    def __init__(self, replica_set_owners):
        self.replica_set_owners = replica_set_owners
        self._known = {}

    def owner_of(self, pod):
        controller = controller_of(pod)
        if not controller:
            return None
        reference = (pod["metadata"]["namespace"], controller["kind"], controller["name"])
        if reference not in self._known:
            self._known[reference] = owner_of(pod, self.replica_set_owners)
        return self._known[reference]
