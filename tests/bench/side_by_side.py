"""What the side-by-side benchmarks share: one tool's run measured from the cluster, the trials' order, ratios.

A run is measured the same way for every contender (``measured``): an optional idle window first, whose
apiserver_request_total rate is the background (kwok's heartbeats, the controllers, the benchmark's watchers),
then the API server's request counts read before and after the tool, around its wall time. A
``DeletionWatcher`` beside it sees every pod deleted meanwhile, and the fewest Ready pods of each app.
"""

from __future__ import annotations

import json
import os
import subprocess
import time

from bench_cluster import request_summary
from kube import DisruptionWatcher


class DeletionWatcher(DisruptionWatcher):
    """The disruption watcher, also keeping the pods deleted meanwhile: {uid: (app, node)}."""

    def __init__(self, cluster, namespace):
        super().__init__(cluster, namespace)
        self.deleted = {}

    def _record(self, event_type, pod):
        if event_type == "DELETED":
            self.deleted[pod.metadata.uid] = ((pod.metadata.labels or {}).get("app"), pod.spec.node_name)
        super()._record(event_type, pod)


def measured(bench, act, idle=0):
    """Run ``act()`` (a contender; it returns a completed process) between two reads of the API server's
    /metrics, after an idle window of ``idle`` seconds when asked; returns (completed, start, result).

    result: wall (seconds), rc, the request counts of ``request_summary`` (Events and the /metrics reads left
    out), background_per_s (the idle window's request rate, None without one) and net_requests (requests less
    that rate times the wall time: what the run caused)."""
    background = None
    if idle:
        idle_start = bench.request_counts()
        time.sleep(idle)
        background = request_summary(idle_start, bench.request_counts())["requests"] / idle
    before = bench.request_counts()
    started = time.monotonic()
    completed = act()
    wall = time.monotonic() - started
    after = bench.request_counts()
    result = dict(wall=wall, rc=completed.returncode, **request_summary(before, after))
    result["background_per_s"] = background
    result["net_requests"] = None if background is None else result["requests"] - background * wall
    return completed, started, result


def trial_order(trials, tools):
    """(trial, tool) in the order they run: even trials in the tools' order, odd ones in the reverse, so that
    every tool sees the same cluster and the same machine load on average."""
    return [(trial, tool) for trial in range(trials) for tool in (tools if trial % 2 == 0 else reversed(tools))]


def add_ratios(summaries, ours, keys):
    """Add ``<key>_ratio_to_ours`` to each tool's summary: its median over ours (None when either is missing)."""
    for key in keys:
        base = summaries.get(ours, {}).get(key)
        for summary in summaries.values():
            value = summary.get(key)
            summary["%s_ratio_to_ours" % key] = value / base if base and value is not None else None
    return summaries


def collection_version(collections_path, namespace, name):
    """The version in an installed collection's MANIFEST.json, or None."""
    try:
        with open(os.path.join(collections_path, "ansible_collections", namespace, name, "MANIFEST.json")) as handle:
            return json.load(handle)["collection_info"]["version"]
    except (OSError, KeyError, ValueError):
        return None


def kubectl_version(kubectl):
    """kubectl's client version (gitVersion), or None."""
    completed = subprocess.run([kubectl, "version", "--client", "-o", "json"], capture_output=True, text=True,
                               check=False)
    return json.loads(completed.stdout)["clientVersion"]["gitVersion"] if completed.returncode == 0 else None
