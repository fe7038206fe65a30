from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.module_utils.model.keys import (
    CORDON_REASON,
    CORDON_TAINT,
    CORDONED_AT,
    CORDONED_BY,
    PHASE_AT,
    ROTATION_ID,
    ROTATION_PHASE,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.cordon import (
    cordon_state,
    plan_cordon,
    plan_uncordon,
)
from builders import GUARD, node

NOW = "2026-12-03T06:00:00Z"
RECORD = {ROTATION_ID: "r1", ROTATION_PHASE: "cordoned", PHASE_AT: NOW}


def ours(**extra):
    return dict({CORDONED_BY: "admin", CORDON_REASON: "r", CORDONED_AT: NOW}, **extra)


def test_cordon_records_who_why_when_in_one_guarded_patch():
    change = plan_cordon(node(annotations={"other": "x"}), "admin", "new AMI", NOW)
    assert change.changed and change.action == "cordon"
    assert change.patch[0] == GUARD
    assert {"op": "add", "path": "/spec/unschedulable", "value": True} in change.patch
    assert {"op": "add", "path": "/metadata/annotations/kubeops.io~1cordoned-by", "value": "admin"} in change.patch
    assert change.after["annotations"]["kubeops.io/cordon-reason"] == "new AMI"
    assert change.result() == {"name": "n1", "action": "cordon", "changed": True, "reason": "cordoned",
                               "unschedulable": True, "cordoned_by": "admin"}


def test_cordon_of_a_node_without_annotations_adds_the_whole_map():
    change = plan_cordon(node(), "admin", "", NOW, taint=True)
    assert {"op": "add", "path": "/metadata/annotations", "value": change.after["annotations"]} in change.patch
    assert change.after["annotations"] == {CORDONED_BY: "admin", CORDON_REASON: "", CORDONED_AT: NOW}
    assert {"op": "add", "path": "/spec/taints", "value": [CORDON_TAINT]} in change.patch


def test_node_cordoned_by_someone_else_is_left_untouched():
    change = plan_cordon(node(unschedulable=True), "admin", "", NOW, taint=True)
    assert not change.changed and change.action == "none"
    assert "someone else" in change.reason


def test_cordoning_again_changes_nothing_and_keeps_the_first_record():
    change = plan_cordon(node(unschedulable=True, annotations=ours()), "bob", "other reason", "2027-01-01T00:00:00Z")
    assert not change.changed
    assert change.after["annotations"][CORDONED_BY] == "admin"


def test_cordoning_again_with_taint_adds_only_the_taint():
    change = plan_cordon(node(unschedulable=True, annotations=ours()), "bob", "", NOW, taint=True)
    assert change.patch == [GUARD, {"op": "add", "path": "/spec/taints", "value": [CORDON_TAINT]}]
    assert change.reason == "already cordoned by admin at %s; added the NoSchedule taint" % NOW


def test_record_goes_into_the_same_guarded_patch_as_the_cordon():
    change = plan_cordon(node(annotations={"other": "x"}), "admin", "rotation", NOW, record=RECORD)
    assert change.patch[0] == GUARD
    assert {"op": "add", "path": "/spec/unschedulable", "value": True} in change.patch
    for key, value in RECORD.items():
        assert {"op": "add", "path": "/metadata/annotations/" + key.replace("/", "~1"), "value": value} \
            in change.patch
    assert len(change.patch) == 1 + 1 + 3 + len(RECORD)


def test_record_on_a_node_without_annotations_is_part_of_the_new_map():
    change = plan_cordon(node(), "admin", "", NOW, record=RECORD)
    assert {"op": "add", "path": "/metadata/annotations",
            "value": dict(change.after["annotations"], **RECORD)} in change.patch


def test_record_is_written_also_on_a_node_cordoned_by_someone_else_which_stays_as_it_is():
    change = plan_cordon(node(unschedulable=True, annotations={}), "admin", "", NOW, record=RECORD)
    assert change.action == "none" and change.changed
    assert change.patch == [GUARD] + [{"op": "add", "path": "/metadata/annotations/" + key.replace("/", "~1"),
                                       "value": value} for key, value in RECORD.items()]
    assert change.after == cordon_state(node(unschedulable=True))


def test_record_already_on_the_node_changes_nothing():
    cordoned = node(unschedulable=True, annotations=dict(ours(), **RECORD))
    assert plan_cordon(cordoned, "admin", "", NOW, record=RECORD).patch == []


def test_uncordon_undoes_our_cordon_and_taint_but_keeps_other_taints():
    other = {"key": "gpu", "effect": "NoSchedule"}
    change = plan_uncordon(node(unschedulable=True, annotations=ours(), taints=[other, CORDON_TAINT]))
    assert change.changed and change.action == "uncordon"
    assert change.patch[0] == GUARD
    assert {"op": "add", "path": "/spec/unschedulable", "value": False} in change.patch
    assert {"op": "add", "path": "/spec/taints", "value": [other]} in change.patch
    assert {"op": "remove", "path": "/metadata/annotations/kubeops.io~1cordoned-by"} in change.patch


def test_uncordon_leaves_someone_elses_cordon_unless_forced():
    kept = plan_uncordon(node(unschedulable=True))
    assert not kept.changed and kept.after["unschedulable"] is True
    assert "force" in kept.reason
    forced = plan_uncordon(node(unschedulable=True), force=True)
    assert forced.changed and forced.after["unschedulable"] is False


def test_uncordon_of_a_schedulable_node_is_a_no_op_or_cleans_leftovers():
    assert not plan_uncordon(node()).changed
    leftover = plan_uncordon(node(annotations=ours()))
    assert leftover.changed and "leftover" in leftover.reason
