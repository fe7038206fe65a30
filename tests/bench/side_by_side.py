"""What the side-by-side benchmarks share: one tool's run measured from the cluster, the trials' order, ratios.

A run is measured the same way for every contender (``measured``): an optional idle window first, whose
apiserver_request_total rate is the background (kwok's heartbeats, the controllers, the benchmark's watchers),
then the API server's request counts read before and after the tool, around its wall time. /metrics counts every
client; the API server's audit log (tests/cluster/cluster.py turns it on) names the client of each request by its
User-Agent, and gives the tool's own requests (``audit_requests``). A ``DeletionWatcher`` beside it sees every pod
deleted meanwhile, and the fewest Ready pods of each app.
"""

from __future__ import annotations

import collections
import json
import os
import subprocess
import threading
import time

from bench_cluster import request_summary
from clients import USER_AGENT as TESTS_AGENT
from kube import DisruptionWatcher

# The clients on a benchmark's cluster by their User-Agent: (family, how the header starts), the first that matches.
OURS_AGENT = "kubeops.rotation"  # plugins/module_utils/api/client.py's USER_AGENT
KUBECTL_AGENT = "kubectl"  # kubectl/v1.35.4 (linux/amd64) kubernetes/<commit>
PYTHON_AGENT = "python client"  # the kubernetes package's default, OpenAPI-Generator/35.0.0/python: kubernetes.core
DESCHEDULER_AGENT = "descheduler"  # client-go's default, from the binary's name: descheduler-v0.36.0/...
AGENT_FAMILIES = (
    (OURS_AGENT, "kubeops.rotation"),
    (KUBECTL_AGENT, "kubectl/"),
    (PYTHON_AGENT, "OpenAPI-Generator/"),
    (DESCHEDULER_AGENT, "descheduler"),
    ("karpenter", "karpenter"),
    ("benchmark", TESTS_AGENT),  # its /metrics reads, watchers and waits
    ("test provisioner", "kubeops-test-provisioner"),
    ("kube-controller-manager", "kube-controller-manager/"),
    ("kube-scheduler", "kube-scheduler/"),
    ("kube-apiserver", "kube-apiserver/"),
    ("kwok", "kwok/"),
)
# A request's entries in the audit log (cluster.AUDIT_POLICY omits RequestReceived): ResponseStarted when a
# long-running one (a watch) starts answering, then ResponseComplete (or Panic) when it ends.
RESPONSE_STARTED = "ResponseStarted"
ENDED = ("ResponseComplete", "Panic")


class DeletionWatcher(DisruptionWatcher):
    """The disruption watcher, also keeping the pods deleted meanwhile: {uid: (app, node)}."""

    def __init__(self, cluster, namespace):
        super().__init__(cluster, namespace)
        self.deleted = {}

    def _record(self, event_type, pod):
        if event_type == "DELETED":
            self.deleted[pod.metadata.uid] = ((pod.metadata.labels or {}).get("app"), pod.spec.node_name)
        super()._record(event_type, pod)


def measured(bench, act, idle=0, agent=None):
    """Run ``act()`` (a contender; it returns a completed process) between two reads of the API server's
    /metrics, after an idle window of ``idle`` seconds when asked; returns (completed, start, result).

    result: wall (seconds), rc, the request counts of ``request_summary`` (Events and the /metrics reads left
    out), background_per_s (the idle window's request rate, None without one) and net_requests (requests less
    that rate times the wall time: what the run caused). With the bench's audit log, also what ``own_requests``
    says of the run: the requests of ``agent``, the tool's family of user agents."""
    background = None
    if idle:
        idle_start = bench.request_counts()
        time.sleep(idle)
        background = request_summary(idle_start, bench.request_counts())["requests"] / idle
    before = bench.request_counts()
    audit_start = audit_offset(bench.audit_log) if bench.audit_log else None
    started = time.monotonic()
    completed = act()
    wall = time.monotonic() - started
    audit_end = audit_offset(bench.audit_log) if bench.audit_log else None
    after = bench.request_counts()
    result = dict(wall=wall, rc=completed.returncode, **request_summary(before, after))
    result["background_per_s"] = background
    result["net_requests"] = None if background is None else result["requests"] - background * wall
    if audit_start is not None:
        result.update(own_requests(bench.audit_log, audit_start, audit_end, agent))
    return completed, started, result


WORKER = "task workers (modules in them)"


class PeakMemory:
    """While a tool runs: the peak resident memory of ansible-playbook and of its task workers, from /proc every
    ``interval`` seconds. A process's VmHWM is its own high-water mark, so a peak between two samples is not
    missed; a worker shorter than the interval may be (the biggest are not short).

    The collection's modules run inside ansible-playbook's task workers (its action plugins run them in process),
    so a worker's peak is the module's: the controller's memory it was forked with, and what the module added.

    ``peaks``: {"ansible-playbook": MB, WORKER: MB}, the largest of each kind's processes."""

    def __init__(self, interval=0.1):
        self.interval = interval
        self.peaks = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def _run(self):
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def sample(self):
        for pid in (entry for entry in os.listdir("/proc") if entry.isdigit()):
            kind = self._kind(pid)
            megabytes = kind and self._high_water_mb(pid)
            if megabytes:
                self.peaks[kind] = max(self.peaks.get(kind, 0.0), megabytes)

    def _kind(self, pid):
        if not self._is_playbook(self._command(pid)):
            return None
        return WORKER if self._is_playbook(self._command(self._parent(pid))) else "ansible-playbook"

    @staticmethod
    def _is_playbook(words):
        return any(word.endswith("/ansible-playbook") for word in words[:2])

    @staticmethod
    def _parent(pid):
        try:
            with open("/proc/%s/stat" % pid) as handle:
                return handle.read().rsplit(")", 1)[1].split()[1]
        except (OSError, IndexError):
            return None

    @staticmethod
    def _command(pid):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as handle:
                return [word.decode(errors="replace") for word in handle.read().split(b"\0") if word]
        except (OSError, TypeError):
            return []

    @staticmethod
    def _high_water_mb(pid):
        try:
            with open("/proc/%s/status" % pid) as handle:
                for line in handle:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) / 1024.0
        except OSError:
            pass
        return None


def audit_offset(path):
    """Where the API server's audit log ends now: the start (or the end) of a window of ``audit_requests``."""
    return os.path.getsize(path)


def agent_family(user_agent):
    """The family (``AGENT_FAMILIES``) of a User-Agent header, "other" when none matches."""
    return next((family for family, start in AGENT_FAMILIES if (user_agent or "").startswith(start)), "other")


def audit_requests(path, start, end=None):
    """The requests in the API server's audit log from byte ``start`` to ``end`` (its end now), Events aside, by
    family of user agents: {"by_agent": {family: requests}, "by_request": {family: {"verb resource": requests}}}.

    Each request counts once (its auditID), in the window where it began to answer: a watch by its ResponseStarted
    entry, whether it ended within the window or not (and the ResponseComplete of a watch begun before the window
    not at all), any other request by its ResponseComplete. resource: group/resource/subresource ("create
    pods/eviction", "list apps/deployments"), or a non-resource URL's path ("get /api")."""
    by_agent = collections.Counter()
    by_request = collections.defaultdict(collections.Counter)
    seen = set()
    with open(path, "rb") as handle:
        handle.seek(start)
        lines = handle.read(-1 if end is None else end - start).splitlines()
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:  # a line the API server was still writing when the window ended
            continue
        stage, verb = event.get("stage"), event.get("verb")
        if event.get("auditID") in seen or not (stage == RESPONSE_STARTED or stage in ENDED and verb != "watch"):
            continue
        seen.add(event.get("auditID"))
        ref = event.get("objectRef") or {}
        if ref.get("resource") == "events":  # core and events.k8s.io; cluster.AUDIT_POLICY leaves them out already
            continue
        resource = "/".join(part for part in (ref.get("apiGroup"), ref.get("resource"), ref.get("subresource"))
                            if part) if ref else event.get("requestURI", "").split("?")[0]
        family = agent_family(event.get("userAgent"))
        by_agent[family] += 1
        by_request[family]["%s %s" % (verb, resource)] += 1
    return {"by_agent": dict(by_agent),
            "by_request": {family: dict(sorted(counts.items())) for family, counts in by_request.items()}}


def own_requests(path, start, end, agent):
    """A run's requests from the audit log: audit_bytes (what the window added to the log), requests_by_agent,
    and the tool's: agent (its family), own_requests (None without an agent) and own_by_request."""
    found = audit_requests(path, start, end)
    return {"audit_bytes": end - start, "requests_by_agent": found["by_agent"], "agent": agent,
            "own_requests": found["by_agent"].get(agent, 0) if agent else None,
            "own_by_request": found["by_request"].get(agent, {})}


def per_moved_pod(requests, moved):
    """``requests`` per pod moved, None when either is missing or nothing moved."""
    return requests / moved if requests is not None and moved else None


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
