# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""A fleet of clusters rotated in waves (the playbook kubeops.rotation.rotate_fleet): which clusters go together,
when the fleet stops, and its one report. Pure: clusters are inventory host names."""

from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.module_utils.plan.limits import scaled_count


def fleet_waves(clusters, canary=(), wave_of=None, wave_size=1):
    """The waves of ``clusters`` (in inventory order), each a list of clusters rotated at once: the ``canary``
    clusters alone first, then those given a wave number (``wave_of``: cluster -> number), lowest first, then the
    rest ``wave_size`` at a time. {"waves", "order" (every cluster, wave after wave), "serial" (each wave's size)}."""
    wave_of = wave_of or {}
    first = [cluster for cluster in clusters if cluster in set(canary)]
    numbered = {}
    for cluster in clusters:
        if cluster not in first and wave_of.get(cluster) is not None:
            numbered.setdefault(int(wave_of[cluster]), []).append(cluster)
    rest = [cluster for cluster in clusters if cluster not in first and wave_of.get(cluster) is None]
    waves = ([first] if first else []) + [numbered[number] for number in sorted(numbered)] + \
        [rest[start:start + wave_size] for start in range(0, len(rest), max(1, int(wave_size)))]
    return {"waves": waves, "order": [cluster for wave in waves for cluster in wave],
            "serial": [len(wave) for wave in waves]}


def fleet_error(clusters, canary, wave_size, max_failed):
    """Why the fleet's inputs are refused, or None: a canary that is not a cluster of the fleet, a wave size below
    1, failures allowed that are no count or percent."""
    unknown = sorted(set(canary) - set(clusters))
    if unknown:
        return "kubeops_fleet_canary names %s, not a cluster of the fleet." % ", ".join(unknown)
    if not clusters:
        return "The fleet has no cluster: kubeops_fleet_clusters names no host of the inventory."
    if not str(wave_size).strip().isdigit() or int(str(wave_size).strip()) < 1:
        return "kubeops_fleet_wave_size must be 1 or more, got %s." % wave_size
    text = str(max_failed).strip()
    number = text[:-1] if text.endswith("%") else text
    if not number.isdigit() or (text.endswith("%") and int(number) > 100):
        return "kubeops_fleet_max_failed must be a count like 0 or a percent like 25%%, got %s." % max_failed
    return None


def fleet_stop(waves, done, max_failed=0):
    """Why the fleet stops before its next wave, or None: a wave before it in which more clusters did not finish
    (``done``: the clusters that did) than ``max_failed`` allows (a count, or a percent of the wave's clusters)."""
    for index, wave in enumerate(waves, 1):
        failed = [cluster for cluster in wave if cluster not in set(done)]
        if failed and len(failed) > scaled_count(max_failed, len(wave), round_up=False):
            return "wave %d: %s did not finish (%d of %d clusters, %s allowed)" % (
                index, ", ".join(failed), len(failed), len(wave), max_failed)
    return None


def fleet_report(fleet_id, waves, clusters, check_mode=False):
    """The fleet's report: {"fleet_id", "outcome", "waves", "clusters", "markdown"}. ``clusters``: cluster ->
    {"report": its rotation report (rotate_nodes_report_file's JSON) or None, "report_file", "started", "ended"
    (seconds since the epoch, or None when it did not start)}."""
    entries = []
    for index, wave in enumerate(waves, 1):
        for name in wave:
            entries.append(_cluster_entry(name, index, clusters.get(name) or {}))
    finished = all(entry["outcome"] in ("finished", "check") for entry in entries)
    outcome = "check" if check_mode else "finished" if finished else "stopped"
    lines = ["# Fleet %s (%s)" % (fleet_id, outcome), "",
             "| wave | cluster | outcome | nodes rotated | pods moved | seconds | gates | report |",
             "|---|---|---|---|---|---|---|---|"]
    lines.extend("| %d | %s | %s | %d | %d | %s | %s | %s |" % (
        entry["wave"], entry["cluster"], entry["outcome"], entry["nodes_rotated"], entry["pods_moved"],
        "-" if entry["seconds"] is None else entry["seconds"], entry["gates"] or "-", entry["report_file"] or "-")
        for entry in entries)
    return {"fleet_id": fleet_id, "outcome": outcome, "waves": waves, "clusters": entries, "markdown": lines}


def _cluster_entry(name, wave, facts):
    report = facts.get("report") or {}
    batches = report.get("batches") or []
    started, ended = facts.get("started"), facts.get("ended")
    gates = [gate for stage in report.get("gates") or [] for gate in stage.get("gates") or []]
    tripped = [gate.get("gate") for gate in gates if not gate.get("held")]
    return {
        "cluster": name, "wave": wave,
        "outcome": report.get("outcome") or ("not started" if started is None else "failed"),
        "stopped": report.get("stopped"),
        "nodes_rotated": sum(len(batch.get("nodes") or []) for batch in batches),
        "pods_moved": sum(int(batch.get("evicted") or 0) + int(batch.get("replaced") or 0) for batch in batches),
        "seconds": None if started is None or ended is None else round(float(ended) - float(started), 1),
        "started": started, "ended": ended,
        "gates": ("tripped: %s" % ", ".join(str(name) for name in tripped)) if tripped else
        ("held (%d)" % len(gates) if gates else ""),
        "report_file": facts.get("report_file"),
    }
