# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The filter kubeops.rotation.fleet_waves: see plan.fleet."""

from __future__ import annotations

DOCUMENTATION = r"""
name: fleet_waves
author: kubeops.rotation contributors
version_added: 0.3.0
short_description: The waves in which a fleet of clusters is rotated
description:
  - The canary clusters alone first, then the clusters whose host variable C(kubeops_fleet_wave) gives a wave
    number, lowest first, then the others O(wave_size) at a time, in inventory order.
  - Refuses, in one line, a canary that is not a cluster of the fleet, a wave size below 1 and failures allowed
    that are no count or percent.
positional: hostvars, canary, wave_size, max_failed
options:
  _input:
    description: The fleet's clusters, inventory host names in inventory order.
    type: list
    elements: str
    required: true
  hostvars:
    description: C(hostvars), for each cluster's C(kubeops_fleet_wave).
    type: dict
    required: true
  canary:
    description: The clusters that go first, alone.
    type: list
    elements: str
    default: []
  wave_size:
    description: How many of the other clusters are rotated at once.
    type: int
    default: 1
  max_failed:
    description: How many clusters of a wave may fail before the fleet stops, a count or a percent (checked here).
    type: raw
    default: 0
"""

EXAMPLES = r"""
- name: Place the clusters in waves
  ansible.builtin.set_fact:
    fleet: "{{ groups['clusters'] | kubeops.rotation.fleet_waves(hostvars, groups['canary'] | default([]), 2) }}"
"""

RETURN = r"""
_value:
  description: C(waves), each a list of clusters; C(order), every cluster wave after wave; C(serial), each wave's size.
  type: dict
  sample: {waves: [[dev], [prod-a, prod-b]], order: [dev, prod-a, prod-b], serial: [1, 2]}
"""

from ansible.errors import AnsibleFilterError
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.fleet import fleet_error, fleet_waves as waves_of


def fleet_waves(clusters, hostvars, canary=(), wave_size=1, max_failed=0):
    clusters, canary = list(clusters or []), list(canary or [])
    error = fleet_error(clusters, canary, wave_size, max_failed)
    if error:
        raise AnsibleFilterError(error)
    numbers = {cluster: (hostvars.get(cluster) or {}).get("kubeops_fleet_wave") for cluster in clusters}
    return waves_of(clusters, canary, {cluster: number for cluster, number in numbers.items() if number is not None},
                    int(str(wave_size).strip()))


class FilterModule:
    def filters(self):
        return {"fleet_waves": fleet_waves}
