# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Steering the scheduler with the temporary ``kubeops.io/rebalancing`` taint: towards the planned nodes
in a rebalance pass, and towards the zone a pod leaves while a rotation moves it."""

from __future__ import annotations

import contextlib

from ansible_collections.kubeops.rotation.plugins.module_utils.api.errors import ApiException, is_not_found
from ansible_collections.kubeops.rotation.plugins.module_utils.model.nodes import (
    is_cordoned,
    is_ready,
    node_name,
    zone_of,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.capacity import nodes_with_room
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.rebalance.steering import (
    is_steered,
    steering_patch,
)


def set_steering(client, nodes, effect):
    """Put the steering taint with ``effect`` on ``nodes`` (as listed), or take it off (``effect`` None): a
    patch for each node that needs one, no read first (a node changed since is read again, one deleted since
    is left alone)."""
    for node in nodes:
        try:
            client.update_node(node, lambda current: (None, steering_patch(current, effect)))
        except ApiException as exc:
            if not is_not_found(exc):
                raise


def clear_steering(client, names):
    """Take the steering taint off the nodes ``names`` that still carry it: one list, a patch for each."""
    wanted = set(names)
    if wanted:
        set_steering(client, [node for node in client.list_all(client.core.list_node)
                              if node_name(node) in wanted and is_steered(node)], None)


def zones_of_nodes(client, names):
    """The zones of the nodes ``names`` that exist and have one."""
    nodes, _missing = client.read_nodes(names)
    return {zone_of(node) for node in nodes} - {None}


@contextlib.contextmanager
def keeping_zones(client, zones, exclude_nodes=(), request=None):
    """While the block runs, the Ready, uncordoned nodes outside ``zones`` (and not in ``exclude_nodes``)
    carry the steering taint (PreferNoSchedule), so that the pods replaced meanwhile come back in their
    own zone when it has room; yields the steered node names. Taints a killed run left are removed first.
    With no zone nothing is read or steered.

    With ``request`` (plan.capacity.smallest_request of the pods that will move), only the nodes with
    room for it now are steered: a full node takes none of them anyway, and a large cluster would
    otherwise be patched node by node, twice, for every step.
    """
    if not zones:
        yield []
        return
    nodes = client.list_all(client.core.list_node)
    excluded = set(exclude_nodes or ())
    candidates = [node for node in nodes if zone_of(node) and zone_of(node) not in zones and is_ready(node)
                  and not is_cordoned(node) and node_name(node) not in excluded]
    if request and candidates:
        roomy = nodes_with_room(candidates, client.list_all(client.core.list_pod_for_all_namespaces), request)
        candidates = [node for node in candidates if node_name(node) in roomy]
    steered = sorted(node_name(node) for node in candidates)
    set_steering(client, [node for node in nodes if is_steered(node) and node_name(node) not in steered], None)
    try:
        set_steering(client, candidates, "PreferNoSchedule")
        yield steered
    finally:
        clear_steering(client, steered)
