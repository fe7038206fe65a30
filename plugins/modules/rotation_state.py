#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: rotation_state
short_description: Record how far a rotation got on each node, and retire nodes
version_added: 0.1.0
description:
  - Sets the annotations C(kubeops.io/rotation-id), C(kubeops.io/rotation-phase)
    and C(kubeops.io/rotation-phase-at) on nodes. M(kubeops.rotation.rotation_plan)
    leaves out nodes whose phase is V(drained) or V(retired) for the same id,
    which is what makes a rerun of a rotation continue where it stopped.
  - A node already at the phase, or further on, is left unchanged; a rerun
    never moves a node back.
  - V(planned) marks every node of a rotation before its first batch moves
    anything. Besides the annotations it puts the taint
    C(kubeops.io/rotating=<rotation_id>:PreferNoSchedule) on the node, so that
    the scheduler keeps the pods that leave one batch off the nodes of the
    later ones, and each pod moves once. The taint stays until the node is
    retired.
  - Every patch is guarded by the node's resourceVersion; a node that changed
    in between is read again and planned again.
  - O(delete=true) retires the nodes after recording the phase, by deleting
    what owns the machine, so that the machine goes too. A node that Karpenter
    launched (it has a NodeClaim, C(karpenter.sh/v1)) is retired by deleting
    its NodeClaim; a Cluster API node (a C(cluster.x-k8s.io/v1beta1) Machine
    in this cluster whose C(status.nodeRef) names it) by deleting its
    Machine. Karpenter or the Cluster API provider then drains what is left,
    terminates the instance and removes the Node, and the module waits until
    the Node is gone (O(timeout)), unless O(wait=false).
  - A node whose NodeClaim or Machine is being deleted already is not deleted
    again; with O(delete=true) the module waits for it like the others.
  - A node with neither (an Auto Scaling group's, a managed node group's, a
    bare machine's) is not deleted, because deleting the Node object alone
    leaves the instance running; it is recorded as V(drained) instead of
    V(retired), left cordoned, and reported with a warning. Retire such
    instances with your own tasks (the role's C(rotate_nodes_retire=tasks)),
    or ask for the Node object to be deleted with
    O(delete_node_without_owner=true). A node that is gone already is
    reported as V(gone).
extends_documentation_fragment:
  - kubeops.rotation.connection
  - kubeops.rotation.lease
seealso:
  - module: kubeops.rotation.rotation_plan
    description: Leaves out the nodes this module recorded as V(drained) or V(retired) for the same rotation id.
  - module: kubeops.rotation.cordon
    description: Records the V(cordoned) phase in the same patch as the cordon, with its O(kubeops.rotation.cordon#module:rotation_id).
  - module: kubeops.rotation.evict
    description: Drains a batch's nodes before they are recorded as V(drained).
  - module: kubeops.rotation.lease
    description: The cluster's Lease that O(lease) takes before the first write.
  - name: kubeops.rotation.rotate_nodes role
    description: The rotation that records these phases batch by batch (C(ansible-doc -t role kubeops.rotation.rotate_nodes)).
    link: roles/rotate_nodes/meta/argument_specs.yml
options:
  nodes:
    description:
      - Node names.
      - An empty list, or an empty name in it, is refused before any request.
    type: list
    elements: str
    required: true
  rotation_id:
    description:
      - Id of the rotation. An empty or blank id is refused before any request.
    type: str
    required: true
  phase:
    description:
      - The phase the nodes reached.
      - V(rolled-back) ends the rotation on its nodes after a rollback - the rotating taint and label, and a keep
        (O(keep)), come off; the rotation's cordon is the M(kubeops.rotation.cordon) module's to undo.
    type: str
    required: true
    choices: [planned, cordoned, drained, retired, rolled-back]
  keep:
    description:
      - V(true) marks the nodes kept for the rotation's way back (C(kubeops.io/kept-by)) and protects them from
        Karpenter's consolidation (C(karpenter.sh/do-not-disrupt)) and cluster-autoscaler's scale-down
        (C(cluster-autoscaler.kubernetes.io/scale-down-disabled)); V(false) takes a keep of this rotation off again,
        as before the nodes are retired. Unset leaves it as it is.
    type: bool
    version_added: 0.3.0
  delete:
    description: Retire the nodes too, deleting their Karpenter NodeClaims or Cluster API Machines.
    type: bool
    default: false
  delete_node_without_owner:
    description:
      - With O(delete=true), delete the Node object of a node that no NodeClaim
        or Machine owns. The instance behind it keeps running unless something
        else (its node group, a controller of yours) removes it.
    type: bool
    default: false
    version_added: 0.3.0
  timeout:
    description:
      - Seconds to wait, with O(delete=true), until Karpenter removed the Nodes of the deleted NodeClaims.
      - Less than 1 is refused before any request.
    type: int
    default: 600
    version_added: 0.3.0
  wait:
    description:
      - With O(delete=true), wait until the Nodes of the deleted NodeClaims or Machines are gone.
      - V(false) returns once they are deleted, naming the nodes in RV(removing); their owners remove them
        meanwhile, and a later call with the same nodes, O(delete=true) and O(wait=true) waits for them without
        deleting anything again. The M(kubeops.rotation.rotation_state) calls of the C(rotate_nodes) role go on to
        the next batch that way, and wait for every node at the end.
    type: bool
    default: true
    version_added: 0.3.0
attributes:
  check_mode:
    support: full
    description: Reports what would be recorded or deleted; changes nothing.
  diff_mode:
    support: full
    description: Each changed node's rotation id and phase before and after, and what was deleted to retire it.
author:
  - kubeops.rotation developers (@kubeops)
"""

EXAMPLES = r"""
- name: Mark a batch drained
  kubeops.rotation.rotation_state:
    nodes: "{{ batch_nodes }}"
    rotation_id: "{{ rotation_id }}"
    phase: drained

- name: Retire them, letting Karpenter or Cluster API terminate the instances
  kubeops.rotation.rotation_state:
    nodes: "{{ batch_nodes }}"
    rotation_id: "{{ rotation_id }}"
    phase: retired
    delete: true
"""

RETURN = r"""
nodes:
  description: One entry per node, sorted by name.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Node name.
      type: str
      sample: node-1
    changed:
      description: Whether the node was (in check mode, would be) changed.
      type: bool
      sample: true
    action:
      description: >-
        V(recorded <phase>), V(unchanged) (already at the phase or further on), V(deleted NodeClaim <name>) or
        V(deleted Machine <namespace/name>) (and its controller removed the Node), V(deleted) (the Node object,
        with O(delete_node_without_owner=true)), V(left) (O(delete=true), but nothing owns the node; recorded as
        V(drained)), V(removing: NodeClaim <name> is being deleted) (or its Machine; deleted before, not again),
        or V(gone) (no such node).
      type: str
      sample: recorded drained
    node_claim:
      description: With O(delete=true), the Karpenter NodeClaim deleted to retire the node.
      type: str
      returned: when the node had a NodeClaim
      sample: general-x7k2p
      version_added: 0.3.0
    machine:
      description: With O(delete=true), the Cluster API Machine (V(namespace/name)) deleted to retire the node.
      type: str
      returned: when a Machine owned the node
      sample: capi-system/workers-7d9f-abcde
      version_added: 0.3.0
    retire:
      description: With O(delete=true), how the node is (in check mode, would be) retired, in words.
      type: str
      returned: with O(delete=true)
      sample: delete its NodeClaim general-x7k2p; Karpenter removes the instance and the Node
      version_added: 0.3.0
removing:
  description: >-
    With O(delete=true) and O(wait=false), the nodes whose NodeClaims or Machines are deleted (now or before) and
    whose removal was not waited for; empty otherwise.
  returned: always
  type: list
  elements: str
  sample: [node-1]
  version_added: 0.3.0
diff:
  description: Each changed node's rotation id and phase before and after, and what was deleted.
  returned: when diff mode is on
  type: dict
  sample: {"before": {"node-1": {"rotation_id": "r1", "phase": "drained"}},
           "after": {"node-1": {"rotation_id": "r1", "phase": "retired", "deleted": "NodeClaim general-x7k2p"}}}
  version_added: 0.3.0
api_requests:
  description: Number of HTTP requests made to the API server.
  returned: always
  type: int
  sample: 5
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
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.phases import (
    PhaseRequest,
    left_to_owners,
    record_phase,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.phases import PHASES, ROLLED_BACK


def record(client, request, check_mode):
    results, diff = record_phase(client, request, check_mode)
    removing = left_to_owners(results) if request.delete and not request.wait and not check_mode else []
    return dict(changed=any(entry["changed"] for entry in results), nodes=results, diff=diff, removing=removing,
                warnings=["%s: %s" % (entry["name"], entry["retire"]) for entry in results if entry["action"] == "left"])


def main():
    module = kubernetes_module(dict(
        nodes=dict(type="list", elements="str", required=True),
        rotation_id=dict(type="str", required=True),
        phase=dict(type="str", required=True, choices=list(PHASES) + [ROLLED_BACK]),
        keep=dict(type="bool"),
        delete=dict(type="bool", default=False),
        delete_node_without_owner=dict(type="bool", default=False),
        timeout=dict(type="int", default=600),
        wait=dict(type="bool", default=True),
    ), lease=True)
    run_module(module, record, PhaseRequest.from_params)


if __name__ == "__main__":
    main()
