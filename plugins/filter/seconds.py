# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The filter kubeops.rotation.seconds: see model.times.duration_seconds."""

from __future__ import annotations

DOCUMENTATION = r"""
name: seconds
author: kubeops.rotation contributors
version_added: 0.3.0
short_description: The seconds of a duration - 90, 90s, 10m, 1h30m, 7d
description:
  - Every timeout and duration of the collection's roles takes one grammar - a number of seconds, or numbers with
    the units C(s), C(m), C(h), C(d) and C(w), largest first or not (V(1h30m), V(90m), V(1d12h)).
  - A duration that is none fails, naming the grammar.
options:
  _input:
    description: The duration, a number of seconds or a text.
    type: raw
    required: true
"""

EXAMPLES = r"""
- name: Wait as long as the rotation's eviction timeout
  ansible.builtin.pause:
    seconds: "{{ '1h30m' | kubeops.rotation.seconds }}"
"""

RETURN = r"""
_value:
  description: The seconds, a whole number.
  type: int
  sample: 5400
"""

from ansible.errors import AnsibleFilterError
from ansible_collections.kubeops.rotation.plugins.module_utils.model.times import duration_seconds


def seconds(duration):
    try:
        return duration_seconds(duration)
    except ValueError as exc:
        raise AnsibleFilterError(str(exc))


class FilterModule:
    def filters(self):
        return {"seconds": seconds}
