from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.module_utils.model.keys import PHASE_AT, ROTATION_ID, ROTATION_PHASE
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.phases import (
    phase_annotations,
    phase_patch,
    recorded_phase,
    rolled_back_patch,
    rotation_started,
)
from builders import GUARD, node

NOW = "2026-12-03T06:00:00Z"
ROTATING = {"key": "kubeops.io/rotating", "value": "r1", "effect": "PreferNoSchedule"}


def at(phase, rotation_id="r1", taints=()):
    return node(annotations={ROTATION_ID: rotation_id, ROTATION_PHASE: phase, PHASE_AT: "2026-12-03T05:00:00Z"},
                taints=taints)


def test_recorded_phase_is_only_that_of_the_same_rotation_and_a_known_phase():
    assert recorded_phase(at("drained"), "r1") == "drained"
    assert recorded_phase(at("drained"), "r2") is None
    assert recorded_phase(at("exploded"), "r1") is None
    assert recorded_phase(node(), "r1") is None


def test_phase_annotations_move_a_node_forward_only():
    cordoned = {ROTATION_ID: "r1", ROTATION_PHASE: "cordoned", PHASE_AT: NOW}
    assert phase_annotations(node(), "r1", "cordoned", NOW) == cordoned
    assert phase_annotations(at("cordoned"), "r1", "drained", NOW)[ROTATION_PHASE] == "drained"
    assert phase_annotations(at("drained"), "r1", "drained", NOW) == {}
    assert phase_annotations(at("retired"), "r1", "cordoned", NOW) == {}


def test_another_rotations_phase_is_replaced():
    assert phase_annotations(at("retired", "r0"), "r1", "cordoned", NOW) == {
        ROTATION_ID: "r1", ROTATION_PHASE: "cordoned", PHASE_AT: NOW}


def test_phase_patch_is_guarded_and_creates_the_annotations_map_when_missing():
    assert phase_patch(node(), "r1", "cordoned", NOW) == [
        GUARD, {"op": "add", "path": "/metadata/annotations",
                "value": {ROTATION_ID: "r1", ROTATION_PHASE: "cordoned", PHASE_AT: NOW}}]


def test_phase_patch_sets_only_the_changed_annotations():
    assert phase_patch(at("cordoned"), "r1", "drained", NOW) == [
        GUARD,
        {"op": "add", "path": "/metadata/annotations/kubeops.io~1rotation-phase", "value": "drained"},
        {"op": "add", "path": "/metadata/annotations/kubeops.io~1rotation-phase-at", "value": NOW}]


def test_phase_patch_never_moves_a_node_back():
    assert phase_patch(at("drained"), "r1", "cordoned", NOW) == []


def test_planned_is_the_first_phase_and_cordoned_follows_it():
    planned = at("planned")
    assert recorded_phase(planned, "r1") == "planned"
    assert phase_annotations(planned, "r1", "cordoned", NOW)[ROTATION_PHASE] == "cordoned"
    assert phase_annotations(at("cordoned"), "r1", "planned", NOW) == {}


LABEL = {"op": "add", "path": "/metadata/labels/kubeops.io~1rotating", "value": "true"}


def test_planned_adds_the_rotating_taint_and_label_besides_the_annotations_keeping_the_other_taints():
    spot = {"key": "spot", "effect": "NoSchedule"}
    assert phase_patch(node(taints=[spot]), "r1", "planned", NOW) == [
        GUARD, {"op": "add", "path": "/metadata/annotations",
                "value": {ROTATION_ID: "r1", ROTATION_PHASE: "planned", PHASE_AT: NOW,
                          "kubeops.io/rotation-planned-at": NOW}},
        {"op": "add", "path": "/spec/taints", "value": [spot, ROTATING]}, LABEL]


def test_planned_adds_the_rotating_taint_and_label_only_when_they_are_missing():
    labelled = at("planned", taints=[ROTATING])
    labelled["metadata"]["labels"]["kubeops.io/rotating"] = "true"
    assert phase_patch(labelled, "r1", "planned", NOW) == []
    assert phase_patch(at("planned", taints=[ROTATING]), "r1", "planned", NOW) == [GUARD, LABEL]
    assert phase_patch(at("planned"), "r1", "planned", NOW) == [
        GUARD, {"op": "add", "path": "/spec/taints", "value": [ROTATING]}, LABEL], "a rerun puts back what was removed"


def test_only_planned_adds_the_rotating_taint():
    def taint_operations(phase):
        return [operation for operation in phase_patch(node(), "r1", phase, NOW) if operation["path"] == "/spec/taints"]

    assert taint_operations("planned") == [{"op": "add", "path": "/spec/taints", "value": [ROTATING]}]
    assert taint_operations("cordoned") == taint_operations("drained") == taint_operations("retired") == []


def test_a_kept_node_is_marked_and_protected_and_a_rollback_takes_every_mark_of_the_rotation_off():
    kept = at("cordoned")
    patch = phase_patch(kept, "r1", "drained", NOW, keep=True)
    values = {operation["path"]: operation["value"] for operation in patch if operation["op"] == "add"}
    assert values["/metadata/annotations/kubeops.io~1kept-by"] == "r1"
    assert values["/metadata/annotations/karpenter.sh~1do-not-disrupt"] == "true"
    assert values["/metadata/annotations/cluster-autoscaler.kubernetes.io~1scale-down-disabled"] == "true"
    marked = at("drained", taints=[ROTATING])
    marked["metadata"]["annotations"].update({"kubeops.io/kept-by": "r1", "karpenter.sh/do-not-disrupt": "true",
                                              "cluster-autoscaler.kubernetes.io/scale-down-disabled": "true"})
    marked["metadata"]["labels"]["kubeops.io/rotating"] = "true"
    released = phase_patch(marked, "r1", "retired", NOW, keep=False)
    assert {operation["path"] for operation in released if operation["op"] == "remove"} == {
        "/metadata/annotations/kubeops.io~1kept-by", "/metadata/annotations/karpenter.sh~1do-not-disrupt",
        "/metadata/annotations/cluster-autoscaler.kubernetes.io~1scale-down-disabled"}
    back = rolled_back_patch(marked, "r1", NOW)
    assert {"op": "add", "path": "/spec/taints", "value": []} in back
    assert {"op": "remove", "path": "/metadata/labels/kubeops.io~1rotating"} in back
    assert {"op": "add", "path": "/metadata/annotations/kubeops.io~1rotation-phase", "value": "rolled-back"} in back
    assert rolled_back_patch(node(), "r1", NOW) == [], "a node the rotation never marked"
    assert rotation_started([at("planned"), node()], "r1") is None
