"""The eviction engine's decisions (plan.eviction), with a clock and a random source of the test's own."""

from __future__ import annotations

import json
import random

import pytest

from ansible_collections.kubeops.rotation.plugins.module_utils.model.owners import Workload
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.eviction import (
    IN_FLIGHT_RECHECK,
    PDB_RECHECK,
    Attempt,
    EvictionSettings,
    Limits,
    Outcome,
    Wait,
    after_error,
    after_lost_answer,
    backoff,
    budget_spent,
    choose,
    explain_blocked,
    finished,
    found_removed,
    hold_what_pdbs_refuse,
    initial_states,
    next_pass_in,
    owner_wait,
    progress_line,
    release_allowed,
    removed,
    room_in_flight,
    set_aside_past_budget,
    summarize_entries,
    timeout_message,
    to_evict,
    what_to_wait_for,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.filters import FilterOptions, judge
from builders import pdb, pod

NOW = 1000.0
NO_PDBS = {}.get


def states_of(*pods, wait=True):
    return initial_states([judge(p, FilterOptions()) for p in pods], wait)


def queued(*pods):
    return states_of(*pods)[1]


def test_backoff_grows_is_capped_and_jittered():
    rng = random.Random(7).random
    delays = [backoff(attempt, rng) for attempt in range(1, 8)]
    assert 0.5 <= delays[0] <= 1.5
    assert all(delay <= 7.5 for delay in delays)
    assert backoff(3, lambda: 0.5) == 4.0
    assert backoff(10, lambda: 0.5) == 5.0


def test_the_queue_holds_the_pods_to_remove_and_terminating_pods_are_waited_for_as_if_in_flight():
    states, queue, in_flight = states_of(pod("a"), pod("d", kind="DaemonSet"), pod("t", deleting=True),
                                         pod("bare", kind=None))
    assert [s.pod["metadata"]["name"] for s in queue] == ["a"]
    assert {s.pod["metadata"]["name"]: s.outcome for s in states} == {
        "a": Outcome.PENDING, "d": Outcome.SKIPPED, "t": Outcome.IN_FLIGHT, "bare": Outcome.REFUSED}
    assert list(in_flight) == ["uid-t"] and in_flight["uid-t"].verb is Outcome.GONE
    _states, _queue, not_waited = states_of(pod("t", deleting=True), wait=False)
    assert not_waited == {} and _states[0].outcome is Outcome.TERMINATING


def test_outcomes_read_as_their_values_in_results_messages_and_json():
    state = queued(pod("a"))[0]
    outcome = state.result()["outcome"]
    assert outcome == "pending" and not isinstance(outcome, Outcome), "a plain string in the result"
    assert "%s" % Outcome.IN_FLIGHT == "in_flight" and json.dumps(Outcome.EVICTED) == '"evicted"'


@pytest.mark.parametrize("limits, flying_nodes, allowed", [
    (Limits(), ["n1", "n1", "n2"], True),
    (Limits(max_in_flight=3), ["n1", "n2", "n3"], False),
    (Limits(max_in_flight=3), ["n1", "n2"], True),
    (Limits(max_per_node=1), ["n1"], False),
    (Limits(max_per_node=1), ["n2"], True),
    (Limits(max_per_namespace=2), ["n2", "n3"], False),
])
def test_room_in_flight_counts_all_per_node_and_per_namespace(limits, flying_nodes, allowed):
    state = queued(pod("a", node_name="n1"))[0]
    flying = queued(*[pod("f%d" % i, node_name=node) for i, node in enumerate(flying_nodes)])
    assert room_in_flight(state, flying, limits) is allowed


def test_the_eviction_budget_and_the_owner_limit():
    assert not budget_spent(Limits(), 10**6)
    assert budget_spent(Limits(max_evictions=2), 2) and not budget_spent(Limits(max_evictions=2), 1)
    web = Workload("Deployment", "ns", "web")
    assert owner_wait("25%", web, 8, 7) == ""
    assert owner_wait("25%", web, 8, 6) == "waiting: Deployment/web has 2 of 8 replicas unavailable (max 2)"
    assert owner_wait("1", web, 1, 1) == ""


def names(states):
    return [s.pod["metadata"]["name"] for s in states]


def test_a_pass_chooses_every_due_pod_at_once_counting_the_chosen_against_the_limits_in_flight():
    queue = queued(*[pod("a%d" % i, node_name="n1") for i in range(3)], pod("b0", node_name="n2"),
                   pod("c0", node_name="n3", namespace="other"))
    queue[1].next_try = NOW + 1
    assert names(choose(queue, [], NOW, Limits(), 0, NO_PDBS)) == ["a0", "a2", "b0", "c0"]
    assert names(choose(queue, [], NOW, Limits(max_per_node=1), 0, NO_PDBS)) == ["a0", "b0", "c0"]
    assert names(choose(queue, [], NOW, Limits(max_per_namespace=2), 0, NO_PDBS)) == ["a0", "a2", "c0"]
    flying = queued(pod("f", node_name="n9"))
    assert names(choose(queue, flying, NOW, Limits(max_in_flight=3), 0, NO_PDBS)) == ["a0", "a2"]
    assert names(choose(queue, [], NOW, Limits(max_evictions=5), 3, NO_PDBS)) == ["a0", "a2"]
    assert len(queue) == 5, "choosing takes no pod off the queue"


def test_a_pass_chooses_no_more_of_an_owner_than_its_unavailable_limit_allows():
    web, api = Workload("Deployment", "ns", "web"), Workload("Deployment", "ns", "api")
    queue = queued(pod("w0"), pod("w1"), pod("w2"), pod("a0", app="api"), pod("w3"))
    replicas = {"web": (web, 8, 7), "api": (api, 4, 4)}
    chosen = choose(queue, [], NOW, Limits(max_unavailable_per_owner="25%"), 0,
                    lambda state: replicas[state.pod["metadata"]["labels"]["app"]])
    assert names(chosen) == ["w0", "a0"], "web has 1 of 8 unavailable already, 2 allowed"
    assert queue[1].detail == "waiting: Deployment/web has 2 of 8 replicas unavailable (max 2)"
    assert names(choose(queue, [], NOW, Limits(), 0, lambda state: 1 / 0)) == names(queue), "read only when limited"


def test_past_max_evictions_the_queue_is_left_pending():
    queue = queued(pod("a"), pod("b"))
    set_aside_past_budget(queue, Limits(max_evictions=3), 2)
    assert len(queue) == 2
    states = list(queue)
    set_aside_past_budget(queue, Limits(max_evictions=3), 3)
    assert queue == [] and {s.outcome for s in states} == {Outcome.PENDING}
    assert states[0].detail == "max_evictions reached; rerun to continue"


def test_before_the_first_pass_the_pods_a_pdb_refuses_wait_on_its_watch_and_the_allowed_go():
    queue = queued(pod("a"), pod("b"), pod("c"), pod("other", app="api"))
    held = hold_what_pdbs_refuse(to_evict(queue, EvictionSettings()), [pdb("web", allowed=1)], NOW)
    assert [s.pod["metadata"]["name"] for s in held] == ["b", "c"]
    assert all(s.refused_by_pdb and s.next_try == NOW + PDB_RECHECK for s in held)
    assert held[0].held_by.startswith("PDB ns/web") and held[0].detail == "waiting: its PDB allows no disruption now"
    assert not queue[0].refused_by_pdb and not queue[3].refused_by_pdb
    assert hold_what_pdbs_refuse(queue, [pdb("web", allowed=0)], NOW) == [queue[0]], "each pod is told once"


def test_a_pod_under_two_pdbs_is_asked_so_that_the_refusal_is_reported_and_deletions_have_no_pdb():
    queue = queued(pod("a"))
    both = [pdb("web", allowed=0), pdb("all", allowed=0, selector={})]
    assert hold_what_pdbs_refuse(queue, both, NOW) == [] and not queue[0].refused_by_pdb
    assert to_evict(queue, EvictionSettings(disable_eviction=True)) == []
    assert to_evict(queued(pod("done", phase="Succeeded", kind=None)), EvictionSettings()) == []


def test_a_watch_of_the_pdbs_releases_one_pod_per_allowed_disruption():
    queue = queued(pod("a"), pod("b"))
    hold_what_pdbs_refuse(queue, [pdb("web", allowed=0)], NOW)
    assert not release_allowed(queue, [pdb("web", allowed=0)], NOW + 1)
    assert release_allowed(queue, [pdb("web", allowed=1)], NOW + 1)
    assert [s.next_try for s in queue] == [NOW + 1, NOW + PDB_RECHECK]


def test_a_pdb_refusal_waits_for_the_pdb_other_429s_back_off_and_a_lost_answer_is_checked_first():
    state = queued(pod("a"))[0]
    state.attempts = 1
    refusal = "Cannot evict pod as it would violate the pod's disruption budget."
    assert after_error(state, 429, refusal, True, NOW, lambda: 0.5, NO_PDBS) == (
        Attempt.RETRY, "its PodDisruptionBudget (%s)" % refusal)
    assert state.refused_by_pdb and state.next_try == NOW + PDB_RECHECK and state.outcome is Outcome.PENDING
    assert after_error(state, 429, "too many requests", False, NOW, lambda: 0.5, NO_PDBS) == (Attempt.RETRY, "")
    assert not state.refused_by_pdb and state.next_try == NOW + 1.0
    assert after_lost_answer(state, "connection reset", NOW, lambda: 0.5) is Attempt.RETRY
    assert state.uncertain and state.detail == "retrying: connection reset"


@pytest.mark.parametrize("status, message, outcome, detail", [
    (404, "not found", Outcome.GONE, "the pod was already gone"),
    (409, "uid precondition", Outcome.GONE, "the pod was already gone"),
    (403, "forbidden: cannot create pods/eviction", Outcome.FAILED, "forbidden: cannot create pods/eviction"),
    (500, "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
     Outcome.FAILED, "selected by several PDBs, which the Eviction API refuses: PDB ns/web"),
])
def test_other_errors_end_the_pod(status, message, outcome, detail):
    state = queued(pod("a"))[0]
    assert after_error(state, status, message, False, NOW, random.random,
                       {"ns": [pdb("web"), pdb("api")]}.get)[0] is Attempt.DONE
    assert state.outcome is outcome and state.detail.startswith(detail)


def test_a_pod_read_after_a_lost_answer_is_gone_in_flight_or_asked_again():
    assert found_removed(None) is Outcome.GONE
    assert found_removed(pod("a", deleting=True)) is Outcome.IN_FLIGHT
    assert found_removed(pod("a")) is None


def test_a_removal_is_in_flight_until_finished_or_done_at_once_when_not_waited_for():
    state = queued(pod("a"))[0]
    state.uncertain = state.refused_by_pdb = True
    removed(state, deleting=False, wait=True)
    assert state.outcome is Outcome.IN_FLIGHT and not state.uncertain and not state.refused_by_pdb
    finished(state)
    assert state.outcome is Outcome.EVICTED and state.result()["outcome"] == "evicted"
    other = queued(pod("b"))[0]
    removed(other, deleting=True, wait=False)
    assert other.outcome is Outcome.DELETED


def test_between_passes_it_watches_the_pdbs_while_only_refused_pods_wait_otherwise_the_pods():
    queue = queued(pod("a"), pod("b"))
    in_flight = {s.uid: s for s in queued(pod("f"))}
    for state in queue:
        state.refused_by_pdb, state.next_try = True, NOW + PDB_RECHECK
    assert what_to_wait_for(queue, in_flight, NOW, True) == (Wait.PDBS, queue, False)
    queue[1].refused_by_pdb, queue[1].next_try = False, NOW
    wait, watching, for_room = what_to_wait_for(queue, in_flight, NOW, True)
    assert wait is Wait.PODS and watching == list(in_flight.values()) + [queue[1]] and for_room
    assert what_to_wait_for([], in_flight, NOW, True) == (Wait.PODS, list(in_flight.values()), False)
    queue[1].next_try = NOW + 3
    assert what_to_wait_for([queue[1]], {}, NOW, True) == (Wait.SLEEP, [], False)
    assert what_to_wait_for([], in_flight, NOW, False) == (Wait.SLEEP, [], False)
    assert IN_FLIGHT_RECHECK < PDB_RECHECK


def test_the_next_pass_comes_when_a_retry_is_due_never_past_the_deadline():
    queue = queued(pod("a"), pod("b"))
    queue[0].next_try, queue[1].next_try = NOW + 3, NOW + 1
    assert next_pass_in(queue, NOW, NOW + 60, NOW) == 1
    assert next_pass_in(queue, NOW, NOW + 0.5, NOW) == 0.5
    assert next_pass_in([], NOW, NOW + 60, NOW + 1) == 4
    assert next_pass_in([], NOW, NOW + 60, NOW + 10) == 0.2


def test_the_progress_line_says_what_each_pod_left_waits_for():
    states, queue, in_flight = states_of(pod("a"), pod("b"), pod("c"), pod("t", deleting=True))
    queue[0].refused_by_pdb, queue[0].held_by = True, "PDB ns/web"
    queue[1].detail = "waiting: Deployment/web has 2 of 8 replicas unavailable (max 2)"
    line = progress_line(states, in_flight, queue, True, NOW)
    assert line.startswith("evicting: 0 of 3 pods gone, 1 terminating; waiting: ")
    for part in ("held by PDB ns/web", "for Deployment/web has 2 of 8", "for room within the eviction limits"):
        assert part in line
    queue[2].next_try, queue[2].detail = NOW + 2, "retrying: too many requests"
    assert "backing off after retrying: too many requests" in progress_line(states, in_flight, queue, True, NOW)
    assert progress_line(states, in_flight, [], False, NOW) == "evicting: 1 of 3 pods gone"


def test_at_the_deadline_each_pod_left_says_why_and_the_message_tells_how_to_continue():
    states, queue, in_flight = states_of(pod("held"), pod("never"), pod("t", deleting=True), pod("api", app="api"))
    queue[0].attempts, queue[0].refused_by_pdb = 1, True
    queue[2].attempts, queue[2].detail = 2, "retrying: too many requests"
    pods = {"ns": [pod("held"), pod("w2", ready=False, node_name="n9"), pod("t", deleting=True)]}
    explain_blocked(queue + list(in_flight.values()), {"ns": [pdb("web", allowed=0)]}.get, pods.get)
    assert queue[0].outcome is Outcome.BLOCKED and queue[0].detail.startswith("blocked by PDB ns/web")
    assert "which waits for: " in queue[0].detail and "w2" in queue[0].detail
    assert (queue[1].outcome, queue[1].detail) == (Outcome.PENDING, "not attempted before the deadline")
    assert queue[2].outcome is Outcome.BLOCKED, "asked and refused without a PDB"
    assert in_flight["uid-t"].outcome is Outcome.TERMINATING
    message = timeout_message(states, 300.0, "Deployment/web in ns has 3 of 4 replicas Ready")
    assert message.startswith("Timed out after 300 s evicting: ns/held on n1: blocked by PDB ns/web")
    assert "ns/t on n1: evicted but still terminating at the deadline" in message
    assert message.endswith("replacements not Ready: Deployment/web in ns has 3 of 4 replicas Ready. "
                            "1 of 3 pods evicted (1 of them still terminating); rerunning continues from here.")
    assert summarize_entries([s.result() for s in states]) == {"blocked": 2, "pending": 1, "terminating": 1}


def test_at_the_deadline_a_pod_whose_answers_were_lost_is_what_the_cluster_shows_and_no_pdb_is_blamed():
    states, queue, _in_flight = states_of(pod("gone"), pod("going"), pod("there"), pod("asked"))
    for state in queue[:3]:
        after_lost_answer(state, "Cannot reach the API server: Read timed out.", NOW, lambda: 0.5)
        state.attempts = 1
    queue[3].attempts, queue[3].detail = 1, "retrying: Cannot reach the API server: Read timed out."
    flying = states_of(pod("flown"))[1][0]
    removed(flying, False, True)
    pods = {"ns": [pod("going", deleting=True), pod("there"), pod("asked")]}
    explain_blocked(queue + [flying], {"ns": [pdb("web", allowed=2)]}.get, pods.get)
    assert flying.outcome is Outcome.EVICTED, "in flight at the deadline and gone from the cluster: evicted"
    assert (queue[0].outcome, queue[0].detail) == (Outcome.EVICTED, "its answer was lost; the cluster shows it gone")
    assert queue[1].outcome is Outcome.TERMINATING
    for state in queue[2:]:
        assert state.outcome is Outcome.BLOCKED and "blocked by PDB" not in state.detail, state.detail
        assert "Read timed out" in state.detail
    message = timeout_message(states, 60.0)
    assert "blocked by PDB" not in message
    assert message.endswith("2 of 4 pods evicted (1 of them still terminating); rerunning continues from here.")
