# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The filter kubeops.rotation.batch_report: see plan.report."""

from __future__ import annotations

DOCUMENTATION = r"""
name: batch_report
author: kubeops.rotation contributors
version_added: 0.3.0
short_description: A batch of a rotation, planned against done
description:
  - The report entry of one batch of the P(kubeops.rotation.rotate_nodes#role) role, from the batch as
    M(kubeops.rotation.rotation_plan) planned it and the results of M(kubeops.rotation.warm_nodes),
    M(kubeops.rotation.replace_pods) and M(kubeops.rotation.evict).
  - The pods planned to be replaced first and to be evicted, the pods that were, and one sentence for each pod
    where the two differ. In check mode nothing was done, by design, and nothing differs.
options:
  _input:
    description: The batch, an entry of RV(kubeops.rotation.rotation_plan#module:batches).
    type: dict
    required: true
  batches:
    description: How many batches the plan has, for the batch's C(index/batches) in RV(_value.row).
    type: int
    required: true
  replaced:
    description: >-
      What M(kubeops.rotation.replace_pods) returned for the batch, or RV(kubeops.rotation.evict#module:replaced) of
      an eviction with O(kubeops.rotation.evict#module:replace_first).
    type: dict
    required: true
  eviction:
    description: What M(kubeops.rotation.evict) returned for the batch.
    type: dict
    required: true
  warmed:
    description: What M(kubeops.rotation.warm_nodes) returned for the batch, skipped or not.
    type: dict
    required: true
  check_mode:
    description: Whether the batch ran in check mode.
    type: bool
    required: true
  started:
    description: When the batch started, in seconds since the epoch.
    type: float
    required: true
  now:
    description: The time now, in seconds since the epoch.
    type: float
    required: true
  retire_started:
    description: When the retirement of the batch's nodes started, in seconds since the epoch; none, 0 seconds.
    type: float
"""

EXAMPLES = r"""
- name: Report the batch, planned against done
  ansible.builtin.set_fact:
    rotation_report: >-
      {{ rotation_report + [batch | kubeops.rotation.batch_report(batches=plan.batches | length, replaced=replaced,
                                                                   eviction=eviction, warmed=warmed,
                                                                   check_mode=ansible_check_mode, started=started,
                                                                   now=now().timestamp())] }}
"""

RETURN = r"""
_value:
  description: The batch's report entry.
  type: dict
  contains:
    batch:
      description: The batch's index.
      type: int
      sample: 1
    nodes:
      description: Its nodes.
      type: list
      elements: str
      sample: [node-1, node-2]
    replacements_planned:
      description: The pods planned to be replaced first (C(namespace/name)).
      type: list
      elements: str
      sample: [shop/db-0]
    replacements_done:
      description: The pods replaced first.
      type: list
      elements: str
      sample: [shop/db-0]
    replaced_workloads:
      description: The workloads planned to have pods replaced first (C(namespace/kind/name)).
      type: list
      elements: str
      sample: [shop/StatefulSet/db]
    evictions_planned:
      description: The pods planned to be evicted.
      type: list
      elements: str
      sample: [shop/web-7f9c4d8b6-x2kqp]
    evictions_done:
      description: The pods evicted.
      type: list
      elements: str
      sample: [shop/web-7f9c4d8b6-x2kqp]
    replaced:
      description: How many pods were replaced first.
      type: int
      sample: 1
    evicted:
      description: How many pods were evicted.
      type: int
      sample: 1
    differences:
      description: Each pod where what was done is not what was planned, in words.
      type: list
      elements: str
      sample: ["batch 1: shop/web-7f9c4d8b6-x2kqp planned to evict, not evicted (gone before)"]
    seconds:
      description: Seconds since the batch started, to a tenth.
      type: float
      sample: 42.7
    warm_seconds:
      description: Seconds the warm nodes took (0 when none were warmed).
      type: float
      sample: 30.1
    replace_seconds:
      description: Seconds the replacements took.
      type: float
      sample: 8.2
    evict_seconds:
      description: Seconds the evictions took.
      type: float
      sample: 3.9
    evict_waits:
      description: >-
        Of O(evict_seconds), the seconds waited by what for (RV(kubeops.rotation.evict#module:waited_seconds)): a
        PDB to allow another disruption (C(pdb_pace)), pods to be Ready (C(pods_starting)), evicted pods to go
        (C(pods_going)), a backoff after a 429 (C(backing_off)), the API server's answers to the evictions
        (C(api_answers)); empty when nothing was evicted.
      type: dict
      sample: {"pdb_pace": 1.2, "pods_starting": 2.0, "pods_going": 0.4, "backing_off": 0.0, "api_answers": 0.6}
    retire_seconds:
      description: >-
        Seconds the nodes' retirement took (their NodeClaims or Machines deleted, your tasks); their owners remove
        them while the next batch goes on.
      type: float
      sample: 12.5
    own_seconds:
      description: >-
        The batch's seconds that none of its steps waited for (warm nodes, replacements, evictions, retirement): its
        check, the role's tasks and the modules' own work.
      type: float
      sample: 4.2
    row:
      description: The batch's line of the report's Markdown table.
      type: str
      sample: "| 1/2 | node-1, node-2 | 1 | 1 | 1 | 1 | 42.7 |"
"""

from ansible_collections.kubeops.rotation.plugins.module_utils.plan.report import BatchRun, batch_report


def batch_report_filter(batch, batches, check_mode, **run):
    """The filter's options, as DOCUMENTATION gives them: ``run`` is the fields of plan.report.BatchRun by name
    (replaced, eviction, warmed, started, now, retire_started)."""
    return batch_report(batch, batches, BatchRun(**run), check_mode)


class FilterModule:
    def filters(self):
        return {"batch_report": batch_report_filter}
