# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Take, keep and release the cluster's Lease (plan.lease decides who may)."""

from __future__ import annotations

import contextlib
import datetime
import math
import os
import socket
import threading
import time
from dataclasses import dataclass

from ansible_collections.kubeops.rotation.plugins.module_utils.api.client import separate_client
from ansible_collections.kubeops.rotation.plugins.module_utils.api.errors import ApiException
from ansible_collections.kubeops.rotation.plugins.module_utils.api.leases import (
    create_lease,
    read_lease,
    replace_lease,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.progress import PROGRESS, tell_progress
from ansible_collections.kubeops.rotation.plugins.module_utils.model.errors import (
    Blocked,
    InvalidInput,
    KubeopsError,
    LeaseLost,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.model.keys import LEASE_NAME, LEASE_NAMESPACE
from ansible_collections.kubeops.rotation.plugins.module_utils.model.times import micro_time
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.lease import (
    LOST_LEASE_PREFIX,
    expires_at,
    held_lease,
    holder_run_id,
    lease_decision,
    lost_lease_message,
    released_lease,
    renew_deadline,
    renew_request_timeout,
    renew_retry_seconds,
    renewal_refusal,
    with_retired,
)

# A new progress line reaches the Lease at most this often (each is a write).
PROGRESS_EVERY_SECONDS = 10.0


@dataclass(frozen=True)
class LeaseSettings:
    """Which Lease, for which run, and for how long each renewal holds it."""

    run_id: str
    holder: str
    name: str = LEASE_NAME
    namespace: str = LEASE_NAMESPACE
    duration: int = 300

    @classmethod
    def from_params(cls, params, prefix=""):
        """The settings from the lease option of a module (``prefix`` "lease.") or the lease module's own options,
        or InvalidInput. The holder defaults to the run id, this host and the process that runs the module."""
        given = {key: value for key, value in params.items() if value is not None}
        if not given.get("run_id", "").strip():
            raise InvalidInput("%srun_id is empty: name the run (for example the rotation id)." % prefix)
        duration = given.get("duration", cls.duration)
        if duration < 5:
            raise InvalidInput("%sduration must be 5 seconds or more, got %s." % (prefix, duration))
        holder = given.get("holder") or "%s (host %s, pid %d)" % (given["run_id"], socket.gethostname(), os.getppid())
        return cls(run_id=given["run_id"], holder=holder, name=given.get("name", cls.name),
                   namespace=given.get("namespace", cls.namespace), duration=duration)


def _now():
    return datetime.datetime.now(datetime.timezone.utc)


class HeldLease:
    """When this run last renewed its Lease (the clock read before the renewal was sent: it can only have landed
    later), and whether it lost it. ``check`` runs before every request of the run."""

    def __init__(self, settings, clock):
        self.settings = settings
        self.clock = clock
        self.renewed_at = None
        self.attempted_at = None
        self.failure = None
        self.lost = None

    def attempt(self, take, first=False, sleep=time.sleep):
        """Take or renew the Lease with ``take``. A failed renewal is remembered and tried again by the caller;
        a refusal (another run took it over, or it was released) loses it. The first take is tried again every retry period until
        the renew deadline passes, and then raises what it met, as does a refusal of it."""
        began = self.clock()
        while True:
            started = self.attempted_at = self.clock()
            try:
                take()
            except Blocked as exc:
                if first:
                    raise
                self.lost = "%s: %s. Stopped before the next request." % (LOST_LEASE_PREFIX, exc)
                return
            except (ApiException, KubeopsError) as exc:
                self.failure = str(exc).split("\n", 1)[0]
                if first and self.clock() - began + renew_retry_seconds(self.settings.duration) < \
                        renew_deadline(self.settings.duration):
                    sleep(renew_retry_seconds(self.settings.duration))
                    continue
                if first:
                    raise
            else:
                self.renewed_at, self.failure = started, None
            self.expired()
            return

    def expired(self):
        """Whether the Lease is lost: the renew deadline passed since the last renewal, or another run took it."""
        if self.lost is None and self.renewed_at is not None:
            silent = self.clock() - self.renewed_at
            if silent >= renew_deadline(self.settings.duration):
                self.lost = lost_lease_message(self.settings.name, self.settings.namespace, self.settings.duration,
                                               silent, self.failure)
        return self.lost is not None

    def check(self, _method=None):
        """Raise LeaseLost once the Lease is lost (expired)."""
        if self.expired():
            raise LeaseLost(self.lost)


class LeaseKeeper:
    """The Lease of one run: ``take`` (or renew), ``release``, and ``kept()`` renewing in the background."""

    def __init__(self, client, settings, now=_now, progress=PROGRESS):
        self.client = client
        self.settings = settings
        self.now = now
        self.progress = progress

    def read(self):
        return read_lease(self.client, self.settings.name, self.settings.namespace)

    def take(self, check_mode=False, attempts=3):
        """Take or renew the Lease; returns what was done. Raises Blocked when another run holds it.

        A write that lost a race (409) is decided again from a fresh read.
        """
        return self._write(check_mode, attempts)

    def renew(self):
        """Renew the Lease this run holds; raises Blocked when it no longer does (renewal_refusal)."""
        return self._write(renew_only=True)

    def _write(self, check_mode=False, attempts=3, renew_only=False):
        attempt = 0
        while True:
            attempt += 1
            current = self.read()
            action, why = lease_decision(current, self.settings.run_id, self.now())
            lost = renew_only and renewal_refusal(current, self.settings.run_id)
            if lost:
                raise Blocked(lost, {"lease": self.describe(current)})
            if action == "refuse":
                raise Blocked(why, {"lease": self.describe(current)})
            if check_mode:
                return {"action": action, "reason": why, "lease": self.describe(current)}
            body = held_lease(self.settings.name, self.settings.namespace, self.settings.run_id,
                              self.settings.holder, self.now(), self.settings.duration, current,
                              self.progress.line)
            try:
                if current is None:
                    written = create_lease(self.client, self.settings.namespace, body)
                else:
                    written = replace_lease(self.client, self.settings.name, self.settings.namespace, body)
                return {"action": action, "reason": why, "lease": self.describe(written)}
            except ApiException as exc:
                if exc.status != 409 or attempt >= attempts:
                    raise

    def record_retired(self, rotation_id, names, attempts=3):
        """Note ``names`` on the Lease as retired by ``rotation_id`` (plan.lease.with_retired), so that a rerun
        that names them knows them gone; a write that lost a race with a renewal (409) is made again from a fresh
        read."""
        for attempt in range(1, attempts + 1):
            current = self.read()
            body = current and with_retired(current, rotation_id, names)
            if not body:
                return
            try:
                replace_lease(self.client, self.settings.name, self.settings.namespace, body)
                return
            except ApiException as exc:
                if exc.status != 409 or attempt >= attempts:
                    raise

    def release(self, check_mode=False):
        """Let go of the Lease if this run holds it; returns whether it did."""
        current = self.read()
        if current is None or holder_run_id(current) != self.settings.run_id or \
                not (current.get("spec") or {}).get("holderIdentity"):
            return False
        if not check_mode:
            try:
                replace_lease(self.client, self.settings.name, self.settings.namespace, released_lease(current))
            except ApiException as exc:
                if exc.status != 409:  # someone took it over meanwhile: it is not ours to release
                    raise
                return False
        return True

    @contextlib.contextmanager
    def kept(self, clock=time.monotonic, at_once=False):
        """While the block runs, hold the Lease: take it just before the block's first write (a task that fails
        on a read, or changes nothing, leaves the Lease alone; ``at_once``: as the block starts, for a task that
        only reads while the run waits on it), then renew it every third of its duration, and
        when the progress line changed at most every PROGRESS_EVERY_SECONDS, so that the Lease shows it. The
        renewals go on connections of their own, each request bounded, so that a request hung elsewhere never
        holds them up; a failed one is tried again every few seconds. Past the renew deadline since the last
        renewal, every request of the block raises LeaseLost (HeldLease). Renewing stops after the block (the
        Lease is kept: the run's last step releases it)."""
        duration = self.settings.duration
        renewals = LeaseKeeper(separate_client(self.client, renew_request_timeout(duration), 0), self.settings,
                               self.now, self.progress)
        held = HeldLease(self.settings, clock)
        stop = threading.Event()
        changed = threading.Event()
        every = max(1.0, duration / 3.0)

        def renew():
            while not stop.is_set():
                quiet = every if held.failure is None else renew_retry_seconds(duration)
                due = held.attempted_at + (min(quiet, PROGRESS_EVERY_SECONDS) if changed.is_set() else quiet)
                if changed.is_set():
                    stop.wait(max(0.0, due - clock()))
                else:
                    changed.wait(max(0.0, due - clock()))  # a new line may bring the write closer
                if stop.is_set() or clock() < due:
                    continue
                changed.clear()
                held.attempt(renewals.renew)
                if held.expired():
                    return

        renewer = threading.Thread(target=renew, name="lease-renewal", daemon=True)

        def before_first_write():
            held.attempt(renewals.take, first=True)
            renewer.start()

        api_client = self.client.api_client
        if at_once:
            before_first_write()
        else:
            api_client.before_first_write = before_first_write
        api_client.before_request = held.check
        stop_listening = self.progress.listen(lambda _line: changed.set())
        try:
            yield held
        finally:
            stop_listening()
            api_client.before_first_write = None
            api_client.before_request = None
            stop.set()
            changed.set()
            if renewer.is_alive():
                renewer.join(5)

    @staticmethod
    def describe(lease):
        if not lease:
            return {}
        spec = lease.get("spec") or {}
        expiry = expires_at(lease)
        return {"name": lease["metadata"]["name"], "namespace": lease["metadata"]["namespace"],
                "holder": spec.get("holderIdentity"), "run_id": holder_run_id(lease),
                "acquired": spec.get("acquireTime"), "renewed": spec.get("renewTime"),
                "expires": micro_time(expiry) if expiry else None,
                "duration_seconds": spec.get("leaseDurationSeconds")}


def hold_for(keeper, seconds, what, clock=time.monotonic, sleep=time.sleep):
    """Hold the Lease of ``keeper`` (LeaseKeeper) for ``seconds``, renewing it, with ``what`` and the seconds left
    on the progress line: a soak between batches that keeps every other run out. Returns the seconds held; raises
    LeaseLost when it could not be renewed in time, or another run took it."""
    started = clock()
    with keeper.kept(clock, at_once=True) as held:
        while True:
            left = started + seconds - clock()
            if left <= 0:
                break
            tell_progress("%s: %d s left" % (what, math.ceil(left)))
            sleep(min(PROGRESS_EVERY_SECONDS, left))
            held.check()
    return round(clock() - started, 1)
