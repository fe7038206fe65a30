#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: rollout_restart
short_description: Restart Deployments, StatefulSets and DaemonSets as kubectl rollout restart does, and wait for them
version_added: 0.1.0
description:
  - Restarts workloads the way C(kubectl rollout restart) does, by setting the
    C(kubectl.kubernetes.io/restartedAt) annotation of the pod template, so
    nothing else about them changes and their controllers surge replacements
    before old pods go. This is how pods that must not be evicted
    (C(karpenter.sh/do-not-disrupt), single replicas) move off nodes.
  - Targets are explicit workloads, the workloads whose own labels match
    O(workload_selector), or O(on_nodes), every workload that owns a pod on
    those nodes, resolved through ReplicaSets.
  - With O(restart_id), a workload already restarted under that id is not
    restarted again, so a rerun of a rotation never restarts a workload twice.
  - A rollout paces itself by its strategy's maxUnavailable, not by PodDisruptionBudgets. For a Deployment whose
    maxUnavailable is more than the PDBs selecting its pods allow with every pod Ready, the restart's patch also cuts
    maxUnavailable to that (maxSurge at least 1 when it is 0), records the rolling update it had
    (C(kubeops.io/restart-strategy)) and puts it back once the rollout is done; a run stopped before that leaves it
    recorded, and the next call on the workload (a rerun with the same O(restart_id)) puts it back. A StatefulSet
    replaces one pod at a time, which a PDB that allows none crosses; M(kubeops.rotation.replace_pods) moves its
    pods within it instead.
  - Waits, by watching each workload, until its rollout is complete by the
    rules of C(kubectl rollout status). A paused Deployment, a Deployment past
    its progress deadline, and a StatefulSet or DaemonSet with the C(OnDelete)
    strategy are reported, not waited on.
extends_documentation_fragment:
  - kubeops.rotation.connection
  - kubeops.rotation.lease
seealso:
  - module: kubeops.rotation.evict
    description: Moves the other pods by guarded eviction; it refuses do-not-disrupt pods that this module moves.
  - module: kubeops.rotation.warm_nodes
    description: Brings up room for the surge before the restart.
  - module: kubeops.rotation.rotation_plan
    description: Says which workloads each batch of a rotation restarts, as O(targets) takes them.
  - module: kubeops.rotation.cordon
    description: Cordons the nodes the pods leave, so that their replacements go elsewhere.
  - module: kubeops.rotation.lease
    description: The cluster's Lease that O(lease) takes before the first restart and renews while waiting.
options:
  targets:
    description:
      - Workloads to restart.
      - An empty list, or a target with an empty name or namespace, is refused before any request.
    type: list
    elements: dict
    suboptions:
      kind:
        description: Kind of the workload.
        type: str
        required: true
        choices: [Deployment, StatefulSet, DaemonSet]
      name:
        description: Name of the workload.
        type: str
        required: true
      namespace:
        description: Namespace of the workload.
        type: str
        required: true
  workload_selector:
    description:
      - Restart the Deployments and StatefulSets (and DaemonSets with
        O(include_daemonsets)) whose own labels (C(metadata.labels), not their
        pods' labels) match this label selector, as C(kubectl rollout restart -l) does.
      - An empty or blank selector, or one that the API server would not
        parse, is refused before any request.
      - Called O(label_selector) up to 0.2.0; that name stays an alias. Every
        label selector option of the collection is named after what it selects
        (O(workload_selector) here, C(pod_selector) and C(node_selector) in
        other modules).
    type: str
    aliases: [label_selector]
  namespaces:
    description:
      - Limit O(workload_selector) and O(on_nodes) to these namespaces.
      - An empty list, or an empty name in it, is refused before any request.
    type: list
    elements: str
  on_nodes:
    description:
      - Restart every workload that owns a pod on these nodes.
      - An empty list, or an empty name in it, is refused before any request.
    type: list
    elements: str
  include_daemonsets:
    description:
      - Include DaemonSets. Restarting them does not move anything off a node.
    type: bool
    default: false
  restart_id:
    description:
      - An id for this restart, for example the rotation's id. A workload
        whose C(kubeops.io/restart-id) annotation already has this value is
        not restarted again.
      - An empty or blank id is refused (it would restart again on every rerun).
    type: str
  restarted_after:
    description:
      - A time (RFC 3339, for example V(2026-12-03T06:00:00Z)). A workload
        restarted at or after it is not restarted again. Anything else is refused before any request.
    type: str
  wait:
    description:
      - Wait until each rollout is complete.
    type: bool
    default: true
  timeout:
    description:
      - Seconds for the whole call. Rollouts not complete by then make it
        fail with their status and conditions. At least 1.
      - O(wait_timeout) is its name in kubernetes.core (for example in C(kubernetes.core.k8s)).
    type: int
    default: 600
    aliases: [wait_timeout]
  max_concurrent:
    description:
      - Workloads restarting at the same time, at most. At least 1.
    type: int
    default: 1
  avoid_nodes:
    description:
      - Nodes the new pods must not land on, for example the batch being drained (cordoned by then) and the
        nodes a rotation drains in its later batches. While the pods move, those that are Ready, uncordoned
        and have room for the smallest of the pod templates carry the taint
        C(kubeops.io/rebalancing=true:NoSchedule), removed at the end as with O(keep_zones); a pod with no
        room elsewhere waits Pending (warm nodes with placeholders are preempted first) rather than land
        on a node that will be drained. Not when a DaemonSet is among the workloads, whose pods belong on every node.
      - After each rollout the module reports any pod of the workload found on them.
    type: list
    elements: str
    default: []
  keep_zones:
    description:
      - While the pods move, the Ready, uncordoned nodes outside the zones where the workloads' pods run now (not O(avoid_nodes))
        that have room for the smallest of their pod templates carry the
        taint C(kubeops.io/rebalancing=true:PreferNoSchedule), so that the scheduler puts the
        replacements back in their own zone when it has room (its default spreading would otherwise
        even them out over every zone). The taints are removed at the end, also on failure; a run
        killed in between leaves them, and the next run with O(keep_zones) or the next
        M(kubeops.rotation.rebalance) pass removes them.
      - RV(steered_nodes) names the nodes that carried it.
    type: bool
    default: false
    version_added: 0.2.0
attributes:
  check_mode:
    support: full
    description: Lists the workloads that would be restarted, with their pods on the target nodes.
  diff_mode:
    support: full
    description: Each workload's C(kubectl.kubernetes.io/restartedAt) before and after (V(now) in check mode).
author:
  - kubeops.rotation developers (@kubeops)
"""

EXAMPLES = r"""
- name: Move the do-not-disrupt workloads off the nodes of a batch
  kubeops.rotation.rollout_restart:
    on_nodes: "{{ batch_nodes }}"
    avoid_nodes: "{{ batch_nodes }}"
    restart_id: "{{ rotation_id }}"
    max_concurrent: 2
    timeout: 900

- name: Restart one Deployment without waiting
  kubeops.rotation.rollout_restart:
    targets:
      - {kind: Deployment, namespace: shop, name: web}
    wait: false
"""

RETURN = r"""
workloads:
  description: One entry per workload, sorted by kind, namespace and name.
  returned: always
  type: list
  elements: dict
  contains:
    kind:
      description: Deployment, StatefulSet or DaemonSet.
      type: str
      sample: StatefulSet
    namespace:
      description: Namespace.
      type: str
      sample: shop
    name:
      description: Name.
      type: str
      sample: db
    action:
      description: V(restarted), V(already_restarted), or V(planned) in check mode.
      type: str
      sample: restarted
    reason:
      description: Why, in words.
      type: str
      sample: restarted
    rollout:
      description: V(done), V(stuck) (reported, not waited on), V(timeout), or V(not waited).
      type: str
      sample: done
    rollout_message:
      description: The rollout's status in kubectl's words, with conditions when it did not finish.
      type: str
      sample: StatefulSet shop/db successfully rolled out
    seconds:
      description: Time spent on this workload.
      type: float
      sample: 24.6
    pods_on_nodes:
      description: With O(on_nodes), the pods that made this workload a target (C(namespace/name on node)).
      type: list
      elements: str
      sample: [shop/db-0 on ip-10-0-1-5.ec2.internal]
    landed_on_avoided_nodes:
      description: Pods of the workload found on O(avoid_nodes) after its rollout.
      type: list
      elements: str
      sample: []
    paced_from:
      description:
        - The rolling update (C(maxUnavailable), C(maxSurge)) the Deployment had, when its restart was paced by its
          PDBs (and put back after the rollout); null otherwise.
      type: dict
      version_added: 0.2.0
      sample: {maxUnavailable: 25%, maxSurge: 25%}
summary:
  description: Counts of workloads by action and by rollout state.
  returned: always
  type: dict
  sample: {workloads: 3, restarted: 2, already_restarted: 1, done: 3}
steered_nodes:
  description: The nodes steered away from with O(keep_zones) or O(avoid_nodes), for the time of the call; empty without them.
  returned: always
  type: list
  elements: str
  version_added: 0.2.0
  sample: [ip-10-0-3-9.ec2.internal]
elapsed_seconds:
  description: Wall time of the call.
  returned: always
  type: float
  sample: 31.2
diff:
  description: Each restarted workload's C(kubectl.kubernetes.io/restartedAt), before and after (V(now) in check mode).
  returned: when diff mode is on
  type: dict
  sample: {"before": {"Deployment shop/web": null}, "after": {"Deployment shop/web": "2026-12-03T06:00:00Z"}}
  version_added: 0.3.0
api_requests:
  description: Number of HTTP requests made to the API server.
  returned: always
  type: int
  sample: 12
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
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.rollout import RestartSettings, restart_workloads

ARGUMENT_SPEC = dict(
    targets=dict(type="list", elements="dict", options=dict(
        kind=dict(type="str", required=True, choices=["Deployment", "StatefulSet", "DaemonSet"]),
        name=dict(type="str", required=True),
        namespace=dict(type="str", required=True),
    )),
    workload_selector=dict(type="str", aliases=["label_selector"]),
    namespaces=dict(type="list", elements="str"),
    on_nodes=dict(type="list", elements="str"),
    include_daemonsets=dict(type="bool", default=False),
    restart_id=dict(type="str"),
    restarted_after=dict(type="str"),
    wait=dict(type="bool", default=True),
    timeout=dict(type="int", default=600, aliases=["wait_timeout"]),
    max_concurrent=dict(type="int", default=1),
    avoid_nodes=dict(type="list", elements="str", default=[]),
    keep_zones=dict(type="bool", default=False),
)


def main():
    module = kubernetes_module(ARGUMENT_SPEC, lease=True,
                               required_one_of=[["targets", "workload_selector", "on_nodes"]])
    run_module(module, restart_workloads, RestartSettings.from_params)


if __name__ == "__main__":
    main()
