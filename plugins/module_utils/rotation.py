# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The snapshot a rotation plan is made from: one list per kind, then planning.plan_rotation."""

from __future__ import annotations

import datetime

from ansible_collections.kubeops.rotation.plugins.module_utils.eviction import SelectionError, claim_zones
from ansible_collections.kubeops.rotation.plugins.module_utils.planning import plan_rotation
from ansible_collections.kubeops.rotation.plugins.module_utils.pods import FilterOptions, controller_of
from ansible_collections.kubeops.rotation.plugins.module_utils.warm import template_allocatable


def replica_set_owners(client):
    """(namespace, ReplicaSet name) -> name of the Deployment that owns it, for every ReplicaSet."""
    owners = {}
    for replica_set in client.list_all(client.apps.list_replica_set_for_all_namespaces):
        owner = controller_of(replica_set)
        if owner and owner.get("kind") == "Deployment":
            owners[(replica_set["metadata"]["namespace"], replica_set["metadata"]["name"])] = owner["name"]
    return owners


def plan_from_cluster(client, params, now=None):
    """Read nodes, pods, PDBs, ReplicaSets, Deployments and StatefulSets once each, and plan."""
    nodes = client.list_all(client.core.list_node)
    names = {node["metadata"]["name"] for node in nodes}
    missing = sorted(set(params.get("nodes") or ()) - names)
    if missing:
        raise SelectionError("No node named %s; nothing was planned." % ", ".join(missing))
    candidates = set(params.get("nodes") or ())
    if params.get("node_selector"):
        candidates |= {node["metadata"]["name"] for node in
                       client.list_all(client.core.list_node, label_selector=params["node_selector"])}
    pods = client.list_all(client.core.list_pod_for_all_namespaces)
    pdbs = client.list_all(client.policy.list_pod_disruption_budget_for_all_namespaces)
    owners = replica_set_owners(client)
    replicas = {}
    for kind, method in (("Deployment", client.apps.list_deployment_for_all_namespaces),
                         ("StatefulSet", client.apps.list_stateful_set_for_all_namespaces)):
        for obj in client.list_all(method):
            replicas[(kind, obj["metadata"]["namespace"], obj["metadata"]["name"])] = obj["spec"].get("replicas", 1)
    template = None
    if params.get("template_capacity") or params.get("template_node") or params.get("pool_node_selector"):
        template, _source = template_allocatable(client, {
            "template_capacity": params.get("template_capacity"), "template_node": params.get("template_node"),
            "node_selector": params.get("pool_node_selector")})
    settings = {
        "candidates": candidates,
        "named": set(params.get("nodes") or ()),
        "rules": {"target_kubelet_version": params.get("target_kubelet_version"),
                  "labels": params.get("wanted_labels"), "max_node_age": params.get("max_node_age"),
                  "annotations": params.get("with_annotations"), "taints": params.get("with_taints")},
        "rotation_id": params.get("rotation_id"),
        "batch_size": params.get("batch_size"),
        "most_disruptive": params.get("most_disruptive"),
        "options": FilterOptions(force=params.get("force", False),
                                 delete_emptydir_data=params.get("delete_emptydir_data", False),
                                 evict_system_critical=params.get("evict_system_critical", False)),
        "pool_labels": params.get("pool_node_selector") or {},
        "template_allocatable": template,
        "abort_if": params.get("abort_if"),
    }
    on_candidates = [pod for pod in pods if (pod.get("spec") or {}).get("nodeName") in candidates]
    now = now or datetime.datetime.now(datetime.timezone.utc)
    return plan_rotation(nodes, pods, pdbs, owners, replicas, settings, now,
                         claim_zones(client, on_candidates))
