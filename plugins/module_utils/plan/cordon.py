# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Cordon and uncordon: a Node (API JSON) in, the change to make out.

A cordon made by the collection is recognised by its ``kubeops.io/cordoned-by``
annotation; only such cordons are undone unless forced, so a node that a
person or another tool cordoned stays cordoned.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ansible_collections.kubeops.rotation.plugins.module_utils.model.keys import (
    CORDON_ANNOTATIONS,
    CORDON_REASON,
    CORDON_TAINT,
    CORDONED_AT,
    CORDONED_BY,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.model.nodes import is_cordoned, taints_of
from ansible_collections.kubeops.rotation.plugins.module_utils.model.patches import annotations_patch, guarded


@dataclass(frozen=True)
class NodeChange:
    """What to do to one node and why; ``patch`` is a JSON patch, empty when nothing changes."""

    name: str
    action: str  # cordon, uncordon, none
    reason: str
    before: dict
    after: dict
    patch: list = field(default_factory=list)

    @property
    def changed(self):
        return bool(self.patch)

    def result(self):
        return {"name": self.name, "action": self.action, "changed": self.changed, "reason": self.reason,
                "unschedulable": self.after["unschedulable"], "cordoned_by": self.after["annotations"].get(
                    CORDONED_BY)}


def cordon_state(node):
    """The fields cordoning touches: spec.unschedulable, our annotations, our taint."""
    annotations = (node.get("metadata") or {}).get("annotations") or {}
    return {
        "unschedulable": is_cordoned(node),
        "annotations": {key: annotations[key] for key in CORDON_ANNOTATIONS if key in annotations},
        "taint": any(_is_our_taint(taint) for taint in taints_of(node)),
    }


def _is_our_taint(taint):
    return taint.get("key") == CORDON_TAINT["key"] and taint.get("effect") == CORDON_TAINT["effect"]


def _patch(node, before, after, record=None):
    """JSON patch from ``before`` to ``after`` (plus the annotations ``record``), guarded by the node's
    resourceVersion."""
    operations = []
    if before["unschedulable"] != after["unschedulable"]:
        operations.append({"op": "add", "path": "/spec/unschedulable", "value": after["unschedulable"]})
    values = {key: value for key, value in after["annotations"].items() if before["annotations"].get(key) != value}
    values.update(record or {})
    removed = [key for key in before["annotations"] if key not in after["annotations"]]
    operations.extend(annotations_patch(node, values, removed))
    if before["taint"] != after["taint"]:
        taints = [taint for taint in taints_of(node) if not _is_our_taint(taint)]
        if after["taint"]:
            taints.append(dict(CORDON_TAINT))
        operations.append({"op": "add", "path": "/spec/taints", "value": taints})
    return guarded(node, operations)


def _change(node, action, reason, after, record=None):
    before = cordon_state(node)
    return NodeChange(name=node["metadata"]["name"], action=action if before != after else "none", reason=reason,
                      before=before, after=after, patch=_patch(node, before, after, record))


def plan_cordon(node, who, why, now, taint=False, record=None):
    """Cordon ``node`` recording ``who``, ``why`` and ``now`` (RFC 3339), unless it already is cordoned.

    A node cordoned by someone else is left exactly as it is, so that our
    uncordon will later leave it cordoned too. ``record`` holds annotations
    to set in the same patch (a rotation's phase), whoever cordoned the node.
    """
    before = cordon_state(node)
    ours = CORDONED_BY in before["annotations"]
    if before["unschedulable"] and not ours:
        return _change(node, "none", "already cordoned by someone else; left as it is", before, record)
    if before["unschedulable"]:
        after = dict(before, taint=before["taint"] or taint)
        made = "already cordoned by %s at %s" % (before["annotations"].get(CORDONED_BY),
                                                 before["annotations"].get(CORDONED_AT))
        return _change(node, "cordon", made + ("; added the NoSchedule taint" if after != before else ""), after,
                       record)
    after = {"unschedulable": True, "annotations": {CORDONED_BY: who, CORDON_REASON: why or "", CORDONED_AT: now},
             "taint": taint}
    return _change(node, "cordon", "cordoned", after, record)


def plan_uncordon(node, force=False):
    """Undo our cordon of ``node``; a cordon of someone else's only when ``force``."""
    before = cordon_state(node)
    ours = CORDONED_BY in before["annotations"]
    cleared = {"unschedulable": False, "annotations": {}, "taint": False}
    if not before["unschedulable"]:
        reason = "removed leftover kubeops.io cordon marks" if before != cleared else "not cordoned"
        return _change(node, "uncordon", reason, cleared)
    if ours:
        return _change(node, "uncordon", "uncordoned (cordoned by %s)" % before["annotations"][CORDONED_BY], cleared)
    if force:
        return _change(node, "uncordon", "uncordoned by force (it was cordoned by someone else)", cleared)
    return _change(node, "none", "cordoned by someone else, not by kubeops.rotation; left cordoned "
                                 "(force: true uncordons it)", before)
