# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The filter kubeops.rotation.batches_left: see plan.batch_failure."""

from __future__ import annotations

DOCUMENTATION = r"""
name: batches_left
author: kubeops.rotation contributors
version_added: 0.3.0
short_description: The line a rotation fails with when batches set aside stay cordoned
description:
  - With C(rotate_nodes_on_blocked=skip), the P(kubeops.rotation.rotate_nodes#role) role sets a blocked batch aside
    and tries it once more at the end; the batches blocked again stay cordoned, and the rotation fails with this
    line, naming each and why.
positional: rotation_id
options:
  _input:
    description: The batches left, each an entry of P(kubeops.rotation.batch_failure#filter)'s C(left).
    type: list
    elements: dict
    required: true
  rotation_id:
    description: The rotation id, named in the line that says how to resume.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Fail naming the batches left cordoned
  ansible.builtin.fail:
    msg: "{{ left | kubeops.rotation.batches_left('r1') }}"
  when: left | length > 0
"""

RETURN = r"""
_value:
  description: The line.
  type: str
  sample: >-
    1 batch(es) could not be drained and stay cordoned: batch 2 (node-3, node-4): blocked by PDB shop/web. The other
    batches are done; rerun with rotate_nodes_id r1 once the cause is fixed.
"""

from ansible_collections.kubeops.rotation.plugins.module_utils.plan.batch_failure import batches_left_message


class FilterModule:
    def filters(self):
        return {"batches_left": batches_left_message}
