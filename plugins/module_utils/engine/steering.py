# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Steering the scheduler with the temporary ``kubeops.io/rebalancing`` taint: towards the planned nodes
in a rebalance pass, and towards the zone a pod leaves while a rotation moves it."""

from __future__ import annotations

import contextlib

from ansible_collections.kubeops.rotation.plugins.module_utils.model.nodes import (
    is_cordoned,
    is_ready,
    node_name,
    zone_of,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.rebalance.steering import (
    is_steered,
    steering_patch,
)


def set_steering(client, names, effect):
    """Put the steering taint with ``effect`` on nodes ``names``, or take it off (``effect`` None);
    a node deleted meanwhile is left alone."""
    for name in names:
        node = client.read_or_none(client.core.read_node, name)
        if node is not None:
            client.update_node(node, lambda current: (None, steering_patch(current, effect)))


def zones_of_nodes(client, names):
    """The zones of the nodes ``names`` that exist and have one."""
    nodes, _missing = client.read_nodes(names)
    return {zone_of(node) for node in nodes} - {None}


@contextlib.contextmanager
def keeping_zones(client, zones, exclude_nodes=()):
    """While the block runs, the Ready, uncordoned nodes outside ``zones`` (and not in ``exclude_nodes``)
    carry the steering taint (PreferNoSchedule), so that the pods replaced meanwhile come back in their
    own zone when it has room; yields the steered node names. Taints a killed run left are removed first.
    With no zone nothing is read or steered."""
    if not zones:
        yield []
        return
    nodes = client.list_all(client.core.list_node)
    leftover = [node_name(node) for node in nodes if is_steered(node)]
    excluded = set(exclude_nodes or ())
    steered = sorted(node_name(node) for node in nodes if zones and zone_of(node) and zone_of(node) not in zones
                     and is_ready(node) and not is_cordoned(node) and node_name(node) not in excluded)
    set_steering(client, [name for name in leftover if name not in steered], None)
    try:
        set_steering(client, steered, "PreferNoSchedule")
        yield steered
    finally:
        set_steering(client, steered, None)
