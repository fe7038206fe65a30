#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: evict
short_description: Evict pods through the Eviction API, honouring PodDisruptionBudgets, with limits and reasons
version_added: 0.1.0
description:
  - Selects pods on nodes (O(nodes), O(node_selector), to drain them) and/or by
    namespace and selectors, judges every pod with a chain of filters, each
    with a reason, then evicts through the policy/v1 Eviction API only, so
    the API server itself enforces PodDisruptionBudgets.
  - An eviction answered with HTTP 429 (a PDB allows no disruption now) is
    retried with exponential backoff and jitter until O(timeout). A pod
    selected by several PDBs (HTTP 500) is reported at once with their names.
  - When any selected pod would be refused (bare pod, emptyDir, do-not-disrupt,
    system-critical), nothing is evicted unless O(skip_refused=true); the
    error lists every refused pod with its reason.
  - Waits for evicted pods to be gone by watching, not by polling. At the
    deadline it fails naming the pods left, the PDBs that blocked them with
    their currentHealthy, desiredHealthy and disruptionsAllowed, and how many
    pods were evicted; rerunning continues from there.
  - Records Kubernetes Events on the pods it evicts (reason C(Evicted)) and on
    the nodes it drains (C(Draining), C(Drained)), from component
    C(kubeops.rotation).
  - The module does not cordon; M(kubeops.rotation.cordon) and the
    C(kubeops.rotation.drain_node) role do.
extends_documentation_fragment:
  - kubeops.rotation.connection
  - kubeops.rotation.lease
seealso:
  - module: kubeops.rotation.cordon
    description: Cordons the nodes first, so that the evicted pods do not come back.
  - module: kubeops.rotation.replace_pods
    description: Replaces first the pods that should not be evicted (do-not-disrupt, single replicas, PDBs at zero), as O(replace_first) does in the same call.
  - module: kubeops.rotation.rollout_restart
    description: Restarts whole workloads, as C(kubectl rollout restart) does.
  - module: kubeops.rotation.warm_nodes
    description: Brings up room for the evicted pods before they leave.
  - module: kubeops.rotation.rotation_plan
    description: Plans which pods of each batch a rotation evicts and which it restarts.
  - module: kubeops.rotation.rebalance
    description: Plans moves that even out the pods, then evicts them through the same guarded engine.
  - module: kubeops.rotation.lease
    description: The cluster's Lease that O(lease) takes before the first eviction and renews while waiting.
  - module: kubeops.rotation.k8s_drain
    description: Drains one node through this engine, taking the tasks of C(kubernetes.core.k8s_drain) as written.
  - name: kubeops.rotation.drain_node role
    description: Cordon, guarded eviction and a check of what is left, in one role (C(ansible-doc -t role kubeops.rotation.drain_node)).
    link: roles/drain_node/meta/argument_specs.yml
  - name: Coming from kubernetes.core's k8s_drain or kubectl drain
    description: Each of their flags and options, and what stands for it in this collection.
    link: docs/coming-from-kubernetes-core.md
options:
  nodes:
    description:
      - Names of nodes to drain; their pods are selected. Every one must exist.
      - An empty list, or an empty name in it, is refused before any request
        (an empty list must not widen the selection to every pod).
    type: list
    elements: str
  node_selector:
    description:
      - Label selector of further nodes to drain.
      - An empty or blank selector, or one that the API server would not
        parse, is refused before any request.
    type: str
  namespaces:
    description:
      - Only pods of these namespaces. Without O(nodes) or O(node_selector),
        the pods of these namespaces are selected; with them, pods on the
        nodes in other namespaces are skipped with reason C(namespace).
      - An empty list, or an empty name in it, is refused before any request.
    type: list
    elements: str
  exclude_namespaces:
    description:
      - Pods of these namespaces are skipped with reason C(namespace).
    type: list
    elements: str
    default: []
  pod_selector:
    description:
      - Label selector of the pods, for example V(app=web).
      - An empty or blank selector, or one that the API server would not
        parse, is refused before any request.
    type: str
  field_selector:
    description:
      - Field selector of the pods, for example V(status.phase=Running).
      - An empty or blank selector, or one that is not C(field=value),
        C(field==value) or C(field!=value) terms, is refused before any request.
    type: str
  timeout:
    description:
      - Seconds the whole call may take, waiting included. At the deadline it
        fails with what is left and why. At least 1.
      - O(wait_timeout) is its name in kubernetes.core (C(delete_options.wait_timeout)
        of C(kubernetes.core.k8s_drain)); unlike there, V(0) does not mean
        forever and is refused.
    type: int
    default: 300
    aliases: [wait_timeout]
  wait:
    description:
      - Wait until every evicted pod is gone.
    type: bool
    default: true
  wait_for_replacements:
    description:
      - Also wait, within O(timeout), until every Deployment, StatefulSet,
        ReplicaSet or ReplicationController whose pods were evicted has them
        back, as many Ready pods as before the evictions (or its desired
        replicas, if fewer). At the timeout the call fails naming the pods
        still Pending and the scheduler's reason for each.
    type: bool
    default: false
  grace_period:
    description:
      - Termination grace period in seconds for the evicted pods, instead of
        their own C(terminationGracePeriodSeconds). 0 or more.
      - O(terminate_grace_period) is its name in kubernetes.core
        (C(delete_options.terminate_grace_period) of C(kubernetes.core.k8s_drain)).
    type: int
    aliases: [terminate_grace_period]
  disable_eviction:
    description:
      - Delete pods instead of evicting them. This B(bypasses PodDisruptionBudgets);
        the module warns when it is on.
    type: bool
    default: false
  force:
    description:
      - Evict pods that no controller would recreate (bare pods) too.
    type: bool
    default: false
  delete_emptydir_data:
    description:
      - Evict pods with emptyDir volumes too; their data is lost.
    type: bool
    default: false
  respect_do_not_disrupt:
    description:
      - Refuse pods annotated C(karpenter.sh/do-not-disrupt=true) or
        C(cluster-autoscaler.kubernetes.io/safe-to-evict=false). Replace them first instead
        (O(replace_first), or M(kubeops.rotation.replace_pods)), as the rotation does.
    type: bool
    default: true
  evict_system_critical:
    description:
      - Evict pods of the priority classes C(system-cluster-critical) and
        C(system-node-critical) too.
    type: bool
    default: false
  skip_refused:
    description:
      - Evict the evictable pods even though some are refused; the refused
        ones are reported and left in place.
    type: bool
    default: false
  keep_zones:
    description:
      - While the pods move, the Ready, uncordoned nodes outside the zones of the selected nodes that have room
        for the smallest of the pods (what their pods request leaves it free) carry the
        taint C(kubeops.io/rebalancing=true:PreferNoSchedule), so that the scheduler puts the
        replacements back in their own zone when it has room (its default spreading would otherwise
        even them out over every zone). The taints are removed at the end, also on failure; a run
        killed in between leaves them, and the next run with O(keep_zones) or the next
        M(kubeops.rotation.rebalance) pass removes them.
      - RV(steered_nodes) names the nodes that carried it.
    type: bool
    default: false
    version_added: 0.2.0
  avoid_nodes:
    description:
      - Nodes the replacements of the evicted pods must not land on, for example the nodes a rotation
        drains in its later batches. While the pods move, those that are Ready, uncordoned and have room for
        the smallest of the pods carry the taint C(kubeops.io/rebalancing=true:NoSchedule), removed at the
        end as with O(keep_zones). A replacement with no room elsewhere stays Pending meanwhile, and its
        owner's budget holds the next eviction of it back.
      - An empty name in it is refused before any request.
    type: list
    elements: str
    default: []
    version_added: 0.3.0
  warm_first:
    description:
      - Nodes to warm first, before any pod moves, as M(kubeops.rotation.warm_nodes) warms them (placeholders
        that hold a node each, and a wait until they run on Ready nodes; the placeholders stay for a later
        M(kubeops.rotation.warm_nodes) with O(kubeops.rotation.warm_nodes#module:state=absent) to release).
        This is how the C(kubeops.rotation.rotate_nodes) role warms a batch's nodes.
      - Every pod is listed while the nodes warm, for the steps after it; RV(warmed) is what
        M(kubeops.rotation.warm_nodes) would return. If the warming fails, nothing is moved.
      - Give O(warm_first.count) or O(warm_first.zones); its values are checked as M(kubeops.rotation.warm_nodes)
        checks them, before any request.
    type: dict
    version_added: 0.3.0
    suboptions:
      name:
        description: As M(kubeops.rotation.warm_nodes)'s O(kubeops.rotation.warm_nodes#module:name).
        type: str
        default: warm-nodes
      namespace:
        description: As M(kubeops.rotation.warm_nodes)'s O(kubeops.rotation.warm_nodes#module:namespace).
        type: str
        default: kubeops-warm
      count:
        description: Number of warm nodes wanted, 0 or more.
        type: int
      zones:
        description: Instead of O(warm_first.count), the warm nodes wanted per zone, as
          M(kubeops.rotation.warm_nodes)'s O(kubeops.rotation.warm_nodes#module:zones).
        type: list
        elements: dict
        suboptions:
          zone:
            description: The zone (C(topology.kubernetes.io/zone)); empty or null for any zone.
            type: str
          count:
            description: Warm nodes wanted in the zone, 0 or more.
            type: int
            required: true
      node_selector:
        description: As M(kubeops.rotation.warm_nodes)'s O(kubeops.rotation.warm_nodes#module:node_selector).
        type: dict
        default: {}
      exclude_nodes:
        description: As M(kubeops.rotation.warm_nodes)'s O(kubeops.rotation.warm_nodes#module:exclude_nodes).
        type: list
        elements: str
        default: []
      timeout:
        description: Seconds for the warming, before the other steps' own. At least 1.
        type: int
        default: 600
  replace_first:
    description:
      - Pods to replace first, before the others are evicted, as M(kubeops.rotation.replace_pods) replaces them
        (each replacement Ready before its pod goes; a surge a killed run left is finished too, also with no
        pods), with this call's O(avoid_nodes) and O(keep_zones). This is how the C(kubeops.rotation.rotate_nodes)
        role moves a batch's pods.
      - Every pod is listed once for both steps and followed by a watch meanwhile, instead of being listed again
        by each; RV(replaced) is what M(kubeops.rotation.replace_pods) would return. If the replacement fails,
        nothing is evicted.
    type: dict
    version_added: 0.3.0
    suboptions:
      pods:
        description: The pods to replace, as C(namespace/name); may be empty.
        type: list
        elements: str
        required: true
      run_id:
        description: As M(kubeops.rotation.replace_pods)'s O(kubeops.rotation.replace_pods#module:run_id).
        type: str
        required: true
      timeout:
        description: Seconds for the replacement, before the eviction's own O(timeout). At least 1.
        type: int
        default: 900
      max_concurrent:
        description: As M(kubeops.rotation.replace_pods)'s O(kubeops.rotation.replace_pods#module:max_concurrent).
        type: int
        default: 4
  max_in_flight:
    description:
      - Evicted pods not yet gone, at most, at any time. At least 1.
    type: int
  max_per_node:
    description:
      - Evicted pods not yet gone per node, at most. At least 1.
    type: int
  max_per_namespace:
    description:
      - Evicted pods not yet gone per namespace, at most. At least 1.
    type: int
  max_unavailable_per_owner:
    description:
      - Pods of one workload (Deployment, StatefulSet, ReplicaSet,
        ReplicationController) that may be not Ready at once, as a count
        (V(1)) or a percent of its desired replicas (V(25%), rounded down,
        at least 1). Checked against the workload's live pods before each
        eviction, on top of PDBs. V(0), V(0%) and percents over 100 are refused.
    type: str
  max_evictions:
    description:
      - Evictions this call may make in all. Pods beyond it are reported as
        V(pending); rerun to continue. 0 or more.
    type: int
  reason:
    description:
      - Why, added to the Events recorded on pods and nodes.
    type: str
    default: ""
attributes:
  check_mode:
    support: full
    description: Returns the whole plan (what would be evicted, deleted, skipped, refused) and changes nothing.
  diff_mode:
    support: full
    description: Each pod that leaves (in check mode, would leave) its node, with the node before and null after.
author:
  - kubeops.rotation developers (@kubeops)
"""

EXAMPLES = r"""
- name: Drain a node, two evictions at a time, waiting for the replacements
  kubeops.rotation.evict:
    nodes: [ip-10-0-1-5.ec2.internal]
    max_in_flight: 2
    max_unavailable_per_owner: 1
    wait_for_replacements: true
    timeout: 600
    reason: "rotation {{ rotation_id }}"

- name: See what a drain would do, without doing it
  kubeops.rotation.evict:
    node_selector: kubeops.io/pool=old
  check_mode: true
  register: drain_plan

- name: Evict the batch jobs' pods of one namespace, leaving refused ones alone
  kubeops.rotation.evict:
    namespaces: [batch]
    pod_selector: tier=worker
    skip_refused: true

- name: Move a batch's pods in one call - warm two nodes of the new pool, surge the do-not-disrupt pod, evict the rest
  kubeops.rotation.evict:
    warm_first:
      name: rotation-r1
      count: 2
      node_selector: {karpenter.sh/nodepool: general-v2}
      exclude_nodes: "{{ old_nodes }}"
    replace_first:
      pods: [shop/ledger-0]
      run_id: r1
    nodes: "{{ batch_nodes }}"
    avoid_nodes: "{{ old_nodes }}"
    keep_zones: true
  register: moved

- name: Release the warm nodes' placeholders once the pods have moved
  kubeops.rotation.warm_nodes:
    name: rotation-r1
    state: absent
"""

RETURN = r"""
pods:
  description: Every selected pod with what was decided and what happened, sorted by node and name.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Pod name.
      type: str
      sample: web-7f9c4d8b6-x2kqp
    namespace:
      description: Pod namespace.
      type: str
      sample: shop
    node:
      description: Node the pod was on.
      type: str
      sample: ip-10-0-1-5.ec2.internal
    owner:
      description: C(Kind/name) of the pod's controller, or null for a bare pod.
      type: str
      sample: ReplicaSet/web-7f9c4d8b6
    action:
      description: >-
        The plan for the pod, V(evict), V(delete) (terminal pods), V(wait) (already being deleted, for example
        by a rollout: waited for until it is gone), V(skip) or V(refuse).
      type: str
      sample: evict
    reason:
      description: >-
        The filter that decided: V(evictable), V(daemonset), V(mirror),
        V(terminal), V(terminating), V(namespace), V(unreplicated),
        V(local-storage), V(do-not-disrupt), V(system-critical).
      type: str
      sample: evictable
    outcome:
      description: >-
        V(evicted), V(deleted), V(skipped), V(refused), V(blocked) (by a PDB at
        the deadline), V(terminating) (evicted or already being deleted, not
        yet gone at the deadline), V(gone) (gone before we evicted it, or
        already being deleted and now gone), V(failed), V(pending) (not
        attempted), or V(planned) in check mode. When refused pods stop the
        call before any eviction, the other pods are V(not attempted).
      type: str
      sample: evicted
    detail:
      description: The reason in words, or the API server's message.
      type: str
      sample: ""
    notes:
      description: Facts that do not change the decision, for example the PVCs used and their volume's zone.
      type: list
      elements: str
      sample: [uses PVC data-db-0 (volume bound to zone eu-west-1a)]
    attempts:
      description: Eviction requests made for the pod (429 retries included).
      type: int
      sample: 3
    pdbs:
      description: The PDBs that blocked the pod, with their status, when it was blocked.
      type: list
      elements: str
      sample: ["PDB shop/web-pdb (currentHealthy 3, desiredHealthy 3, disruptionsAllowed 0)"]
summary:
  description: Number of pods per outcome, and C(remaining), the pods other than DaemonSet, mirror and terminal pods left on the drained nodes.
  returned: always
  type: dict
  sample: {evicted: 12, skipped: 3, remaining: 0}
remaining:
  description: Pods still on the drained nodes that a drain should have removed (C(namespace/name)).
  returned: when nodes are drained with O(wait), not in check mode
  type: list
  elements: str
  sample: []
nodes:
  description: The drained nodes.
  returned: always
  type: list
  elements: str
  sample: [ip-10-0-1-5.ec2.internal, ip-10-0-2-7.ec2.internal]
warmed:
  description: >-
    With O(warm_first), what the warming did: the result M(kubeops.rotation.warm_nodes) returns (its
    RV(kubeops.rotation.warm_nodes#module:nodes), RV(kubeops.rotation.warm_nodes#module:action),
    RV(kubeops.rotation.warm_nodes#module:elapsed_seconds), ...).
  returned: with O(warm_first)
  type: dict
  version_added: 0.3.0
  sample: {"name": "rotation-7f3a", "namespace": "kubeops-warm", "action": "created", "count": 2,
           "nodes": ["ip-10-0-4-2.ec2.internal", "ip-10-0-5-8.ec2.internal"], "elapsed_seconds": 48.1}
replaced:
  description: >-
    With O(replace_first), what the replacement did: the result M(kubeops.rotation.replace_pods) returns (its
    RV(kubeops.rotation.replace_pods#module:workloads), RV(kubeops.rotation.replace_pods#module:summary),
    RV(kubeops.rotation.replace_pods#module:elapsed_seconds), ...), but for its diff and warnings, which are this
    call's.
  returned: with O(replace_first)
  type: dict
  version_added: 0.3.0
  sample: {"workloads": [], "gone": [], "finished_left_over": [], "steered_nodes": [], "elapsed_seconds": 0.4,
           "summary": {"workloads": 0, "pods": 0, "replaced": 0, "gone": 0, "left_over_finished": 0}}
steered_nodes:
  description: The nodes steered away from with O(keep_zones) or O(avoid_nodes), for the time of the call; empty without them.
  returned: when not in check mode
  type: list
  elements: str
  version_added: 0.2.0
  sample: [ip-10-0-3-9.ec2.internal]
elapsed_seconds:
  description: >-
    Wall time of the eviction (with O(warm_first) or O(replace_first), after them; RV(warmed) and RV(replaced) have
    their own).
  returned: always
  type: float
  sample: 42.7
waited_seconds:
  description:
    - Of RV(elapsed_seconds), the seconds the eviction waited, by what for.
  returned: when not in check mode and pods were evicted
  type: dict
  version_added: 0.3.0
  sample: {"pdb_pace": 12.4, "pods_starting": 20.1, "pods_going": 3.2, "backing_off": 0.0, "api_answers": 4.1}
  contains:
    pdb_pace:
      description: A PDB to allow another disruption.
      type: float
      sample: 12.4
    pods_starting:
      description: Pods to be Ready (replacements that give a workload replicas to spare, and those waited for at the end).
      type: float
      sample: 20.1
    pods_going:
      description: Evicted pods to terminate.
      type: float
      sample: 3.2
    backing_off:
      description: A backoff after the API server's own 429 (too many requests).
      type: float
      sample: 0.0
    api_answers:
      description: The API server answering the evictions (and deletions) themselves, a few sent at once.
      type: float
      sample: 4.1
diff:
  description: >-
    Each pod evicted or deleted (in check mode, planned to be), with its node before and null after; with
    O(replace_first), also each pod replaced.
  returned: when diff mode is on
  type: dict
  sample: {"before": {"shop/web-7d9f-x2k4q": "node-1"}, "after": {"shop/web-7d9f-x2k4q": null}}
  version_added: 0.3.0
api_requests:
  description: Number of HTTP requests made to the API server.
  returned: always
  type: int
  sample: 37
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

from ansible_collections.kubeops.rotation.plugins.module_utils.ansible_module import (
    WARM_OPTIONS,
    kubernetes_module,
    run_module,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.drain import DrainJob, move
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.replacement import ReplaceSettings
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.warm import WarmSettings

EVICT_ARGUMENT_SPEC = dict(
    nodes=dict(type="list", elements="str"),
    node_selector=dict(type="str"),
    namespaces=dict(type="list", elements="str"),
    exclude_namespaces=dict(type="list", elements="str", default=[]),
    pod_selector=dict(type="str"),
    field_selector=dict(type="str"),
    timeout=dict(type="int", default=300, aliases=["wait_timeout"]),
    wait=dict(type="bool", default=True),
    wait_for_replacements=dict(type="bool", default=False),
    grace_period=dict(type="int", aliases=["terminate_grace_period"]),
    disable_eviction=dict(type="bool", default=False),
    force=dict(type="bool", default=False),
    delete_emptydir_data=dict(type="bool", default=False),
    respect_do_not_disrupt=dict(type="bool", default=True),
    evict_system_critical=dict(type="bool", default=False),
    skip_refused=dict(type="bool", default=False),
    keep_zones=dict(type="bool", default=False),
    avoid_nodes=dict(type="list", elements="str", default=[]),
    warm_first=dict(type="dict", options=WARM_OPTIONS, mutually_exclusive=[["count", "zones"]],
                    required_one_of=[["count", "zones"]]),
    replace_first=dict(type="dict", options=dict(
        pods=dict(type="list", elements="str", required=True),
        run_id=dict(type="str", required=True),
        timeout=dict(type="int", default=900),
        max_concurrent=dict(type="int", default=4),
    )),
    max_in_flight=dict(type="int"),
    max_per_node=dict(type="int"),
    max_per_namespace=dict(type="int"),
    max_unavailable_per_owner=dict(type="str"),
    max_evictions=dict(type="int"),
    reason=dict(type="str", default=""),
)


def validated(params):
    """(DrainJob, WarmSettings or None, ReplaceSettings or None), each its class's from_params, or InvalidInput
    before anything is read or changed."""
    warming = (WarmSettings.from_params(params["warm_first"], "warm_first.")
               if params["warm_first"] is not None else None)
    replacing = (ReplaceSettings.from_params(params["replace_first"], "replace_first.")
                 if params["replace_first"] is not None else None)
    return DrainJob.from_params(params), warming, replacing


def evict(client, settings, check_mode):
    job, warming, replacing = settings
    return move(client, job, check_mode, warming=warming, replacing=replacing)


def main():
    module = kubernetes_module(EVICT_ARGUMENT_SPEC, lease=True,
                               required_one_of=[["nodes", "node_selector", "namespaces", "pod_selector"]])
    if module.params["disable_eviction"]:
        module.warn("disable_eviction is on: pods are deleted, bypassing their PodDisruptionBudgets.")
    run_module(module, evict, validated)


if __name__ == "__main__":
    main()
