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
  - O(delete=true) deletes the Node objects after recording the phase, so
    that Karpenter or the cloud provider removes the instances. A node that
    is gone already is reported as V(gone).
extends_documentation_fragment:
  - kubeops.rotation.connection
  - kubeops.rotation.lease
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
    description: The phase the nodes reached.
    type: str
    required: true
    choices: [planned, cordoned, drained, retired]
  delete:
    description: Delete the Node objects too.
    type: bool
    default: false
attributes:
  check_mode:
    support: full
    description: Reports what would be recorded or deleted; changes nothing.
  diff_mode:
    support: none
    description: RV(nodes) says what changes on each node.
author:
  - kubeops.rotation developers (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Mark a batch drained
  kubeops.rotation.rotation_state:
    nodes: "{{ batch_nodes }}"
    rotation_id: "{{ rotation_id }}"
    phase: drained

- name: Retire them, letting Karpenter terminate the instances
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
  sample: [{name: node-1, changed: true, action: recorded drained}]
api_requests:
  description: Number of HTTP requests made to the API server.
  returned: always
  type: int
"""

from ansible_collections.kubeops.rotation.plugins.module_utils.ansible_module import (
    LEASE_ARGUMENT_SPEC,
    kubernetes_module,
    run_module,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.phases import record_phase
from ansible_collections.kubeops.rotation.plugins.module_utils.model.errors import InvalidInput
from ansible_collections.kubeops.rotation.plugins.module_utils.model.inputs import first_error, names_error, text_error
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.phases import PHASES


def validated(params):
    error = first_error(names_error("nodes", params["nodes"], "node", optional=False),
                        text_error("rotation_id", params["rotation_id"], optional=False))
    if error:
        raise InvalidInput(error)
    return params


def main():
    module = kubernetes_module(dict(
        LEASE_ARGUMENT_SPEC,
        nodes=dict(type="list", elements="str", required=True),
        rotation_id=dict(type="str", required=True),
        phase=dict(type="str", required=True, choices=list(PHASES)),
        delete=dict(type="bool", default=False),
    ))
    params = module.params

    def record(client, _settings):
        results = record_phase(client, params["nodes"], params["rotation_id"], params["phase"], params["delete"],
                               module.check_mode)
        return dict(changed=any(entry["changed"] for entry in results), nodes=results)

    run_module(module, record, validated)


if __name__ == "__main__":
    main()
