# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The filter kubeops.rotation.maintenance_schedule: see plan.windows.window_schedule."""

from __future__ import annotations

DOCUMENTATION = r"""
name: maintenance_schedule
author: kubeops.rotation contributors
version_added: 0.3.0
short_description: Which maintenance window each batch of a rotation would start in
description:
  - The first batch starts at O(now), each next one O(batch_seconds) after the one before. A batch due outside every
    window starts when the next one opens - waited for with O(wait), otherwise the rotation stops before it and a
    rerun then goes on.
  - The windows are those of P(kubeops.rotation.maintenance_window#filter). No windows, no lines.
positional: now, batches, batch_seconds, wait
options:
  _input:
    description: The windows, each C({days, start, end, timezone}) or C({schedule, duration, timezone}).
    type: list
    elements: dict
    required: true
  now:
    description: When the first batch starts, in seconds since the epoch (C(now().timestamp())).
    type: float
    required: true
  batches:
    description: The batches of the plan (C(batches) of M(kubeops.rotation.rotation_plan)), in order.
    type: list
    elements: dict
    required: true
  batch_seconds:
    description: How long each batch is taken to last (its move, soak and gates).
    type: int
    required: true
  wait:
    description: Whether the rotation waits for the next window instead of stopping outside them.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Show which window each batch would start in
  ansible.builtin.debug:
    msg: "{{ windows | kubeops.rotation.maintenance_schedule(now().timestamp(), plan.batches, 1800) }}"
  vars:
    plan: "{{ lookup('ansible.builtin.file', 'plan.json') | from_json }}"
    windows:
      - {days: [mon, tue, wed, thu], start: "22:00", end: "04:00", timezone: Europe/Berlin}
"""

RETURN = r"""
_value:
  description: A line per batch, in order.
  type: list
  elements: str
  sample: ["batch 1/2: starts about 2026-12-08T21:00:00Z, in mon,tue,wed,thu 22:00-04:00 Europe/Berlin"]
"""

import datetime

from ansible.errors import AnsibleFilterError
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.windows import window_schedule, windows_error


def maintenance_schedule(windows, now, batches, batch_seconds, wait=False):
    error = windows_error(windows)
    if error:
        raise AnsibleFilterError(error)
    names = ["batch %d/%d" % (batch["index"], len(batches)) for batch in batches]
    return window_schedule(windows, datetime.datetime.fromtimestamp(float(now), datetime.timezone.utc), names,
                           int(batch_seconds), bool(wait))


class FilterModule:
    def filters(self):
        return {"maintenance_schedule": maintenance_schedule}
