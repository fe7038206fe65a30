from __future__ import annotations

import datetime

from ansible_collections.kubeops.rotation.plugins.module_utils.plan.lease import (
    expires_at,
    held_lease,
    lease_decision,
    refusal,
    released_lease,
)

NOW = datetime.datetime(2026, 12, 3, 12, 0, 0, tzinfo=datetime.timezone.utc)


def lease(run_id="r1", holder="r1 (AWX job 7)", renewed=NOW, duration=60, transitions=0):
    return held_lease("kubeops-rotation", "kube-system", run_id, holder, renewed, duration,
                      {"metadata": {"name": "kubeops-rotation", "namespace": "kube-system", "resourceVersion": "5"},
                       "spec": {"leaseTransitions": transitions}})


def test_nobody_holding_it_means_create_or_acquire():
    assert lease_decision(None, "r1", NOW)[0] == "create"
    assert lease_decision(released_lease(lease()), "r2", NOW)[0] == "acquire"


def test_the_same_run_renews_at_once_even_before_expiry():
    assert lease_decision(lease(), "r1", NOW + datetime.timedelta(seconds=5))[0] == "renew"


def test_another_run_is_refused_until_expiry_then_takes_over():
    held = lease(renewed=NOW, duration=60)
    action, why = lease_decision(held, "r2", NOW + datetime.timedelta(seconds=59))
    assert action == "refuse"
    assert "r1 (AWX job 7)" in why and "until 2026-12-03T12:01:00.000000Z" in why and "Nothing was changed" in why
    assert lease_decision(held, "r2", NOW + datetime.timedelta(seconds=60))[0] == "take over"


def test_a_renewal_keeps_the_acquire_time_and_a_take_over_counts_a_transition():
    first = dict(lease(renewed=NOW), metadata=dict(lease()["metadata"], resourceVersion="6"))
    later = NOW + datetime.timedelta(seconds=30)
    renewed = held_lease("kubeops-rotation", "kube-system", "r1", "r1", later, 60, first)
    assert renewed["spec"]["acquireTime"] == first["spec"]["acquireTime"]
    assert renewed["spec"]["renewTime"] == "2026-12-03T12:00:30.000000Z"
    transitions = first["spec"]["leaseTransitions"]
    assert renewed["metadata"]["resourceVersion"] == "6" and renewed["spec"]["leaseTransitions"] == transitions
    taken = held_lease("kubeops-rotation", "kube-system", "r2", "r2", later, 60, first)
    assert taken["spec"]["acquireTime"] == "2026-12-03T12:00:30.000000Z"
    assert taken["spec"]["leaseTransitions"] == transitions + 1
    assert taken["metadata"]["annotations"] == {"kubeops.io/run-id": "r2"}


def test_expiry_is_the_renewal_plus_the_duration_and_none_once_released():
    assert expires_at(lease(duration=90)) == NOW + datetime.timedelta(seconds=90)
    assert expires_at(released_lease(lease())) is None
    assert "kube-system/kubeops-rotation" in refusal(lease())
