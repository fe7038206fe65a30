# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""What the rotate_nodes role does when a batch fails, and the lines it says.

A batch blocked while its pods move is set aside when the user asked for that (rotate_nodes_on_blocked: skip), and
tried once more after the other batches; blocked a second time, it is left cordoned. Any other failure stops the
rotation there, with a line that says what state the batch was left in and how to resume. A run that lost its
Lease stops too, and touches nothing more: its placeholders stay up.
"""

from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.module_utils.plan.lease import LOST_LEASE_PREFIX

# What a batch failed in, as the role notes it before each stage (rotate_nodes_batch_stage).
CHECK, MOVE, GATES = "check", "move", "gates"


def batch_failure(batch, failure, rotation):
    """The outcome of a failed batch.

    ``batch``: the plan's batch (index, nodes). ``failure``: stage (the stage that failed), task (the failed task's
    name) and result (its result). ``rotation``: id, batches (how many the plan has), on_blocked, revisiting (the
    set-aside batches' second try), keep_warm (rotate_nodes_keep_warm_on_failure).

    Returns set_aside and left (the entries to add to each list), stopped (the report's entry of where the rotation
    stopped, None when it goes on), release_warm (whether to release the warm placeholders) and message (the line
    it stops with)."""
    reason = (failure.get("result") or {}).get("msg") or "see the task above"
    lease_lost = reason.startswith(LOST_LEASE_PREFIX)
    entry = {"batch": batch, "step": failure["task"], "reason": reason}
    goes_aside = rotation["on_blocked"] == "skip" and failure["stage"] == MOVE and not lease_lost
    if goes_aside:
        revisiting = rotation["revisiting"]
        return {"goes_aside": True, "set_aside": [] if revisiting else [entry], "left": [entry] if revisiting else [],
                "stopped": None, "release_warm": False, "message": None}
    return {"goes_aside": False, "set_aside": [], "left": [],
            "stopped": dict(entry, batch=batch["index"], nodes=batch["nodes"]),
            "release_warm": not rotation["keep_warm"] and not lease_lost,
            "message": _stopped_message(batch, failure, rotation, reason, lease_lost)}


def _stopped_message(batch, failure, rotation, reason, lease_lost):
    left_as = {CHECK: "Nothing in this batch was changed.", GATES: "The batch itself is done."}.get(
        failure["stage"], "Its nodes stay cordoned.")
    if rotation["keep_warm"]:
        warm = "The warm placeholders stay up (rotate_nodes_keep_warm_on_failure)."
    elif lease_lost:
        warm = "The warm placeholders stay up: this run no longer holds the Lease."
    else:
        warm = "The warm placeholders were released; a rerun warms again."
    return ('Batch %s/%s (%s) failed at "%s": %s %s %s Batches before it are done; rerun with rotate_nodes_id %s to '
            "continue from here." % (batch["index"], rotation["batches"], ", ".join(batch["nodes"]), failure["task"],
                                     reason, left_as, warm, rotation["id"]))


def batches_left_message(left, rotation_id):
    """The line a rotation fails with when batches set aside were blocked again and stay cordoned."""
    return ("%d batch(es) could not be drained and stay cordoned: %s The other batches are done; rerun with "
            "rotate_nodes_id %s once the cause is fixed." % (
                len(left), " ".join("batch %s (%s): %s" % (entry["batch"]["index"], ", ".join(entry["batch"]["nodes"]),
                                                           entry["reason"]) for entry in left), rotation_id))
