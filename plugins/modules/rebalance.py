#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: rebalance
short_description: Even out pods across nodes in one planned, steered, guarded pass
version_added: 0.1.0
description:
  - Reads the nodes and pods once and plans the fewest moves that even them
    out, by the strategies in O(strategies), each move checked against what
    the scheduler's filters allow on the target node (requests against
    allocatable, node selectors and required node affinity, taints and
    tolerations, required hostname anti-affinity, DoNotSchedule topology
    spread constraints). Cordoned and not Ready nodes are left out.
  - Nothing moves when no node can take a pod; the result's RV(stuck) says
    what stays uneven and why.
  - Steers the replacements to the planned nodes by tainting every node of
    the pass that receives nothing with C(kubeops.io/rebalancing)
    (O(steering)) while the pods move; the taints are removed at the end,
    also on failure, and a later pass removes any left by a killed one.
  - Evicts through the same guarded path as M(kubeops.rotation.evict) (the
    Eviction API, PDBs enforced by the API server, 429 retried until
    O(timeout)), waits for the owners to have all their replicas Ready again,
    then measures the spread and reports where each replacement landed.
  - In check mode, returns the plan with the skew before and the skew
    predicted after. On a balanced cluster it plans nothing and reports no change.
extends_documentation_fragment:
  - kubeops.rotation.connection
  - kubeops.rotation.lease
seealso:
  - module: kubeops.rotation.evict
    description: The guarded eviction engine the pass moves pods with; the same limits and outcomes.
  - module: kubeops.rotation.rotation_plan
    description: Plans a rotation of nodes (replacing them) rather than moving pods between the nodes that stay.
  - module: kubeops.rotation.lease
    description: The cluster's Lease that O(lease) takes before the first write, so that one pass runs at a time.
  - name: kubeops.rotation.rebalance role
    description: The pass with its summary, a JSON report and a skew check (C(ansible-doc -t role kubeops.rotation.rebalance)).
    link: roles/rebalance/meta/argument_specs.yml
options:
  strategies:
    description:
      - V(node_taints) moves pods off nodes that carry a NoSchedule taint they
        do not tolerate (a taint added after they landed; the Descheduler's
        RemovePodsViolatingNodeTaints). Taints of a cordon and this
        collection's own (C(kubeops.io/...)) do not count; NoExecute is left to
        Kubernetes, which evicts such pods itself.
      - V(node_affinity) moves pods whose node no longer satisfies their
        nodeSelector or required node affinity (a label changed after they
        landed), and pods with a preferred node affinity to a node they fit on
        that satisfies it with a higher weight, if there is one (the
        Descheduler's RemovePodsViolatingNodeAffinity, both types).
      - V(pod_anti_affinity) moves pods that run in the topology domain
        (their node, their zone, or any other key of the term) of a pod their
        required pod anti-affinity excludes (the Descheduler's
        RemovePodsViolatingInterPodAntiAffinity), all but one of such pods,
        each to a node where neither its anti-affinity nor that of a pod
        already there is broken, on any topology key.
      - Each pod these three move goes to a node that accepts it, the one with
        the fewest pods of its owner first; one that no node takes is in
        RV(stuck) (not for a preferred affinity, which is no violation).
        DaemonSet and static pods stay with their node and are not counted.
      - V(topology_spread) moves pods that break their own DoNotSchedule
        topologySpreadConstraints (any topology key), from the most to the
        least populated domains.
      - V(duplicates) moves replicas of one owner (Deployment, StatefulSet,
        ReplicaSet, ...) from nodes that have more of them to nodes that can
        run them and have fewer, until max minus min per node is at most
        O(max_skew).
      - V(utilization) moves the largest pods off nodes whose requests (the
        most used of cpu, memory and pods, in percent of allocatable) are more
        than O(utilization_deviation) points above the average, to nodes as
        far below it, never filling a receiver above the average.
      - V(compaction) empties the nodes whose utilization (the most used of
        cpu, memory and pods, in percent of allocatable) is below
        O(compaction_threshold), the emptiest first, onto the fullest nodes
        that take their pods, so that an autoscaler (Karpenter's
        consolidation, a node group's scale-down) can remove them (the
        Descheduler's HighNodeUtilization). A node is emptied whole or not at
        all; DaemonSet and static pods stay; a node that received pods is not
        emptied after, so no pod moves twice. While the pass runs, the nodes
        it empties carry the steering taint with NoSchedule (whatever
        O(steering) says) and the nodes it fills the C(karpenter.sh/do-not-disrupt) and
        C(cluster-autoscaler.kubernetes.io/scale-down-disabled) annotations
        (those they lacked), so that no autoscaler removes a node being filled.
        RV(compaction) names the nodes emptied; the pass leaves their removal
        to the autoscaler.
      - V(compaction) packs where V(duplicates) and V(utilization) spread; a
        pass with it and either of them is refused.
      - They apply in the order node_taints, node_affinity, pod_anti_affinity,
        topology_spread, duplicates, utilization, compaction; later ones never
        break what earlier ones fixed or evened out.
    type: list
    elements: str
    choices: [node_taints, node_affinity, pod_anti_affinity, topology_spread, duplicates, utilization, compaction]
    default: [topology_spread, duplicates]
  node_selector:
    description:
      - Label selector of the nodes of the pass (for example one node pool).
        Pods move only between these nodes. Without it, every node.
      - An empty or blank selector, or one that the API server would not
        parse, is refused before any request.
    type: str
  namespaces:
    description:
      - Balance only the pods of these namespaces. Others still count against their nodes' room.
      - An empty list, or an empty name in it, is refused before any request.
    type: list
    elements: str
  exclude_namespaces:
    description:
      - Never move the pods of these namespaces.
    type: list
    elements: str
    default: [kube-system]
  pod_selector:
    description:
      - Balance only the pods this label selector picks, for example V(tier=web).
      - An empty or blank selector, or one that the API server would not
        parse, is refused before any request.
    type: str
  max_skew:
    description:
      - The spread the V(duplicates) strategy aims for; max minus min pods of an owner per node. At least 1.
    type: int
    default: 1
  utilization_deviation:
    description:
      - Percentage points above (and below) the average utilization that make
        a node a donor (and a receiver) for V(utilization). Between 1 and 99.
    type: int
    default: 20
  compaction_threshold:
    description:
      - Utilization (the most used of cpu, memory and pods, in percent of
        allocatable) below which V(compaction) empties a node. Between 1 and
        99.
    type: int
    default: 20
    version_added: 0.3.0
  max_evictions:
    description:
      - Moves the pass may plan in all; the plan stops there and the
        predicted skew shows what is left for the next pass. 0 or more.
    type: int
  max_per_owner:
    description:
      - Moves per owner the pass may plan. At least 1.
    type: int
  max_in_flight:
    description:
      - Evicted pods not yet gone, at most, at any time. At least 1.
    type: int
  max_unavailable_per_owner:
    description:
      - Pods of one owner that may be not Ready at once, as a count or a
        percent of its desired replicas, on top of PDBs; as in M(kubeops.rotation.evict).
    type: str
    default: "1"
  steering:
    description:
      - Effect of the C(kubeops.io/rebalancing) taint put on the nodes that
        receive nothing during the pass. V(PreferNoSchedule) steers without
        blocking anything; V(NoSchedule) forbids them to new pods (of any
        workload) until the pass ends; V(none) leaves placement to the scheduler.
      - The nodes V(compaction) empties carry it with V(NoSchedule) whatever
        this says, V(none) included; without it a scheduler that spreads by
        default puts the pods straight back.
    type: str
    choices: [PreferNoSchedule, NoSchedule, none]
    default: PreferNoSchedule
  timeout:
    description:
      - Seconds for the evictions and the wait for replacements. At the
        deadline it fails naming what blocked; the taints are removed. At least 1.
    type: int
    default: 300
  delete_emptydir_data:
    description:
      - Move pods with emptyDir volumes too; their data is lost.
    type: bool
    default: false
  respect_do_not_disrupt:
    description:
      - Leave pods annotated C(karpenter.sh/do-not-disrupt=true) or
        C(cluster-autoscaler.kubernetes.io/safe-to-evict=false) where they are.
    type: bool
    default: true
  evict_system_critical:
    description:
      - Move pods of the priority classes C(system-cluster-critical) and C(system-node-critical) too.
    type: bool
    default: false
  reason:
    description:
      - Why, added to the Events recorded on evicted pods.
    type: str
    default: rebalance
attributes:
  check_mode:
    support: full
    description: Returns the plan, the skew before and the predicted skew after; changes nothing.
  diff_mode:
    support: full
    description: >-
      Each pod moved, with the node it leaves before and, after, the node planned (check mode) or where its
      replacement landed; RV(skew_before) and RV(skew_predicted) are the preview of the spread.
author:
  - kubeops.rotation developers (@kubeops)
"""

EXAMPLES = r"""
- name: Even out the replicas of every Deployment after nodes were added
  kubeops.rotation.rebalance:
    strategies: [duplicates, topology_spread]
    max_evictions: 20
  register: pass_result

- name: Show what a pass would do in one pool, without doing it
  kubeops.rotation.rebalance:
    node_selector: kubeops.io/pool=general
    strategies: [duplicates, utilization]
  check_mode: true
  register: rebalance_plan

- name: Print the plan
  ansible.builtin.debug:
    var: rebalance_plan.summary

- name: Move the pods a new taint or a changed label no longer lets run where they are
  kubeops.rotation.rebalance:
    strategies: [node_taints, node_affinity, pod_anti_affinity]
  register: rules_fixed
  failed_when: rules_fixed.violations_after is defined and
    (rules_fixed.violations_after.values() | map('length') | sum) > 0

- name: Empty the nodes used below 30 % for the autoscaler to remove, checking first which ones
  kubeops.rotation.rebalance:
    strategies: [compaction]
    compaction_threshold: 30
  check_mode: true
  register: compaction_plan
"""

RETURN = r"""
moves:
  description: The planned moves, in order; after a real pass, with where each replacement landed.
  returned: always
  type: list
  elements: dict
  contains:
    pod:
      description: C(namespace/name) of the pod to move.
      type: str
      sample: shop/web-7f9c4d8b6-x2kqp
    owner:
      description: C(namespace/Kind/name) of its owner (a Deployment for its ReplicaSets).
      type: str
      sample: shop/Deployment/web
    from:
      description: The node it is on.
      type: str
      sample: node-1
    to:
      description: The node the plan puts its replacement on.
      type: str
      sample: node-4
    strategy:
      description: The strategy that planned it.
      type: str
      sample: duplicates
    reason:
      description: Why, in words.
      type: str
      sample: shop/Deployment/web has 3 on node-1, 0 on node-4
    outcome:
      description: What the eviction did, as in M(kubeops.rotation.evict) (V(evicted), V(blocked)...); real runs only.
      type: str
      sample: evicted
    detail:
      description: The eviction's detail in words, or the API server's message, as in M(kubeops.rotation.evict); real runs only.
      type: str
      sample: ""
    landed_on:
      description: The node a replacement of its owner landed on (matched to this move); real runs only.
      type: str
      sample: node-4
    as_planned:
      description: Whether that is the planned node; real runs only.
      type: bool
      sample: true
stuck:
  description: What stays uneven after the plan, and why no move could help (no room, selectors, do-not-disrupt, caps).
  returned: always
  type: list
  elements: dict
  sample: [{strategy: duplicates, target: shop/Deployment/web, skew: 2, reason: "shop/web-1 cannot go to n4: no node has room"}]
left_out:
  description: Nodes not part of the pass (cordoned, not Ready), with the reason.
  returned: always
  type: list
  elements: dict
  sample: [{name: node-3, reason: cordoned}]
nodes:
  description: The nodes of the pass.
  returned: always
  type: list
  elements: str
  sample: [node-1, node-2, node-4]
skew_before:
  description: The spread before the pass.
  returned: always
  type: dict
  contains:
    owners:
      description: >-
        Per owner (C(namespace/Kind/name)), its pods (C(pods)), pods per node (C(nodes)), C(skew), pods per
        zone (C(zones)) and C(zone_skew).
      type: dict
      sample: {shop/Deployment/web: {pods: 4, nodes: {node-1: 3, node-2: 1, node-4: 0}, skew: 3,
                                     zones: {zone-a: 3, zone-b: 1}, zone_skew: 2}}
    max_skew:
      description: The largest C(skew) of an owner.
      type: int
      sample: 3
    max_zone_skew:
      description: The largest C(zone_skew) of an owner.
      type: int
      sample: 2
    constraints:
      description: Each DoNotSchedule topology spread constraint (C(constraint)), its C(max_skew), pods per domain (C(domains)) and C(skew).
      type: list
      elements: dict
      sample: [{constraint: 'search topology.kubernetes.io/zone {"matchLabels": {"app": "search"}} maxSkew=1',
                max_skew: 1, domains: {zone-a: 3, zone-b: 1}, skew: 2}]
    utilization:
      description: Each node's most used resource, in percent of its allocatable.
      type: dict
      sample: {node-1: 82.5, node-2: 40.0, node-4: 12.5}
    utilization_spread:
      description: The highest C(utilization) less the lowest.
      type: float
      sample: 70.0
skew_predicted:
  description: The same as RV(skew_before), as the plan predicts it after the moves.
  returned: always
  type: dict
  sample: {owners: {shop/Deployment/web: {pods: 4, nodes: {node-1: 2, node-2: 1, node-4: 1}, skew: 1,
                                          zones: {zone-a: 2, zone-b: 2}, zone_skew: 0}},
           max_skew: 1, max_zone_skew: 0, constraints: [], utilization: {node-1: 60.0, node-2: 40.0, node-4: 35.0},
           utilization_spread: 25.0}
violations_before:
  description: >-
    For each of the strategies V(node_taints), V(node_affinity) and V(pod_anti_affinity) in the pass, the selected
    pods that break its rule where they run (pod -> the node, and the taint or the pod it excludes); the required
    node affinity only.
  returned: always
  type: dict
  sample: {node_taints: {shop/web-7d9f-x2k4p: "node-3: dedicated=gpu:NoSchedule"}, node_affinity: {},
           pod_anti_affinity: {shop/db-1: "node-2: shop/db-0"}}
violations_predicted:
  description: The same as RV(violations_before), as the plan predicts it after the moves.
  returned: always
  type: dict
  sample: {node_taints: {}, node_affinity: {}}
violations_after:
  description: The same as RV(violations_before), measured on the cluster after the pass.
  returned: when moves were planned, not in check mode
  type: dict
  sample: {node_taints: {}, node_affinity: {}}
skew_after:
  description: The same as RV(skew_before), measured on the cluster after the pass.
  returned: when moves were planned, not in check mode
  type: dict
  sample: {owners: {shop/Deployment/web: {pods: 4, nodes: {node-1: 2, node-2: 1, node-4: 1}, skew: 1,
                                          zones: {zone-a: 2, zone-b: 2}, zone_skew: 0}},
           max_skew: 1, max_zone_skew: 0, constraints: [], utilization: {node-1: 60.0, node-2: 40.0, node-4: 35.0},
           utilization_spread: 25.0}
back_on_source:
  description: Replacements that landed on a node a pod of their owner was moved from (C(owner), C(node)).
  returned: when moves were planned, not in check mode
  type: list
  elements: dict
  sample: [{owner: shop/Deployment/web, node: node-1}]
steered_nodes:
  description: The nodes tainted during the pass.
  returned: when moves were planned, not in check mode
  type: list
  elements: str
  sample: [node-1, node-2]
evictions:
  description: Number of moved pods per eviction outcome.
  returned: when moves were planned, not in check mode
  type: dict
  sample: {evicted: 2}
compaction:
  description: >-
    What V(compaction) empties: its C(threshold), the nodes it C(emptied) (in check mode, would empty), and the
    nodes that run no pod but DaemonSet and static ones, which an autoscaler may remove, before
    (C(empty_before)), as predicted (C(empty_predicted)) and, after a real pass, measured (C(empty_after)).
  returned: when the pass has the strategy compaction
  type: dict
  sample: {threshold: 20, emptied: [node-5, node-6], empty_before: [], empty_predicted: [node-5, node-6],
           empty_after: [node-5, node-6]}
removed_leftover_taints:
  description: >-
    Nodes whose steering taint, or autoscaler annotations a compaction pass added, left by an interrupted pass,
    were removed.
  returned: always
  type: list
  elements: str
  sample: []
summary:
  description: The plan and the measured result in a few lines.
  returned: always
  type: list
  elements: str
  sample:
    - "Rebalance over 3 node(s): 1 move(s) (duplicates 1); max skew per owner 3 -> 2, per zone 2 -> 0."
    - "move shop/web-7f9c4d8b6-x2kqp (shop/Deployment/web): node-1 -> node-4 [duplicates]"
elapsed_seconds:
  description: Wall time of the evictions and the wait (0 when nothing moved).
  returned: always
  type: float
  sample: 18.4
diff:
  description: Each pod moved, with its node before and the node planned (check mode) or landed on after.
  returned: when diff mode is on
  type: dict
  sample: {"before": {"shop/web-7d9f-x2k4q": "node-1"}, "after": {"shop/web-7d9f-x2k4q": "node-4"}}
  version_added: 0.3.0
api_requests:
  description: Number of HTTP requests made to the API server.
  returned: always
  type: int
  sample: 41
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
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.rebalance import RebalanceRequest, rebalance
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.rebalance.planner import STRATEGY_NAMES

REBALANCE_ARGUMENT_SPEC = dict(
    strategies=dict(type="list", elements="str", choices=list(STRATEGY_NAMES),
                    default=["topology_spread", "duplicates"]),
    node_selector=dict(type="str"),
    namespaces=dict(type="list", elements="str"),
    exclude_namespaces=dict(type="list", elements="str", default=["kube-system"]),
    pod_selector=dict(type="str"),
    max_skew=dict(type="int", default=1),
    utilization_deviation=dict(type="int", default=20),
    compaction_threshold=dict(type="int", default=20),
    max_evictions=dict(type="int"),
    max_per_owner=dict(type="int"),
    max_in_flight=dict(type="int"),
    max_unavailable_per_owner=dict(type="str", default="1"),
    steering=dict(type="str", choices=["PreferNoSchedule", "NoSchedule", "none"], default="PreferNoSchedule"),
    timeout=dict(type="int", default=300),
    delete_emptydir_data=dict(type="bool", default=False),
    respect_do_not_disrupt=dict(type="bool", default=True),
    evict_system_critical=dict(type="bool", default=False),
    reason=dict(type="str", default="rebalance"),
)


def main():
    run_module(kubernetes_module(REBALANCE_ARGUMENT_SPEC, lease=True), rebalance, RebalanceRequest.from_params)


if __name__ == "__main__":
    main()
