# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The filter kubeops.rotation.batch_failure: see plan.batch_failure."""

from __future__ import annotations

DOCUMENTATION = r"""
name: batch_failure
author: kubeops.rotation contributors
version_added: 0.3.0
short_description: What the rotate_nodes role does when a batch of a rotation fails
description:
  - The rescue of a batch of the P(kubeops.rotation.rotate_nodes#role) role. A batch blocked while its pods move
    is set aside when O(rotation.on_blocked=skip) and tried once more after the other batches; blocked again, it is
    left cordoned. Any other failure stops the rotation with a line that says how the batch was left and how to
    resume. A run that lost its Lease stops and leaves its warm placeholders up.
positional: failure, rotation
options:
  _input:
    description: The plan's batch that failed (its C(index) and C(nodes)).
    type: dict
    required: true
  failure:
    description: How it failed.
    type: dict
    required: true
    suboptions:
      stage:
        description: The stage that failed (C(check), C(move), C(gates)...).
        type: str
      task:
        description: The failed task's name.
        type: str
      result:
        description: The failed task's result; its C(msg) is the reason.
        type: dict
  rotation:
    description: The rotation's settings.
    type: dict
    required: true
    suboptions:
      id:
        description: The rotation id, named in the line that says how to resume.
        type: str
      batches:
        description: How many batches the plan has.
        type: int
      on_blocked:
        description: C(skip) sets blocked batches aside; anything else stops.
        type: str
      revisiting:
        description: Whether this is the set-aside batches' second try.
        type: bool
      keep_warm:
        description: Whether the warm placeholders stay up after a failure.
        type: bool
"""

EXAMPLES = r"""
- name: Note how the batch failed
  ansible.builtin.set_fact:
    failed_batch: >-
      {{ batch | kubeops.rotation.batch_failure({'stage': stage, 'task': ansible_failed_task.name,
                                                 'result': ansible_failed_result},
                                                {'id': 'r1', 'batches': 3, 'on_blocked': 'stop',
                                                 'revisiting': false, 'keep_warm': false}) }}
"""

RETURN = r"""
_value:
  description: What the rescue does.
  type: dict
  contains:
    goes_aside:
      description: Whether the batch is set aside and the rotation goes on.
      type: bool
    set_aside:
      description: The entries (C(batch), C(step), C(reason)) to add to the batches set aside.
      type: list
      elements: dict
    left:
      description: The entries to add to the batches left cordoned (blocked on their second try).
      type: list
      elements: dict
    stopped:
      description: Where the rotation stopped, for its report; null when it goes on.
      type: dict
    release_warm:
      description: Whether to release the warm placeholders.
      type: bool
    message:
      description: The line the rotation stops with; null when it goes on.
      type: str
"""

from ansible_collections.kubeops.rotation.plugins.module_utils.plan.batch_failure import batch_failure


class FilterModule:
    def filters(self):
        return {"batch_failure": batch_failure}
