# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""What a plan reads from the cluster, each kind listed once: pods to judge, volume zones, owners,
pool sizes, and the whole snapshot a rotation is planned from."""

from __future__ import annotations

from collections import namedtuple

from ansible_collections.kubeops.rotation.plugins.module_utils.api.client import each_concurrently
from ansible_collections.kubeops.rotation.plugins.module_utils.api.karpenter import node_claims, node_pools
from ansible_collections.kubeops.rotation.plugins.module_utils.api.nodes import list_nodes
from ansible_collections.kubeops.rotation.plugins.module_utils.api.workloads import pods_in
from ansible_collections.kubeops.rotation.plugins.module_utils.model.errors import NotFound
from ansible_collections.kubeops.rotation.plugins.module_utils.model.karpenter import claim_node, claim_pool
from ansible_collections.kubeops.rotation.plugins.module_utils.model.keys import LEGACY_ZONE_LABEL, ZONE_LABEL
from ansible_collections.kubeops.rotation.plugins.module_utils.model.nodes import node_name
from ansible_collections.kubeops.rotation.plugins.module_utils.model.owners import replica_set_owners
from ansible_collections.kubeops.rotation.plugins.module_utils.model.pods import by_node_and_key, node_of
from ansible_collections.kubeops.rotation.plugins.module_utils.model.selectors import labels_text

# Up to this many nodes, their pods are listed node by node: the API server indexes pods by node, so a drain
# of a few nodes reads their pods rather than every pod of a large cluster. Beyond it, one list of every pod
# takes fewer requests.
NODE_BY_NODE_LISTS = 50

RotationSnapshot = namedtuple("RotationSnapshot", "nodes candidates pods pdbs owners claim_zones node_claims node_pools "
                                                  "deployments stateful_sets hpas missing")


def select_pods(client, nodes=None, node_selector=None, namespaces=None, pod_selector=None, field_selector=None):
    """The pods to judge and the names of the selected nodes, read once for the whole call: the pods of the
    selected nodes (pods_on_nodes), else those of ``namespaces``, else all, narrowed by the selectors.

    A named node or namespace that does not exist is NotFound: a drain of a
    misspelt namespace must not look like a drain with nothing to do.
    """
    unknown = [namespace for namespace in namespaces or ()
               if client.read_or_none(client.core.read_namespace, namespace) is None]
    if unknown:
        raise NotFound("No namespace named %s; nothing was changed." % ", ".join(sorted(unknown)))
    if nodes or node_selector:
        found, missing = client.read_nodes(nodes, node_selector)
        if missing:
            raise NotFound.nodes(missing)
        node_names = [node_name(node) for node in found]
        return pods_on_nodes(client, node_names, pod_selector, field_selector), node_names
    selectors = {"label_selector": pod_selector, "field_selector": field_selector}
    if namespaces:
        pods = []
        for namespace in namespaces:
            pods.extend(client.list_all(client.core.list_namespaced_pod, namespace=namespace, **selectors))
    else:
        pods = client.list_all(client.core.list_pod_for_all_namespaces, **selectors)
    pods.sort(key=by_node_and_key)
    return pods, []


def every_node_and_pod(client):
    """(every node, every pod), the two lists side by side."""
    nodes, pods = each_concurrently(lambda read: read(), [lambda: list_nodes(client), lambda: pods_in(client)])
    return nodes, pods


def pods_on_nodes(client, node_names, label_selector=None, field_selector=None):
    """The pods on the nodes ``node_names`` (in every namespace), sorted by node and key: a list per node (a few
    at once) up to NODE_BY_NODE_LISTS nodes, which reads only their pods, beyond that one list of all pods."""
    fields = [field_selector] if field_selector else []
    if len(node_names) <= NODE_BY_NODE_LISTS:
        pods = [pod for listed in each_concurrently(lambda name: client.list_all(
            client.core.list_pod_for_all_namespaces, label_selector=label_selector,
            field_selector=",".join(fields + ["spec.nodeName=%s" % name])), list(node_names)) for pod in listed]
    else:
        wanted = set(node_names)
        pods = [pod for pod in client.list_all(client.core.list_pod_for_all_namespaces, label_selector=label_selector,
                                               field_selector=",".join(fields) or None)
                if node_of(pod) in wanted]
    pods.sort(key=by_node_and_key)
    return pods


def claim_zones(client, pods):
    """"namespace/claim" -> zone of its PersistentVolume's node affinity (or None), for the pods' PVCs."""
    zones = {}
    for pod in pods:
        namespace = pod["metadata"]["namespace"]
        for volume in (pod.get("spec") or {}).get("volumes") or []:
            claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
            if not claim or "%s/%s" % (namespace, claim) in zones:
                continue
            zones["%s/%s" % (namespace, claim)] = _volume_zone(client, namespace, claim)
    return zones


def _volume_zone(client, namespace, claim):
    bound = client.read_or_none(client.core.read_namespaced_persistent_volume_claim, claim, namespace)
    volume_name = ((bound or {}).get("spec") or {}).get("volumeName")
    volume = client.read_or_none(client.core.read_persistent_volume, volume_name) if volume_name else None
    if not volume:
        return None
    terms = (((volume.get("spec") or {}).get("nodeAffinity") or {}).get("required") or {}).get(
        "nodeSelectorTerms") or []
    for term in terms:
        for expression in term.get("matchExpressions") or []:
            if expression.get("key") in (ZONE_LABEL, LEGACY_ZONE_LABEL):
                return ",".join(expression.get("values") or [])
    return None


def owners_of_replica_sets(client):
    """(namespace, ReplicaSet name) -> name of the Deployment that owns it, for every ReplicaSet."""
    return replica_set_owners(client.list_all(client.apps.list_replica_set_for_all_namespaces))


def template_allocatable(client, template_capacity=None, template_node=None, node_selector=None):
    """(allocatable of one node of a pool, where it came from): ``template_capacity``, the node
    ``template_node``, or the first node matching ``node_selector`` (a dict of labels)."""
    if template_capacity:
        return dict(template_capacity), "template_capacity"
    if template_node:
        nodes, missing = client.read_nodes([template_node])
        if missing:
            raise NotFound.nodes(missing)
        return nodes[0]["status"]["allocatable"], "node %s" % template_node
    selector = labels_text(node_selector)
    nodes = client.list_all(client.core.list_node, label_selector=selector) if selector else []
    if not nodes:
        raise NotFound("capacity_for_nodes needs the size of a pool node: no node matches node_selector, so "
                       "give template_capacity (for example {cpu: '4', memory: 16Gi, pods: '110'}) or "
                       "template_node; nothing was changed.")
    return nodes[0]["status"]["allocatable"], "node %s of the pool" % node_name(nodes[0])


def rotation_snapshot(client, names=(), selector=None, karpenter=False, karpenter_candidates=False, nodepools=()):
    """Nodes, pods, PDBs, ReplicaSet owners and workload replicas, each listed once, the candidate
    nodes (``names`` plus those matching ``selector``) and the ``names`` of no node (``missing``). With ``karpenter``, Karpenter's NodeClaims and
    NodePools too; with ``karpenter_candidates``, the nodes of the NodeClaims (of ``nodepools``, when
    given) are candidates as well."""
    # Every kind, a few lists at once: a large cluster's pods take most of the time, the rest rides along.
    reads = [
        lambda: client.list_all(client.core.list_node),
        lambda: client.list_all(client.core.list_pod_for_all_namespaces),
        lambda: node_claims(client, required=True) if karpenter else [],
        lambda: node_pools(client) if karpenter else [],
        lambda: client.list_all(client.core.list_node, label_selector=selector) if selector else [],
        lambda: client.list_all(client.policy.list_pod_disruption_budget_for_all_namespaces),
        # Their managedFields say who else sets spec.replicas (plan.replacement.workload_facts).
        lambda: client.list_all(client.apps.list_deployment_for_all_namespaces, managed_fields=True),
        lambda: client.list_all(client.apps.list_stateful_set_for_all_namespaces, managed_fields=True),
        lambda: client.list_all(client.autoscaling.list_horizontal_pod_autoscaler_for_all_namespaces),
        lambda: owners_of_replica_sets(client)]
    nodes, pods, claims, pools, selected, pdbs, deployments, stateful_sets, hpas, owners = each_concurrently(
        lambda read: read(), reads)
    known = {node_name(node) for node in nodes}
    candidates = (set(names or ()) & known) | {node_name(node) for node in selected}
    if karpenter_candidates:
        candidates |= {claim_node(claim) for claim in claims
                       if claim_node(claim) in known and (not nodepools or claim_pool(claim) in nodepools)}
    zones = claim_zones(client, [pod for pod in pods if node_of(pod) in candidates])
    return RotationSnapshot(nodes, frozenset(candidates), pods, pdbs, owners, zones, claims, pools, deployments,
                            stateful_sets, hpas, frozenset(set(names or ()) - known))
