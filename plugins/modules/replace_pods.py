#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: replace_pods
short_description: Replace given pods of Deployments and StatefulSets, each replacement Ready before its pod goes
version_added: 0.2.0
description:
  - Moves exactly the pods given, replacement first, and no other pod of their workloads; this is how a rotation
    moves the pods that may not simply be evicted (C(karpenter.sh/do-not-disrupt), single replicas, a PDB that
    allows no disruption now) off the nodes that go, instead of restarting whole workloads.
  - A Deployment is surged by exactly its leaving pods. Each leaving pod gets
    C(controller.kubernetes.io/pod-deletion-cost) at its lowest (and C(kubeops.io/leaving)); the replicas go up by
    their number, in steps that keep every PodDisruptionBudget's desiredHealthy within the pods Ready (a PDB counts a
    replica not yet Ready as unavailable); once the replacements are Ready the replicas come back, in steps each PDB
    allows, and the ReplicaSet removes the leaving pods. A Deployment in the middle of a rollout is waited for first.
  - A StatefulSet, which cannot surge, and a Deployment whose strategy is C(Recreate) lose one leaving pod at a time
    through the Eviction API, when all their pods are Ready and their PDBs allow one disruption, and get it back
    Ready before the next one.
  - What a surge changes is recorded on the Deployment before anything else (label C(kubeops.io/surging), annotation
    C(kubeops.io/surge) with its replicas and its HorizontalPodAutoscaler's bounds) and put back at the end. A
    surge a killed run left is finished by the next call, whichever pods it is given.
  - An HorizontalPodAutoscaler of the Deployment gets its minReplicas and maxReplicas pinned to each step's replicas,
    so that it neither takes the surge back (it enforces its bounds without metrics) nor scales beside it, and its
    own bounds again after; its annotation C(kubeops.io/surge) says what they were meanwhile.
  - If something else sets the Deployment's replicas while it surges (a GitOps controller syncing C(spec.replicas)),
    the surge stops, is undone (the leaving pods stay), and the call fails naming the field managers of
    C(spec.replicas).
extends_documentation_fragment:
  - kubeops.rotation.connection
  - kubeops.rotation.lease
seealso:
  - module: kubeops.rotation.rotation_plan
    description: Says which pods of each batch are replaced first (RV(kubeops.rotation.rotation_plan#module:batches[].replace)).
  - module: kubeops.rotation.evict
    description: Moves the other pods by guarded eviction.
  - module: kubeops.rotation.warm_nodes
    description: Brings up room for the replacements first.
  - module: kubeops.rotation.rollout_restart
    description: Restarts whole workloads, when that is what is wanted.
options:
  pods:
    description:
      - The pods to replace, as C(namespace/name). Pods already gone are reported in RV(gone).
      - A pod that is not of a Deployment or StatefulSet is refused before anything is changed.
      - May be empty, to finish what a killed run left.
    type: list
    elements: str
    required: true
  run_id:
    description:
      - The run this is part of (a rotation's id), recorded on the pods it chooses; a rerun with the same id after a
        kill takes the same pods.
    type: str
    required: true
  timeout:
    description: Seconds for the whole call. At least 1.
    type: int
    default: 900
  avoid_nodes:
    description:
      - Nodes the replacements must not land on, for example the nodes a rotation drains later. While the pods move,
        those that are Ready, uncordoned and have room carry the taint C(kubeops.io/rebalancing=true:NoSchedule),
        removed at the end, as M(kubeops.rotation.rollout_restart) does.
    type: list
    elements: str
    default: []
  keep_zones:
    description:
      - While the pods move, the nodes outside the zones of the leaving pods that have room carry the taint
        C(kubeops.io/rebalancing=true:PreferNoSchedule), so that the replacements stay in their zone when it has
        room.
    type: bool
    default: false
  max_concurrent:
    description:
      - Namespaces whose workloads are replaced at the same time; a namespace's workloads go one after another
        (they may share PDBs). At least 1.
    type: int
    default: 4
attributes:
  check_mode:
    support: full
    description: Lists the workloads whose pods would be replaced and how; changes nothing.
  diff_mode:
    support: full
    description: >-
      Each pod that leaves (would leave) its node, before and after; the replicas and marks the surge changes are
      put back, and RV(workloads) lists each step.
author:
  - kubeops.rotation developers (@kubeops)
"""

EXAMPLES = r"""
- name: Replace the do-not-disrupt pods of a batch, replacement first
  kubeops.rotation.replace_pods:
    pods: "{{ plan.batches[0].replace | map(attribute='pods') | flatten }}"
    run_id: ami-2026-12
    avoid_nodes: "{{ plan.nodes | map(attribute='name') | list }}"
    keep_zones: true

- name: Finish a surge that a killed run left
  kubeops.rotation.replace_pods:
    pods: []
    run_id: ami-2026-12
"""

RETURN = r"""
workloads:
  description: One entry per workload, sorted by kind, namespace and name.
  returned: always
  type: list
  elements: dict
  contains:
    kind:
      description: Deployment or StatefulSet.
      type: str
      sample: Deployment
    namespace:
      description: Namespace.
      type: str
      sample: shop
    name:
      description: Name.
      type: str
      sample: web
    method:
      description: V(surge) or V(one_at_a_time).
      type: str
      sample: surge
    action:
      description: V(replaced), V(planned) in check mode, V(failed), or V(gone) (the workload was deleted).
      type: str
      sample: replaced
    leaving:
      description: Its pods asked to leave that were there.
      type: list
      elements: str
      sample: [shop/web-7f9c4d8b6-x2kqp]
    replaced:
      description: Those that went once their replacement was Ready.
      type: list
      elements: str
      sample: [shop/web-7f9c4d8b6-x2kqp]
    replacements:
      description: The new pods, C(namespace/name on node).
      type: list
      elements: str
      sample: [shop/web-7f9c4d8b6-q8w2d on warm-1]
    replicas_steps:
      description: The replicas set, in order (a surge); empty for one at a time.
      type: list
      elements: int
      sample: [13, 14, 15, 14, 13, 12]
    autoscaler:
      description: The HorizontalPodAutoscaler whose bounds followed the surge, or null.
      type: str
      sample: web
    replicas_managers:
      description: Field managers other than this collection that own C(spec.replicas).
      type: list
      elements: str
      sample: [kubectl-client-side-apply]
    detail:
      description: What happened, in words, when it was not simply done.
      type: str
      sample: ""
    seconds:
      description: Time spent on this workload.
      type: float
      sample: 14.2
diff:
  description: Each replaced pod's node before, and null after (its replacement is RV(workloads[].replacements)).
  returned: when diff mode is on
  type: dict
  sample: {"before": {"shop/db-1": "old-2"}, "after": {"shop/db-1": null}}
  version_added: 0.3.0
gone:
  description: >-
    Pods asked for that were gone already; with O(avoid_nodes), also those whose name is now a pod that runs
    elsewhere (a StatefulSet's replacement keeps the name), which is not moved again.
  returned: always
  type: list
  elements: str
  sample: []
finished_left_over:
  description: Surges a killed run left, finished by this call (entries as in RV(workloads)).
  returned: always
  type: list
  elements: dict
  sample: []
steered_nodes:
  description: The nodes steered away from with O(keep_zones) or O(avoid_nodes), for the time of the call.
  returned: always
  type: list
  elements: str
  sample: [ip-10-0-3-9.ec2.internal]
summary:
  description: Counts of workloads, pods asked, replaced and gone, and left-over surges finished.
  returned: always
  type: dict
  sample: {workloads: 2, pods: 4, replaced: 4, gone: 0, left_over_finished: 0}
elapsed_seconds:
  description: Wall time of the call.
  returned: always
  type: float
  sample: 31.2
api_requests:
  description: Number of HTTP requests made to the API server.
  returned: always
  type: int
  sample: 40
api_retries:
  description:
    - Requests sent again after a transient fault (C(requests)), and the writes among all requests whose answer
      was lost on the way back (C(lost_answers)) - each either sent again when a repeat finds it done (a patch,
      a delete, a create), or read first (an eviction), so that nothing is done twice.
  returned: always
  type: dict
  sample: {"requests": 3, "lost_answers": 1}
  version_added: 0.3.0
"""

from ansible_collections.kubeops.rotation.plugins.module_utils.ansible_module import kubernetes_module, run_module
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.replacement import ReplaceSettings, replace_pods

ARGUMENT_SPEC = dict(
    pods=dict(type="list", elements="str", required=True),
    run_id=dict(type="str", required=True),
    timeout=dict(type="int", default=900),
    avoid_nodes=dict(type="list", elements="str", default=[]),
    keep_zones=dict(type="bool", default=False),
    max_concurrent=dict(type="int", default=4),
)


def main():
    run_module(kubernetes_module(ARGUMENT_SPEC, lease=True), replace_pods, ReplaceSettings.from_params)


if __name__ == "__main__":
    main()
