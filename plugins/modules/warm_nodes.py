#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: warm_nodes
short_description: Make the autoscaler bring up nodes before anything moves, with placeholder pods
version_added: 0.1.0
description:
  - O(state=present) creates (or scales) a Deployment of placeholder pods,
    pause containers with required pod anti-affinity on
    C(kubernetes.io/hostname), so that each one needs a node of its own, the
    target pool's O(node_selector), O(node_affinity) and O(tolerations), and
    O(requests) per placeholder. An autoscaler (Karpenter,
    cluster-autoscaler, a managed node group) sees them pending and adds
    nodes.
  - The placeholders run under a PriorityClass with a negative value
    (created when missing), so real pods preempt them, the
    cluster-autoscaler overprovisioning pattern. They carry
    C(karpenter.sh/do-not-disrupt=true) and
    C(cluster-autoscaler.kubernetes.io/safe-to-evict=false) so that
    consolidation does not remove the nearly empty warm nodes.
  - Waits, by watching the placeholders, until O(count) of them run on
    Ready, schedulable nodes that are not in O(exclude_nodes), and returns
    those nodes. A second run with the same spec changes nothing and returns
    the same nodes.
  - O(state=absent) removes the placeholders, and the PriorityClass when the
    collection created it and no other placeholder set uses it.
extends_documentation_fragment:
  - kubeops.rotation.connection
  - kubeops.rotation.lease
seealso:
  - module: kubeops.rotation.rotation_plan
    description: Says how many warm nodes each batch of a rotation needs, per zone as O(zones) takes them.
  - module: kubeops.rotation.rollout_restart
    description: Surges replacements onto the warm nodes.
  - module: kubeops.rotation.evict
    description: Evicts pods once their room is there.
  - module: kubeops.rotation.lease
    description: The cluster's Lease that O(lease) takes before the first write.
  - name: kubeops.rotation.warm_nodes role
    description: Warm nodes for a playbook, with their release (C(ansible-doc -t role kubeops.rotation.warm_nodes)).
    link: roles/warm_nodes/meta/argument_specs.yml
options:
  name:
    description:
      - Name of the placeholder set (its Deployment; with O(zones), one
        Deployment C(<name>-<zone>) per zone). O(state=absent) removes every
        Deployment of the set.
    type: str
    default: warm-nodes
  namespace:
    description: Namespace of the placeholders, created when missing.
    type: str
    default: kubeops-warm
  state:
    description: V(present) to warm nodes, V(absent) to remove the placeholders.
    type: str
    choices: [present, absent]
    default: present
  count:
    description: Number of warm nodes wanted, 0 or more.
    type: int
  zones:
    description:
      - Instead of O(count), the warm nodes wanted per zone. Each zone gets
        its own placeholders, which add the zone label
        C(topology.kubernetes.io/zone) to O(node_selector), so that an
        autoscaler that provisions by zone (Karpenter, one node group per
        zone) brings the nodes up there; the wait counts warm nodes per zone.
        The placeholders of all zones repel each other, one per node.
      - An empty list, a count below 0 or a zone named twice is refused before any request.
    type: list
    elements: dict
    version_added: 0.2.0
    suboptions:
      zone:
        description:
          - The zone, as the nodes' C(topology.kubernetes.io/zone) label says it.
          - Empty or null for warm nodes in any zone.
        type: str
      count:
        description: Warm nodes wanted in that zone.
        type: int
        required: true
  capacity_for_nodes:
    description:
      - Instead of O(count), the nodes whose pods the warm nodes must hold.
        The count is the sum of the requests of their pods (without DaemonSet,
        mirror and finished pods, and without pods whose node selector the
        pool does not satisfy) divided by the allocatable of a pool node, less
        the DaemonSet pods' requests per node; the tightest of cpu, memory
        and pods decides. RV(computed) shows the arithmetic.
      - An empty list, or an empty name in it, is refused before any request.
    type: list
    elements: str
  template_capacity:
    description:
      - >-
        Allocatable of one pool node, for O(capacity_for_nodes), for example
        C({cpu: "4", memory: 16Gi, pods: "110"}).
      - It needs all three, each a Kubernetes quantity above 0; anything else is refused before any request.
    type: dict
  template_node:
    description:
      - An existing node whose allocatable stands for a pool node, for O(capacity_for_nodes).
      - Without it or O(template_capacity), the first node matching O(node_selector) is used.
    type: str
  node_selector:
    description: >-
      Node selector of the target pool, for example C({karpenter.sh/nodepool: general-v2}).
      Keys must be label keys and values label values, as strings; others are refused before any request.
    type: dict
    default: {}
  node_affinity:
    description: Node affinity of the target pool (a Kubernetes C(nodeAffinity) object).
    type: dict
  tolerations:
    description: Tolerations for the target pool's taints.
    type: list
    elements: dict
    default: []
  requests:
    description:
      - Requests of each placeholder. Raise them to reserve real capacity on
        each warm node, not only a slot.
      - Each must be a Kubernetes quantity of 0 or more (V(10m), V(16Mi)); anything else is refused
        before any request, so that no namespace or PriorityClass is created for placeholders the
        API server would refuse.
    type: dict
    default: {cpu: 10m, memory: 16Mi}
  exclude_nodes:
    description:
      - Nodes that do not count as warm and that placeholders must not use,
        normally the nodes being replaced.
      - They are kept out by name and by their C(kubernetes.io/hostname) label, which an autoscaler such as
        Karpenter reads when it decides whether a placeholder needs a new node (Karpenter's nodes of an old
        NodePool carry the same NodePool label as its new ones).
      - A placeholder found running on one of them fails the module at once, naming it, instead of waiting
        for O(timeout).
    type: list
    elements: str
    default: []
  priority_class:
    description: Name of the PriorityClass of the placeholders.
    type: str
    default: kubeops-warm-placeholder
  priority:
    description: Value of that PriorityClass when the module creates it. Negative, so any real pod preempts them.
    type: int
    default: -10
  image:
    description: Image of the placeholder container.
    type: str
    default: registry.k8s.io/pause:3.10
  wait:
    description: Wait until the warm nodes are there.
    type: bool
    default: true
  timeout:
    description:
      - Seconds to wait, at least 1; at the deadline the module fails with the pending placeholders and their events.
      - Sooner when the autoscaler says it will not bring up a node for a placeholder (Karpenter's own
        C(FailedScheduling) Event, for a zone its NodePool does not serve or a limit reached; cluster-autoscaler's
        C(NotTriggerScaleUp)) and that placeholder has waited 30 s or more; the module then fails naming the zone
        and the autoscaler's words.
    type: int
    default: 600
attributes:
  check_mode:
    support: full
    description: Computes the count and reports what would be created or scaled; changes nothing.
  diff_mode:
    support: full
    description: The number of placeholders before and after.
author:
  - kubeops.rotation developers (@kubeops)
"""

EXAMPLES = r"""
- name: Warm two nodes in zone-a and one in zone-b, where the nodes they replace are
  kubeops.rotation.warm_nodes:
    name: rotation-2026-12
    zones:
      - {zone: zone-a, count: 2}
      - {zone: zone-b, count: 1}
    node_selector: {karpenter.sh/nodepool: general}

- name: Bring up three nodes of the new pool before the rotation moves anything
  kubeops.rotation.warm_nodes:
    count: 3
    node_selector: {karpenter.sh/nodepool: general-v2}
    exclude_nodes: "{{ old_nodes }}"
    timeout: 900
  register: warm

- name: As many warm nodes as the pods of the batch need
  kubeops.rotation.warm_nodes:
    capacity_for_nodes: "{{ batch_nodes }}"
    node_selector: {eks.amazonaws.com/nodegroup: workers-v2}
    template_capacity: {cpu: "3920m", memory: 15Gi, pods: "58"}

- name: Release the warm nodes' placeholders
  kubeops.rotation.warm_nodes:
    state: absent
"""

RETURN = r"""
nodes:
  description: The warm nodes, sorted; each runs a Ready placeholder and is Ready and schedulable.
  returned: always
  type: list
  elements: str
  sample: [ip-10-0-4-11.ec2.internal, ip-10-0-5-12.ec2.internal]
name:
  description: The O(name) of the placeholder set.
  returned: always
  type: str
  sample: warm-nodes
namespace:
  description: The O(namespace) of the placeholders.
  returned: always
  type: str
  sample: kubeops-warm
sets:
  description: >-
    Each Deployment of the set, with its zone (none without O(zones)), action, count and C(spec), the hash of its
    pod spec that its placeholders carry in the annotation C(kubeops.io/placeholder-spec).
  returned: when O(state=present)
  type: list
  elements: dict
  version_added: 0.2.0
  sample: [{name: rotation-r1-zone-a, zone: zone-a, action: created, count: 2, spec: 3f1c9a0b7d2e4c5a}]
count:
  description: Number of placeholders, given or computed (over all zones).
  returned: when state is present
  type: int
  sample: 2
computed:
  description: With O(capacity_for_nodes), how the count was computed.
  returned: when capacity_for_nodes is given
  type: dict
  contains:
    pods:
      description: Pods counted.
      type: int
      sample: 6
    requests:
      description: Their summed requests (cores, bytes, pods).
      type: dict
      sample: {cpu: 3.5, memory: 8589934592.0, pods: 6.0}
    node_allocatable:
      description: Allocatable of one pool node.
      type: dict
      sample: {cpu: 4.0, memory: 17179869184.0, pods: 110.0}
    daemonset_requests_per_node:
      description: Requests of DaemonSet pods per node, taken off each pool node.
      type: dict
      sample: {cpu: 0.2, memory: 268435456.0, pods: 2.0}
    nodes_by_resource:
      description: Nodes needed by each resource alone.
      type: dict
      sample: {cpu: 1, memory: 1, pods: 1}
    not_for_pool:
      description: Pods left out because the pool does not satisfy their node selector.
      type: list
      elements: str
      sample: [search/gpu-worker-0]
    template:
      description: Where the pool node's allocatable came from.
      type: str
      sample: template_capacity
    summary:
      description: The computation in one sentence.
      type: str
      sample: >-
        6 pod(s) requesting 3.5 CPU, 8 GiB need 1 node(s) of 3.8 CPU, 15.7 GiB, 108 pods (after DaemonSets); the
        tightest resource decides
action:
  description: What happened to the placeholder Deployment, V(created), V(scaled), V(updated) or V(unchanged).
  returned: when state is present
  type: str
  sample: created
created:
  description: Namespace and PriorityClass created for the placeholders.
  returned: when state is present
  type: list
  elements: str
  sample: [Namespace kubeops-warm, PriorityClass kubeops-warm-placeholder]
removed:
  description: What O(state=absent) removed.
  returned: when state is absent
  type: list
  elements: str
  sample: [Deployment kubeops-warm/warm-nodes, PriorityClass kubeops-warm-placeholder]
diff:
  description: The number of placeholders before and after (per zone, C(-) for no zone, with O(zones)).
  returned: when state is present and diff mode is on
  type: dict
  contains:
    before:
      description: C(replicas) before; null when the Deployment did not exist.
      type: dict
      sample: {replicas: null}
    after:
      description: C(replicas) after (in check mode, as it would be).
      type: dict
      sample: {replicas: 2}
elapsed_seconds:
  description: Wall time of the call.
  returned: always
  type: float
  sample: 48.3
api_requests:
  description: Number of HTTP requests made to the API server.
  returned: always
  type: int
  sample: 9
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
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.warm import WarmSettings, ensure_warm_nodes

ARGUMENT_SPEC = dict(
    WARM_OPTIONS,
    state=dict(type="str", choices=["present", "absent"], default="present"),
    capacity_for_nodes=dict(type="list", elements="str"),
    template_capacity=dict(type="dict"),
    template_node=dict(type="str"),
    node_affinity=dict(type="dict"),
    tolerations=dict(type="list", elements="dict", default=[]),
    requests=dict(type="dict", default={"cpu": "10m", "memory": "16Mi"}),
    priority_class=dict(type="str", default="kubeops-warm-placeholder"),
    priority=dict(type="int", default=-10),
    image=dict(type="str", default="registry.k8s.io/pause:3.10"),
    wait=dict(type="bool", default=True),
)


def main():
    module = kubernetes_module(
        ARGUMENT_SPEC, lease=True,
        mutually_exclusive=[["count", "capacity_for_nodes", "zones"], ["template_capacity", "template_node"]],
        required_if=[["state", "present", ["count", "capacity_for_nodes", "zones"], True]])
    run_module(module, ensure_warm_nodes, WarmSettings.from_params)


if __name__ == "__main__":
    main()
