# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The guarded eviction engine: the one path by which the collection removes pods.

``EvictionRun`` carries out judged pods (plan.filters): Eviction API only (PDBs are enforced by the API
server; read once before the first pass, they hold back the pods they do not allow), within the limits, a pod
its PDB refused retried when the PDBs allow it (other 429s after a jittered backoff), until a deadline. What it
decides is plan.eviction; what it waits on between passes, engine.eviction_waits. Events and progress leave it
through hooks (engine.events).
"""

from __future__ import annotations

import random
import time
from concurrent.futures import ThreadPoolExecutor, as_completed

from ansible_collections.kubeops.rotation.plugins.module_utils.api.errors import (
    ApiException,
    ConnectionFailed,
    api_message,
    is_pdb_refusal,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.api.workloads import (
    delete_pod,
    evict_pod,
    pdbs_in,
    pod_now,
    pods_in,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.eviction_waits import (
    API_ANSWERS,
    EvictionWaits,
    Owners,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.progress import tell_progress
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.eviction import (
    Attempt,
    Outcome,
    after_error,
    after_lost_answer,
    choose,
    explain_blocked,
    finished,
    found_removed,
    hold,
    hold_what_pdbs_refuse,
    initial_states,
    next_pass_in,
    progress_line,
    removed,
    set_aside_past_budget,
    to_evict,
)

# Evictions asked at once, within the client's connection pool (api.client.CONNECTIONS).
EVICTIONS_AT_ONCE = 8


class EvictionRun:
    """Carries out a plan against the cluster: ``run`` returns the per-pod states; then ``timed_out`` says whether
    the deadline came first, ``waiting_for`` which replacements were not Ready, ``evictions`` how many pods the
    API server accepted to remove."""

    def __init__(self, client, settings, hooks=(), clock=time.monotonic, sleep=time.sleep, rng=random.random):
        self.client = client
        self.settings = settings
        self.hooks = list(hooks)
        self.clock = clock
        self.rng = rng
        self.owners = Owners(client)
        self.waits = EvictionWaits(client, settings, clock, sleep, self._finish)
        self.evictions = 0
        self.timed_out = False
        self.waiting_for = ""
        self.elapsed = 0.0

    def run(self, plans, nodes=()):
        try:
            return self._run(plans, nodes)
        finally:
            self._tell("run_ended")

    def _run(self, plans, nodes):
        started = self.clock()
        deadline = started + self.settings.timeout
        states, queue, in_flight = initial_states(plans, self.settings.wait)
        self._tell("run_started", nodes, len(queue))
        evicting = to_evict(queue, self.settings)
        if evicting:
            namespaces = {state.namespace for state in evicting}
            pdbs = pdbs_in(self.client, namespaces.pop() if len(namespaces) == 1 else None)
            for state in hold_what_pdbs_refuse(evicting, pdbs, self.clock()):
                self._tell("pod_held", state)
        ready_before = self.owners.ready_now(queue + list(in_flight.values())) \
            if self.settings.wait_for_replacements else {}
        self.waits.start(queue + list(in_flight.values()))
        if in_flight:
            self.waits.finish_gone(in_flight, self.waits.pods(list(in_flight.values())).relist())
        while queue or (in_flight and self.settings.wait):
            now = self.clock()
            if now >= deadline:
                self.timed_out = True
                break
            self._pass(queue, in_flight, now)
            if not queue and not (in_flight and self.settings.wait):
                break
            tell_progress(progress_line(states, in_flight, queue, self.settings.wait, now))
            self.waits.wait(queue, in_flight, next_pass_in(queue, now, deadline, self.clock()))
        if self.timed_out:
            memo = {}
            explain_blocked(queue + list(in_flight.values()), lambda ns: self._read(memo, "pdbs", ns),
                            lambda ns: self._read(memo, "pods", ns))
        elif self.settings.wait_for_replacements:
            self.waiting_for = self.waits.replacements(
                self.owners, [s for s in states if s.outcome is Outcome.EVICTED], ready_before, deadline)
            self.timed_out = bool(self.waiting_for)
        if not self.timed_out:
            self._tell("run_finished", nodes, self.evictions)
        self.elapsed = round(self.clock() - started, 2)
        return states

    def _pass(self, queue, in_flight, now):
        """Ask at once for the queued pods that are due and have room (plan.eviction.choose), then take the answers
        in this thread as they come; the replica counts are read once in a pass."""
        self.owners.new_pass()
        chosen = choose(queue, list(in_flight.values()), now, self.settings.limits, self.evictions, self._owner)
        with self.waits.timed(API_ANSWERS):
            for state, answer in self._ask(chosen):
                if self._answered(state, *answer) is not Attempt.RETRY:
                    queue.remove(state)
                if state.outcome is Outcome.IN_FLIGHT:
                    in_flight[state.uid] = state
        set_aside_past_budget(queue, self.settings.limits, self.evictions)

    def _owner(self, state):
        workload = self.owners.workload_of(state.pod)
        return None if workload is None else (workload, *self.owners.replicas(workload))

    def _ask(self, chosen):
        """(state, answer of _request) of each chosen pod, EVICTIONS_AT_ONCE requests at a time, as they come."""
        if len(chosen) < 2:
            for state in chosen:
                yield state, self._request(state)
            return
        with ThreadPoolExecutor(max_workers=min(EVICTIONS_AT_ONCE, len(chosen))) as pool:
            asked = {pool.submit(self._request, state): state for state in chosen}
            for done in as_completed(asked):
                yield asked[done], done.result()

    def _request(self, state):
        """Evict (or delete) one pod, in a worker thread: (what a read found of a pod whose last answer was lost,
        plan.eviction.found_removed, or None when it was asked; the API error or lost answer, or None). A pod whose
        last answer was lost is read first, so that it is not evicted twice."""
        if state.uncertain:
            found = found_removed(pod_now(self.client, state.pod))
            if found is not None:
                return found, None
        options = {"preconditions": {"uid": state.uid}}
        if self.settings.grace_period is not None:
            options["gracePeriodSeconds"] = self.settings.grace_period
        try:
            (delete_pod if self._deleting(state) else evict_pod)(self.client, state.pod, options)
        except (ApiException, ConnectionFailed) as exc:
            return None, exc
        return None, None

    def _deleting(self, state):
        return not state.evicting or self.settings.disable_eviction

    def _answered(self, state, found, error):
        """What the request made of the pod (plan.eviction.Attempt)."""
        if found is None:
            state.attempts += 1
        if error is None:
            attempt = self._removed(state, self._deleting(state))
            if found is Outcome.GONE and state.outcome is Outcome.IN_FLIGHT:
                # Gone already: its deletion may have been watched before it was in flight, and is not told again.
                self._finish(state)
            return attempt
        if isinstance(error, ConnectionFailed):
            return after_lost_answer(state, str(error), self.clock(), self.rng)
        attempt, held = after_error(state, error.status, api_message(error),
                                    error.status == 429 and is_pdb_refusal(error), self.clock(), self.rng,
                                    lambda namespace: pdbs_in(self.client, namespace))
        if held and hold(state, held):
            self._tell("pod_held", state)
        return attempt

    def _removed(self, state, deleting):
        """Count the eviction (or deletion) the API server accepted and tell the hooks."""
        removed(state, deleting, self.settings.wait)
        self.evictions += 1
        self._tell("pod_started", state)
        return Attempt.DONE

    def _finish(self, state):
        finished(state)
        self._tell("pod_finished", state)

    def _tell(self, hook_name, *args):
        for hook in self.hooks:
            getattr(hook, hook_name)(*args)

    def _read(self, memo, what, namespace):
        """The PDBs or the pods of a namespace, read once for the report at the deadline."""
        if (what, namespace) not in memo:
            memo[what, namespace] = (pdbs_in if what == "pdbs" else pods_in)(self.client, namespace)
        return memo[what, namespace]
