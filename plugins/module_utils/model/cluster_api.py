# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Cluster API's Machines (cluster.x-k8s.io, API JSON): which one owns a node."""

from __future__ import annotations

GROUP, VERSION = "cluster.x-k8s.io", "v1beta1"
# Set by Cluster API's Machine controller on the Node of each Machine.
MACHINE_ANNOTATION = "cluster.x-k8s.io/machine"
CLUSTER_NAMESPACE_ANNOTATION = "cluster.x-k8s.io/cluster-namespace"


def machine_key(machine):
    return "%s/%s" % (machine["metadata"]["namespace"], machine["metadata"]["name"])


def machines_by_node(machines):
    """{node name: Machine} for the Machines whose status names their Node."""
    found = {}
    for machine in machines:
        node = (((machine.get("status") or {}).get("nodeRef")) or {}).get("name")
        if node:
            found[node] = machine
    return found


def annotated_machine(node):
    """The "namespace/name" of the Machine the node's annotations name, or None (the Machine may live in a
    management cluster that this connection does not reach)."""
    annotations = (node.get("metadata") or {}).get("annotations") or {}
    name = annotations.get(MACHINE_ANNOTATION)
    if not name:
        return None
    return "%s/%s" % (annotations.get(CLUSTER_NAMESPACE_ANNOTATION) or "default", name)
