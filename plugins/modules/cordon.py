#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: cordon
short_description: Cordon or uncordon nodes, recording who cordoned them and why
version_added: 0.1.0
description:
  - Cordoning sets C(spec.unschedulable) and records on the node who cordoned
    it, why and when, in the annotations C(kubeops.io/cordoned-by),
    C(kubeops.io/cordon-reason) and C(kubeops.io/cordoned-at). "Who" is the
    identity the API server sees (after impersonation).
  - Uncordoning undoes only cordons this collection made. A node cordoned by
    a person or another tool (no C(kubeops.io/cordoned-by) annotation) stays
    cordoned and the result says so, unless O(force=true).
  - A node that is already cordoned by someone else is left untouched by
    O(state=cordoned), so that a later uncordon leaves it cordoned as well.
  - Every change is a JSON patch guarded by the node's resourceVersion; a node
    that changed in between is read again and planned again.
extends_documentation_fragment:
  - kubeops.rotation.connection
  - kubeops.rotation.lease
seealso:
  - module: kubeops.rotation.evict
    description: Drains the cordoned nodes through the Eviction API.
  - module: kubeops.rotation.rotation_state
    description: Records the later phases of a rotation on the nodes O(rotation_id) marks as cordoned.
  - module: kubeops.rotation.rotation_plan
    description: Plans which nodes a rotation cordons, batch by batch.
  - module: kubeops.rotation.lease
    description: The cluster's Lease that O(lease) takes before the first write.
  - module: kubeops.rotation.k8s_drain
    description: Cordons, uncordons and drains one node with the options of C(kubernetes.core.k8s_drain).
  - name: kubeops.rotation.drain_node role
    description: Cordon, guarded eviction and a check of what is left, in one role (C(ansible-doc -t role kubeops.rotation.drain_node)).
    link: roles/drain_node/meta/argument_specs.yml
options:
  nodes:
    description:
      - Names of the nodes. Every one must exist, otherwise the module fails
        naming the missing ones and changes nothing.
      - An empty list, or an empty name in it, is refused before any request.
    type: list
    elements: str
  node_selector:
    description:
      - Label selector of further nodes, for example V(kubeops.io/pool=old).
      - An empty or blank selector is refused (a templated variable that came
        out empty must not look like success), and so is one that the API
        server would not parse; nothing is read or changed.
    type: str
  state:
    description:
      - V(cordoned) makes the nodes unschedulable; V(uncordoned) undoes our cordons.
    type: str
    choices: [cordoned, uncordoned]
    default: cordoned
  reason:
    description:
      - Why the nodes are cordoned, recorded in C(kubeops.io/cordon-reason),
        for example V(rotation 2026-12-03 AMI ami-0abc).
    type: str
    default: ""
  taint:
    description:
      - Also add the taint C(kubeops.io/cordoned=true:NoSchedule) when
        cordoning, for autoscalers and schedulers that look at taints rather
        than C(spec.unschedulable). Uncordoning always removes this taint.
    type: bool
    default: false
  force:
    description:
      - With O(state=uncordoned), also uncordon nodes that someone else cordoned.
    type: bool
    default: false
  rotation_id:
    description:
      - Also record, in the same guarded patch, that rotation O(rotation_id)
        has cordoned the node (the annotations C(kubeops.io/rotation-id),
        C(kubeops.io/rotation-phase=cordoned) and C(kubeops.io/rotation-phase-at)
        that M(kubeops.rotation.rotation_state) writes). A node a rotation
        already took further (drained, retired) is not moved back.
      - Only with O(state=cordoned). An empty or blank id is refused.
    type: str
    version_added: 0.2.0
attributes:
  check_mode:
    support: full
    description: Reports what would change, changes nothing.
  diff_mode:
    support: full
    description: Per node, the cordon fields before and after (C(unschedulable), the C(kubeops.io/) annotations, the taint).
author:
  - kubeops.rotation developers (@kubeops)
"""

EXAMPLES = r"""
- name: Cordon the nodes of the old pool before a rotation
  kubeops.rotation.cordon:
    node_selector: kubeops.io/pool=general-v1
    reason: "rotation {{ rotation_id }}: new AMI"
    taint: true

- name: Cordon a rotation's batch and record its phase in the same patch
  kubeops.rotation.cordon:
    nodes: [ip-10-0-1-5.ec2.internal, ip-10-0-2-7.ec2.internal]
    reason: "rotation ami-2026-12, batch 1/3"
    rotation_id: ami-2026-12

- name: Undo our cordons only (a node an SRE cordoned stays cordoned)
  kubeops.rotation.cordon:
    nodes: [ip-10-0-1-5.ec2.internal]
    state: uncordoned
  register: uncordon

- name: Show nodes left cordoned by someone else
  ansible.builtin.debug:
    msg: "{{ uncordon.nodes | selectattr('unschedulable') | map(attribute='name') | list }}"
"""

RETURN = r"""
nodes:
  description: One entry per selected node, sorted by name.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Node name.
      type: str
      sample: ip-10-0-1-5.ec2.internal
    action:
      description: V(cordon), V(uncordon), or V(none) when the node is left as it is.
      type: str
      sample: cordon
    changed:
      description: Whether the node was (in check mode, would be) changed.
      type: bool
      sample: true
    reason:
      description: Why, in words, for example V(cordoned by someone else, not by kubeops.rotation; left cordoned (force true uncordons it)).
      type: str
      sample: cordoned
    unschedulable:
      description: Whether the node is cordoned afterwards.
      type: bool
      sample: true
    cordoned_by:
      description: The C(kubeops.io/cordoned-by) annotation afterwards, or null.
      type: str
      sample: system:serviceaccount:kube-system:kubeops-rotation
  sample:
    - {name: node-1, action: cordon, changed: true, reason: cordoned, unschedulable: true, cordoned_by: admin}
summary:
  description: Counts of nodes by outcome.
  returned: always
  type: dict
  sample: {nodes: 3, changed: 2, unchanged: 1}
diff:
  description: Before and after of the cordon fields, per node name, for the nodes that change.
  returned: when diff mode is on
  type: dict
  contains:
    before:
      description: Per node name, C(unschedulable), the C(kubeops.io/) cordon annotations and whether our taint is there, before.
      type: dict
      sample: {node-1: {unschedulable: false, annotations: {}, taint: false}}
    after:
      description: The same fields afterwards (in check mode, as they would be).
      type: dict
      sample:
        node-1:
          unschedulable: true
          annotations:
            kubeops.io/cordoned-by: admin
            kubeops.io/cordon-reason: rotation ami-2026-12
            kubeops.io/cordoned-at: "2026-12-03T10:15:02Z"
          taint: false
api_requests:
  description: Number of HTTP requests made to the API server.
  returned: always
  type: int
  sample: 4
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
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.cordon import CordonRequest, apply_cordon

ARGUMENT_SPEC = dict(
    nodes=dict(type="list", elements="str"),
    node_selector=dict(type="str"),
    state=dict(type="str", choices=["cordoned", "uncordoned"], default="cordoned"),
    reason=dict(type="str", default=""),
    taint=dict(type="bool", default=False),
    force=dict(type="bool", default=False),
    rotation_id=dict(type="str"),
)


def cordon(client, request, check_mode):
    changes = apply_cordon(client, request, check_mode=check_mode)
    changed = [change for change in changes if change.changed]
    return dict(
        changed=bool(changed),
        nodes=[change.result() for change in changes],
        summary={"nodes": len(changes), "changed": len(changed), "unchanged": len(changes) - len(changed)},
        diff={"before": {change.name: change.before for change in changed},
              "after": {change.name: change.after for change in changed}},
    )


def main():
    run_module(kubernetes_module(ARGUMENT_SPEC, lease=True, required_one_of=[["nodes", "node_selector"]]), cordon,
               CordonRequest.from_params)


if __name__ == "__main__":
    main()
