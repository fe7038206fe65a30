from __future__ import annotations

import contextlib

import pytest

from ansible_collections.kubeops.rotation.plugins.module_utils.api.errors import ConnectionFailed
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.lease import HeldLease, LeaseSettings, hold_for
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.progress import PROGRESS
from ansible_collections.kubeops.rotation.plugins.module_utils.model.errors import Blocked, LeaseLost

SETTINGS = LeaseSettings(run_id="r1", holder="r1", duration=30)


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def renewed():
    return None


def unreachable():
    raise ConnectionFailed("Cannot reach the API server at https://k8s.example:6443: Read timed out.")


def test_nothing_is_refused_before_the_lease_was_first_taken():
    held = HeldLease(SETTINGS, Clock())
    held.check("GET")
    assert not held.expired()


def test_the_first_take_is_tried_again_until_the_renew_deadline_then_raises_what_it_met():
    clock = Clock()
    held = HeldLease(SETTINGS, clock)
    waits = []

    def wait(seconds):
        waits.append(seconds)
        clock.now += seconds

    with pytest.raises(ConnectionFailed):
        held.attempt(unreachable, first=True, sleep=wait)
    assert held.renewed_at is None and waits == [3.0] * 6, waits  # every 3 s within the 20 s renew deadline
    answers = [unreachable, renewed]

    def next_answer():
        return answers.pop(0)()

    held.attempt(next_answer, first=True, sleep=wait)
    assert held.renewed_at is not None


def test_failed_renewals_refuse_every_request_once_the_renew_deadline_passed_since_the_last_renewal():
    clock = Clock()
    held = HeldLease(SETTINGS, clock)
    held.attempt(renewed, first=True)
    clock.now += 10
    held.attempt(unreachable)
    clock.now += 9.9
    held.check("POST")  # 19.9 s since the renewal: within the 20 s renew deadline
    clock.now += 0.1
    with pytest.raises(LeaseLost, match="not renewed for 20 s, past its renew deadline of 20 s .*Read timed out"):
        held.check("GET")
    held.attempt(renewed)  # too late: a run that lost the Lease does not act again
    with pytest.raises(LeaseLost):
        held.check("POST")


def test_a_renewal_measured_from_when_it_was_sent():
    clock = Clock()
    held = HeldLease(SETTINGS, clock)

    def slow():
        clock.now += 5

    held.attempt(slow, first=True)
    assert held.renewed_at == 100.0


def test_another_run_that_took_the_lease_over_stops_this_one_at_once():
    held = HeldLease(SETTINGS, Clock())
    held.attempt(renewed, first=True)

    def refused():
        raise Blocked("another run took it over (r2 (ansible on ci))")

    held.attempt(refused)
    with pytest.raises(LeaseLost, match="another run took it over .*r2"):
        held.check("PATCH")


class KeeperWhoseLeaseIsLostAfter:
    """A LeaseKeeper stand-in whose kept() block's Lease is lost once ``checks`` checks have passed."""

    def __init__(self, checks=None):
        self.checks = checks
        self.at_once = None

    @contextlib.contextmanager
    def kept(self, _clock, at_once=False):
        self.at_once = at_once
        keeper = self

        class Held:
            @staticmethod
            def check(_method=None):
                if keeper.checks is not None:
                    keeper.checks -= 1
                    if keeper.checks < 0:
                        raise LeaseLost("Lost the Lease: another run took it over (r2).")
        yield Held()


def test_holding_the_lease_for_a_soak_takes_it_at_once_and_says_what_it_waits_for():
    clock = Clock()
    lines = []

    def sleep(seconds):
        clock.now += seconds

    keeper = KeeperWhoseLeaseIsLostAfter()
    stop_listening = PROGRESS.listen(lines.append)
    try:
        assert hold_for(keeper, 25, "soak after batch 1/3", clock, sleep) == 25.0
    finally:
        stop_listening()
    assert keeper.at_once is True
    assert lines[0] == "soak after batch 1/3: 25 s left"
    with pytest.raises(LeaseLost, match="another run took it over"):
        hold_for(KeeperWhoseLeaseIsLostAfter(checks=1), 60, "soak", clock, sleep)
