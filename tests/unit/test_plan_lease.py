from __future__ import annotations

import datetime

from ansible_collections.kubeops.rotation.plugins.module_utils.plan.lease import (
    expires_at,
    held_lease,
    lease_decision,
    lost_lease_message,
    refusal,
    released_lease,
    renew_deadline,
    renew_request_timeout,
    renew_retry_seconds,
    renewal_refusal,
    retired_by,
    with_retired,
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


def test_a_run_renews_only_a_lease_it_still_holds_never_one_released_meanwhile():
    assert renewal_refusal(lease(), "r1") is None
    assert renewal_refusal(lease(renewed=NOW - datetime.timedelta(hours=1)), "r1") is None, "expired, not taken"
    assert "released meanwhile" in renewal_refusal(released_lease(lease()), "r1")
    assert "released meanwhile" in renewal_refusal(None, "r1")
    assert renewal_refusal(lease("r2", "r2 (AWX job 8)"), "r1") == "another run took it over (r2 (AWX job 8))"


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
    assert taken["metadata"]["annotations"] == {"kubeops.io/run-id": "r2", "kubeops.io/renew-deadline-seconds": "40"}


def test_expiry_is_the_renewal_plus_the_duration_and_none_once_released():
    assert expires_at(lease(duration=90)) == NOW + datetime.timedelta(seconds=90)
    assert expires_at(released_lease(lease())) is None
    assert "kube-system/kubeops-rotation" in refusal(lease())


def test_the_renew_deadline_leaves_a_third_of_the_duration_for_what_was_in_flight_and_attempts_fit_in_it():
    for duration in (5, 15, 20, 60, 300, 3600):
        deadline = renew_deadline(duration)
        assert deadline == duration * 2 / 3
        connect, read = renew_request_timeout(duration)
        assert connect <= read and 3 * read <= deadline + 1e-9 or read == 1.0
        assert 1.0 <= renew_retry_seconds(duration) <= 5.0 and renew_retry_seconds(duration) < deadline
    assert renew_request_timeout(300) == (5.0, 10.0)


def test_the_lost_lease_message_says_how_long_what_was_left_and_how_to_resume():
    message = lost_lease_message("kubeops-rotation", "kube-system", 30, 20.4, "Cannot reach the API server: timed out")
    assert message.startswith("Lost the Lease kube-system/kubeops-rotation: not renewed for 20 s, past its renew "
                              "deadline of 20 s (it expires 30 s after the last renewal)")
    assert "timed out" in message and "rerun with the same run id" in message


def test_the_nodes_a_rotation_retired_are_recorded_for_that_rotation_only():
    held = lease()
    assert retired_by(held, "r1") == frozenset()
    recorded = with_retired(held, "r1", ["node-2", "node-1"])
    assert recorded["metadata"]["resourceVersion"] == "5"
    assert retired_by(recorded, "r1") == {"node-1", "node-2"}
    assert retired_by(recorded, "r2") == frozenset()
    more = with_retired(recorded, "r1", ["node-3"])
    assert retired_by(more, "r1") == {"node-1", "node-2", "node-3"}
    assert with_retired(more, "r1", ["node-1"]) is None
    assert retired_by(with_retired(more, "r2", ["node-9"]), "r2") == {"node-9"}


def test_the_record_outlives_renewals_a_release_and_another_run_taking_the_lease():
    recorded = with_retired(lease(), "r1", ["node-1"])
    renewed = held_lease("kubeops-rotation", "kube-system", "r1", "r1", NOW, 60, recorded)
    released = released_lease(renewed)
    taken = held_lease("kubeops-rotation", "kube-system", "r2", "r2", NOW, 60, released)
    for later in (renewed, released, taken):
        assert retired_by(later, "r1") == {"node-1"}


def test_a_record_that_is_not_ours_or_not_readable_records_nothing():
    unreadable = dict(lease(), metadata={"annotations": {"kubeops.io/retired-nodes": "not json"}})
    assert retired_by(unreadable, "r1") == frozenset()
    assert retired_by(None, "r1") == frozenset()
