# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The filter kubeops.rotation.input_errors: see plan.role_inputs."""

from __future__ import annotations

DOCUMENTATION = r"""
name: input_errors
author: kubeops.rotation contributors
version_added: 0.3.0
short_description: Why a role's variables are refused, by the rules of the modules that take them
description:
  - The checks a role of the collection makes before it reads or changes anything, for the inputs that only a later
    module sees and would refuse only after the role had changed something.
  - The rules are the modules' own; each reason is one sentence that names the role's variable.
  - A number is read as the C(int) filter reads it, and shown as it was written.
positional: role
options:
  _input:
    description: The role's variables to check, each under its own name (all those the role's checks read).
    type: dict
    required: true
  role:
    description: The role whose checks apply.
    type: str
    required: true
    choices: [drain_node, rotate_nodes]
"""

EXAMPLES = r"""
- name: Check the role's own inputs before anything is read or changed
  ansible.builtin.assert:
    that: drain_node_input_errors | length == 0
    fail_msg: "{{ drain_node_input_errors | join(' ') }}"
    quiet: true
  vars:
    drain_node_input_errors: >-
      {{ {'drain_node_nodes': drain_node_nodes, 'drain_node_node_selector': drain_node_node_selector,
          'drain_node_timeout': drain_node_timeout, 'drain_node_max_in_flight': drain_node_max_in_flight,
          'drain_node_max_per_node': drain_node_max_per_node,
          'drain_node_max_per_namespace': drain_node_max_per_namespace,
          'drain_node_max_evictions': drain_node_max_evictions, 'drain_node_grace_period': drain_node_grace_period,
          'drain_node_max_unavailable_per_owner': drain_node_max_unavailable_per_owner,
          'drain_node_namespaces': drain_node_namespaces,
          'drain_node_exclude_namespaces': drain_node_exclude_namespaces}
         | kubeops.rotation.input_errors('drain_node') }}
"""

RETURN = r"""
_value:
  description: Every reason, in the order of the checks; empty when the variables are accepted.
  type: list
  elements: str
  sample: ["drain_node_timeout must be 1 or more, got 0.", "drain_node_namespaces has an empty namespace name."]
"""

from ansible.errors import AnsibleFilterError
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.role_inputs import ROLE_CHECKS, role_input_errors


def input_errors(variables, role):
    if role not in ROLE_CHECKS:
        raise AnsibleFilterError("input_errors checks the variables of the roles %s, not of %s."
                                 % (", ".join(sorted(ROLE_CHECKS)), role))
    return role_input_errors(variables, role)


class FilterModule:
    def filters(self):
        return {"input_errors": input_errors}
