# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Cordon and uncordon nodes as plan.cordon decides, each patch guarded by the node's resourceVersion."""

from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.module_utils.api.client import each_at_once
from ansible_collections.kubeops.rotation.plugins.module_utils.model.errors import NotFound
from ansible_collections.kubeops.rotation.plugins.module_utils.model.times import utc_now
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.cordon import plan_cordon, plan_uncordon
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.phases import phase_annotations


def apply_cordon(client, names, selector, state, why, taint, force, check_mode, rotation_id=None, now=None,
                 attempts=3):
    """Plan every selected node, then patch those that change, a few at once; returns the NodeChanges, sorted by
    name.

    With ``rotation_id``, a cordon also records the rotation's "cordoned"
    phase in the same patch. A patch whose resourceVersion test fails (the
    node changed in between) is planned again from a fresh read, up to
    ``attempts`` times.
    """
    nodes, missing = client.read_nodes(names, selector)
    if missing:
        raise NotFound.nodes(missing)
    who = client.whoami()["username"] if state == "cordoned" else None
    now = now or utc_now()

    def plan(node):
        if state == "cordoned":
            record = phase_annotations(node, rotation_id, "cordoned", now) if rotation_id else None
            change = plan_cordon(node, who, why, now, taint, record)
        else:
            change = plan_uncordon(node, force)
        return change, change.patch

    return each_at_once(lambda node: client.update_node(node, plan, apply=not check_mode, attempts=attempts), nodes)
