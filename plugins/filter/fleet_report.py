# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The filter kubeops.rotation.fleet_report: see plan.fleet."""

from __future__ import annotations

DOCUMENTATION = r"""
name: fleet_report
author: kubeops.rotation contributors
version_added: 0.3.0
short_description: One report of a fleet's rotation
description:
  - Per cluster, in wave order - its outcome, nodes rotated, pods moved, seconds, which gate held or tripped, and
    the path of its own rotation report, read from O(report_dir)/C(<cluster>.json) on the controller.
  - Each cluster's start and end come from its host variables C(kubeops_fleet_started) and C(kubeops_fleet_ended).
positional: fleet_id, hostvars, report_dir, check_mode
options:
  _input:
    description: The fleet's waves (C(waves) of P(kubeops.rotation.fleet_waves#filter)).
    type: list
    elements: list
    required: true
  fleet_id:
    description: The fleet's id.
    type: str
    required: true
  hostvars:
    description: C(hostvars).
    type: dict
    required: true
  report_dir:
    description: The folder of the clusters' rotation reports.
    type: path
    required: true
  check_mode:
    description: Whether the fleet ran in check mode.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Report the fleet
  ansible.builtin.debug:
    msg: "{{ (fleet.waves | kubeops.rotation.fleet_report(fleet_id, hostvars, '/srv/fleet')).markdown }}"
"""

RETURN = r"""
_value:
  description: C(fleet_id), C(outcome) (finished, stopped or check), C(waves), C(clusters) (one entry each) and
    C(markdown), its lines.
  type: dict
"""

import json
import os

from ansible_collections.kubeops.rotation.plugins.module_utils.plan.fleet import fleet_report as report_of


def _rotation_report(path):
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def fleet_report(waves, fleet_id, hostvars, report_dir, check_mode=False):
    clusters = {}
    for name in (name for wave in waves for name in wave):
        facts = hostvars.get(name) or {}
        path = os.path.join(report_dir, "%s.json" % name)
        report = _rotation_report(path) if facts.get("kubeops_fleet_started") is not None else None
        clusters[name] = {"report": report, "report_file": path if report else None,
                          "started": facts.get("kubeops_fleet_started"), "ended": facts.get("kubeops_fleet_ended")}
    return report_of(fleet_id, [list(wave) for wave in waves], clusters, bool(check_mode))


class FilterModule:
    def filters(self):
        return {"fleet_report": fleet_report}
