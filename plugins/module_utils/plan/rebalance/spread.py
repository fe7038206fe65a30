# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""How evenly pods are spread: per owner, per zone, per topology spread constraint, and utilization.

The same functions give the skew before a pass, the predicted skew and the
measured skew, so the three can be compared.
"""

from __future__ import annotations

import json

from ansible_collections.kubeops.rotation.plugins.module_utils.model.nodes import (
    is_cordoned,
    is_ready,
    node_name,
    zone_of,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.model.owners import OwnerCache
from ansible_collections.kubeops.rotation.plugins.module_utils.model.pods import (
    is_terminal,
    is_terminating,
    node_of,
    pod_key,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.model.quantities import RESOURCES
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.filters import FilterOptions, namespace_filter
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.placement import Room, hard_spread_constraints


def in_scope(nodes):
    """(nodes a pass moves pods between: Ready and schedulable, those left out with the reason)."""
    kept, left_out = [], []
    for node in sorted(nodes, key=lambda n: n["metadata"]["name"]):
        name = node["metadata"]["name"]
        if is_cordoned(node):
            left_out.append({"name": name, "reason": "cordoned"})
        elif not is_ready(node):
            left_out.append({"name": name, "reason": "not Ready"})
        else:
            kept.append(node)
    return kept, left_out


def live_pods(pods, node_names):
    return [pod for pod in pods if node_of(pod) in node_names and not is_terminal(pod) and not is_terminating(pod)]


def skew(counts):
    return max(counts.values()) - min(counts.values()) if counts else 0


def owner_groups(pods, replica_set_owners):
    """Owner key ("namespace/Kind/name") -> its pods, DaemonSets aside (one pod per node by design)."""
    groups = {}
    cache = OwnerCache(replica_set_owners)
    for pod in pods:
        owner = cache.owner_of(pod)
        if owner and owner.kind != "DaemonSet":
            groups.setdefault(owner.key, []).append(pod)
    return groups


def selection(pods, options, selected=None):
    """The pods a pass balances: those of the options' namespaces and, when ``selected`` (pod keys) is
    given, only those. The others still take room on their nodes."""
    return [pod for pod in pods if (selected is None or pod_key(pod) in selected)
            and namespace_filter(pod, options) is None]


def spread(nodes, pods, replica_set_owners, options=FilterOptions(), selected=None):
    """How evenly things are spread on ``nodes`` (in scope): per owner and per zone, per topology
    spread constraint, and utilization per node. Pure; used for the skew before, predicted and measured.

    An owner's skew is max minus min of its pods per node, over the nodes
    that hold its pods or that its pods' selectors, affinity and tolerations
    accept; its zone skew is the same per zone. Owners and constraints are
    those of the selected pods (see ``selection``).
    """
    names = {node_name(node) for node in nodes}
    everything = live_pods(pods, names)
    pods = selection(everything, options, selected)
    room = Room(nodes, everything)
    zones = {node_name(node): zone_of(node) for node in nodes}
    # Owners whose pods accept the same nodes start from the same zones, in the same order.
    zone_orders = {}
    owners = {}
    for key, members in sorted(owner_groups(pods, replica_set_owners).items()):
        feasible = room.accepting(members[0])
        per_node = dict.fromkeys(feasible, 0)
        for pod in members:
            per_node[pod["spec"]["nodeName"]] = per_node.get(pod["spec"]["nodeName"], 0) + 1
        order = tuple(feasible)
        if order not in zone_orders:
            zone_orders[order] = tuple(dict.fromkeys(zones[name] for name in order if zones.get(name)))
        per_zone = dict.fromkeys(zone_orders[order], 0)
        for pod in members:
            zone = zones.get(pod["spec"]["nodeName"])
            if zone:
                per_zone[zone] = per_zone.get(zone, 0) + 1
        owners[key] = {"pods": len(members), "nodes": per_node, "skew": skew(per_node),
                       "zones": per_zone, "zone_skew": skew(per_zone)}
    constraints = []
    for constraint_key, (pod, constraint) in sorted(constraints_of(pods).items()):
        counts = room.domain_counts(pod, constraint)
        constraints.append({"constraint": constraint_key, "max_skew": constraint.get("maxSkew", 1),
                            "domains": counts, "skew": skew(counts)})
    utilization = {name: round(room_utilization(room, name), 1) for name in sorted(names)}
    return {
        "owners": owners,
        "max_skew": max([entry["skew"] for entry in owners.values()] or [0]),
        "max_zone_skew": max([entry["zone_skew"] for entry in owners.values()] or [0]),
        "constraints": constraints,
        "utilization": utilization,
        "utilization_spread": round(max(utilization.values()) - min(utilization.values()), 1) if utilization else 0,
    }


def constraints_of(pods):
    """Distinct DoNotSchedule constraints of ``pods`` by "namespace topologyKey selector", each with a pod
    that has it."""
    found = {}
    for pod in pods:
        for constraint in hard_spread_constraints(pod):
            key = "%s %s %s maxSkew=%s" % (pod["metadata"]["namespace"], constraint.get("topologyKey"),
                                           json.dumps(constraint.get("labelSelector") or {}, sort_keys=True),
                                           constraint.get("maxSkew", 1))
            found.setdefault(key, (pod, constraint))
    return found


def room_utilization(room, name):
    """The most used of cpu, memory and pods on node ``name``, in percent of its allocatable."""
    shares = [100.0 * (room.allocatable[name][r] - room.free[name][r]) / room.allocatable[name][r]
              for r in RESOURCES if room.allocatable[name][r] > 0]
    return max(shares or [0.0])
