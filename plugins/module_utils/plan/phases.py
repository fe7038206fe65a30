# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""How far a rotation got on each node: the annotations that make a rerun resume.

``planned`` marks every node of a rotation before the first batch moves
anything: besides the annotations it puts the taint ``kubeops.io/rotating``
(PreferNoSchedule) on the node, so that the scheduler keeps the pods that
leave one batch off the nodes of the later ones while it has other room, and
the label ``kubeops.io/rotating=true``, by which warm placeholders keep off
them (an autoscaler reads labels, not taints or names, when it decides
whether a placeholder needs a new node).
"""

from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.module_utils.model.keys import (
    PHASE_AT,
    ROTATING_LABEL,
    ROTATING_TAINT_KEY,
    ROTATION_ID,
    ROTATION_PHASE,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.model.nodes import taints_of
from ansible_collections.kubeops.rotation.plugins.module_utils.model.patches import annotations_patch, guarded

PHASES = ("planned", "cordoned", "drained", "retired")
FINISHED_PHASES = ("drained", "retired")


def recorded_phase(node, rotation_id):
    """The phase ``rotation_id`` recorded on the node, or None (another rotation's, or none)."""
    annotations = (node.get("metadata") or {}).get("annotations") or {}
    if annotations.get(ROTATION_ID) == rotation_id and annotations.get(ROTATION_PHASE) in PHASES:
        return annotations[ROTATION_PHASE]
    return None


def phase_annotations(node, rotation_id, phase, now):
    """The annotations that record ``phase`` of ``rotation_id`` on the node, or {} when it is there
    already or further on (a rerun never moves a node back)."""
    recorded = recorded_phase(node, rotation_id)
    if recorded and PHASES.index(recorded) >= PHASES.index(phase):
        return {}
    return {ROTATION_ID: rotation_id, ROTATION_PHASE: phase, PHASE_AT: now}


def rotating_taint(rotation_id):
    return {"key": ROTATING_TAINT_KEY, "value": rotation_id, "effect": "PreferNoSchedule"}


def phase_patch(node, rotation_id, phase, now):
    """The guarded JSON patch that records ``phase`` of ``rotation_id`` on the node (and, for
    ``planned``, the rotating taint and label), or [] when there is nothing to change."""
    operations = annotations_patch(node, phase_annotations(node, rotation_id, phase, now))
    taints = taints_of(node)
    if phase == "planned" and not any(taint.get("key") == ROTATING_TAINT_KEY for taint in taints):
        operations.append({"op": "add", "path": "/spec/taints", "value": taints + [rotating_taint(rotation_id)]})
    if phase == "planned":
        operations.extend(annotations_patch(node, {ROTATING_LABEL: "true"}, field="labels"))
    return guarded(node, operations)
