# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Pure planning of cordon and uncordon: a Node (API JSON) in, the change to make out.

A cordon made by the collection is recognised by its ``kubeops.io/cordoned-by``
annotation; only such cordons are undone unless forced, so a node that a
person or another tool cordoned stays cordoned.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ansible_collections.kubeops.rotation.plugins.module_utils.nodes import annotation_path, guarded
from ansible_collections.kubeops.rotation.plugins.module_utils.times import utc_now

CORDONED_BY = "kubeops.io/cordoned-by"
CORDON_REASON = "kubeops.io/cordon-reason"
CORDONED_AT = "kubeops.io/cordoned-at"
CORDON_ANNOTATIONS = (CORDONED_BY, CORDON_REASON, CORDONED_AT)
CORDON_TAINT = {"key": "kubeops.io/cordoned", "value": "true", "effect": "NoSchedule"}


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
    metadata = node.get("metadata") or {}
    spec = node.get("spec") or {}
    annotations = metadata.get("annotations") or {}
    return {
        "unschedulable": bool(spec.get("unschedulable")),
        "annotations": {key: annotations[key] for key in CORDON_ANNOTATIONS if key in annotations},
        "taint": any(_is_our_taint(taint) for taint in spec.get("taints") or []),
    }


def _is_our_taint(taint):
    return taint.get("key") == CORDON_TAINT["key"] and taint.get("effect") == CORDON_TAINT["effect"]


def _patch(node, before, after):
    """JSON patch from ``before`` to ``after``, guarded by the node's resourceVersion."""
    metadata = node.get("metadata") or {}
    operations = []
    if before["unschedulable"] != after["unschedulable"]:
        operations.append({"op": "add", "path": "/spec/unschedulable", "value": after["unschedulable"]})
    if before["annotations"] != after["annotations"]:
        if metadata.get("annotations") is None:
            operations.append({"op": "add", "path": "/metadata/annotations", "value": dict(after["annotations"])})
        else:
            for key in CORDON_ANNOTATIONS:
                path = annotation_path(key)
                if key in after["annotations"] and after["annotations"][key] != before["annotations"].get(key):
                    operations.append({"op": "add", "path": path, "value": after["annotations"][key]})
                elif key in before["annotations"] and key not in after["annotations"]:
                    operations.append({"op": "remove", "path": path})
    if before["taint"] != after["taint"]:
        taints = [taint for taint in (node.get("spec") or {}).get("taints") or [] if not _is_our_taint(taint)]
        if after["taint"]:
            taints.append(dict(CORDON_TAINT))
        operations.append({"op": "add", "path": "/spec/taints", "value": taints})
    return guarded(node, operations)


def _change(node, action, reason, after):
    before = cordon_state(node)
    return NodeChange(name=node["metadata"]["name"], action=action if before != after else "none", reason=reason,
                      before=before, after=after, patch=_patch(node, before, after))


def plan_cordon(node, who, why, now, taint=False):
    """Cordon ``node`` recording ``who``, ``why`` and ``now`` (RFC 3339), unless it already is cordoned.

    A node cordoned by someone else is left exactly as it is, so that our
    uncordon will later leave it cordoned too.
    """
    before = cordon_state(node)
    ours = CORDONED_BY in before["annotations"]
    if before["unschedulable"] and not ours:
        return _change(node, "none", "already cordoned by someone else; left as it is", before)
    if before["unschedulable"]:
        after = dict(before, taint=before["taint"] or taint)
        made = "already cordoned by %s at %s" % (before["annotations"].get(CORDONED_BY),
                                                 before["annotations"].get(CORDONED_AT))
        return _change(node, "cordon", made + ("; added the NoSchedule taint" if after != before else ""), after)
    after = {"unschedulable": True, "annotations": {CORDONED_BY: who, CORDON_REASON: why or "", CORDONED_AT: now},
             "taint": taint}
    return _change(node, "cordon", "cordoned", after)


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


class NodesNotFound(Exception):
    """Some named nodes do not exist; nothing was changed."""


def apply_cordon(client, names, selector, state, why, taint, force, check_mode, now=None, attempts=3):
    """Plan every selected node, then patch those that change; returns the NodeChanges, sorted by name.

    A patch whose resourceVersion test fails (the node changed in between) is
    planned again from a fresh read, up to ``attempts`` times.
    """
    nodes, missing = client.read_nodes(names, selector)
    if missing:
        raise NodesNotFound("No node named %s; nothing was changed." % ", ".join(sorted(missing)))
    who = client.whoami()["username"] if state == "cordoned" else None
    now = now or utc_now()

    def plan(node):
        change = plan_cordon(node, who, why, now, taint) if state == "cordoned" else plan_uncordon(node, force)
        return change, change.patch

    return [client.update_node(node, plan, apply=not check_mode, attempts=attempts) for node in nodes]
