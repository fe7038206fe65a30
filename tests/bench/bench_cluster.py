"""What every benchmark holds: the clients on its cluster, a folder for the tools' files, the API server's
request counts (from its /metrics) to measure what a tool's run cost, and its audit log when given (who made each
request: side_by_side.audit_requests)."""

from __future__ import annotations

import collections
import re
import statistics

from clients import ClusterClients

REQUESTS = re.compile(r"^apiserver_request_total\{([^}]*)\} (\S+)$", re.M)
LABEL = re.compile(r'(\w+)="([^"]*)"')


class ClusterBench(ClusterClients):
    def __init__(self, kubeconfig, work_dir, audit_log=None):
        super().__init__(kubeconfig)
        self.work_dir = work_dir
        self.audit_log = audit_log

    def request_counts(self):
        """apiserver_request_total by (verb, group, resource, subresource, code), from the API server's /metrics."""
        response = self.api_client.call_api("/metrics", "GET", auth_settings=["BearerToken"],
                                            _preload_content=False, _return_http_data_only=True)
        counts = collections.Counter()
        for labels, value in REQUESTS.findall(response.data.decode()):
            label = dict(LABEL.findall(labels))
            counts[(label.get("verb", ""), label.get("group", ""), label.get("resource", ""),
                    label.get("subresource", ""), label.get("code", ""))] += int(float(value))
        return counts


def request_summary(before, after):
    """Requests between two /metrics reads: all but Events and the reads themselves, and the evictions."""
    made = {key: after[key] - before.get(key, 0) for key in after if after[key] != before.get(key, 0)}
    counted = {key: count for key, count in made.items() if key[2] != "events" and "/metrics" not in key[3]}
    evictions = {key: count for key, count in counted.items() if key[2] == "pods" and key[3] == "eviction"}
    return {
        "requests": sum(counted.values()),
        "eviction_requests": sum(evictions.values()),
        "evictions_429": sum(count for key, count in evictions.items() if key[4] == "429"),
        "by_request": {" ".join(part for part in key if part): count for key, count in sorted(counted.items())},
    }


def median(runs, key):
    """The median of ``key`` over the runs that have it, or None."""
    values = [run[key] for run in runs if run.get(key) is not None]
    return statistics.median(values) if values else None


def fmt(value, spec):
    """``value`` formatted by ``spec``, or a dash as wide when there is none."""
    return format(value, spec) if value is not None else format("-", ">" + spec.split(".")[0].rstrip("dfg"))
