# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""What a batch of a rotation did against what its plan said: the rotate_nodes role's report entry of the batch
(the filter kubeops.rotation.batch_report).

Plain data in (the batch as rotation_plan planned it, what replace_pods and evict returned), plain data out; the
clock is passed in.
"""

from __future__ import annotations

from dataclasses import dataclass


def missing(keys, others):
    """The keys not among ``others``, each once, in the order of ``keys``."""
    others = set(others)
    return [key for key in dict.fromkeys(keys) if key not in others]


def differences(index, planned, replaced, to_evict, evicted):
    """Where batch ``index`` did not do what its plan said, one sentence a pod."""
    prefix = "batch %s: " % index
    return ([prefix + "%s planned to replace first, not replaced (gone before)" % key
             for key in missing(planned, replaced)]
            + [prefix + "%s replaced first, not planned (the check of the batch found it may not be evicted now)" % key
               for key in missing(replaced, planned)]
            + [prefix + "%s planned to evict, not evicted (gone before)" % key for key in missing(to_evict, evicted)]
            + [prefix + "%s evicted, not planned (it came to the node after the plan)" % key
               for key in missing(evicted, to_evict)])


@dataclass(frozen=True)
class BatchRun:
    """What the steps of a batch returned and when it ran: ``replaced``, ``eviction`` and ``warmed`` are the
    results of replace_pods, evict and warm_nodes (skipped or not); the batch started at ``started`` (seconds
    since the epoch, or their text), its nodes' retirement at ``retire_started`` (None: it took no time), and
    ``now`` is when it is reported."""

    replaced: dict
    eviction: dict
    warmed: dict
    started: float
    now: float
    retire_started: float | None = None


def batch_report(batch, batches, run, check_mode):
    """The report entry of ``batch`` (one of ``batches``) as it ran (``run``, a BatchRun), planned against done:
    the pods planned to be replaced first and to be evicted, those that were, where the two differ (nothing in
    check mode, where nothing was done by design), the seconds since it started and those each step took, and
    ``row``, its line of the Markdown table. What none of the steps waited for is the batch's own time: its
    check, the role's tasks and the modules' own work."""
    planned = [pod for entry in batch["replace"] for pod in entry["pods"]]
    done = [pod for workload in run.replaced.get("workloads") or [] for pod in workload.get("replaced") or []]
    evicted = ["%s/%s" % (pod["namespace"], pod["name"])
               for pod in run.eviction.get("pods") or [] if pod["outcome"] == "evicted"]
    seconds = round(run.now - float(run.started), 1)
    report = {
        "batch": batch["index"],
        "nodes": batch["nodes"],
        "replacements_planned": planned,
        "replacements_done": done,
        "replaced_workloads": ["%s/%s/%s" % (entry["namespace"], entry["kind"], entry["name"])
                               for entry in batch["replace"]],
        "evictions_planned": batch["evict"],
        "evictions_done": evicted,
        "replaced": len(done),
        "evicted": len(evicted),
        "differences": [] if check_mode else differences(batch["index"], planned, done, batch["evict"], evicted),
        "seconds": seconds,
        "warm_seconds": run.warmed.get("elapsed_seconds", 0),
        "replace_seconds": run.replaced.get("elapsed_seconds", 0),
        "evict_seconds": run.eviction.get("elapsed_seconds", 0),
        "evict_waits": dict(run.eviction.get("waited_seconds") or {}),
        "retire_seconds": 0.0 if run.retire_started is None else round(run.now - float(run.retire_started), 1),
    }
    steps = ("warm_seconds", "replace_seconds", "evict_seconds", "retire_seconds")
    waited = sum(float(report[key] or 0) for key in steps)
    report["own_seconds"] = round(max(0.0, seconds - waited), 1)
    report["row"] = "| %s/%s | %s | %d | %d | %d | %d | %s |" % (
        batch["index"], batches, ", ".join(str(node) for node in batch["nodes"]), len(planned), len(done),
        len(batch["evict"]), len(evicted), seconds)
    return report


BATCH_TABLE_HEAD = ["| batch | nodes | replacements planned | replacements done | evictions planned | evictions done "
                    "| seconds |", "|---|---|---|---|---|---|---|"]
ZONE_TABLE_HEAD = ["| workload | pods per zone before | after |", "|---|---|---|"]


def _zones_text(counts):
    return ", ".join("%s %s" % item for item in sorted((counts or {}).items()))


def report_tables(batches, zones_before, zones_after):
    """The rotation report's two Markdown tables, as lines: each batch (``batches``, batch_report's entries) planned
    against done, and each moved workload's pods per zone before and after (workload key -> {zone: pods}). Pure."""
    rows = [batch["row"] for batch in batches or ()]
    zone_rows = ["| %s | %s | %s |" % (key, _zones_text(before), _zones_text((zones_after or {}).get(key)))
                 for key, before in sorted((zones_before or {}).items())]
    return BATCH_TABLE_HEAD + rows + [""] + ZONE_TABLE_HEAD + zone_rows
