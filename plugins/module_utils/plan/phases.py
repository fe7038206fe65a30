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
    KEEP_ANNOTATIONS,
    KEPT_BY,
    PHASE_AT,
    PLANNED_AT,
    ROTATING_LABEL,
    ROTATING_TAINT_KEY,
    ROTATION_ID,
    ROTATION_PHASE,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.model.nodes import node_labels, node_name, taints_of
from ansible_collections.kubeops.rotation.plugins.module_utils.model.patches import annotations_patch, guarded

PHASES = ("planned", "cordoned", "drained", "retired")
FINISHED_PHASES = ("drained", "retired")
# What a rollback records on the rotation's nodes: no phase of the rotation any more (recorded_phase is None).
ROLLED_BACK = "rolled-back"


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


def kept_by(node):
    """The rotation that keeps the node for its way back, or None."""
    return ((node.get("metadata") or {}).get("annotations") or {}).get(KEPT_BY)


def phase_patch(node, rotation_id, phase, now, keep=None):
    """The guarded JSON patch that records ``phase`` of ``rotation_id`` on the node (and, for
    ``planned``, the rotating taint and label, and when it was planned), or [] when there is nothing to change.
    ``keep`` true marks the node kept for the rotation's way back and protects it from the autoscalers; false
    takes that off again (only a keep of this rotation's)."""
    annotations = phase_annotations(node, rotation_id, phase, now)
    current = (node.get("metadata") or {}).get("annotations") or {}
    if phase == "planned" and PLANNED_AT not in current and recorded_phase(node, rotation_id) is None:
        annotations[PLANNED_AT] = now
    removed = ()
    if keep:
        annotations.update({KEPT_BY: rotation_id}, **KEEP_ANNOTATIONS)
    elif keep is not None and kept_by(node) == rotation_id:
        removed = (KEPT_BY,) + tuple(KEEP_ANNOTATIONS)
    operations = annotations_patch(node, annotations, removed)
    taints = taints_of(node)
    if phase == "planned" and not any(taint.get("key") == ROTATING_TAINT_KEY for taint in taints):
        operations.append({"op": "add", "path": "/spec/taints", "value": taints + [rotating_taint(rotation_id)]})
    if phase == "planned":
        operations.extend(annotations_patch(node, {ROTATING_LABEL: "true"}, field="labels"))
    return guarded(node, operations)


def rolled_back_patch(node, rotation_id, now):
    """The guarded JSON patch that ends ``rotation_id`` on a node of it, rolled back: its phase ROLLED_BACK, the
    rotating taint and label, and the keep and its protections, off; [] for a node the rotation never marked."""
    if recorded_phase(node, rotation_id) is None and kept_by(node) != rotation_id:
        return []
    removed = (KEPT_BY,) + tuple(KEEP_ANNOTATIONS) if kept_by(node) == rotation_id else ()
    operations = annotations_patch(node, {ROTATION_PHASE: ROLLED_BACK, PHASE_AT: now}, removed)
    taints = taints_of(node)
    if any(taint.get("key") == ROTATING_TAINT_KEY for taint in taints):
        operations.append({"op": "add", "path": "/spec/taints",
                           "value": [taint for taint in taints if taint.get("key") != ROTATING_TAINT_KEY]})
    operations.extend(annotations_patch(node, {}, (ROTATING_LABEL,), field="labels"))
    return guarded(node, operations)


def _of_rotation(node, rotation_id):
    """Whether ``rotation_id`` marked the node, whatever the phase (rolled back too), or keeps it."""
    annotations = (node.get("metadata") or {}).get("annotations") or {}
    return annotations.get(ROTATION_ID) == rotation_id or annotations.get(KEPT_BY) == rotation_id


def rotation_started(nodes, rotation_id):
    """When ``rotation_id`` marked the first of ``nodes`` planned (the API's timestamp), or None."""
    times = [((node.get("metadata") or {}).get("annotations") or {}).get(PLANNED_AT) for node in nodes
             if _of_rotation(node, rotation_id)]
    times = [moment for moment in times if moment]
    return min(times) if times else None


def way_back(nodes, rotation_id, pool_labels=None):
    """What a rollback of ``rotation_id`` works on, from every node of the cluster: {"started_at": when the
    rotation began, "nodes": those it marked (to uncordon and unmark), "kept": those it keeps, "new": the nodes
    that came since it began, of the new pool (``pool_labels``) when given (to move the pods off and release)}."""
    started = rotation_started(nodes, rotation_id)
    marked = sorted(node_name(node) for node in nodes if _of_rotation(node, rotation_id))
    kept = sorted(node_name(node) for node in nodes if kept_by(node) == rotation_id)
    new = sorted(node_name(node) for node in nodes if started and not _of_rotation(node, rotation_id)
                 and ((node.get("metadata") or {}).get("creationTimestamp") or "") >= started
                 and all(node_labels(node).get(key) == value for key, value in (pool_labels or {}).items()))
    return {"started_at": started, "nodes": marked, "kept": kept, "new": new}
