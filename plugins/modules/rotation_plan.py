#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: rotation_plan
short_description: Plan a node rotation, which nodes, in which batches, how every pod moves, and whether it fits
version_added: 0.1.0
description:
  - Picks the nodes to rotate, O(nodes) by name or O(node_selector) plus
    drift rules (kubelet version, a label value, age, an annotation or a
    taint, or Karpenter's own verdict with O(karpenter_drifted)), leaving out
    nodes this O(rotation_id) already rotated.
  - Groups them into batches of at most O(batch_size) nodes, one zone
    (C(topology.kubernetes.io/zone)) at a time.
  - For every pod on those nodes it says how it will move. Replacement first
    (M(kubeops.rotation.replace_pods)) for C(karpenter.sh/do-not-disrupt)
    pods, single-replica workloads and pods whose PDB allows no disruption
    now, guarded eviction for the others; DaemonSet, mirror and finished pods
    stay. Only the pods of the rotated nodes move. Pods that cannot move
    safely (bare pods without O(force), emptyDir without
    O(delete_emptydir_data), do-not-disrupt pods without a Deployment or
    StatefulSet, a StatefulSet's pod under a PDB that allows no disruption
    even with every pod Ready) are listed as blocked, with the reason.
  - Counts the warm nodes each batch needs from its pods' requests against a
    pool node (O(template_capacity), O(template_node), or a node matching
    O(pool_node_selector)), in the zones the pool serves (O(pool_zones)), and
    a node more in a zone while that places a pod left out by required
    anti-affinity or topology spread; and checks that the pods of each batch fit, by
    requests, node selectors and required node affinity, taints and
    tolerations, hostname anti-affinity and the zone of their volumes, on the
    nodes that stay plus the warm nodes. A plan that does not fit says so
    before anything is touched.
  - An information module, it never changes anything.
extends_documentation_fragment:
  - kubeops.rotation.connection
seealso:
  - module: kubeops.rotation.gates
    description: Checks that the application is well before the first batch and after each one.
  - module: kubeops.rotation.rotation_state
    description: Records each node's phase; nodes drained or retired under the same O(rotation_id) are left out of the plan.
  - module: kubeops.rotation.cordon
    description: Cordons a batch's nodes.
  - module: kubeops.rotation.warm_nodes
    description: Brings up a batch's warm nodes, per zone as RV(batches[].warm_zones) gives them.
  - module: kubeops.rotation.replace_pods
    description: Moves the pods of RV(batches[].replace), replacement first.
  - module: kubeops.rotation.evict
    description: Moves the pods of RV(batches[].evict) by guarded eviction.
  - module: kubeops.rotation.rebalance
    description: Plans moves between the nodes that stay, rather than replacing nodes.
  - name: kubeops.rotation.rotate_nodes role
    description: Runs this plan batch by batch (C(ansible-doc -t role kubeops.rotation.rotate_nodes)).
    link: roles/rotate_nodes/meta/argument_specs.yml
options:
  nodes:
    description:
      - Nodes to rotate, by name. Every one must exist.
      - An empty name is refused, and so is an empty list without O(node_selector) or O(karpenter_drifted)
        (unless only RV(zone_counts) of O(zone_counts_of), or RV(way_back) of O(rotation_id), is wanted), before
        any request.
    type: list
    elements: str
  node_selector:
    description:
      - Label selector of the candidate nodes; with drift rules, only those that drifted rotate.
      - An empty or blank selector, or one that the API server would not
        parse, is refused before any request.
    type: str
  target_kubelet_version:
    description:
      - Rotate candidates whose kubelet is older than this version, for example V(v1.35.0).
      - Anything but a version (V(latest), an empty string) is refused before any request.
    type: str
  wanted_labels:
    description:
      - Rotate candidates where one of these labels has another value (an AMI id, a node-group version).
      - Keys must be label keys and values label values, as strings (quote V(2)); others are refused.
    type: dict
    default: {}
  max_node_age:
    description: Rotate candidates older than this, for example V(30d) or V(12h).
    type: str
  with_annotations:
    description: Rotate candidates that carry one of these annotations.
    type: list
    elements: str
    default: []
  with_taints:
    description: Rotate candidates that carry a taint with one of these keys.
    type: list
    elements: str
    default: []
  karpenter_drifted:
    description:
      - Rotate the nodes whose Karpenter NodeClaim (C(karpenter.sh/v1)) is C(Drifted=True), for example after a
        NodePool or NodeClass change; each node of RV(nodes) gives, among its reasons, the NodeClaim and why it drifted.
      - Without O(nodes) or O(node_selector), every node that has a NodeClaim (of O(karpenter_nodepools), when
        given) is a candidate.
      - NodeClaims are listed once per plan. A cluster without Karpenter's NodeClaims is refused.
    type: bool
    default: false
    version_added: 0.3.0
  karpenter_nodepools:
    description: With O(karpenter_drifted), only the NodeClaims of these NodePools count.
    type: list
    elements: str
    default: []
    version_added: 0.3.0
  karpenter_budgets:
    description:
      - >-
        Make batches no larger than the chosen nodes' NodePools let Karpenter disrupt for reason C(Drifted) now
        (C(spec.disruption.budgets), the most restrictive budget in force, a percent counted on the pool's nodes and
        rounded up, 10% when a pool has none), and never larger than O(batch_size).
      - A pool that allows none now puts its budget in RV(abort_reasons). RV(budgets) says what each pool allows.
    type: bool
    default: false
    version_added: 0.3.0
  rotation_id:
    description:
      - Id of the rotation; nodes it already drained or retired are left out.
      - A node of O(nodes) that no longer exists is left out too when the cluster's Lease (C(kubeops-rotation) in
        O(lease_namespace)) records that this rotation retired it (a rerun after a kill, or of a rotation that
        finished); any other name of no node is refused.
    type: str
  lease_namespace:
    description: Namespace of the cluster's Lease, read only when a node of O(nodes) does not exist.
    type: str
    default: kube-system
    version_added: 0.3.0
  batch_size:
    description:
      - Nodes per batch, a count (V(2)) or a percent of the nodes to rotate (V(25%), rounded down, at least 1).
      - V(0), V(0%) and percents over 100 are refused before any request.
    type: str
    default: "1"
  canary_size:
    description:
      - The first batch's own size, a count (V(1)) or a percent of the nodes to rotate. The first batch is then a
        canary of the first zone's least disruptive nodes (RV(batches[].canary)), and the rest go in batches of
        O(batch_size).
      - Only where the rotation starts; a rerun of a rotation already begun (its nodes marked by its O(rotation_id))
        goes on without one.
    type: str
    version_added: 0.3.0
  most_disruptive:
    description: Within a zone, whether the nodes with the most pods to move go V(first) or V(last).
    type: str
    choices: [first, last]
    default: last
  pool_node_selector:
    description:
      - Labels of the nodes the pods move to (the new pool); the warm nodes get them.
      - Keys must be label keys and values label values, as strings; others are refused.
    type: dict
    default: {}
  pool_zones:
    description:
      - The zones the new pool can bring nodes up in. Warm nodes are asked for only there; a pod from another zone
        is warmed for in the first of them, and a pod whose volume is bound to a zone the pool does not serve must
        fit on a node of that zone that stays, or the plan does not fit.
      - Without it, the zones a Karpenter NodePool named by O(pool_node_selector) (C(karpenter.sh/nodepool))
        requires in its template; otherwise any zone.
    type: list
    elements: str
    version_added: 0.2.0
  retire:
    description:
      - How the rotation will retire the drained nodes, as the rotate_nodes role's C(rotate_nodes_retire) says; the
        plan then says for each node what that means (RV(batches[].retire)). It changes nothing here.
      - V(delete) deletes a node's Karpenter NodeClaim or Cluster API Machine and leaves a node with neither
        cordoned; V(delete_node) also deletes the Node object of a node with neither; V(leave) leaves every node
        cordoned; V(tasks) runs your own tasks for each.
    type: str
    choices: [delete, delete_node, leave, tasks]
    default: delete
    version_added: 0.3.0
  template_capacity:
    description:
      - Allocatable of one node of the new pool (cpu, memory, pods).
      - It needs all three, each a Kubernetes quantity above 0 (V(3920m), V(15Gi), V(58)); anything else
        is refused before any request.
      - Without it, O(template_node) or a node matching O(pool_node_selector);
        without any of them, no warm nodes are planned.
    type: dict
  template_node:
    description: An existing node whose allocatable stands for a node of the new pool.
    type: str
  force:
    description: Plan bare pods for eviction instead of listing them as blocked.
    type: bool
    default: false
  delete_emptydir_data:
    description: Plan pods with emptyDir volumes for eviction instead of listing them as blocked.
    type: bool
    default: false
  evict_system_critical:
    description: Plan system-critical pods for eviction instead of listing them as blocked.
    type: bool
    default: false
  zone_counts_of:
    description:
      - Workloads (C(namespace/Kind/name)) whose pods per zone RV(zone_counts) also gives, for example to
        measure after a rotation the workloads its plan moved.
    type: list
    elements: str
    default: []
    version_added: 0.2.0
  planned_evictions:
    description:
      - Pods (C(namespace/name)) that an earlier plan of the same rotation evicts, as the check of a batch passes
        its planned RV(batches[].evict).
      - Such a pod is planned for eviction again while its PDB allows no disruption only for now (the rotation's
        last batch left pods not Ready yet); the eviction waits for the PDB. A PDB that allows none even with every
        pod Ready still makes it replaced first.
    type: list
    elements: str
    default: []
    version_added: 0.3.0
  abort_if:
    description:
      - Conditions under which a rotation should not start its next batch;
        RV(abort_reasons) lists those that hold now.
    type: dict
    default: {}
    suboptions:
      pending_pods_for:
        description: A pod (placeholders aside) Pending for longer than this, for example V(5m).
        type: str
      pdb_blocked_for:
        description: A PDB that has allowed no disruption for longer than this, for example V(10m).
        type: str
attributes:
  check_mode:
    support: full
    description: The module never changes anything.
  diff_mode:
    support: none
    description: The module never changes anything.
author:
  - kubeops.rotation developers (@kubeops)
"""

EXAMPLES = r"""
- name: Plan replacing every node of the general pool that runs an old kubelet, two at a time
  kubeops.rotation.rotation_plan:
    node_selector: karpenter.sh/nodepool=general
    target_kubelet_version: v1.35.0
    rotation_id: "{{ rotation_id }}"
    batch_size: "2"
    pool_node_selector: {karpenter.sh/nodepool: general-v2}
    template_capacity: {cpu: "3920m", memory: 15Gi, pods: "58"}
  register: plan

- name: Show it
  ansible.builtin.debug:
    msg: "{{ plan.summary }}"

- name: Stop before touching anything when it does not fit
  ansible.builtin.assert:
    that: [plan.fits, plan.safe]
    fail_msg: "{{ plan.summary }}"
"""

RETURN = r"""
rotation_id:
  description: The O(rotation_id) the plan is for, or null without one.
  returned: always
  type: str
  sample: ami-2026-12
nodes:
  description:
    - The nodes to rotate, with their zone and why they rotate.
    - C(notes) says when a node is annotated C(karpenter.sh/do-not-disrupt);
      Karpenter will not disrupt it, the rotation does because it was selected.
  returned: always
  type: list
  elements: dict
  sample: [{name: node-1, zone: zone-a, reasons: ["kubelet v1.34.2 is older than v1.35.0"]}]
left_out:
  description: Candidate nodes that do not rotate, with the reason (no drift, already rotated).
  returned: always
  type: list
  elements: dict
  sample: [{name: node-9, reason: no drift}, {name: node-2, reason: already rotated by ami-2026-12 (retired)}]
batches:
  description: The batches in order.
  returned: always
  type: list
  elements: dict
  contains:
    index:
      description: 1-based position.
      type: int
      sample: 1
    zone:
      description: Zone of the batch's nodes.
      type: str
      sample: zone-a
    nodes:
      description: Node names.
      type: list
      elements: str
      sample: [node-1, node-2]
    canary:
      description: True on the canary batch (O(canary_size)); absent on the others.
      type: bool
      returned: on the canary batch
      sample: true
    replace:
      description:
        - >-
          Workloads whose pods on the batch are replaced first, as M(kubeops.rotation.replace_pods) does it:
          C(kind), C(namespace), C(name), the reason, C(method) (V(surge) for a Deployment, V(one_at_a_time) for a
          StatefulSet or a Recreate Deployment), their pods on the batch (C(pods)), and C(autoscaler), the name of
          the HorizontalPodAutoscaler whose bounds rise with the surge, when there is one.
        - Only those pods move; the workload's pods on other nodes stay.
      type: list
      elements: dict
      sample:
        - kind: StatefulSet
          namespace: shop
          name: db
          reason: do-not-disrupt
          method: one_at_a_time
          pods: [shop/db-0]
    evict:
      description: Pods to move by guarded eviction (C(namespace/name)).
      type: list
      elements: str
      sample: [shop/web-7f9c4d8b6-x2kqp]
    blocked:
      description: Pods that cannot move safely, with the reason.
      type: list
      elements: dict
      sample: [{pod: shop/debug, reason: "unreplicated: no controller would recreate it; set force: true to evict it anyway"}]
    stays:
      description: DaemonSet, mirror and finished pods, which do not move.
      type: list
      elements: str
      sample: [kube-system/kube-proxy-8k2lp]
    warm_nodes:
      description: Warm nodes the batch adds.
      type: int
      sample: 2
    warm_new:
      description: Per zone of the pods that move, the warm nodes the batch adds.
      type: dict
      sample: {zone-a: 2}
      version_added: 0.2.0
    warm_zones:
      description:
        - The rotation's warm nodes per zone up to and including this batch (C(zone), C(count)), as
          O(kubeops.rotation.warm_nodes#module:zones) takes them. A pool whose O(pool_node_selector) pins a zone
          warms there only.
      type: list
      elements: dict
      sample: [{zone: zone-a, count: 2}]
      version_added: 0.2.0
    evict_by_workload:
      description: How many of RV(batches[].evict) each workload has (C(Kind namespace/name), or V(bare pods)).
      type: dict
      sample: {"Deployment shop/web": 3}
      version_added: 0.3.0
    retire:
      description: For each node of the batch, how it will be retired after O(retire), in words.
      type: dict
      sample: {node-1: "delete its NodeClaim general-x7k2p; Karpenter removes the instance and the Node"}
      version_added: 0.3.0
    warm_computed:
      description: How the warm node count was computed, when a pool node size was known.
      type: str
      sample: >-
        zone zone-a: 6 pod(s) requesting 3.5 CPU, 8 GiB need 2 node(s) of 3.8 CPU, 15.7 GiB, 108 pods (after
        DaemonSets); the tightest resource decides
    fits:
      description: Whether the batch's moving pods fit on the nodes that stay plus the warm nodes.
      type: bool
      sample: true
    unplaced:
      description: Pods that would not fit, with the reason.
      type: list
      elements: dict
      sample: [{pod: shop/big-0, reason: "no node has room for its requests (6 CPU, 20 GiB)"}]
fits:
  description: Whether every batch fits.
  returned: always
  type: bool
  sample: true
safe:
  description: Whether no pod is blocked.
  returned: always
  type: bool
  sample: true
zone_counts:
  description: >-
    Per workload whose pods move (C(namespace/Kind/name)), and per workload of O(zone_counts_of), its live pods per
    zone now.
  returned: always
  type: dict
  version_added: 0.2.0
  sample: {shop/Deployment/web: {zone-a: 2, zone-b: 2}}
zone_counts_planned:
  description: The same counts once the plan's moves are made, as the fit check places the pods.
  returned: always
  type: dict
  version_added: 0.2.0
  sample: {shop/Deployment/web: {zone-a: 2, zone-b: 2}}
budgets:
  description: With O(karpenter_budgets), what each NodePool of the chosen nodes allows now, in words.
  returned: always
  type: list
  elements: str
  version_added: 0.3.0
  sample: ["NodePool general allows 1 Drifted disruption(s) at once now (budget nodes 10% of 6)"]
warnings:
  description: What the plan cannot keep, in words (for example zones the pool does not provision in).
  returned: always
  type: list
  elements: str
  version_added: 0.2.0
  sample: ["the pool provisions only in zone(s) zone-a: the pods of zone(s) zone-b move there, or to other nodes of their own zone"]
pool_zones:
  description: The zones the new pool serves, from O(pool_zones) or its Karpenter NodePool; null when any.
  returned: always
  type: list
  elements: str
  version_added: 0.2.0
  sample: [zone-a, zone-b]
abort_reasons:
  description: The O(abort_if) conditions that hold now, in words; empty when none does.
  returned: always
  type: list
  elements: str
  sample: ["PDB shop/web-pdb has allowed no disruption for 620 s (abort_if pdb_blocked_for 10m)"]
summary:
  description: The plan in a few lines, for people.
  returned: always
  type: list
  elements: str
  sample:
    - "Rotation ami-2026-12: 2 node(s) in 1 batch(es)."
    - "batch 1/1 (zone zone-a): node-1, node-2; replace first 2 pod(s) of 1 workload(s), evict 3 pod(s), 2 warm node(s) (zone-a 2)"
    - "  StatefulSet shop/db: one at a time, 2 pod(s) (do-not-disrupt)"
api_requests:
  description: Number of HTTP requests made to the API server.
  returned: always
  type: int
  sample: 6
api_retries:
  description:
    - Requests sent again after a transient fault (C(requests)), and the writes among all requests whose answer
      was lost on the way back (C(lost_answers)) - each either sent again when a repeat finds it done (a patch,
      a delete, a create), or read first (an eviction), so that nothing is done twice.
  returned: always
  type: dict
  sample: {"requests": 3, "lost_answers": 1}
  version_added: 0.3.0
way_back:
  description:
    - What a rollback of O(rotation_id) works on (the role's C(rotate_nodes_rollback)); null without O(rotation_id).
  returned: always
  type: dict
  version_added: 0.3.0
  contains:
    started_at:
      description: When the rotation marked its first node planned, or null when it never did.
      type: str
      sample: "2026-12-07T06:00:00Z"
    nodes:
      description: The nodes the rotation marked, whatever their phase, and those it keeps.
      type: list
      elements: str
      sample: [old-1, old-2]
    kept:
      description: The drained nodes it keeps for its way back.
      type: list
      elements: str
      sample: [old-1]
    new:
      description: The nodes that came since it began (of the pool O(pool_node_selector) names, when given).
      type: list
      elements: str
      sample: [new-7f2k]
"""

from ansible_collections.kubeops.rotation.plugins.module_utils.ansible_module import kubernetes_module, run_module
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.rotation_plan import (
    RotationRequest,
    plan_from_cluster,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.retirement import RETIRE_CHOICES

ARGUMENT_SPEC = dict(
    nodes=dict(type="list", elements="str"),
    node_selector=dict(type="str"),
    target_kubelet_version=dict(type="str"),
    wanted_labels=dict(type="dict", default={}),
    max_node_age=dict(type="str"),
    with_annotations=dict(type="list", elements="str", default=[]),
    with_taints=dict(type="list", elements="str", default=[]),
    karpenter_drifted=dict(type="bool", default=False),
    karpenter_nodepools=dict(type="list", elements="str", default=[]),
    karpenter_budgets=dict(type="bool", default=False),
    rotation_id=dict(type="str"),
    lease_namespace=dict(type="str", default="kube-system"),
    batch_size=dict(type="str", default="1"),
    canary_size=dict(type="str"),
    most_disruptive=dict(type="str", choices=["first", "last"], default="last"),
    pool_node_selector=dict(type="dict", default={}),
    pool_zones=dict(type="list", elements="str"),
    retire=dict(type="str", choices=list(RETIRE_CHOICES), default="delete"),
    template_capacity=dict(type="dict"),
    template_node=dict(type="str"),
    force=dict(type="bool", default=False),
    delete_emptydir_data=dict(type="bool", default=False),
    evict_system_critical=dict(type="bool", default=False),
    zone_counts_of=dict(type="list", elements="str", default=[]),
    planned_evictions=dict(type="list", elements="str", default=[]),
    abort_if=dict(type="dict", default={}, options=dict(
        pending_pods_for=dict(type="str"),
        pdb_blocked_for=dict(type="str"),
    )),
)


def plan(client, request, _check_mode):
    """The plan; planning reads and changes nothing, in check mode or not."""
    return dict(plan_from_cluster(client, request), changed=False)


def main():
    module = kubernetes_module(ARGUMENT_SPEC, mutually_exclusive=[["template_capacity", "template_node"]])
    run_module(module, plan, RotationRequest.from_params)


if __name__ == "__main__":
    main()
