# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The guarded eviction engine: the one path by which the collection removes pods.

``EvictionRun`` carries out judged pods (plan.filters): Eviction API only
(PDBs are enforced by the API server; read once before the first pass, they
hold back the pods they do not allow), a pod its PDB refused retried when a
watch of the PDBs shows the disruption allowed (other 429s after a jittered
backoff) until a deadline, limits on evictions in flight, waiting for pods to
be gone by watching, and a failure that names what blocked. Events and progress leave it
through hooks (engine.events).
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field

from ansible_collections.kubeops.rotation.plugins.module_utils.api.errors import (
    ApiException,
    ConnectionFailed,
    api_message,
    is_pdb_refusal,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.api.watch import (
    WatchExpired,
    list_resource_version,
    watch,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.api.workloads import (
    deployment_of,
    evict_pod,
    is_removed,
    read_workload,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.progress import tell_progress
from ansible_collections.kubeops.rotation.plugins.module_utils.model.owners import REPLICATED_KINDS, owner_of
from ansible_collections.kubeops.rotation.plugins.module_utils.model.pdbs import allowed_now, describe_pdb, pdbs_for
from ansible_collections.kubeops.rotation.plugins.module_utils.model.pods import is_ready, node_of, pod_key
from ansible_collections.kubeops.rotation.plugins.module_utils.model.selectors import labels_text, selector_text
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.limits import unavailable_limit
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.progress import eviction_line, not_ready_text, pdb_shortfall

MAX_BACKOFF = 5.0
# A pod its PDB refused is retried when the PDBs' watch allows it; this only bounds a watch that missed it.
PDB_RECHECK = 30.0
# ... and while it waits so, pods in flight are looked for this often.
IN_FLIGHT_RECHECK = 2.0


@dataclass(frozen=True)
class Limits:
    max_in_flight: int | None = None
    max_per_node: int | None = None
    max_per_namespace: int | None = None
    max_unavailable_per_owner: str | None = None
    max_evictions: int | None = None


@dataclass(frozen=True)
class EvictionSettings:
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
    # The last request may have been applied: the API server's answer was lost.
    uncertain: bool = False
    refused_by_pdb: bool = False
    # The PDB that holds it, as last read; told once through the hooks (an Event on the pod).
    held_by: str = ""

    @property
    def pod(self):
        return self.plan.pod

    @property
    def node(self):
        return node_of(self.pod)

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


class EvictionRun:
    """Carries out a plan against the cluster; ``run`` returns the per-pod states and whether it timed out."""

    def __init__(self, client, settings, hooks=(), clock=time.monotonic, sleep=time.sleep, rng=random.random):
        self.client = client
        self.settings = settings
        self.hooks = list(hooks)
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
        states = [PodState(p) for p in plans if p.removes]
        in_flight = {}
        for p in plans:
            if p.verdict.action in ("skip", "refuse"):
                states.append(PodState(p, outcome="skipped" if p.verdict.action == "skip" else "refused"))
            elif p.verdict.action == "wait":
                # Already being deleted (a rollout replaced it): waited for like an eviction in flight.
                state = PodState(p, outcome="in_flight" if self.settings.wait else "terminating", verb="gone")
                states.append(state)
                if self.settings.wait:
                    in_flight[p.pod["metadata"]["uid"]] = state
        queue = [state for state in states if state.outcome == "pending"]
        for hook in self.hooks:
            hook.run_started(nodes, len(queue))
        self._hold_what_pdbs_refuse(queue)
        resource_version = self._resource_version(queue + list(in_flight.values()))
        if in_flight:
            list_method, kwargs = self._scope(list(in_flight.values()))
            self._finish_gone(in_flight, list_method, kwargs)
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
            self._tell_progress(states, in_flight, queue)
            retry_at = min([state.next_try for state in queue if state.next_try > now] or [now + MAX_BACKOFF])
            wait = max(0.2, min(retry_at, deadline) - self.clock())
            resource_version = self._wait(in_flight, queue, resource_version, wait)
        if self.timed_out:
            self._explain_blocked(queue + list(in_flight.values()))
        elif self.settings.wait_for_replacements:
            self._wait_for_replacements(states, deadline)
        if not self.timed_out:
            for hook in self.hooks:
                hook.run_finished(nodes, self.evictions)
        self.elapsed = round(self.clock() - started, 2)
        return states

    def _hold_what_pdbs_refuse(self, queue):
        """Before the first pass, read the PDBs once: the pods they do not allow now wait on their watch, as
        after a refusal, without asking the API server to refuse each of them first. A pod under several PDBs
        is asked, so that the Eviction API's refusal of it is reported at once."""
        evicting = [state for state in queue
                    if state.plan.verdict.action == "evict" and not self.settings.disable_eviction]
        if not evicting:
            return
        pdbs = self._pdbs_of({state.namespace for state in evicting})
        if not pdbs:
            return
        allowed = {pod["metadata"]["uid"] for pod in allowed_now([state.pod for state in evicting], pdbs)}
        now = self.clock()
        for state in evicting:
            selecting = pdbs_for(state.pod, pdbs)
            if state.pod["metadata"]["uid"] not in allowed and len(selecting) == 1:
                state.refused_by_pdb = True
                state.next_try = now + PDB_RECHECK
                state.detail = "waiting: its PDB allows no disruption now"
                self._held(state, describe_pdb(selecting[0]))

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
                        workload.kind, workload.name, desired - ready, desired, allowed)
                    return False
        return True

    # -- one pod ----------------------------------------------------------

    def _remove(self, state):
        """Evict (or delete) one pod; returns "retry" when it must be tried again later."""
        metadata = state.pod["metadata"]
        options = {"preconditions": {"uid": metadata["uid"]}}
        if self.settings.grace_period is not None:
            options["gracePeriodSeconds"] = self.settings.grace_period
        deleting = state.plan.verdict.action == "delete" or self.settings.disable_eviction
        if state.uncertain and is_removed(self.client, state.pod):
            return self._removed(state, deleting)
        state.attempts += 1
        try:
            if deleting:
                self.client.core.delete_namespaced_pod(metadata["name"], metadata["namespace"], body=options)
            else:
                evict_pod(self.client, state.pod, options)
        except ConnectionFailed as exc:
            # The API server went away mid-request: try again once it is back, first checking whether
            # the eviction was applied, so that no pod is evicted twice.
            state.uncertain = True
            state.next_try = self.clock() + backoff(state.attempts, self.rng)
            state.detail = "retrying: %s" % exc
            return "retry"
        except ApiException as exc:
            message = api_message(exc)
            if exc.status == 429:
                state.refused_by_pdb = is_pdb_refusal(exc)
                if state.refused_by_pdb:
                    self._held(state, "its PodDisruptionBudget (%s)" % message)
                state.next_try = self.clock() + (PDB_RECHECK if state.refused_by_pdb
                                                 else backoff(state.attempts, self.rng))
                state.detail = "retrying: %s" % message
                return "retry"
            if exc.status in (404, 409):  # gone already, or replaced by a pod of the same name
                state.outcome, state.detail = "gone", "the pod was already gone"
                return "done"
            state.outcome = "failed"
            if exc.status == 500 and "DisruptionBudget" in message:
                state.pdbs = [describe_pdb(pdb) for pdb in pdbs_for(state.pod, self._pdbs_of({state.namespace}))]
                state.detail = "selected by several PDBs, which the Eviction API refuses: %s" % "; ".join(state.pdbs)
            else:
                state.detail = message
            return "done"
        return self._removed(state, deleting)

    def _removed(self, state, deleting):
        """Count the eviction (or deletion) the API server accepted and tell the hooks."""
        state.uncertain = False
        state.refused_by_pdb = False
        self.evictions += 1
        if self.settings.limits.max_unavailable_per_owner is not None:
            self.replicas_this_pass.pop(self._workload_of(state.pod), None)
        verb = "deleted" if deleting else "evicted"
        state.outcome = "in_flight" if self.settings.wait else verb
        state.detail = "" if self.settings.wait else state.detail
        state.verb = verb
        for hook in self.hooks:
            hook.pod_started(state)
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
        return list_resource_version(list_method, **kwargs)

    def _wait(self, in_flight, queue, resource_version, timeout):
        """Wait, by watching pods, until something may let the loop go on; returns the resourceVersion to resume from.

        It returns when an in-flight pod is gone and a pod waits for the room
        this made, or when a pod shows Ready while a pod waits for its owner to
        have replicas to spare (it may be a replacement: the count is read
        again), or at
        ``timeout``. While pods refused by their PDBs wait and none waits for
        room, it watches the PDBs instead (_wait_for_pdbs); the pods in flight
        are then seen gone later, from the same resourceVersion. Only when
        every queued pod is backing off after another 429 and none is in
        flight is there nothing to watch, and it sleeps.
        """
        now = self.clock()
        waiting_for_room = [state for state in queue if state.next_try <= now]
        refused = [state for state in queue if state.refused_by_pdb and state.next_try > now]
        if refused and not waiting_for_room:
            if in_flight and self.settings.wait:
                # Watching the PDBs, not the pods: a pod in flight is seen gone by a list, every few seconds.
                list_method, kwargs = self._scope(list(in_flight.values()))
                self._finish_gone(in_flight, list_method, kwargs)
                if in_flight:
                    timeout = min(timeout, IN_FLIGHT_RECHECK)
            self._wait_for_pdbs(refused, timeout)
            return resource_version
        watching = list(in_flight.values()) + waiting_for_room if self.settings.wait else waiting_for_room
        if not watching or resource_version is None:
            self.sleep(timeout)
            return resource_version
        list_method, kwargs = self._scope(watching, by_node=not waiting_for_room)
        try:
            for event_type, pod in watch(list_method, resource_version, timeout, **kwargs):
                resource_version = pod["metadata"].get("resourceVersion") or resource_version
                uid = pod["metadata"].get("uid")
                if event_type == "DELETED" and uid in in_flight:
                    self._finish(in_flight.pop(uid))
                    if not in_flight or waiting_for_room:
                        return resource_version
                elif waiting_for_room and event_type in ("ADDED", "MODIFIED") and is_ready(pod):
                    return resource_version
        except WatchExpired:
            self._finish_gone(in_flight, list_method, kwargs)
            return list_resource_version(list_method, **kwargs)
        return resource_version

    def _wait_for_pdbs(self, refused, timeout):
        """Watch the PDBs of the refused pods until they allow some (which are then retried at once) or ``timeout``.

        A list first, so that a disruption allowed since the refusal is not
        waited for; then a watch from it. Each allowed disruption goes to one
        pod, so that pods do not race for it and are refused again.
        """
        list_method, kwargs = self._pdb_scope({state.namespace for state in refused})
        deadline = self.clock() + timeout
        listed, resource_version = self.client.list_with_version(list_method, **kwargs)
        pdbs = {(pdb["metadata"]["namespace"], pdb["metadata"]["name"]): pdb for pdb in listed}
        for state in refused:
            selecting = pdbs_for(state.pod, pdbs.values())
            if selecting:
                state.held_by = "; ".join(describe_pdb(pdb) for pdb in selecting)
        while not self._release_allowed(refused, pdbs.values()):
            remaining = deadline - self.clock()
            if remaining <= 0:
                return
            try:
                for event_type, pdb in watch(list_method, resource_version, remaining, **kwargs):
                    resource_version = pdb["metadata"].get("resourceVersion") or resource_version
                    key = (pdb["metadata"]["namespace"], pdb["metadata"]["name"])
                    if event_type == "DELETED":
                        pdbs.pop(key, None)
                    elif event_type in ("ADDED", "MODIFIED"):
                        pdbs[key] = pdb
                    if event_type != "BOOKMARK" and self._release_allowed(refused, pdbs.values()):
                        return
            except WatchExpired:
                return  # the loop lists again on its next wait

    def _pdb_scope(self, namespaces):
        """Where to list and watch the PDBs of pods in ``namespaces``: one namespace, or everything."""
        if len(namespaces) == 1:
            return self.client.policy.list_namespaced_pod_disruption_budget, {"namespace": next(iter(namespaces))}
        return self.client.policy.list_pod_disruption_budget_for_all_namespaces, {}

    def _pdbs_of(self, namespaces):
        list_method, kwargs = self._pdb_scope(namespaces)
        return self.client.list_all(list_method, **kwargs)

    def _held(self, state, why):
        """Tell the hooks, once per pod, that its PDB holds it (``why``); the PDBs' watch says it better later."""
        if not state.held_by:
            state.held_by = why
            for hook in self.hooks:
                hook.pod_held(state)

    def _tell_progress(self, states, in_flight, queue):
        removed = sum(1 for state in states if state.outcome in ("evicted", "deleted", "gone"))
        if not self.settings.wait:
            removed += len(in_flight)
        now = self.clock()
        waiting = []
        for state in queue:
            if state.refused_by_pdb:
                waiting.append("held by %s" % (state.held_by or "its PodDisruptionBudget"))
            elif state.detail.startswith("waiting: "):
                waiting.append("for %s" % state.detail[len("waiting: "):])
            elif state.next_try > now:
                waiting.append("backing off after %s" % (state.detail or "a refusal"))
            else:
                waiting.append("for room within the eviction limits")
        terminating = len(in_flight) if self.settings.wait else 0
        tell_progress(eviction_line(removed, sum(1 for state in states if state.plan.removes), terminating,
                                    waiting))

    def _release_allowed(self, refused, pdbs):
        """Make the refused pods the PDBs now allow due at once; whether there were any."""
        allowed = {pod["metadata"]["uid"] for pod in allowed_now([state.pod for state in refused], pdbs)}
        now = self.clock()
        for state in refused:
            if state.pod["metadata"]["uid"] in allowed:
                state.next_try = now
        return bool(allowed)

    def _finish_gone(self, in_flight, list_method, kwargs):
        """Finish the pods in flight that a list no longer shows (deleted before a watch could see it)."""
        alive = {pod["metadata"]["uid"] for pod in self.client.list_all(list_method, **kwargs)}
        for uid in [uid for uid in in_flight if uid not in alive]:
            self._finish(in_flight.pop(uid))

    def _finish(self, state):
        state.outcome = state.verb
        state.detail = ""
        for hook in self.hooks:
            hook.pod_finished(state)

    def _wait_for_replacements(self, states, deadline):
        workloads = {self._workload_of(s.pod) for s in states if s.outcome == "evicted"} - {None}
        for workload in sorted(workloads):
            ready, desired = self._watch_until_ready(workload, deadline)
            if ready < desired:
                self.timed_out = True
                self.waiting_for = "%s/%s in %s has %d of %d replicas Ready" % (
                    workload.kind, workload.name, workload.namespace, ready, desired)
                return

    def _watch_until_ready(self, workload, deadline):
        """Watch the workload's pods until as many are Ready as it wants, or ``deadline``; returns (ready, desired).

        One list, then one watch from its resourceVersion keeps the pods
        current: no list per change.
        """
        obj = read_workload(self.client, workload) or {}
        desired = (obj.get("spec") or {}).get("replicas", 1)
        scope = {"namespace": workload.namespace, "label_selector": self._workload_selector(workload, obj)}
        pods, resource_version = {}, None
        while True:
            if resource_version is None:
                listed, resource_version = self.client.list_with_version(self.client.core.list_namespaced_pod,
                                                                         **scope)
                pods = {pod["metadata"]["uid"]: pod for pod in listed}
            ready = sum(1 for pod in pods.values() if is_ready(pod))
            remaining = deadline - self.clock()
            if ready >= desired or remaining <= 0:
                return ready, desired
            self._tell_replacements(workload, ready, desired, pods.values())
            try:
                for event_type, pod in watch(self.client.core.list_namespaced_pod, resource_version,
                                             remaining, **scope):
                    resource_version = pod["metadata"].get("resourceVersion") or resource_version
                    if event_type == "DELETED":
                        pods.pop(pod["metadata"]["uid"], None)
                    elif event_type in ("ADDED", "MODIFIED"):
                        pods[pod["metadata"]["uid"]] = pod
                    ready = sum(1 for pod in pods.values() if is_ready(pod))
                    if ready >= desired:
                        break
                    self._tell_replacements(workload, ready, desired, pods.values())
            except WatchExpired:
                resource_version = None

    @staticmethod
    def _tell_replacements(workload, ready, desired, pods):
        not_ready = [pod for pod in pods if not is_ready(pod) and not pod["metadata"].get("deletionTimestamp")]
        tell_progress("waiting for replacements: %s %s/%s has %d of %d Ready%s" % (
            workload.kind, workload.namespace, workload.name, ready, desired,
            "; %s" % not_ready_text(not_ready) if not_ready else ""))

    # -- owners -----------------------------------------------------------

    def _workload_of(self, pod):
        """The Workload that keeps the pod's replica count (a ReplicaSet's Deployment), or None."""
        owner = owner_of(pod, {})
        if not owner or owner.kind not in REPLICATED_KINDS:
            return None
        if owner not in self.workloads:
            deployment = deployment_of(self.client, owner.namespace, owner.name) if owner.kind == "ReplicaSet" \
                else None
            self.workloads[owner] = deployment or owner
        return self.workloads[owner]

    def _workload_selector(self, workload, obj=None):
        obj = obj or read_workload(self.client, workload) or {}
        selector = (obj.get("spec") or {}).get("selector") or {}
        if workload.kind == "ReplicationController":
            return labels_text(selector)
        return selector_text(selector)

    def _replicas(self, workload):
        """(desired, ready) of a workload, ready counted from its live pods: a pod being evicted
        counts as unavailable at once, without waiting for the controller to update its status."""
        obj = read_workload(self.client, workload)
        if not obj:
            return 0, 0
        desired = (obj.get("spec") or {}).get("replicas", 1)
        pods = self.client.list_all(self.client.core.list_namespaced_pod, namespace=workload.namespace,
                                    label_selector=self._workload_selector(workload, obj))
        return desired, sum(1 for pod in pods if is_ready(pod))

    # -- reports ----------------------------------------------------------

    def _explain_blocked(self, states):
        by_namespace = {}
        pods_of = {}
        for state in states:
            if state.outcome == "in_flight":
                state.outcome, state.detail = "terminating", "evicted but still terminating at the deadline"
                continue
            if state.namespace not in by_namespace:
                by_namespace[state.namespace] = self._pdbs_of({state.namespace})
            blocking = pdbs_for(state.pod, by_namespace[state.namespace])
            state.pdbs = [describe_pdb(pdb) for pdb in blocking]
            if (state.attempts or state.refused_by_pdb) and blocking:
                if state.namespace not in pods_of:
                    pods_of[state.namespace] = self.client.list_all(self.client.core.list_namespaced_pod,
                                                                    namespace=state.namespace)
                shortfalls = [pdb_shortfall(pdb, pods_of[state.namespace]) for pdb in blocking]
                state.outcome = "blocked"
                state.detail = "blocked by " + "; ".join(
                    "%s%s" % (text, ", which waits for: %s" % shortfall if shortfall else "")
                    for text, shortfall in zip(state.pdbs, shortfalls))
            elif state.outcome == "pending" and not state.detail:
                state.detail = "not attempted before the deadline"
            else:
                state.outcome = "blocked" if state.attempts else "pending"


def timeout_message(run, states, total_seconds):
    """The one-paragraph failure at the deadline: what is left, what blocked it, how to continue."""
    left = [s for s in states if s.outcome in ("blocked", "pending", "terminating")]
    done = sum(1 for s in states if s.outcome in ("evicted", "deleted"))
    wanted = sum(1 for s in states if s.plan.removes)
    parts = ["%s on %s: %s" % (pod_key(s.pod), s.node, s.detail) for s in left]
    waiting = getattr(run, "waiting_for", None)
    if waiting:
        parts.append("replacements not Ready: %s" % waiting)
    return ("Timed out after %s s evicting: %s. %d of %d pods evicted; rerunning continues from here."
            % (_seconds(total_seconds), "; ".join(parts), done, wanted))


def _seconds(value):
    return int(value) if float(value).is_integer() else value


def summarize_entries(entries):
    counts = {}
    for entry in entries:
        counts[entry["outcome"]] = counts.get(entry["outcome"], 0) + 1
    return counts
