# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""One run at a time per cluster: who may take the Lease, and the Lease that says so.

A run is named by its run id (a rotation's id, a rebalance pass's, a
drain's). It may take the Lease when nobody holds it, when the holder's
time ran out (a killed run stops renewing, so its Lease expires by itself),
or when the holder is the same run id (a rerun after a kill continues at
once). Anyone else is refused, told who holds it, since when and until when.

A run holds it as client-go's leader election does: it renews every third
of the duration, tries again every retry period when a renewal fails, and
past the renew deadline (two thirds of the duration) since its last renewal
it stops writing, so that it never acts while another run could already
have taken the Lease over.
"""

from __future__ import annotations

import datetime
import json

from ansible_collections.kubeops.rotation.plugins.module_utils.model.keys import (
    LEASE_PROGRESS,
    LEASE_RENEW_DEADLINE,
    LEASE_RETIRED,
    LEASE_RUN_ID,
    MANAGED_BY,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.model.times import micro_time, parse_time

# How every line of a run that stopped for its Lease starts; the role tells such a stop from others by it.
LOST_LEASE_PREFIX = "Lost the Lease"


def renew_deadline(duration):
    """Seconds after a renewal past which the holder writes nothing more: two thirds of the Lease's duration
    (client-go's 10 s of 15), so that what it wrote last lands, and clocks that differ by a little agree, before
    another run may take the Lease over."""
    return duration * 2.0 / 3.0


def renew_retry_seconds(duration):
    """Seconds between attempts at a renewal that failed: a tenth of the duration, between 1 and 5 s."""
    return min(5.0, max(1.0, duration / 10.0))


def renew_request_timeout(duration):
    """(connect, read) seconds of one renewal's request: a quarter of the renew deadline at most, so that
    several attempts fit in it."""
    longest = max(1.0, min(10.0, renew_deadline(duration) / 4.0))
    return min(5.0, longest), longest


def lost_lease_message(name, namespace, duration, silent_seconds, last_error):
    """The one line of a run that stopped because it could not renew its Lease in time."""
    return (LOST_LEASE_PREFIX + " %s/%s: not renewed for %d s, past its renew deadline of %d s (it expires %d s after the "
            "last renewal)%s. Stopped before the next request, so that this run never acts beside another; what it "
            "did so far is recorded on the cluster: rerun with the same run id to resume once the API server answers."
            % (namespace, name, silent_seconds, renew_deadline(duration), duration,
               "; the last attempt: %s" % last_error if last_error else ""))


def expires_at(lease):
    """When the Lease runs out unless renewed (an aware datetime), or None when nobody holds it."""
    spec = (lease or {}).get("spec") or {}
    if not spec.get("holderIdentity") or not spec.get("renewTime"):
        return None
    return parse_time(spec["renewTime"]) + datetime.timedelta(seconds=spec.get("leaseDurationSeconds") or 0)


def holder_run_id(lease):
    return _annotations(lease).get(LEASE_RUN_ID)


def lease_decision(lease, run_id, now):
    """(action, why): ``create`` (no Lease yet), ``renew`` (ours), ``acquire`` (free), ``take over``
    (expired) or ``refuse`` (held by another run until it expires)."""
    if lease is None:
        return "create", "no run holds the Lease"
    holder = ((lease.get("spec") or {}).get("holderIdentity"))
    expiry = expires_at(lease)
    if holder and holder_run_id(lease) == run_id:
        return "renew", "this run (%s) holds it" % run_id
    if not holder:
        return "acquire", "the last holder released it"
    if expiry <= now:
        return "take over", "%s held it until %s, and did not renew" % (holder, micro_time(expiry))
    return "refuse", refusal(lease)


def renewal_refusal(lease, run_id):
    """Why ``run_id``, which held the Lease, may not renew it: None while it still holds it. A Lease released
    meanwhile is not taken again: its run's last step let go of it (a rerun of the same run that finished, while
    a process of the killed one still ran), or someone else did. Pure."""
    holder = (lease or {}).get("spec", {}).get("holderIdentity")
    if holder and holder_run_id(lease) == run_id:
        return None
    if not holder:
        return "it was released meanwhile (the run, or a rerun of it, ended)"
    return "another run took it over (%s)" % holder


def refusal(lease):
    """The one line that tells a second run who holds the Lease, since when and until when."""
    spec = lease.get("spec") or {}
    return ("Another run holds the Lease %s/%s: %s, since %s, until %s unless it renews. Nothing was changed; "
            "wait for it to finish, or rerun with its run id to continue it." % (
                lease["metadata"]["namespace"], lease["metadata"]["name"], spec.get("holderIdentity"),
                spec.get("acquireTime"), micro_time(expires_at(lease))))


def held_lease(name, namespace, run_id, holder, now, duration, current=None, progress=""):
    """The Lease as ``run_id`` holds it from ``now`` for ``duration`` seconds; ``current`` is the Lease
    read before (its resourceVersion guards the write; a renewal keeps its acquireTime); ``progress``, what
    the run is doing now, when it says."""
    spec = (current or {}).get("spec") or {}
    ours = current is not None and spec.get("holderIdentity") and holder_run_id(current) == run_id
    metadata = {"name": name, "namespace": namespace, "labels": dict(MANAGED_BY),
                "annotations": {LEASE_RUN_ID: run_id, LEASE_RENEW_DEADLINE: str(int(renew_deadline(duration)))}}
    if progress:
        metadata["annotations"][LEASE_PROGRESS] = progress
    metadata["annotations"].update(_kept_record(current))
    if current is not None:
        metadata["resourceVersion"] = current["metadata"]["resourceVersion"]
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": metadata,
        "spec": {
            "holderIdentity": holder,
            "leaseDurationSeconds": int(duration),
            "acquireTime": spec["acquireTime"] if ours else micro_time(now),
            "renewTime": micro_time(now),
            "leaseTransitions": (spec.get("leaseTransitions") or 0) + (0 if ours or current is None else 1),
        },
    }


def released_lease(current):
    """The Lease with nobody holding it (its history kept)."""
    spec = dict(current.get("spec") or {}, holderIdentity=None, renewTime=None, acquireTime=None)
    metadata = dict(current["metadata"], annotations=_kept_record(current))
    return dict(current, metadata=metadata, spec=spec)


def _annotations(lease):
    return ((lease or {}).get("metadata") or {}).get("annotations") or {}


def _kept_record(lease):
    record = _annotations(lease).get(LEASE_RETIRED)
    return {LEASE_RETIRED: record} if record else {}


def retired_by(lease, run_id):
    """The nodes the Lease records as retired by the rotation ``run_id`` (a frozenset; empty when it records
    another run's, or nothing readable)."""
    try:
        record = json.loads(_annotations(lease).get(LEASE_RETIRED) or "{}")
    except ValueError:
        return frozenset()
    if not isinstance(record, dict) or record.get("run_id") != run_id:
        return frozenset()
    return frozenset(name for name in record.get("nodes") or () if isinstance(name, str))


def with_retired(lease, run_id, names):
    """The Lease as read, recording ``names`` as retired by ``run_id`` too (a record of another run is replaced);
    its resourceVersion guards the write. None when there is nothing to add."""
    recorded = retired_by(lease, run_id)
    if set(names) <= recorded:
        return None
    record = json.dumps({"run_id": run_id, "nodes": sorted(recorded | set(names))}, separators=(",", ":"))
    metadata = dict(lease["metadata"], annotations=dict(_annotations(lease), **{LEASE_RETIRED: record}))
    return dict(lease, metadata=metadata)
