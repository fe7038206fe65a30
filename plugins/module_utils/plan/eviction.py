# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""What the eviction engine decides, as plain data: where each pod stands, the limits that hold it back, what
the PDBs allow before the first pass, what a refusal or a lost answer makes of a pod, what to wait for, and what
is said at the deadline. engine.eviction asks the API server and waits; every decision it takes is here, so that
it is tested with a clock of the test's own."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, fields

from ansible_collections.kubeops.rotation.plugins.module_utils.model.errors import InvalidInput
from ansible_collections.kubeops.rotation.plugins.module_utils.model.inputs import first_error, number_error
from ansible_collections.kubeops.rotation.plugins.module_utils.model.pdbs import allowed_now, describe_pdb, pdbs_for
from ansible_collections.kubeops.rotation.plugins.module_utils.model.pods import is_terminating, node_of, pod_key
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.limits import (
    count_or_percent_error,
    unavailable_limit,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.progress import eviction_line, pdb_shortfall

MAX_BACKOFF = 5.0
# A pod its PDB refused is retried when the PDBs' watch allows it; this only bounds a watch that missed it.
PDB_RECHECK = 30.0
# ... and while it waits so, pods in flight are looked for this often.
IN_FLIGHT_RECHECK = 2.0


class Outcome(str, enum.Enum):
    """Where one pod stands; the value is what results and summaries show."""

    PENDING = "pending"
    IN_FLIGHT = "in_flight"
    EVICTED = "evicted"
    DELETED = "deleted"
    GONE = "gone"
    TERMINATING = "terminating"
    SKIPPED = "skipped"
    REFUSED = "refused"
    FAILED = "failed"
    BLOCKED = "blocked"

    def __str__(self):
        return self.value


REMOVED = (Outcome.EVICTED, Outcome.DELETED)
LEFT = (Outcome.BLOCKED, Outcome.PENDING, Outcome.TERMINATING)


class Attempt(enum.Enum):
    """What one request made of a pod: to be asked again later, or done with (in flight, gone or failed)."""

    RETRY = "retry"
    DONE = "done"


class Wait(enum.Enum):
    """What the loop waits for between passes (see what_to_wait_for)."""

    PDBS = "pdbs"
    PODS = "pods"
    SLEEP = "sleep"


@dataclass(frozen=True)
class Limits:
    max_in_flight: int | None = None
    max_per_node: int | None = None
    max_per_namespace: int | None = None
    max_unavailable_per_owner: str | None = None
    max_evictions: int | None = None

    @classmethod
    def from_params(cls, params, prefix=""):
        """The limits from a module's parameters (an option it does not take is no limit), or InvalidInput naming
        the first one out of range, with ``prefix`` before its name."""
        limits = cls(**{limit.name: params.get(limit.name) for limit in fields(cls)})
        error = first_error(
            *(number_error(prefix + name, getattr(limits, name), 1)
              for name in ("max_in_flight", "max_per_node", "max_per_namespace")),
            number_error(prefix + "max_evictions", limits.max_evictions, 0),
            None if limits.max_unavailable_per_owner is None else count_or_percent_error(
                prefix + "max_unavailable_per_owner", limits.max_unavailable_per_owner))
        if error:
            raise InvalidInput(error)
        return limits


@dataclass(frozen=True)
class EvictionSettings:
    timeout: float = 300
    wait: bool = True
    wait_for_replacements: bool = False
    grace_period: int | None = None
    disable_eviction: bool = False
    limits: Limits = field(default_factory=Limits)
    reason: str = ""

    @classmethod
    def from_params(cls, params, prefix=""):
        """The settings from a module's parameters (an option it does not take, or leaves unset, keeps its default
        here; the limits are Limits.from_params), or InvalidInput before anything is read."""
        given = {key: value for key, value in params.items() if value is not None}
        default = cls()
        error = first_error(number_error(prefix + "timeout", given.get("timeout"), 1),
                            number_error(prefix + "grace_period", given.get("grace_period"), 0))
        if error:
            raise InvalidInput(error)
        return cls(timeout=given.get("timeout", default.timeout), wait=given.get("wait", default.wait),
                   wait_for_replacements=given.get("wait_for_replacements", default.wait_for_replacements),
                   grace_period=given.get("grace_period"),
                   disable_eviction=given.get("disable_eviction", default.disable_eviction),
                   limits=Limits.from_params(params, prefix), reason=given.get("reason") or "")


@dataclass
class PodState:
    """Progress of one pod through the run."""

    plan: object
    attempts: int = 0
    next_try: float = 0.0
    outcome: Outcome = Outcome.PENDING
    detail: str = ""
    pdbs: list = field(default_factory=list)
    # What the pod's removal is called once it is gone.
    verb: Outcome = Outcome.EVICTED
    # The last request may have been applied: the API server's answer was lost.
    uncertain: bool = False
    refused_by_pdb: bool = False
    # The PDB that holds it, as last read; told once through the hooks (an Event on the pod).
    held_by: str = ""

    @property
    def pod(self):
        return self.plan.pod

    @property
    def uid(self):
        return self.pod["metadata"]["uid"]

    @property
    def node(self):
        return node_of(self.pod)

    @property
    def namespace(self):
        return self.pod["metadata"]["namespace"]

    @property
    def evicting(self):
        """Whether it is to be evicted (not deleted: a terminal pod, or eviction disabled)."""
        return self.plan.verdict.action == "evict"

    def result(self):
        entry = self.plan.summary()
        entry.update(outcome=self.outcome.value, detail=self.detail or entry["detail"], attempts=self.attempts,
                     pdbs=list(self.pdbs))
        return entry


def backoff(attempt, rng):
    """Seconds before retrying a 429: 1, 2, 4... capped, times a jitter of 0.5 to 1.5."""
    return min(MAX_BACKOFF, 2.0 ** (attempt - 1)) * (0.5 + rng())


def initial_states(plans, wait):
    """(every pod's state, the queue of pods to remove, {uid: state} of pods already being deleted and waited for)."""
    states = [PodState(p) for p in plans if p.removes]
    in_flight = {}
    for p in plans:
        action = p.verdict.action
        if action in ("skip", "refuse"):
            states.append(PodState(p, outcome=Outcome.SKIPPED if action == "skip" else Outcome.REFUSED))
        elif action == "wait":
            # Already being deleted (a rollout replaced it): waited for like an eviction in flight.
            state = PodState(p, outcome=Outcome.IN_FLIGHT if wait else Outcome.TERMINATING, verb=Outcome.GONE)
            states.append(state)
            if wait:
                in_flight[state.uid] = state
    return states, [state for state in states if state.outcome is Outcome.PENDING], in_flight


def budget_spent(limits, evictions):
    return limits.max_evictions is not None and evictions >= limits.max_evictions


def room_in_flight(state, flying, limits):
    """Whether the limits on evictions in flight (all, per node, per namespace) leave room for ``state``."""
    if limits.max_in_flight is not None and len(flying) >= limits.max_in_flight:
        return False
    if limits.max_per_node is not None and sum(s.node == state.node for s in flying) >= limits.max_per_node:
        return False
    return limits.max_per_namespace is None or sum(
        s.namespace == state.namespace for s in flying) < limits.max_per_namespace


def set_aside_past_budget(queue, limits, evictions):
    """Once max_evictions pods were removed, the queued ones are left pending (out of the queue)."""
    if budget_spent(limits, evictions):
        for state in queue:
            state.outcome, state.detail = Outcome.PENDING, "max_evictions reached; rerun to continue"
        queue.clear()


def choose(queue, flying, now, limits, evictions, owner_of):
    """The queued pods to ask for at once in this pass: those due whose limits leave room, each counted
    against the limits of those after it as if in flight already, and as an unavailable replica of its owner;
    so is a pod whose last answer was lost, until the read that comes first in its next try.
    The pods their PDBs refused are not due until the PDBs' watch gives each an allowed disruption
    (hold_what_pdbs_refuse, release_allowed), so the chosen pods do not race for one. ``owner_of(state)`` is
    (workload, desired, Ready) of the workload whose replicas max_unavailable_per_owner counts, read once a
    pass, or None."""
    chosen = []
    unavailable = {}
    unsure = [state for state in queue if state.uncertain]
    for state in queue:
        if budget_spent(limits, evictions + len(chosen)):
            break
        # A pod whose last answer was lost may be evicted already: until its read tells, it counts as in flight.
        maybe = [other for other in unsure if other is not state and other not in chosen]
        if budget_spent(limits, evictions + len(chosen) + len(maybe)) or state.next_try > now or \
                not room_in_flight(state, flying + chosen + maybe, limits):
            continue
        owner = owner_of(state) if limits.max_unavailable_per_owner is not None and state.evicting else None
        if owner is not None:
            workload, desired, ready = owner
            why = owner_wait(limits.max_unavailable_per_owner, workload, desired,
                             ready - unavailable.get(workload, 0))
            if why:
                state.detail = why
                continue
            unavailable[workload] = unavailable.get(workload, 0) + 1
        chosen.append(state)
    return chosen


def owner_wait(limit, workload, desired, ready):
    """Why a pod of ``workload`` waits under max_unavailable_per_owner ``limit``, or "" when it may go."""
    allowed = unavailable_limit(limit, desired)
    if desired - ready < allowed:
        return ""
    return "waiting: %s/%s has %d of %d replicas unavailable (max %d)" % (
        workload.kind, workload.name, desired - ready, desired, allowed)


def to_evict(queue, settings):
    """The queued pods the Eviction API is asked for (PDBs apply to them)."""
    return [state for state in queue if state.evicting and not settings.disable_eviction]


def hold(state, why):
    """Record that a PDB holds ``state`` (``why``); whether it is the first time, to be told through the hooks."""
    if state.held_by:
        return False
    state.held_by = why
    return True


def hold_what_pdbs_refuse(evicting, pdbs, now):
    """Before the first pass: the pods ``pdbs`` do not allow now wait on the PDBs' watch, as after a refusal,
    without asking the API server to refuse each first. A pod under several PDBs is asked, so that the Eviction
    API's refusal of it is reported at once. Returns the states held for the first time."""
    if not pdbs:
        return []
    allowed = {pod["metadata"]["uid"] for pod in allowed_now([state.pod for state in evicting], pdbs)}
    held = []
    for state in evicting:
        selecting = pdbs_for(state.pod, pdbs)
        if state.uid not in allowed and len(selecting) == 1:
            state.refused_by_pdb = True
            state.next_try = now + PDB_RECHECK
            state.detail = "waiting: its PDB allows no disruption now"
            if hold(state, describe_pdb(selecting[0])):
                held.append(state)
    return held


def release_allowed(refused, pdbs, now):
    """Make the refused pods ``pdbs`` now allow due at once; whether there were any."""
    allowed = {pod["metadata"]["uid"] for pod in allowed_now([state.pod for state in refused], pdbs)}
    for state in refused:
        if state.uid in allowed:
            state.next_try = now
    return bool(allowed)


def name_pdbs(refused, pdbs):
    """Name in each refused pod's ``held_by`` the PDBs that select it, as just read."""
    for state in refused:
        selecting = pdbs_for(state.pod, pdbs)
        if selecting:
            state.held_by = "; ".join(describe_pdb(pdb) for pdb in selecting)


def after_lost_answer(state, message, now, rng):
    """The API server went away mid-request: the pod is tried again once it is back, after a read of whether
    the request was applied, so that no pod is evicted twice."""
    state.uncertain = True
    state.next_try = now + backoff(state.attempts, rng)
    state.detail = "retrying: %s" % message
    return Attempt.RETRY


def found_removed(current):
    """What a read of a pod whose last answer was lost found (``current``: the pod now, None when gone): GONE, when
    it is no longer there (its deletion may have been seen already by a watch, which will not tell it again),
    IN_FLIGHT when it is being deleted, None when the request was not applied and is to be asked again."""
    if current is None:
        return Outcome.GONE
    return Outcome.IN_FLIGHT if is_terminating(current) else None


def after_error(state, status, message, pdb_refusal, now, rng, pdbs_of):
    """What the API server's error answer makes of the pod: (Attempt, why a PDB holds it or "").

    A 429 is retried: refused by its PDB, when the PDBs' watch allows it; otherwise after a backoff. A 404 or
    409 means it is gone already, or replaced by a pod of the same name. A 500 naming a DisruptionBudget is
    the Eviction API's refusal of a pod under several PDBs: ``pdbs_of(namespace)`` names them.
    """
    if status == 429:
        state.refused_by_pdb = pdb_refusal
        state.next_try = now + (PDB_RECHECK if pdb_refusal else backoff(state.attempts, rng))
        state.detail = "retrying: %s" % message
        return Attempt.RETRY, "its PodDisruptionBudget (%s)" % message if pdb_refusal else ""
    if status in (404, 409):
        state.outcome, state.detail = Outcome.GONE, "the pod was already gone"
        return Attempt.DONE, ""
    state.outcome = Outcome.FAILED
    if status == 500 and "DisruptionBudget" in message:
        state.pdbs = [describe_pdb(pdb) for pdb in pdbs_for(state.pod, pdbs_of(state.namespace))]
        state.detail = "selected by several PDBs, which the Eviction API refuses: %s" % "; ".join(state.pdbs)
    else:
        state.detail = message
    return Attempt.DONE, ""


def removed(state, deleting, wait):
    """The API server accepted the eviction (or deletion): in flight, or done when not waited for."""
    state.uncertain = False
    state.refused_by_pdb = False
    state.verb = Outcome.DELETED if deleting else Outcome.EVICTED
    state.outcome = Outcome.IN_FLIGHT if wait else state.verb
    if wait:
        state.detail = ""


def finished(state):
    """The pod is gone."""
    state.outcome = state.verb
    state.detail = ""


def what_to_wait_for(queue, in_flight, now, wait):
    """(Wait, the states concerned, whether a pod waits for room) between two passes.

    While pods refused by their PDBs wait and none waits for room, the PDBs are watched (the pods in flight are
    then looked for by a list every IN_FLIGHT_RECHECK). Otherwise the pods in flight and those waiting for
    room are watched: one in flight gone, or a pod Ready (maybe a replacement that gives its owner replicas to
    spare), lets the loop go on. With nothing to watch (every queued pod backing off after another 429), it
    sleeps.
    """
    waiting_for_room = [state for state in queue if state.next_try <= now]
    refused = [state for state in queue if state.refused_by_pdb and state.next_try > now]
    if refused and not waiting_for_room:
        return Wait.PDBS, refused, False
    watching = (list(in_flight.values()) if wait else []) + waiting_for_room
    if not watching:
        return Wait.SLEEP, [], False
    return Wait.PODS, watching, bool(waiting_for_room)


def next_pass_in(queue, now, deadline, clock_now):
    """Seconds to wait before the next pass: until the first queued pod's retry is due, at most MAX_BACKOFF,
    never past the deadline, and at least 0.2 s."""
    retry_at = min([state.next_try for state in queue if state.next_try > now] or [now + MAX_BACKOFF])
    return max(0.2, min(retry_at, deadline) - clock_now)


def progress_line(states, in_flight, queue, wait, now):
    """The line told while the run waits: how many pods are gone and what each one left waits for."""
    removed_count = sum(1 for state in states if state.outcome in (Outcome.EVICTED, Outcome.DELETED, Outcome.GONE))
    if not wait:
        removed_count += len(in_flight)
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
    return eviction_line(removed_count, sum(1 for state in states if state.plan.removes),
                         len(in_flight) if wait else 0, waiting)


def explain_blocked(states, pdbs_of, pods_of):
    """At the deadline, say of each pod left why: still terminating, blocked by which PDBs (only when its PDB
    refused it) and what they wait for, its last refusal, or not attempted. A pod in flight, or whose last answer
    was lost, is looked for first: gone, it was evicted; terminating, it was evicted and still terminates.
    ``pdbs_of(namespace)`` and ``pods_of(namespace)`` read the cluster when asked."""
    for state in states:
        if state.uncertain or state.outcome is Outcome.IN_FLIGHT:
            current = [pod for pod in pods_of(state.namespace) if pod["metadata"].get("uid") == state.uid]
            found = found_removed(current[0] if current else None)
            if found is not None:
                lost = state.outcome is not Outcome.IN_FLIGHT
                state.verb = state.verb if not lost else Outcome.EVICTED if state.evicting else Outcome.DELETED
                state.outcome = Outcome.IN_FLIGHT if found is Outcome.IN_FLIGHT else state.verb
                state.detail = "its answer was lost; the cluster shows it %s" % (
                    "terminating" if found is Outcome.IN_FLIGHT else "gone") if lost else ""
        if state.outcome is Outcome.IN_FLIGHT:
            state.outcome = Outcome.TERMINATING
            state.detail = "evicted but still terminating at the deadline"
            continue
        if state.outcome in REMOVED or state.outcome is Outcome.GONE:
            continue
        blocking = pdbs_for(state.pod, pdbs_of(state.namespace))
        state.pdbs = [describe_pdb(pdb) for pdb in blocking]
        if state.refused_by_pdb and blocking:
            shortfalls = [pdb_shortfall(pdb, pods_of(state.namespace)) for pdb in blocking]
            state.outcome = Outcome.BLOCKED
            state.detail = "blocked by " + "; ".join(
                "%s%s" % (text, ", which waits for: %s" % shortfall if shortfall else "")
                for text, shortfall in zip(state.pdbs, shortfalls))
        elif state.outcome is Outcome.PENDING and not state.detail:
            state.detail = "not attempted before the deadline"
        else:
            state.outcome = Outcome.BLOCKED if state.attempts else Outcome.PENDING


def timeout_message(states, total_seconds, waiting_for=""):
    """The one-paragraph failure at the deadline: what is left, what blocked it, how to continue. Pods evicted and
    still terminating count as evicted."""
    left = [s for s in states if s.outcome in LEFT]
    done = sum(1 for s in states if s.outcome in REMOVED)
    terminating = sum(1 for s in states if s.outcome is Outcome.TERMINATING)
    wanted = sum(1 for s in states if s.plan.removes)
    parts = ["%s on %s: %s" % (pod_key(s.pod), s.node, s.detail) for s in left]
    if waiting_for:
        parts.append("replacements not Ready: %s" % waiting_for)
    return ("Timed out after %s s evicting: %s. %d of %d pods evicted%s; rerunning continues from here."
            % (_seconds(total_seconds), "; ".join(parts), done + terminating, wanted,
               " (%d of them still terminating)" % terminating if terminating else ""))


def _seconds(value):
    return int(value) if float(value).is_integer() else value


def summarize_entries(entries):
    counts = {}
    for entry in entries:
        counts[entry["outcome"]] = counts.get(entry["outcome"], 0) + 1
    return counts
