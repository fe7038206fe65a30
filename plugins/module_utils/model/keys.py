# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Every label, annotation and taint key the collection reads or writes, in one place."""

from __future__ import annotations

# Well-known Kubernetes keys.
ZONE_LABEL = "topology.kubernetes.io/zone"
LEGACY_ZONE_LABEL = "failure-domain.beta.kubernetes.io/zone"
REGION_LABEL = "topology.kubernetes.io/region"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
HOSTNAME_LABEL = "kubernetes.io/hostname"
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"

# Autoscalers' "leave this pod alone" annotations, with the value that means it.
DO_NOT_DISRUPT = ("karpenter.sh/do-not-disrupt", "true")
SAFE_TO_EVICT = ("cluster-autoscaler.kubernetes.io/safe-to-evict", "false")

# Karpenter's: the NodePool a node or NodeClaim belongs to.
NODEPOOL_LABEL = "karpenter.sh/nodepool"
# A node's capacity type (spot, on-demand): Karpenter's label, then that of EKS managed node groups.
CAPACITY_TYPE_LABELS = ("karpenter.sh/capacity-type", "eks.amazonaws.com/capacityType")

# Ours.
MANAGER = "kubeops.rotation"
MANAGED_BY = {MANAGED_BY_LABEL: MANAGER}
CORDONED_BY = "kubeops.io/cordoned-by"
CORDON_REASON = "kubeops.io/cordon-reason"
CORDONED_AT = "kubeops.io/cordoned-at"
CORDON_ANNOTATIONS = (CORDONED_BY, CORDON_REASON, CORDONED_AT)
CORDON_TAINT = {"key": "kubeops.io/cordoned", "value": "true", "effect": "NoSchedule"}
ROTATION_ID = "kubeops.io/rotation-id"
ROTATION_PHASE = "kubeops.io/rotation-phase"
PHASE_AT = "kubeops.io/rotation-phase-at"
# When the rotation marked the node planned, kept through its later phases: what a rollback calls its start.
PLANNED_AT = "kubeops.io/rotation-planned-at"
# On a drained node a rotation keeps for its way back (rotate_nodes_keep_old_nodes): the rotation that keeps it, and
# what keeps Karpenter's consolidation and cluster-autoscaler's scale-down from removing it meanwhile.
KEPT_BY = "kubeops.io/kept-by"
KEEP_ANNOTATIONS = {"karpenter.sh/do-not-disrupt": "true", "cluster-autoscaler.kubernetes.io/scale-down-disabled": "true"}
RESTART_ID = "kubeops.io/restart-id"
# On a Deployment whose restart is paced by its PDBs, while it lasts: the rolling update to put back.
RESTART_STRATEGY = "kubeops.io/restart-strategy"
WARM_SET_LABEL = "kubeops.io/warm-set"
WARM_ZONE_LABEL = "kubeops.io/warm-zone"
PLACEHOLDER_SPEC = "kubeops.io/placeholder-spec"
STEERING_TAINT_KEY = "kubeops.io/rebalancing"
# The one Lease per cluster that a rotation, a rebalance pass or a drain holds while it changes anything.
LEASE_NAME = "kubeops-rotation"
LEASE_NAMESPACE = "kube-system"
LEASE_RUN_ID = "kubeops.io/run-id"
# On the Lease, kept by every holder and a release: the nodes the last rotation that retired any retired, as JSON
# {"run_id": ..., "nodes": [...]}, so that a rerun that names them knows them gone, not mistyped.
LEASE_RETIRED = "kubeops.io/retired-nodes"
# On the Lease: seconds after a renewal past which its holder writes nothing more unless it renewed again.
LEASE_RENEW_DEADLINE = "kubeops.io/renew-deadline-seconds"
# On every node of a rotation from its start, PreferNoSchedule: no moved pod lands on a node that goes later.
ROTATING_TAINT_KEY = "kubeops.io/rotating"
# ... and this label, by which warm placeholders keep off the rotation's nodes: an autoscaler such as Karpenter
# reads label expressions only (it refuses hostname and metadata.name terms).
ROTATING_LABEL = "kubeops.io/rotating"
# A workload whose pods a rotation replaces, replacement first, carries this label while it lasts (found by a
# rerun after a kill with one list) and this annotation: what was changed, so that it is changed back.
SURGE_LABEL = "kubeops.io/surging"
SURGE_ANNOTATION = "kubeops.io/surge"
# On each pod that leaves: the run that chose it, and the ReplicaSet's scale-down picks it first.
LEAVING_ANNOTATION = "kubeops.io/leaving"
DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
# On the Lease, while a run holds it: what the run is doing now (engine.progress), for kubectl to show.
LEASE_PROGRESS = "kubeops.io/progress"
