# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The temporary ``kubeops.io/rebalancing`` taint that steers replacements to the planned nodes."""

from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.module_utils.model.keys import STEERING_TAINT_KEY
from ansible_collections.kubeops.rotation.plugins.module_utils.model.nodes import taints_of
from ansible_collections.kubeops.rotation.plugins.module_utils.model.patches import guarded


def is_steered(node):
    return any(taint.get("key") == STEERING_TAINT_KEY for taint in taints_of(node))


def without_steering(node):
    """The node as the scheduler will see it once the pass's taints are gone."""
    spec = dict(node.get("spec") or {})
    spec["taints"] = [taint for taint in taints_of(node) if taint.get("key") != STEERING_TAINT_KEY]
    return dict(node, spec=spec)


def steering_patch(node, effect):
    """The guarded JSON patch that puts the steering taint with ``effect`` on the node, or takes it
    off (``effect`` None); [] when the node is that way already."""
    taints = taints_of(node)
    wanted = [taint for taint in taints if taint.get("key") != STEERING_TAINT_KEY]
    if effect:
        wanted.append({"key": STEERING_TAINT_KEY, "value": "true", "effect": effect})
    return guarded(node, [{"op": "add", "path": "/spec/taints", "value": wanted}] if wanted != taints else [])
