# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The filter kubeops.rotation.fleet_stop: see plan.fleet."""

from __future__ import annotations

DOCUMENTATION = r"""
name: fleet_stop
author: kubeops.rotation contributors
version_added: 0.3.0
short_description: Why a fleet stops before a cluster's wave
description:
  - A wave before the cluster's in which more clusters did not finish (their host variable C(kubeops_fleet_done) is
    not true) than O(max_failed) allows; empty when the cluster's wave may go.
positional: cluster, hostvars, max_failed
options:
  _input:
    description: The fleet's waves (C(waves) of P(kubeops.rotation.fleet_waves#filter)).
    type: list
    elements: list
    required: true
  cluster:
    description: The cluster about to start.
    type: str
    required: true
  hostvars:
    description: C(hostvars), for each cluster's C(kubeops_fleet_done).
    type: dict
    required: true
  max_failed:
    description: How many clusters of a wave may fail, a count or a percent of the wave.
    type: raw
    default: 0
"""

EXAMPLES = r"""
- name: Stop before this wave when a wave before it failed
  ansible.builtin.assert:
    that: fleet.waves | kubeops.rotation.fleet_stop(inventory_hostname, hostvars) | length == 0
"""

RETURN = r"""
_value:
  description: Why the fleet stops, or an empty string.
  type: str
  sample: "wave 1: dev did not finish (1 of 1 clusters, 0 allowed)"
"""

from ansible_collections.kubeops.rotation.plugins.module_utils.plan.fleet import fleet_stop as stop_reason


def fleet_stop(waves, cluster, hostvars, max_failed=0):
    before = []
    for wave in waves:
        if cluster in wave:
            break
        before.append(list(wave))
    done = [name for wave in before for name in wave if (hostvars.get(name) or {}).get("kubeops_fleet_done")]
    return stop_reason(before, done, max_failed) or ""


class FilterModule:
    def filters(self):
        return {"fleet_stop": fleet_stop}
