# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Cordon and uncordon nodes as plan.cordon decides, each patch guarded by the node's resourceVersion."""

from __future__ import annotations

from dataclasses import dataclass

from ansible_collections.kubeops.rotation.plugins.module_utils.api.client import each_concurrently
from ansible_collections.kubeops.rotation.plugins.module_utils.model.errors import InvalidInput, NotFound
from ansible_collections.kubeops.rotation.plugins.module_utils.model.inputs import (
    first_error,
    names_error,
    selector_error,
    text_error,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.model.times import utc_now
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.cordon import plan_cordon, plan_uncordon
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.phases import phase_annotations


@dataclass(frozen=True)
class CordonRequest:
    """Which nodes to cordon or uncordon (by name, and those matching ``selector``) and how: the cordon module's
    options. ``why`` is the reason recorded on a cordon; ``force`` undoes a cordon the collection did not make;
    ``rotation_id`` records the rotation's "cordoned" phase in the same patch."""

    names: tuple = ()
    selector: str | None = None
    state: str = "cordoned"
    why: str = ""
    taint: bool = False
    force: bool = False
    rotation_id: str | None = None

    @classmethod
    def from_params(cls, params, prefix=""):
        """The request of the cordon module's parameters, or InvalidInput naming the first that makes no sense
        (``prefix`` before its name), before anything is read."""
        error = first_error(names_error(prefix + "nodes", params["nodes"], "node"),
                            selector_error(prefix + "node_selector", params["node_selector"]),
                            text_error(prefix + "rotation_id", params["rotation_id"]))
        if error:
            raise InvalidInput(error)
        if params["rotation_id"] and params["state"] != "cordoned":
            raise InvalidInput("%srotation_id records a rotation's cordon; it needs state: cordoned." % prefix)
        return cls(tuple(params["nodes"] or ()), params["node_selector"], params["state"], params["reason"],
                   params["taint"], params["force"], params["rotation_id"])


def apply_cordon(client, request, check_mode, now=None, attempts=3):
    """Plan every node ``request`` (a CordonRequest) selects, then patch those that change, a few at once; returns
    the NodeChanges, sorted by name.

    With ``request.rotation_id``, a cordon also records the rotation's
    "cordoned" phase in the same patch. A patch whose resourceVersion test
    fails (the node changed in between) is planned again from a fresh read, up
    to ``attempts`` times.
    """
    nodes, missing = client.read_nodes(request.names, request.selector)
    if missing:
        raise NotFound.nodes(missing)
    cordoning = request.state == "cordoned"
    who = client.whoami()["username"] if cordoning else None
    now = now or utc_now()

    def plan(node):
        if cordoning:
            record = phase_annotations(node, request.rotation_id, "cordoned", now) if request.rotation_id else None
            change = plan_cordon(node, who, request.why, now, request.taint, record)
        else:
            change = plan_uncordon(node, request.force)
        return change, change.patch

    return each_concurrently(lambda node: client.update_node(node, plan, apply=not check_mode, attempts=attempts), nodes)
