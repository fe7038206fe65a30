# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The guarded eviction engine: the one path by which the collection removes pods.

``select_pods`` reads what to judge, ``plan`` (pure) judges every pod with the
filters of pods.py, and ``EvictionRun`` acts on the plan: Eviction API only
(PDBs are enforced by the API server), 429 retried with jittered backoff until
a deadline, limits on evictions in flight, waiting for pods to be gone by
watching, and a failure that names what blocked.
"""

from __future__ import annotations

import json
import random
import socket
import time
from dataclasses import dataclass, field

from ansible_collections.kubeops.rotation.plugins.module_utils.client import ApiException, WatchExpired
from ansible_collections.kubeops.rotation.plugins.module_utils.times import utc_now
from ansible_collections.kubeops.rotation.plugins.module_utils.pods import (
    DEFAULT_FILTERS,
    controller_of,
    describe_pdb,
    is_ready,
    judge,
    label_selector_string,
    pdbs_for,
    pod_key,
    unavailable_limit,
)

EVENT_COMPONENT = "kubeops.rotation"
MAX_BACKOFF = 5.0
WORKLOAD_APIS = {"Deployment": "apps", "StatefulSet": "apps", "ReplicaSet": "apps", "ReplicationController": "core"}


class SelectionError(Exception):
    """The selection names something that does not exist; nothing was changed."""


@dataclass(frozen=True)
class Limits:
    max_in_flight: int | None = None
    max_per_node: int | None = None
    max_per_namespace: int | None = None
    max_unavailable_per_owner: str | None = None
    max_evictions: int | None = None


@dataclass(frozen=True)
class Settings:
    timeout: float = 300
    wait: bool = True
    wait_for_replacements: bool = False
    grace_period: int | None = None
    disable_eviction: bool = False
    limits: Limits = field(default_factory=Limits)
    reason: str = ""


@dataclass
class PodState:
    """Progress of one pod through the run."""

    plan: object
    attempts: int = 0
    next_try: float = 0.0
    outcome: str = "pending"
    detail: str = ""
    pdbs: list = field(default_factory=list)
    verb: str = "evicted"

    @property
    def pod(self):
        return self.plan.pod

    @property
    def node(self):
        return (self.pod.get("spec") or {}).get("nodeName")

    @property
    def namespace(self):
        return self.pod["metadata"]["namespace"]

    def result(self):
        entry = self.plan.summary()
        entry.update(outcome=self.outcome, detail=self.detail or entry["detail"], attempts=self.attempts,
                     pdbs=list(self.pdbs))
        return entry


def backoff(attempt, rng):
    """Seconds before retrying a 429: 1, 2, 4... capped, times a jitter of 0.5 to 1.5."""
    return min(MAX_BACKOFF, 2.0 ** (attempt - 1)) * (0.5 + rng())


def select_pods(client, nodes=None, node_selector=None, namespaces=None, pod_selector=None, field_selector=None):
    """The pods to judge and the names of the selected nodes, listed once for the whole call."""
    node_names = []
    if nodes or node_selector:
        found, missing = client.read_nodes(nodes, node_selector)
        if missing:
            raise SelectionError("No node named %s; nothing was changed." % ", ".join(sorted(missing)))
        node_names = [node["metadata"]["name"] for node in found]
        if not node_names:
            return [], []
    selectors = {"label_selector": pod_selector}
    fields = [field_selector] if field_selector else []
    if len(node_names) == 1:
        fields.append("spec.nodeName=%s" % node_names[0])
    selectors["field_selector"] = ",".join(fields) or None
    if namespaces and not node_names:
        pods = []
        for namespace in namespaces:
            pods.extend(client.list_all(client.core.list_namespaced_pod, namespace=namespace, **selectors))
    else:
        pods = client.list_all(client.core.list_pod_for_all_namespaces, **selectors)
    if node_names:
        wanted = set(node_names)
        pods = [pod for pod in pods if (pod.get("spec") or {}).get("nodeName") in wanted]
    pods.sort(key=lambda pod: ((pod.get("spec") or {}).get("nodeName") or "", pod_key(pod)))
    return pods, node_names


def claim_zones(client, pods):
    """"namespace/claim" -> zone of its PersistentVolume's node affinity (or None), for the pods' PVCs."""
    zones = {}
    for pod in pods:
        namespace = pod["metadata"]["namespace"]
        for volume in (pod.get("spec") or {}).get("volumes") or []:
            claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
            if not claim or "%s/%s" % (namespace, claim) in zones:
                continue
            zones["%s/%s" % (namespace, claim)] = _volume_zone(client, namespace, claim)
    return zones


def _volume_zone(client, namespace, claim):
    try:
        volume_name = client.core.read_namespaced_persistent_volume_claim(claim, namespace).spec.volume_name
        if not volume_name:
            return None
        volume = client.to_dict(client.core.read_persistent_volume(volume_name))
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise
    terms = (((volume.get("spec") or {}).get("nodeAffinity") or {}).get("required") or {}).get(
        "nodeSelectorTerms") or []
    for term in terms:
        for expression in term.get("matchExpressions") or []:
            if expression.get("key") in ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone"):
                return ",".join(expression.get("values") or [])
    return None


def plan(pods, options, zones=None, filters=DEFAULT_FILTERS):
    """Judge every pod. Pure: returns the PodPlans in the order of ``pods``."""
    return [judge(pod, options, zones, filters) for pod in pods]


def refused(plans):
    return [pod_plan for pod_plan in plans if pod_plan.verdict.action == "refuse"]


def refusal_message(plans):
    entries = ["%s (%s: %s)" % (p.key, p.verdict.reason, p.verdict.detail) for p in refused(plans)]
    return ("Refusing to evict anything: %d pod(s) cannot be evicted safely: %s. Nothing was evicted; "
            "fix them or set skip_refused: true to evict the others." % (len(entries), "; ".join(entries)))


class EvictionRun:
    """Carries out a plan against the cluster; ``run`` returns the per-pod states and whether it timed out."""

    def __init__(self, client, settings, clock=time.monotonic, sleep=time.sleep, rng=random.random):
        self.client = client
        self.settings = settings
        self.clock = clock
        self.sleep = sleep
        self.rng = rng
        self.evictions = 0
        self.workloads = {}
        self.replicas_this_pass = {}
        self.timed_out = False
        self.elapsed = 0.0

    # -- the loop ---------------------------------------------------------

    def run(self, plans, nodes=()):
        started = self.clock()
        deadline = started + self.settings.timeout
        states = [PodState(p) for p in plans if p.verdict.action in ("evict", "delete")]
        for p in plans:
            if p.verdict.action in ("skip", "refuse"):
                states.append(PodState(p, outcome="skipped" if p.verdict.action == "skip" else "refused"))
        queue = [state for state in states if state.outcome == "pending"]
        in_flight = {}
        for node in nodes if queue else ():
            self._event_on_node(node, "Draining", "Evicting %d pod(s)" % len(queue))
        resource_version = self._resource_version(queue)
        while queue or (in_flight and self.settings.wait):
            now = self.clock()
            if now >= deadline:
                self.timed_out = True
                break
            # Replica counts read in this pass; an eviction drops its workload's entry.
            self.replicas_this_pass = {}
            for state in list(queue):
                if self._budget_spent():
                    state.outcome, state.detail = "pending", "max_evictions reached; rerun to continue"
                    queue.remove(state)
                    continue
                if state.next_try > now or not self._has_room(state, in_flight):
                    continue
                if self._remove(state) != "retry":
                    queue.remove(state)
                if state.outcome == "in_flight":
                    in_flight[state.pod["metadata"]["uid"]] = state
            if not queue and not (in_flight and self.settings.wait):
                break
            retry_at = min([state.next_try for state in queue if state.next_try > now] or [now + MAX_BACKOFF])
            wait = max(0.2, min(retry_at, deadline) - self.clock())
            resource_version = self._wait(in_flight, queue, resource_version, wait)
        if self.timed_out:
            self._explain_blocked(queue + list(in_flight.values()))
        elif self.settings.wait_for_replacements:
            self._wait_for_replacements(states, deadline)
        for node in nodes if self.evictions and not self.timed_out else ():
            self._event_on_node(node, "Drained", "Evicted %d pod(s)" % self.evictions)
        self.elapsed = round(self.clock() - started, 2)
        return states

    def _budget_spent(self):
        limit = self.settings.limits.max_evictions
        return limit is not None and self.evictions >= limit

    def _has_room(self, state, in_flight):
        limits = self.settings.limits
        flying = list(in_flight.values())
        if limits.max_in_flight is not None and len(flying) >= limits.max_in_flight:
            return False
        if limits.max_per_node is not None and sum(s.node == state.node for s in flying) >= limits.max_per_node:
            return False
        if limits.max_per_namespace is not None and sum(
                s.namespace == state.namespace for s in flying) >= limits.max_per_namespace:
            return False
        if limits.max_unavailable_per_owner is not None and state.plan.verdict.action == "evict":
            workload = self._workload_of(state.pod)
            if workload:
                if workload not in self.replicas_this_pass:
                    self.replicas_this_pass[workload] = self._replicas(workload)
                desired, ready = self.replicas_this_pass[workload]
                allowed = unavailable_limit(limits.max_unavailable_per_owner, desired)
                if desired - ready >= allowed:
                    state.detail = "waiting: %s/%s has %d of %d replicas unavailable (max %d)" % (
                        workload[1], workload[2], desired - ready, desired, allowed)
                    return False
        return True

    # -- one pod ----------------------------------------------------------

    def _remove(self, state):
        """Evict (or delete) one pod; returns "retry" when it must be tried again later."""
        metadata = state.pod["metadata"]
        options = {"preconditions": {"uid": metadata["uid"]}}
        if self.settings.grace_period is not None:
            options["gracePeriodSeconds"] = self.settings.grace_period
        state.attempts += 1
        deleting = state.plan.verdict.action == "delete" or self.settings.disable_eviction
        try:
            if deleting:
                self.client.core.delete_namespaced_pod(metadata["name"], metadata["namespace"], body=options)
            else:
                self.client.core.create_namespaced_pod_eviction(metadata["name"], metadata["namespace"], {
                    "apiVersion": "policy/v1", "kind": "Eviction",
                    "metadata": {"name": metadata["name"], "namespace": metadata["namespace"]},
                    "deleteOptions": options})
        except ApiException as exc:
            message = _api_message(exc)
            if exc.status == 429:
                state.next_try = self.clock() + backoff(state.attempts, self.rng)
                state.detail = "retrying: %s" % message
                return "retry"
            if exc.status in (404, 409):  # gone already, or replaced by a pod of the same name
                state.outcome, state.detail = "gone", "the pod was already gone"
                return "done"
            state.outcome = "failed"
            if exc.status == 500 and "DisruptionBudget" in message:
                state.pdbs = [describe_pdb(pdb) for pdb in pdbs_for(state.pod, self._pdbs(state.namespace))]
                state.detail = "selected by several PDBs, which the Eviction API refuses: %s" % "; ".join(state.pdbs)
            else:
                state.detail = message
            return "done"
        self.evictions += 1
        if self.settings.limits.max_unavailable_per_owner is not None:
            self.replicas_this_pass.pop(self._workload_of(state.pod), None)
        verb = "deleted" if deleting else "evicted"
        self._event_on_pod(state.pod, "Evicted" if not deleting else "Deleted", "%s by %s%s" % (
            verb.capitalize(), EVENT_COMPONENT, ": %s" % self.settings.reason if self.settings.reason else ""))
        state.outcome = "in_flight" if self.settings.wait else verb
        state.detail = "" if self.settings.wait else state.detail
        state.verb = verb
        return "done"

    # -- waiting ----------------------------------------------------------

    def _scope(self, states, by_node=True):
        """Where to list and watch the pods of ``states``: one node, one namespace, or everything.

        ``by_node=False`` when the replacements matter, which land on other nodes.
        """
        nodes = {state.node for state in states}
        namespaces = {state.namespace for state in states}
        if by_node and len(nodes) == 1:
            return self.client.core.list_pod_for_all_namespaces, {"field_selector": "spec.nodeName=%s" % nodes.pop()}
        if len(namespaces) == 1:
            return self.client.core.list_namespaced_pod, {"namespace": namespaces.pop()}
        return self.client.core.list_pod_for_all_namespaces, {}

    def _resource_version(self, states):
        """Where the watches start: the resourceVersion of a list (it is the same for any scope)."""
        if not states:
            return None
        list_method, kwargs = self._scope(states)
        return list_method(limit=1, **kwargs).metadata.resource_version

    def _wait(self, in_flight, queue, resource_version, timeout):
        """Wait, by watching pods, until something may let the loop go on; returns the resourceVersion to resume from.

        It returns when an in-flight pod is gone and a pod waits for the room
        this made, or when any pod changes while a pod waits for its owner to
        have replicas to spare (a replacement may have become Ready), or at
        ``timeout``. Only when every queued pod is backing off after a 429 and
        none is in flight is there nothing to watch, and it sleeps.
        """
        now = self.clock()
        waiting_for_room = [state for state in queue if state.next_try <= now]
        watching = list(in_flight.values()) + waiting_for_room if self.settings.wait else waiting_for_room
        if not watching or resource_version is None:
            self.sleep(timeout)
            return resource_version
        list_method, kwargs = self._scope(watching, by_node=not waiting_for_room)
        try:
            for event_type, pod in self.client.watch(list_method, resource_version, timeout, **kwargs):
                resource_version = pod["metadata"].get("resourceVersion") or resource_version
                uid = pod["metadata"].get("uid")
                if event_type == "DELETED" and uid in in_flight:
                    self._finish(in_flight.pop(uid))
                    if not in_flight or waiting_for_room:
                        return resource_version
                elif waiting_for_room and event_type != "BOOKMARK":
                    return resource_version
        except WatchExpired:
            alive = {pod["metadata"]["uid"] for pod in self.client.list_all(list_method, **kwargs)}
            for uid in [uid for uid in in_flight if uid not in alive]:
                self._finish(in_flight.pop(uid))
            return list_method(limit=1, **kwargs).metadata.resource_version
        return resource_version

    def _finish(self, state):
        state.outcome = state.verb
        state.detail = ""

    def _wait_for_replacements(self, states, deadline):
        workloads = {self._workload_of(s.pod) for s in states if s.outcome == "evicted"} - {None}
        for workload in sorted(workloads):
            while True:
                desired, ready = self._replicas(workload)
                if ready >= desired:
                    break
                remaining = deadline - self.clock()
                if remaining <= 0:
                    self.timed_out = True
                    self.waiting_for = "%s/%s in %s has %d of %d replicas Ready" % (
                        workload[1], workload[2], workload[0], ready, desired)
                    return
                selector = self._workload_selector(workload)
                for _event in self.client.watch(self.client.core.list_namespaced_pod, None, min(remaining, 10),
                                                namespace=workload[0], label_selector=selector):
                    break

    # -- owners -----------------------------------------------------------

    def _workload_of(self, pod):
        """(namespace, kind, name) of the workload that keeps the pod's replica count, or None."""
        owner = controller_of(pod)
        if not owner or owner.get("kind") not in WORKLOAD_APIS:
            return None
        namespace = pod["metadata"]["namespace"]
        key = (namespace, owner["kind"], owner["name"])
        if key not in self.workloads:
            workload = key
            if owner["kind"] == "ReplicaSet":
                replica_set = self._read(key)
                parent = controller_of(replica_set) if replica_set else None
                if parent and parent.get("kind") == "Deployment":
                    workload = (namespace, "Deployment", parent["name"])
            self.workloads[key] = workload
        return self.workloads[key]

    def _read(self, workload):
        namespace, kind, name = workload
        readers = {
            "Deployment": self.client.apps.read_namespaced_deployment,
            "StatefulSet": self.client.apps.read_namespaced_stateful_set,
            "ReplicaSet": self.client.apps.read_namespaced_replica_set,
            "ReplicationController": self.client.core.read_namespaced_replication_controller,
        }
        try:
            return self.client.to_dict(readers[kind](name, namespace))
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def _workload_selector(self, workload, obj=None):
        obj = obj or self._read(workload) or {}
        selector = (obj.get("spec") or {}).get("selector") or {}
        if workload[1] == "ReplicationController":
            return label_selector_string(selector)
        parts = ["%s=%s" % item for item in sorted((selector.get("matchLabels") or {}).items())]
        for expression in selector.get("matchExpressions") or []:
            operator = expression["operator"]
            if operator in ("In", "NotIn"):
                parts.append("%s %s (%s)" % (expression["key"], operator.lower(), ",".join(expression["values"])))
            elif operator == "Exists":
                parts.append(expression["key"])
            else:
                parts.append("!" + expression["key"])
        return ",".join(parts)

    def _replicas(self, workload):
        """(desired, ready) of a workload, ready counted from its live pods: a pod being evicted
        counts as unavailable at once, without waiting for the controller to update its status."""
        obj = self._read(workload)
        if not obj:
            return 0, 0
        desired = (obj.get("spec") or {}).get("replicas", 1)
        pods = self.client.list_all(self.client.core.list_namespaced_pod, namespace=workload[0],
                                    label_selector=self._workload_selector(workload, obj))
        return desired, sum(1 for pod in pods if is_ready(pod))

    # -- reports ----------------------------------------------------------

    def _pdbs(self, namespace):
        return self.client.list_all(self.client.policy.list_namespaced_pod_disruption_budget, namespace=namespace)

    def _explain_blocked(self, states):
        by_namespace = {}
        for state in states:
            if state.outcome == "in_flight":
                state.outcome, state.detail = "terminating", "evicted but still terminating at the deadline"
                continue
            if state.namespace not in by_namespace:
                by_namespace[state.namespace] = self._pdbs(state.namespace)
            blocking = pdbs_for(state.pod, by_namespace[state.namespace])
            state.pdbs = [describe_pdb(pdb) for pdb in blocking]
            if state.attempts and blocking:
                state.outcome = "blocked"
                state.detail = "blocked by " + "; ".join(state.pdbs)
            elif state.outcome == "pending" and not state.detail:
                state.detail = "not attempted before the deadline"
            else:
                state.outcome = "blocked" if state.attempts else "pending"

    def _event_on_pod(self, pod, reason, message):
        metadata = pod["metadata"]
        self._event(metadata["namespace"], {"apiVersion": "v1", "kind": "Pod", "name": metadata["name"],
                                            "namespace": metadata["namespace"], "uid": metadata["uid"]},
                    reason, message)

    def _event_on_node(self, node, reason, message):
        self._event("default", {"apiVersion": "v1", "kind": "Node", "name": node, "uid": node},
                    reason, "%s by %s%s" % (message, EVENT_COMPONENT,
                                            ": %s" % self.settings.reason if self.settings.reason else ""))

    def _event(self, namespace, involved, reason, message):
        now = utc_now()
        body = {
            "metadata": {"generateName": "%s." % involved["name"], "namespace": namespace},
            "involvedObject": involved, "reason": reason, "message": message, "type": "Normal",
            "source": {"component": EVENT_COMPONENT}, "reportingComponent": EVENT_COMPONENT,
            "reportingInstance": socket.gethostname(), "firstTimestamp": now, "lastTimestamp": now, "count": 1,
        }
        try:
            self.client.core.create_namespaced_event(namespace, body)
        except ApiException:  # an event is a courtesy: lacking RBAC for events must not stop a drain
            pass


def _api_message(exc):
    try:
        return json.loads(exc.body).get("message") or str(exc.reason)
    except (TypeError, ValueError, AttributeError):
        return str(exc.reason)


def timeout_message(run, states, total_seconds):
    """The one-paragraph failure at the deadline: what is left, what blocked it, how to continue."""
    left = [s for s in states if s.outcome in ("blocked", "pending", "terminating")]
    done = sum(1 for s in states if s.outcome in ("evicted", "deleted"))
    wanted = sum(1 for s in states if s.plan.verdict.action in ("evict", "delete"))
    parts = ["%s on %s: %s" % (pod_key(s.pod), s.node, s.detail) for s in left]
    waiting = getattr(run, "waiting_for", None)
    if waiting:
        parts.append("replacements not Ready: %s" % waiting)
    return ("Timed out after %s s evicting: %s. %d of %d pods evicted; rerunning continues from here."
            % (_seconds(total_seconds), "; ".join(parts), done, wanted))


def _seconds(value):
    return int(value) if float(value).is_integer() else value


DRAIN_LEAVES = ("daemonset", "mirror")


def remaining_on_nodes(client, node_names, options):
    """Pods still on the nodes that a drain should have removed: all but DaemonSet, mirror and terminal pods."""
    if not node_names:
        return []
    pods, _nodes = select_pods(client, nodes=node_names)
    left = []
    for pod_plan in plan(pods, options):
        if pod_plan.verdict.reason in DRAIN_LEAVES + ("terminal", "namespace"):
            continue
        left.append(pod_plan.key)
    return left


def drain(client, params, options, check_mode=False):
    """Select, plan and (unless ``check_mode``) evict; returns the module's result.

    The result carries ``error: True`` and ``msg`` when the call failed: pods
    refused (nothing evicted), evictions failed, or the deadline passed.
    """
    pods, node_names = select_pods(client, params.get("nodes"), params.get("node_selector"), params.get("namespaces"),
                                   params.get("pod_selector"), params.get("field_selector"))
    plans = plan(pods, options, claim_zones(client, pods))
    refusals = refused(plans)
    result = {"changed": False, "nodes": node_names}
    if refusals and not params.get("skip_refused"):
        result.update(error=True, msg=refusal_message(plans), elapsed_seconds=0.0, pods=[
            dict(p.summary(), outcome="refused" if p.verdict.action == "refuse" else "not attempted")
            for p in plans])
        result["summary"] = summarize_entries(result["pods"])
        return result
    if check_mode:
        entries = [dict(p.summary(), outcome="planned" if p.verdict.action in ("evict", "delete") else
                        ("skipped" if p.verdict.action == "skip" else "refused"), attempts=0, pdbs=[]) for p in plans]
        result.update(pods=entries, summary=summarize_entries(entries), elapsed_seconds=0.0)
        return result
    limits = Limits(params.get("max_in_flight"), params.get("max_per_node"), params.get("max_per_namespace"),
                    params.get("max_unavailable_per_owner"), params.get("max_evictions"))
    settings = Settings(timeout=params.get("timeout") or 300, wait=params.get("wait", True),
                        wait_for_replacements=params.get("wait_for_replacements", False),
                        grace_period=params.get("grace_period"), disable_eviction=params.get("disable_eviction", False),
                        limits=limits, reason=params.get("reason") or "")
    run = EvictionRun(client, settings)
    states = run.run(plans, node_names)
    entries = sorted((state.result() for state in states), key=lambda e: (e["node"] or "", e["namespace"], e["name"]))
    result.update(changed=run.evictions > 0, pods=entries, summary=summarize_entries(entries),
                  elapsed_seconds=run.elapsed)
    if node_names and settings.wait:
        result["remaining"] = remaining_on_nodes(client, node_names, options)
        result["summary"]["remaining"] = len(result["remaining"])
    failed = [s for s in states if s.outcome == "failed"]
    if run.timed_out:
        result.update(error=True, msg=timeout_message(run, states, settings.timeout))
    elif failed:
        wanted = sum(1 for s in states if s.plan.verdict.action in ("evict", "delete"))
        reasons = "; ".join("%s: %s" % (pod_key(s.pod), s.detail) for s in failed)
        result.update(error=True, msg="%d pod(s) could not be evicted: %s. %d of %d pods evicted; rerunning "
                      "continues from here." % (len(failed), reasons, run.evictions, wanted))
    return result


def summarize_entries(entries):
    counts = {}
    for entry in entries:
        counts[entry["outcome"]] = counts.get(entry["outcome"], 0) + 1
    return counts
