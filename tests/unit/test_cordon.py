from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.module_utils.cordon import (
    CORDONED_BY,
    CORDON_TAINT,
    plan_cordon,
    plan_uncordon,
)

NOW = "2026-12-03T06:00:00Z"


def node(unschedulable=False, annotations=None, taints=None):
    return {"metadata": {"name": "n1", "resourceVersion": "42", "annotations": annotations},
            "spec": {"unschedulable": unschedulable, "taints": taints or []}}


def ours(**extra):
    return dict({CORDONED_BY: "admin", "kubeops.io/cordon-reason": "r", "kubeops.io/cordoned-at": NOW}, **extra)


def test_cordon_records_who_why_when_in_one_guarded_patch():
    change = plan_cordon(node(annotations={"other": "x"}), "admin", "new AMI", NOW)
    assert change.changed and change.action == "cordon"
    assert change.patch[0] == {"op": "test", "path": "/metadata/resourceVersion", "value": "42"}
    assert {"op": "add", "path": "/spec/unschedulable", "value": True} in change.patch
    assert {"op": "add", "path": "/metadata/annotations/kubeops.io~1cordoned-by", "value": "admin"} in change.patch
    assert change.after["annotations"]["kubeops.io/cordon-reason"] == "new AMI"


def test_cordon_of_a_node_without_annotations_adds_the_whole_map():
    change = plan_cordon(node(), "admin", "", NOW, taint=True)
    assert {"op": "add", "path": "/metadata/annotations", "value": change.after["annotations"]} in change.patch
    assert {"op": "add", "path": "/spec/taints", "value": [CORDON_TAINT]} in change.patch


def test_node_cordoned_by_someone_else_is_left_untouched():
    change = plan_cordon(node(unschedulable=True), "admin", "", NOW, taint=True)
    assert not change.changed and change.action == "none"
    assert "someone else" in change.reason


def test_cordoning_again_changes_nothing_and_keeps_the_first_record():
    change = plan_cordon(node(True, ours()), "bob", "other reason", "2027-01-01T00:00:00Z")
    assert not change.changed
    assert change.after["annotations"][CORDONED_BY] == "admin"


def test_uncordon_undoes_our_cordon_and_taint_but_keeps_other_taints():
    other = {"key": "gpu", "effect": "NoSchedule"}
    change = plan_uncordon(node(True, ours(), [other, CORDON_TAINT]))
    assert change.changed and change.action == "uncordon"
    assert {"op": "add", "path": "/spec/unschedulable", "value": False} in change.patch
    assert {"op": "add", "path": "/spec/taints", "value": [other]} in change.patch
    assert {"op": "remove", "path": "/metadata/annotations/kubeops.io~1cordoned-by"} in change.patch


def test_uncordon_leaves_someone_elses_cordon_unless_forced():
    kept = plan_uncordon(node(True))
    assert not kept.changed and kept.after["unschedulable"] is True
    assert "force" in kept.reason
    forced = plan_uncordon(node(True), force=True)
    assert forced.changed and forced.after["unschedulable"] is False


def test_uncordon_of_a_schedulable_node_is_a_no_op_or_cleans_leftovers():
    assert not plan_uncordon(node()).changed
    leftover = plan_uncordon(node(False, ours()))
    assert leftover.changed and "leftover" in leftover.reason
