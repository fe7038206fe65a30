# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""JSON patches of API objects: annotation paths, annotation changes, and the resourceVersion guard."""

from __future__ import annotations


def annotation_path(key, field="annotations"):
    """The JSON patch path of annotation (or label) ``key`` ("/" and "~" escaped as JSON pointers want)."""
    return "/metadata/%s/" % field + key.replace("~", "~0").replace("/", "~1")


def annotations_patch(obj, values, removed=(), field="annotations"):
    """Operations that set the annotations (or, with ``field="labels"``, labels) ``values`` and remove the
    keys ``removed`` on ``obj``, creating the map when the object has none; only what differs."""
    current = (obj.get("metadata") or {}).get(field)
    if current is None:
        return [{"op": "add", "path": "/metadata/" + field, "value": dict(values)}] if values else []
    operations = [{"op": "add", "path": annotation_path(key, field), "value": value}
                  for key, value in values.items() if current.get(key) != value]
    operations.extend({"op": "remove", "path": annotation_path(key, field)} for key in removed if key in current)
    return operations


def guarded(obj, operations):
    """``operations`` led by a test of the object's resourceVersion, so that the patch fails (422)
    when the object changed since it was read; [] stays []."""
    if not operations:
        return []
    return [{"op": "test", "path": "/metadata/resourceVersion",
             "value": (obj.get("metadata") or {}).get("resourceVersion")}] + list(operations)
