"""The rotate_nodes role's rescue of a failed batch (plan.batch_failure): set aside or stopped, and what it says."""

from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.module_utils.plan.batch_failure import (
    batch_failure,
    batches_left_message,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.lease import lost_lease_message

BATCH = {"index": 2, "nodes": ["node-3", "node-4"]}
BLOCKED = "blocked by PDB shop/web (currentHealthy 3, desiredHealthy 3, disruptionsAllowed 0)"


def rotation(**changes):
    return dict({"id": "r1", "batches": 3, "on_blocked": "stop", "revisiting": False, "keep_warm": False}, **changes)


def failure(stage="move", msg=BLOCKED, task="Move: evict the batch's pods"):
    return {"stage": stage, "task": task, "result": {"msg": msg} if msg is not None else {}}


def test_a_batch_blocked_while_its_pods_move_is_set_aside_when_asked():
    outcome = batch_failure(BATCH, failure(), rotation(on_blocked="skip"))
    entry = {"batch": BATCH, "step": "Move: evict the batch's pods", "reason": BLOCKED}
    assert outcome == {"goes_aside": True, "set_aside": [entry], "left": [], "stopped": None,
                       "release_warm": False, "message": None}


def test_blocked_again_on_its_second_try_it_is_left_cordoned():
    outcome = batch_failure(BATCH, failure(), rotation(on_blocked="skip", revisiting=True))
    assert outcome["goes_aside"] and outcome["set_aside"] == []
    assert [entry["reason"] for entry in outcome["left"]] == [BLOCKED]


def test_a_failure_at_another_stage_stops_even_when_blocked_batches_are_skipped():
    outcome = batch_failure(BATCH, failure(stage="check", msg="the batch no longer fits"), rotation(on_blocked="skip"))
    assert not outcome["goes_aside"]
    assert outcome["stopped"] == {"batch": 2, "nodes": ["node-3", "node-4"], "step": "Move: evict the batch's pods",
                                  "reason": "the batch no longer fits"}
    assert outcome["release_warm"]
    assert outcome["message"] == (
        'Batch 2/3 (node-3, node-4) failed at "Move: evict the batch\'s pods": the batch no longer fits Nothing in '
        "this batch was changed. The warm placeholders were released; a rerun warms again. Batches before it are "
        "done; rerun with rotate_nodes_id r1 to continue from here.")


def test_the_line_says_how_the_batch_was_left_at_each_stage():
    def said(stage):
        return batch_failure(BATCH, failure(stage=stage), rotation())["message"]
    assert "Its nodes stay cordoned." in said("move")
    assert "The batch itself is done." in said("gates")
    assert "Nothing in this batch was changed." in said("check")


def test_a_run_that_lost_its_lease_stops_and_leaves_its_placeholders_up():
    lost = lost_lease_message("kubeops-rotation", "kube-system", 300, 210, "timed out")
    outcome = batch_failure(BATCH, failure(msg=lost), rotation(on_blocked="skip"))
    assert not outcome["goes_aside"] and not outcome["release_warm"]
    assert "The warm placeholders stay up: this run no longer holds the Lease." in outcome["message"]


def test_placeholders_kept_on_failure_when_asked():
    outcome = batch_failure(BATCH, failure(stage="check"), rotation(keep_warm=True))
    assert not outcome["release_warm"]
    assert "The warm placeholders stay up (rotate_nodes_keep_warm_on_failure)." in outcome["message"]


def test_a_failed_task_without_a_message_points_at_the_task_above():
    outcome = batch_failure(BATCH, failure(msg=None), rotation())
    assert outcome["stopped"]["reason"] == "see the task above"


def test_the_batches_left_are_named_each_with_its_reason():
    left = [{"batch": BATCH, "step": "evict", "reason": BLOCKED},
            {"batch": {"index": 3, "nodes": ["node-5"]}, "step": "evict", "reason": "timed out"}]
    assert batches_left_message(left, "r1") == (
        "2 batch(es) could not be drained and stay cordoned: batch 2 (node-3, node-4): %s batch 3 (node-5): timed "
        "out The other batches are done; rerun with rotate_nodes_id r1 once the cause is fixed." % BLOCKED)
