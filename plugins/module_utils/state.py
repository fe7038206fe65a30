# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The node annotations that make a rotation resumable: its id and how far each node got."""

from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.module_utils.client import ApiException
from ansible_collections.kubeops.rotation.plugins.module_utils.nodes import annotation_path
from ansible_collections.kubeops.rotation.plugins.module_utils.planning import ROTATION_ID, ROTATION_PHASE
from ansible_collections.kubeops.rotation.plugins.module_utils.times import utc_now

PHASES = ("cordoned", "drained", "retired")
PHASE_AT = "kubeops.io/rotation-phase-at"


def phase_patch(node, rotation_id, phase, now):
    """The JSON patch that records ``phase`` of ``rotation_id`` on the node, or [] when it is there
    already or further on (a rerun never moves a node back). Pure."""
    annotations = (node.get("metadata") or {}).get("annotations") or {}
    if annotations.get(ROTATION_ID) == rotation_id and annotations.get(ROTATION_PHASE) in PHASES and \
            PHASES.index(annotations[ROTATION_PHASE]) >= PHASES.index(phase):
        return []
    values = {ROTATION_ID: rotation_id, ROTATION_PHASE: phase, PHASE_AT: now}
    if not annotations and (node.get("metadata") or {}).get("annotations") is None:
        return [{"op": "add", "path": "/metadata/annotations", "value": values}]
    return [{"op": "add", "path": annotation_path(key), "value": value} for key, value in values.items()]


def record_phase(client, names, rotation_id, phase, delete=False, check_mode=False):
    """Record the phase on each node (and delete the Node objects when ``delete``); returns per-node results."""
    nodes, missing = client.read_nodes(names)
    results = [{"name": name, "changed": False, "action": "gone"} for name in missing]
    now = utc_now()
    for node in nodes:
        name = node["metadata"]["name"]
        patch = phase_patch(node, rotation_id, phase, now)
        if patch and not check_mode:
            client.core.patch_node(name, patch)
        entry = {"name": name, "changed": bool(patch), "action": "recorded %s" % phase if patch else "unchanged"}
        if delete:
            entry.update(changed=True, action="deleted")
            if not check_mode:
                try:
                    client.core.delete_node(name)
                except ApiException as exc:
                    if exc.status != 404:
                        raise
        results.append(entry)
    return sorted(results, key=lambda entry: entry["name"])
