# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Record how far a rotation got on its nodes, and retire them."""

from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.module_utils.model.nodes import node_name
from ansible_collections.kubeops.rotation.plugins.module_utils.model.times import utc_now
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.phases import phase_patch


def record_phase(client, names, rotation_id, phase, delete=False, check_mode=False):
    """Record the phase on each node (guarded by its resourceVersion) and delete the Node objects when
    ``delete``; returns per-node results. A node that is gone is reported, not an error."""
    nodes, missing = client.read_nodes(names)
    results = [{"name": name, "changed": False, "action": "gone"} for name in missing]
    now = utc_now()

    def plan(current):
        patch = phase_patch(current, rotation_id, phase, now)
        return patch, patch

    for node in nodes:
        patch = client.update_node(node, plan, apply=not check_mode)
        entry = {"name": node_name(node), "changed": bool(patch),
                 "action": "recorded %s" % phase if patch else "unchanged"}
        if delete:
            entry.update(changed=True, action="deleted")
            if not check_mode:
                client.delete_if_present(client.core.delete_node, node_name(node))
        results.append(entry)
    return sorted(results, key=lambda entry: entry["name"])
