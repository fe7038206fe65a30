"""engine.lease's LeaseKeeper against the in-memory api/ of fake_api: the Lease taken before the run's first write,
renewed in the background, and every request refused once it could not be renewed before its renew deadline. The
renewals run in their thread as they do for real, on a clock whose seconds pass 100 times faster (a minute of a run
takes 0.6 s), their waits too."""

from __future__ import annotations

import datetime
import threading
import time
import types

import pytest

from ansible_collections.kubeops.rotation.plugins.module_utils.engine import events as events_module
from ansible_collections.kubeops.rotation.plugins.module_utils.engine import lease as lease_module
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.events import EventRecorder
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.lease import LeaseKeeper, LeaseSettings
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.progress import Progress
from ansible_collections.kubeops.rotation.plugins.module_utils.model.errors import Blocked, LeaseLost
from ansible_collections.kubeops.rotation.plugins.module_utils.model.keys import LEASE_NAME, LEASE_NAMESPACE
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.lease import held_lease, released_lease
from builders import pod
from fake_api import FakeApi, ManualClock, unreachable

SCALE = 100.0
SETTINGS = LeaseSettings(run_id="r1", holder="r1 (ansible on ci)", duration=30)  # renewed every 10 s, deadline 20 s
LEASE = (LEASE_NAMESPACE, LEASE_NAME)
EPOCH = datetime.datetime(2026, 12, 3, 6, 0, tzinfo=datetime.timezone.utc)
MARK = [{"op": "add", "path": "/metadata/labels/step", "value": "done"}]


class ScaledClock:
    """Seconds that pass SCALE times faster than real ones."""

    def __init__(self):
        self.started = time.monotonic()

    def __call__(self):
        return 1000.0 + (time.monotonic() - self.started) * SCALE

    def advance_to(self, moment):
        left = moment - self()
        if left > 0:
            time.sleep(left / SCALE)


class ScaledEvent(threading.Event):
    """threading.Event whose waits are in the scaled clock's seconds."""

    def wait(self, timeout=None):
        return super().wait(None if timeout is None else timeout / SCALE)


@pytest.fixture
def scaled(monkeypatch):
    """A fake api/ on the scaled clock, engine.lease's waits scaled the same."""
    monkeypatch.setattr(lease_module, "threading", types.SimpleNamespace(Event=ScaledEvent, Thread=threading.Thread))
    fake = FakeApi(clock=ScaledClock()).install(monkeypatch, lease_module)
    fake.add("nodes", {"metadata": {"name": "n1", "labels": {}}})
    return fake


def keeper_of(fake, client=None):
    return LeaseKeeper(client or fake.client(), SETTINGS, now=lambda: EPOCH + datetime.timedelta(
        seconds=fake.clock() - 1000.0), progress=Progress())


def write_until_refused(fake, client, seconds=60):
    """The run's writes, every 0.7 s, until one is refused (LeaseLost, returned) or ``seconds`` passed."""
    ends = fake.clock() + seconds
    while fake.clock() < ends:
        try:
            fake.patch_node(client, "n1", MARK)
        except LeaseLost as exc:
            return exc
        fake.sleep(0.7)
    return None


def test_the_lease_is_taken_just_before_the_first_write_not_for_reads(scaled):
    client = scaled.client()
    with keeper_of(scaled, client).kept(scaled.clock):
        scaled.read_node(client, "n1")
        assert scaled.copy_of("leases", LEASE) is None
        scaled.patch_node(client, "n1", MARK)
    assert [call for call, _what, _when in scaled.calls][:4] == ["read_node", "read_lease", "create_lease",
                                                                 "patch_node"]
    assert scaled.copy_of("leases", LEASE)["spec"]["holderIdentity"] == "r1 (ansible on ci)"


def test_renewals_that_fail_until_the_renew_deadline_stop_the_runs_writes_before_the_lease_expires(scaled):
    client = scaled.client()
    with keeper_of(scaled, client).kept(scaled.clock) as held:
        scaled.patch_node(client, "n1", MARK)  # the Lease is taken here
        renewed = held.renewed_at
        scaled.script("read_lease", unreachable(), repeat=True)  # from now on no renewal gets through
        refused = write_until_refused(scaled, client)
        assert isinstance(refused, LeaseLost)
        with pytest.raises(LeaseLost):
            scaled.patch_node(client, "n1", MARK)
    assert str(refused).startswith("Lost the Lease kube-system/kubeops-rotation: not renewed for 2")
    assert "past its renew deadline of 20 s" in str(refused) and "Cannot reach the API server" in str(refused)
    sent = scaled.called_at("patch_node")
    assert len(sent) > 5 and max(sent) < renewed + 20, "every write within the renew deadline of the last renewal"
    assert held.renewed_at == renewed and len(scaled.called("read_lease")) >= 3, "renewals were tried, and failed"


def test_a_lease_released_by_someone_else_stops_the_run_at_its_next_renewal(scaled):
    client = scaled.client()
    with keeper_of(scaled, client).kept(scaled.clock) as held:
        scaled.patch_node(client, "n1", MARK)
        scaled.update("leases", LEASE, lambda lease: lease.update(released_lease(lease)))
        refused = write_until_refused(scaled, client, seconds=30)
    assert isinstance(refused, LeaseLost) and held.renewed_at is not None
    assert str(refused) == "Lost the Lease: it was released meanwhile (the run, or a rerun of it, ended). " \
                           "Stopped before the next request."
    assert max(scaled.called_at("patch_node")) < held.renewed_at + 20, "stopped by the renewal, not the deadline"


def test_a_renewal_that_lost_a_race_is_decided_again_from_a_fresh_read(monkeypatch):
    fake = FakeApi(clock=ManualClock()).install(monkeypatch, lease_module)
    keeper = keeper_of(fake)
    assert keeper.take()["action"] == "create"
    fake.sleep(10)
    # Someone (kubectl annotate) writes the Lease between the renewal's read and its write: a 409.
    fake.script("replace_lease", lambda: fake.update("leases", LEASE, lambda lease: lease["metadata"].setdefault(
        "labels", {}).update(seen="yes")))
    assert keeper.renew()["action"] == "renew"
    assert fake.called("replace_lease") == [LEASE_NAME, LEASE_NAME] and len(fake.called("read_lease")) == 3
    assert fake.copy_of("leases", LEASE)["spec"]["renewTime"].startswith("2026-12-03T06:00:10")


def test_a_lease_another_run_holds_is_not_taken(monkeypatch):
    fake = FakeApi(clock=ManualClock()).install(monkeypatch, lease_module)
    other = held_lease(LEASE_NAME, LEASE_NAMESPACE, "r2", "r2 (ansible on awx)", EPOCH, 30)
    fake.add("leases", other)
    with pytest.raises(Blocked, match="Another run holds the Lease kube-system/kubeops-rotation: r2"):
        keeper_of(fake).take()
    assert fake.called("create_lease") == fake.called("replace_lease") == []


def test_a_first_take_that_failed_in_an_events_thread_still_stops_the_writes_after_it(monkeypatch):
    fake = FakeApi(clock=ManualClock()).install(monkeypatch, lease_module, events_module)
    fake.add("leases", held_lease(LEASE_NAME, LEASE_NAMESPACE, "r2", "r2 (ansible on awx)", EPOCH, 30))
    fake.add("pods", pod("web-1"))
    client = fake.client()
    with keeper_of(fake, client).kept(fake.clock):
        recorder = EventRecorder(client)
        recorder.on_node("n1", "Draining", "Evicting 1 pod(s)")  # an eviction run's first write (run_started)
        recorder.run_ended()
        assert fake.called("create_lease") == fake.called("replace_lease") == [], "r2 holds it: not taken"
        with pytest.raises((Blocked, LeaseLost)):
            fake.evict_pod(client, pod("web-1"))
    assert fake.accepted == [], "no eviction while another run holds the Lease"
