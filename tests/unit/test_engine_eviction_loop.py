"""engine.eviction's loop against the in-memory api/ of fake_api: what it does with a PDB's 429, the API server's
own 429, a lost answer, an expired watch, a 500, within its limits and its deadline. Every wait is on the fake's
clock: minutes of a run take milliseconds."""

from __future__ import annotations

import random

import pytest

from ansible_collections.kubeops.rotation.plugins.module_utils.api.errors import ConnectionFailed
from ansible_collections.kubeops.rotation.plugins.module_utils.api.watch import WatchExpired
from ansible_collections.kubeops.rotation.plugins.module_utils.engine import eviction, eviction_waits
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.eviction import EvictionRun
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.events import EvictionHooks
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.eviction import (
    PDB_RECHECK,
    EvictionSettings,
    Limits,
    Outcome,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.filters import FilterOptions, judge_all
from builders import deployment, pdb, pod, replica_set
from fake_api import FakeApi, LostAnswer, api_error, rate_limited, unreachable

START = 1000.0


class Told(EvictionHooks):
    """What the run told its hooks: (hook, pod name)."""

    def __init__(self, fake=None):
        self.fake = fake
        self.told = []
        self.terminating_at_start = []

    def pod_started(self, state):
        self.told.append(("started", state.pod["metadata"]["name"]))
        if self.fake is not None:
            self.terminating_at_start.append(sorted(
                p["metadata"]["name"] for p in self.fake.store["pods"].values() if p["metadata"].get("deletionTimestamp")))

    def pod_held(self, state):
        self.told.append(("held", state.pod["metadata"]["name"]))

    def pod_finished(self, state):
        self.told.append(("finished", state.pod["metadata"]["name"]))


@pytest.fixture
def fake(monkeypatch):
    return FakeApi().install(monkeypatch, eviction, eviction_waits)


def evict(fake, *pods, timeout=120, hooks=None, **settings):
    """Run the engine over ``pods`` (as they are in the fake); (the run, {pod name: its state}, the hooks)."""
    hooks = hooks or Told(fake)
    run = EvictionRun(fake.client(), EvictionSettings(timeout=timeout, **settings), hooks=[hooks], clock=fake.clock,
                      sleep=fake.sleep, rng=lambda: 0.5)
    current = [fake.copy_of("pods", (p["metadata"]["namespace"], p["metadata"]["name"])) for p in pods]
    states = run.run(judge_all(current, FilterOptions()), ("n1",))
    return run, {state.pod["metadata"]["name"]: state for state in states}, hooks


def test_an_eviction_its_pdb_refused_is_asked_again_once_the_pdb_allows_it_and_not_before(fake):
    web = pod("web-1")
    fake.add("pods", web).add("pdbs", pdb("web", allowed=1, healthy=(3, 2)))
    # Another eviction takes the one disruption the PDB allowed, just before this one is answered: a 429.
    fake.script("evict_pod", lambda: fake.set_pdb_status("web", disruptionsAllowed=0))
    fake.at(START + 20, lambda: fake.set_pdb_status("web", disruptionsAllowed=1))  # the disruption controller
    run, states, hooks = evict(fake, web)
    assert states["web-1"].outcome is Outcome.EVICTED and states["web-1"].attempts == 2
    assert not run.timed_out and run.evictions == 1
    assert fake.called_at("evict_pod") == [START, START + 20], "asked again as the PDB allowed, not polled"
    assert hooks.told == [("held", "web-1"), ("started", "web-1"), ("finished", "web-1")]
    assert ("pods", "web-1") not in fake


def test_while_its_pdb_refuses_a_pod_is_asked_again_only_every_pdb_recheck(fake):
    web = pod("web-1")
    fake.add("pods", web).add("pdbs", pdb("web", allowed=1, healthy=(3, 2)))
    fake.script("evict_pod", lambda: fake.set_pdb_status("web", disruptionsAllowed=0))
    fake.at(START + 70, lambda: fake.set_pdb_status("web", disruptionsAllowed=1))
    run, states, hooks = evict(fake, web)
    assert fake.called_at("evict_pod") == [START, START + PDB_RECHECK, START + 2 * PDB_RECHECK, START + 70]
    assert states["web-1"].outcome is Outcome.EVICTED and hooks.told.count(("held", "web-1")) == 1, "told once"


def test_a_pod_its_pdb_does_not_allow_is_held_without_a_request_and_is_blocked_by_that_pdb_at_the_deadline(fake):
    web = pod("web-1")
    fake.add("pods", web).add("pdbs", pdb("web", allowed=0, healthy=(2, 2), min_available=2))
    run, states, hooks = evict(fake, web, timeout=60)
    assert run.timed_out
    assert fake.called_at("evict_pod") == [START + PDB_RECHECK], "held by the PDB read first; asked at the recheck"
    assert states["web-1"].outcome is Outcome.BLOCKED
    assert states["web-1"].detail.startswith("blocked by PDB ns/web (currentHealthy 2, desiredHealthy 2, "
                                             "disruptionsAllowed 0)")
    assert hooks.told == [("held", "web-1")]
    assert START + 60 <= fake.clock() < START + 62


def test_the_api_servers_own_429_is_backed_off_and_not_blamed_on_a_pdb(fake):
    web = pod("web-1")
    fake.add("pods", web).add("pdbs", pdb("web", allowed=1, healthy=(3, 2)))
    fake.script("evict_pod", rate_limited(), rate_limited(), rate_limited())
    run, states, hooks = evict(fake, web)
    assert states["web-1"].outcome is Outcome.EVICTED and states["web-1"].attempts == 4
    asked = fake.called_at("evict_pod")
    assert [later - earlier for earlier, later in zip(asked, asked[1:])] == [1.0, 2.0, 4.0], "backoff 1, 2, 4 s"
    assert ("held", "web-1") not in hooks.told


def test_a_pod_the_api_server_kept_refusing_until_the_deadline_is_not_said_blocked_by_its_pdb(fake):
    web = pod("web-1")
    fake.add("pods", web).add("pdbs", pdb("web", allowed=1, healthy=(3, 2)))
    fake.script("evict_pod", rate_limited(), repeat=True)
    run, states, _hooks = evict(fake, web, timeout=30)
    state = states["web-1"]
    assert run.timed_out and state.attempts > 1
    assert state.detail == "retrying: Too many requests, please try again later."
    assert not state.refused_by_pdb and "blocked by" not in state.detail


@pytest.mark.parametrize("termination", [0.1, 10.0], ids=["gone at the read", "terminating at the read"])
def test_an_eviction_whose_answer_was_lost_but_applied_is_not_asked_again(fake, termination):
    fake.termination_seconds = termination
    web = pod("web-1")
    fake.add("pods", web)
    fake.script("evict_pod", LostAnswer(applied=True))
    run, states, hooks = evict(fake, web)
    assert fake.called("evict_pod") == ["web-1"], "a pod is never evicted twice"
    assert fake.called("pod_now") == ["web-1"], "read before it would be asked again"
    assert states["web-1"].outcome is Outcome.EVICTED and run.evictions == 1 and not run.timed_out
    assert hooks.told == [("started", "web-1"), ("finished", "web-1")]


def test_an_eviction_whose_answer_was_lost_before_it_was_applied_is_asked_again_after_a_read(fake):
    web = pod("web-1")
    fake.add("pods", web)
    fake.script("evict_pod", LostAnswer(applied=False))
    run, states, _hooks = evict(fake, web)
    assert [call for call, _what, _when in fake.calls if call in ("evict_pod", "pod_now")] == \
        ["evict_pod", "pod_now", "evict_pod"]
    assert states["web-1"].outcome is Outcome.EVICTED and states["web-1"].attempts == 2 and run.evictions == 1


def test_a_pod_replaced_under_the_same_name_after_a_lost_answer_is_not_evicted(fake):
    fake.termination_seconds = 0.1
    db = pod("db-0", app="db", kind="StatefulSet")
    fake.add("pods", db)
    fake.script("evict_pod", LostAnswer(applied=True))
    fake.at(START + 0.5, lambda: fake.add("pods", dict(db, metadata=dict(db["metadata"], uid="uid-db-0-new"))))
    run, states, _hooks = evict(fake, db)
    assert fake.called("evict_pod") == ["db-0"], "the new db-0 is not the pod that was asked for"
    assert states["db-0"].outcome is Outcome.EVICTED and run.evictions == 1
    assert fake.copy_of("pods", ("ns", "db-0"))["metadata"]["uid"] == "uid-db-0-new"


def test_a_lost_answer_whose_read_fails_too_ends_the_run_without_asking_again(fake):
    web = pod("web-1")
    fake.add("pods", web)
    fake.script("evict_pod", LostAnswer(applied=False))
    fake.script("pod_now", unreachable())
    with pytest.raises(ConnectionFailed, match="Cannot reach the API server"):
        evict(fake, web)
    assert fake.called("evict_pod") == ["web-1"]


def test_a_watch_that_expired_is_listed_again_and_the_deletion_it_missed_is_seen(fake):
    fake.termination_seconds = 0.0
    web = pod("web-1")
    fake.add("pods", web)
    fake.script("watch", WatchExpired())  # 410 Gone: the deletion's event is no longer served
    run, states, hooks = evict(fake, web)
    assert states["web-1"].outcome is Outcome.EVICTED and not run.timed_out
    assert [call for call, what, _when in fake.calls if what == "pods"][:2] == ["watch", "list"]
    assert fake.clock() == START and ("finished", "web-1") in hooks.told


def test_a_watch_whose_stream_broke_while_a_pdb_holds_a_pod_is_listed_again_and_goes_on(fake):
    web = pod("web-1")
    fake.add("pods", web).add("pdbs", pdb("web", allowed=0, healthy=(2, 2)))
    fake.script("watch", WatchExpired(), WatchExpired())
    fake.at(START + 20, lambda: fake.set_pdb_status("web", disruptionsAllowed=1))
    run, states, _hooks = evict(fake, web)
    assert states["web-1"].outcome is Outcome.EVICTED and not run.timed_out
    assert fake.called_at("evict_pod") == [START + 20]


def test_a_pod_under_two_pdbs_fails_on_the_eviction_apis_500_which_names_both(fake):
    web = pod("web-1")
    fake.add("pods", web).add("pdbs", pdb("web", allowed=1), pdb("everything", selector={}, allowed=1))
    run, states, _hooks = evict(fake, web)
    state = states["web-1"]
    assert state.outcome is Outcome.FAILED and fake.called("evict_pod") == ["web-1"], "not retried"
    assert state.detail.startswith("selected by several PDBs, which the Eviction API refuses: PDB ns/web ")
    assert "PDB ns/everything" in state.detail and len(state.pdbs) == 2
    assert not run.timed_out and fake.clock() == START


def test_another_500_fails_that_pod_at_once_and_the_others_go_on(fake):
    pods = [pod("web-1"), pod("web-2"), pod("web-3")]
    fake.add("pods", *pods)
    fake.script("evict_pod", api_error(500, "Internal error occurred: failed calling webhook \"policy.example\": "
                                            "context deadline exceeded", "InternalError"), name="web-2")
    run, states, _hooks = evict(fake, *pods)
    assert {name: state.outcome for name, state in states.items()} == {
        "web-1": Outcome.EVICTED, "web-2": Outcome.FAILED, "web-3": Outcome.EVICTED}
    assert states["web-2"].detail.startswith("Internal error occurred: failed calling webhook")
    assert sorted(fake.called("evict_pod")) == ["web-1", "web-2", "web-3"] and run.evictions == 2


@pytest.mark.parametrize("meanwhile", ["deleted", "replaced"])
def test_a_pod_deleted_or_replaced_before_its_eviction_is_gone_not_failed(fake, meanwhile):
    web = pod("web-1")
    fake.add("pods", web)
    if meanwhile == "deleted":  # a 404
        fake.script("evict_pod", lambda: fake.remove("pods", ("ns", "web-1")))
    else:  # a new pod of the same name: the uid precondition's 409
        fake.script("evict_pod", lambda: fake.update("pods", ("ns", "web-1"),
                                                     lambda obj: obj["metadata"].update(uid="uid-web-1-new")))
    run, states, _hooks = evict(fake, web)
    assert states["web-1"].outcome is Outcome.GONE and states["web-1"].detail == "the pod was already gone"
    assert run.evictions == 0 and fake.called("evict_pod") == ["web-1"]
    if meanwhile == "replaced":
        assert fake.copy_of("pods", ("ns", "web-1")) is not None, "the new pod is left alone"


def test_pods_under_one_pdb_go_one_at_a_time_as_it_allows(fake):
    pods = [pod("web-1"), pod("web-2")]
    fake.add("pods", *pods).add("pdbs", pdb("web", allowed=1, healthy=(3, 2)))
    fake.at(START + 10, lambda: fake.set_pdb_status("web", disruptionsAllowed=1))  # a replacement is Ready
    run, states, hooks = evict(fake, *pods)
    assert fake.called_at("evict_pod") == [START, START + 10], "no request the PDB would refuse"
    assert all(state.outcome is Outcome.EVICTED for state in states.values()) and run.evictions == 2
    assert hooks.told[0] == ("held", "web-2")


def test_a_workload_loses_no_more_replicas_than_max_unavailable_per_owner(fake):
    pods = [pod("web-%d" % i) for i in (1, 2, 3)]
    workloads = [dict(replica_set(), kind="ReplicaSet"), dict(deployment(replicas=3), kind="Deployment")]
    workloads[1]["spec"]["selector"] = {"matchLabels": {"app": "web"}}
    fake.add("pods", *pods).add("workloads", *workloads)
    # The ReplicaSet's replacements, Ready a few seconds after each pod is gone.
    fake.at(START + 5, lambda: fake.add("pods", pod("web-4", node_name="n2")))
    fake.at(START + 12, lambda: fake.add("pods", pod("web-5", node_name="n2")))
    run, states, _hooks = evict(fake, *pods, limits=Limits(max_unavailable_per_owner="1"))
    assert fake.called_at("evict_pod") == [START, START + 5, START + 12]
    assert all(state.outcome is Outcome.EVICTED for state in states.values()) and not run.timed_out


def test_max_evictions_leaves_the_rest_pending(fake):
    pods = [pod("web-%d" % i) for i in (1, 2, 3)]
    fake.add("pods", *pods)
    run, states, _hooks = evict(fake, *pods, limits=Limits(max_evictions=2))
    assert sorted(state.outcome.value for state in states.values()) == ["evicted", "evicted", "pending"]
    assert len(fake.called("evict_pod")) == 2 and run.evictions == 2


def test_a_pod_still_terminating_at_the_deadline_is_evicted_and_said_terminating(fake):
    fake.termination_seconds = 600.0
    web = pod("web-1")
    fake.add("pods", web)
    run, states, _hooks = evict(fake, web, timeout=30)
    assert run.timed_out and states["web-1"].outcome is Outcome.TERMINATING
    assert states["web-1"].detail == "evicted but still terminating at the deadline"


def test_a_pod_whose_answer_was_lost_just_before_the_deadline_is_said_what_the_cluster_shows(fake):
    fake.termination_seconds = 0.1
    web = pod("web-1")
    fake.add("pods", web)
    fake.script("evict_pod", LostAnswer(applied=True))
    run, states, _hooks = evict(fake, web, timeout=0.5)
    assert run.timed_out and fake.called("evict_pod") == ["web-1"]
    assert states["web-1"].outcome is Outcome.EVICTED
    assert states["web-1"].detail == "its answer was lost; the cluster shows it gone"


def test_evictions_in_flight_stay_within_max_in_flight(fake):
    pods = [pod("web-%d" % i) for i in range(1, 5)]
    fake.add("pods", *pods)
    hooks = Told(fake)
    run, states, _hooks = evict(fake, *pods, hooks=hooks, limits=Limits(max_in_flight=2))
    assert all(state.outcome is Outcome.EVICTED for state in states.values()) and run.evictions == 4
    assert max(len(terminating) for terminating in hooks.terminating_at_start) <= 2
    assert fake.called_at("evict_pod") == [START, START, START + 2, START + 2], "two at a time, each as one is gone"


def test_without_wait_evicted_pods_are_not_waited_for(fake):
    fake.termination_seconds = 30.0
    web = pod("web-1")
    fake.add("pods", web)
    run, states, _hooks = evict(fake, web, wait=False)
    assert states["web-1"].outcome is Outcome.EVICTED and fake.clock() == START
    assert fake.copy_of("pods", ("ns", "web-1"))["metadata"].get("deletionTimestamp")


def test_the_seconds_the_api_server_takes_to_answer_the_evictions_are_counted_apart(fake):
    web = pod("web-1")
    fake.add("pods", web)
    fake.script("evict_pod", lambda: fake.clock.advance_to(fake.clock() + 3))
    run, states, _hooks = evict(fake, web, wait=False)
    assert states["web-1"].outcome is Outcome.EVICTED
    assert run.waits.waited == {"pdb_pace": 0.0, "pods_starting": 0.0, "pods_going": 0.0, "backing_off": 0.0,
                                "api_answers": 3.0}


def test_the_run_waits_for_the_replacements_to_be_ready(fake):
    web = pod("web-1", owner="web-rs")
    workloads = [dict(replica_set(), kind="ReplicaSet"), dict(deployment(replicas=1), kind="Deployment")]
    workloads[1]["spec"]["selector"] = {"matchLabels": {"app": "web"}}
    fake.add("pods", web).add("workloads", *workloads)
    replacement = pod("web-2", node_name="n2", ready=False)
    fake.at(START + 5, lambda: fake.add("pods", replacement))
    fake.at(START + 15, lambda: fake.add("pods", pod("web-2", node_name="n2")))
    run, states, _hooks = evict(fake, web, wait_for_replacements=True)
    assert states["web-1"].outcome is Outcome.EVICTED and not run.timed_out and run.waiting_for == ""
    assert fake.clock() == START + 15


def test_replacements_not_ready_at_the_deadline_time_the_run_out_and_are_named(fake):
    web = pod("web-1", owner="web-rs")
    workloads = [dict(replica_set(), kind="ReplicaSet"), dict(deployment(replicas=1), kind="Deployment")]
    workloads[1]["spec"]["selector"] = {"matchLabels": {"app": "web"}}
    fake.add("pods", web).add("workloads", *workloads)
    fake.at(START + 5, lambda: fake.add("pods", pod("web-2", node_name="n2", ready=False, phase="Pending")))
    run, states, _hooks = evict(fake, web, timeout=60, wait_for_replacements=True)
    assert run.timed_out and states["web-1"].outcome is Outcome.EVICTED
    assert run.waiting_for.startswith("Deployment/web in ns has 0 of the 1 Ready pods it had")


@pytest.mark.parametrize("seed", range(6))
def test_through_refusals_lost_answers_and_expired_watches_every_pod_is_evicted_once(fake, seed):
    draw = random.Random(seed)
    pods = [pod("%s-%d" % (app, i), node_name="n%d" % draw.randint(1, 3), app=app, namespace=namespace)
            for app, namespace in (("web", "shop"), ("api", "shop"), ("db", "data")) for i in range(5)]
    fake.termination_seconds = draw.choice([0.0, 1.0, 7.0])
    fake.add("pods", *pods).add("pdbs", pdb("web", "shop", allowed=2), pdb("db", "data", allowed=0))
    for moment in range(10, 200, 10):  # the disruption controller: each PDB allows one now and then
        fake.at(START + moment + draw.random(), lambda: fake.set_pdb_status("web", "shop", disruptionsAllowed=1))
        fake.at(START + moment + draw.random(), lambda: fake.set_pdb_status("db", "data", disruptionsAllowed=1))
    faults = [rate_limited, lambda: LostAnswer(True), lambda: LostAnswer(False), lambda: None]
    for p in pods:
        fake.script("evict_pod", *[draw.choice(faults)() for _attempt in range(draw.randint(0, 3))],
                    name=p["metadata"]["name"])
    fake.script("watch", *[WatchExpired() if draw.random() < 0.3 else None for _watch in range(40)])
    run, states, hooks = evict(fake, *pods, timeout=600, limits=Limits(max_in_flight=4, max_per_node=2))
    assert not run.timed_out and run.evictions == len(pods)
    assert all(state.outcome is Outcome.EVICTED for state in states.values()), \
        {name: (state.outcome, state.detail) for name, state in states.items()}
    accepted = {}
    for uid, when in fake.accepted:
        assert uid not in accepted, "%s evicted twice" % uid
        accepted[uid] = when
    assert sorted(name for hook, name in hooks.told if hook == "finished") == sorted(states)


@pytest.mark.parametrize("limits", [Limits(max_in_flight=1), Limits(max_per_node=1), Limits(max_evictions=1)],
                         ids=["max_in_flight", "max_per_node", "max_evictions"])
def test_a_pod_whose_eviction_answer_was_lost_counts_against_the_limits_until_read(fake, limits):
    fake.termination_seconds = 10.0
    pods = [pod("web-1"), pod("web-2")]
    fake.add("pods", *pods)
    fake.script("evict_pod", LostAnswer(applied=True), name="web-1")  # web-1 is evicted: its answer is lost
    # While web-1 backs off before its read, a pod of the namespace becomes Ready: the run looks at web-2 again.
    fake.at(START + 0.5, lambda: fake.add("pods", pod("web-3", node_name="n2")))
    hooks = Told(fake)
    evict(fake, *pods, hooks=hooks, limits=limits)
    assert len(fake.accepted) == (1 if limits.max_evictions else 2)
    assert max(len(terminating) for terminating in hooks.terminating_at_start) <= 1, \
        "web-2 was evicted while web-1 still terminated"
