# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""A rotation plan from the cluster as it is: one snapshot (api.snapshot), then plan.rotation."""

from __future__ import annotations

import dataclasses
import datetime

from ansible_collections.kubeops.rotation.plugins.module_utils.api.snapshot import (
    rotation_snapshot,
    template_allocatable,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.api.cluster_api import machines
from ansible_collections.kubeops.rotation.plugins.module_utils.api.errors import ApiException, api_message
from ansible_collections.kubeops.rotation.plugins.module_utils.api.karpenter import node_claims, node_pools
from ansible_collections.kubeops.rotation.plugins.module_utils.api.leases import read_lease
from ansible_collections.kubeops.rotation.plugins.module_utils.model.cluster_api import machines_by_node
from ansible_collections.kubeops.rotation.plugins.module_utils.model.karpenter import claims_by_node, nodepool_zones
from ansible_collections.kubeops.rotation.plugins.module_utils.model.errors import NotFound
from ansible_collections.kubeops.rotation.plugins.module_utils.model.keys import LEASE_NAME, LEASE_NAMESPACE, NODEPOOL_LABEL
from ansible_collections.kubeops.rotation.plugins.module_utils.model.nodes import node_name
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.lease import retired_by
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.replacement import workload_facts
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.retirement import planned_retirement
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.rotation import (
    RotationFacts,
    RotationSettings,
    plan_rotation,
    summarize_plan,
)


@dataclasses.dataclass(frozen=True)
class RotationRequest:
    """The nodes to consider (by name and selector), the size of a pool node, and how to plan."""

    settings: object
    nodes: tuple = ()
    node_selector: str | None = None
    template_capacity: dict | None = None
    template_node: str | None = None
    # How the drained nodes will be retired (plan.retirement.RETIRE_CHOICES): said per node in each batch.
    retire: str = "delete"
    # Where the cluster's Lease is: it records the nodes a rotation retired, which a rerun may still name.
    lease_namespace: str = LEASE_NAMESPACE

    @classmethod
    def from_params(cls, params, prefix=""):
        """The request of the rotation_plan module's parameters, its settings RotationSettings.from_params (which
        checks them all, these too), or InvalidInput before anything is read."""
        settings = RotationSettings.from_params(params, prefix)
        return cls(settings=settings, nodes=tuple(params.get("nodes") or ()), node_selector=params.get("node_selector"),
                   template_capacity=params.get("template_capacity"), template_node=params.get("template_node"),
                   retire=params.get("retire") or cls.retire,
                   lease_namespace=params.get("lease_namespace") or cls.lease_namespace)


def plan_from_cluster(client, request, now=None):
    """Read nodes, pods, PDBs, ReplicaSets, Deployments and StatefulSets (and, for Karpenter's drift or
    budgets, NodeClaims and NodePools) once each, and plan."""
    settings = request.settings
    rules = settings.rules
    snapshot = rotation_snapshot(client, request.nodes, request.node_selector,
                                 karpenter=rules.karpenter_drifted or settings.karpenter_budgets,
                                 karpenter_candidates=rules.karpenter_drifted and not (
                                     request.nodes or request.node_selector),
                                 nodepools=rules.nodepools)
    retired_earlier = _retired_earlier(client, request, snapshot.missing)
    template = None
    if request.template_capacity or request.template_node or settings.pool_labels:
        template, _source = template_allocatable(client, request.template_capacity, request.template_node,
                                                 settings.pool_labels)
    pool_zones = settings.pool_zones
    pool_name = (settings.pool_labels or {}).get(NODEPOOL_LABEL)
    if pool_zones is None and pool_name:
        pool = next((pool for pool in snapshot.node_pools or node_pools(client)
                     if pool["metadata"]["name"] == pool_name), None)
        pool_zones = nodepool_zones(pool) if pool else None
    settings = dataclasses.replace(settings, candidates=snapshot.candidates,
                                   named=frozenset(request.nodes) - retired_earlier,
                                   template_allocatable=template, pool_zones=pool_zones)
    now = now or datetime.datetime.now(datetime.timezone.utc)
    workloads = workload_facts(snapshot.deployments, snapshot.stateful_sets, snapshot.hpas)
    facts = RotationFacts(snapshot.nodes, snapshot.pods, snapshot.pdbs, snapshot.owners, workloads.replicas,
                          claim_zones=snapshot.claim_zones, node_claims=snapshot.node_claims,
                          node_pools=snapshot.node_pools, one_at_a_time=workloads.one_at_a_time,
                          autoscalers=workloads.autoscalers, gitops=workloads.gitops)
    plan = plan_rotation(facts, settings, now)
    plan["left_out"] = sorted(plan["left_out"] + [
        {"name": name, "reason": "already rotated by %s (retired; the Lease %s/%s records it)" % (
            settings.rotation_id, request.lease_namespace, LEASE_NAME)} for name in retired_earlier],
        key=lambda entry: entry["name"])
    if _say_retirement(client, plan, snapshot, request.retire) or retired_earlier:
        plan["summary"] = summarize_plan(plan)
    return plan


def _retired_earlier(client, request, missing):
    """The named nodes that are gone because this rotation retired them (a rerun after a kill, or of a rotation
    that finished), as the Lease records; NotFound naming any other name of no node, before anything is planned."""
    if not missing:
        return frozenset()
    rotation_id = request.settings.rotation_id
    retired = retired_by(read_lease(client, LEASE_NAME, request.lease_namespace), rotation_id) \
        if rotation_id else frozenset()
    unknown = sorted(missing - retired)
    if unknown:
        raise NotFound("No node named %s; nothing was planned." % ", ".join(unknown))
    return frozenset(missing)


def _say_retirement(client, plan, snapshot, mode):
    """Each batch's ``retire``: {node: how it will be retired}, from its NodeClaim or Machine (read only when
    the mode deletes); whether there were batches to say it of."""
    batches = plan.get("batches") or []
    if not batches:
        return False
    deletes = mode in ("delete", "delete_node")
    try:
        claims = claims_by_node(snapshot.node_claims or node_claims(client)) if deletes else {}
        owned_by_machines = machines_by_node(machines(client)) if deletes else {}
    except ApiException as exc:
        if exc.status != 403:
            raise
        # The plan still stands; the retire step, which needs these reads, fails until the RBAC allows them.
        unknown = "not known: %s (docs/rbac.yaml)" % api_message(exc)
        for batch in batches:
            batch["retire"] = {name: unknown for name in batch["nodes"]}
        plan["warnings"].append("how the nodes will be retired is %s" % unknown)
        return True
    by_name = {node_name(node): node for node in snapshot.nodes}
    for batch in batches:
        batch["retire"] = {name: planned_retirement(by_name.get(name) or {"metadata": {"name": name}}, mode, claims,
                                                    owned_by_machines)
                           for name in batch["nodes"]}
    return True
