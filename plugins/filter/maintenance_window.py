# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The filter kubeops.rotation.maintenance_window: see plan.windows."""

from __future__ import annotations

DOCUMENTATION = r"""
name: maintenance_window
author: kubeops.rotation contributors
version_added: 0.3.0
short_description: Whether a maintenance window is open at a moment, when it closes, and when the next one opens
description:
  - A window is either days of the week with a start and an end time (an end before the start is the next day's), or
    a cron C(schedule) and a C(duration) as Karpenter's disruption budgets have them; each in a C(timezone), UTC
    unless given.
  - No windows at all is always open.
positional: now
options:
  _input:
    description:
      - The windows, each C({days, start, end, timezone}) or C({schedule, duration, timezone}).
    type: list
    elements: dict
    required: true
  now:
    description: The moment, in seconds since the epoch (C(now().timestamp())).
    type: float
    required: true
"""

EXAMPLES = r"""
- name: Say whether a batch may start now
  ansible.builtin.debug:
    msg: "{{ windows | kubeops.rotation.maintenance_window(now().timestamp()) }}"
  vars:
    windows:
      - {days: [mon, tue, wed, thu], start: "22:00", end: "04:00", timezone: Europe/Berlin}
      - {schedule: "0 2 * * sat", duration: 8h}
"""

RETURN = r"""
_value:
  description:
    - C(open), whether a window is open; C(closes), when the open one closes; C(opens), when the next one opens (both
      ISO 8601 in UTC, or null); C(seconds_to_open); C(windows), each window in short.
  type: dict
  sample: {open: false, closes: null, opens: "2026-12-08T21:00:00Z", seconds_to_open: 28800, windows: []}
"""

import datetime

from ansible.errors import AnsibleFilterError
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.windows import window_state, windows_error


def maintenance_window(windows, now):
    error = windows_error(windows)
    if error:
        raise AnsibleFilterError(error)
    return window_state(windows, datetime.datetime.fromtimestamp(float(now), datetime.timezone.utc))


class FilterModule:
    def filters(self):
        return {"maintenance_window": maintenance_window}
