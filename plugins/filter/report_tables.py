# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The filter kubeops.rotation.report_tables: see plan.report."""

from __future__ import annotations

DOCUMENTATION = r"""
name: report_tables
author: kubeops.rotation contributors
version_added: 0.3.0
short_description: The Markdown tables of a rotation's report
description:
  - The two tables the P(kubeops.rotation.rotate_nodes#role) role prints and writes at the end of a rotation - each
    batch planned against done, and each moved workload's pods per zone before and after.
positional: zones_before, zones_after
options:
  _input:
    description: The batches' report entries, each from P(kubeops.rotation.batch_report#filter).
    type: list
    elements: dict
    required: true
  zones_before:
    description: Each moved workload's pods per zone before (RV(kubeops.rotation.rotation_plan#module:zone_counts)).
    type: dict
    required: true
  zones_after:
    description: The same, counted after.
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Report the rotation, planned against done
  ansible.builtin.debug:
    msg: "{{ report | kubeops.rotation.report_tables(plan.zone_counts, after.zone_counts) }}"
"""

RETURN = r"""
_value:
  description: The lines of both tables, a blank line between them.
  type: list
  elements: str
  sample:
    - "| batch | nodes | replacements planned | replacements done | evictions planned | evictions done | seconds |"
    - "|---|---|---|---|---|---|---|"
    - "| 1/1 | node-1 | 0 | 0 | 2 | 2 | 3.2 |"
    - ""
    - "| workload | pods per zone before | after |"
    - "|---|---|---|"
    - "| shop/Deployment/web | zone-a 2 | zone-a 2 |"
"""

from ansible_collections.kubeops.rotation.plugins.module_utils.plan.report import report_tables


class FilterModule:
    def filters(self):
        return {"report_tables": report_tables}
