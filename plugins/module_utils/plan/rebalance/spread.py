# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""How evenly pods are spread: per owner, per zone, per topology spread constraint, and utilization.

The same functions give the skew before a pass, the predicted skew and the
measured skew, so the three can be compared.
"""

from __future__ import annotations

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
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.placement import (
    PlacementSimulator,
    canonical_json,
    hard_spread_constraints,
)


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


def held_skew(held, feasible):
    """skew() of ``held`` (node -> pods, where there are some) and a 0 on every other node of ``feasible``,
    without going through the nodes that hold none."""
    lowest = 0 if any(name not in held for name in feasible) else min(held.values(), default=0)
    return max(held.values(), default=0) - lowest


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
    everything = live_pods(pods, {node_name(node) for node in nodes})
    pods = selection(everything, options, selected)
    return room_spread(PlacementSimulator(nodes, everything), nodes, owner_groups(pods, replica_set_owners), constraints_of(pods))


def room_spread(room, nodes, groups, constraints):
    """spread() over ``nodes`` as ``room`` (a PlacementSimulator of those nodes and the live pods on them) holds them, of
    the selected pods' ``groups`` (owner_groups) and ``constraints`` (constraints_of)."""
    zones = {node_name(node): zone_of(node) for node in nodes}
    owners = owner_spread(room, zones, groups)
    per_constraint = []
    for constraint_key, (pod, constraint) in sorted(constraints.items()):
        counts = room.domain_counts(pod, constraint)
        per_constraint.append({"constraint": constraint_key, "max_skew": constraint.get("maxSkew", 1),
                               "domains": counts, "skew": skew(counts)})
    utilization = {name: round(room_utilization(room, name), 1) for name in sorted(zones)}
    return {
        "owners": owners,
        "max_skew": max([entry["skew"] for entry in owners.values()] or [0]),
        "max_zone_skew": max([entry["zone_skew"] for entry in owners.values()] or [0]),
        "constraints": per_constraint,
        "utilization": utilization,
        "utilization_spread": round(max(utilization.values()) - min(utilization.values()), 1) if utilization else 0,
    }


def owner_spread(room, zones, groups):
    """Owner key -> its pods per node and per zone and their skews, for owner_groups ``groups``; ``zones`` is
    node name -> zone of the nodes in scope."""
    # Owners whose pods accept the same nodes (the same mapping from room.accepting) share what follows
    # from those nodes alone: a count of 0 on each, and their zones in order. By id, with the mapping held
    # so that its id is not reused.
    by_feasible = {}
    owners = {}
    for key, members in sorted(groups.items()):
        feasible = room.accepting(members[0])
        if id(feasible) not in by_feasible:
            by_feasible[id(feasible)] = (feasible, dict.fromkeys(feasible, 0),
                                         tuple(dict.fromkeys(zones[name] for name in feasible if zones.get(name))))
        _feasible, none_per_node, zone_order = by_feasible[id(feasible)]
        held = {}
        for pod in members:
            held[pod["spec"]["nodeName"]] = held.get(pod["spec"]["nodeName"], 0) + 1
        per_node = none_per_node.copy()
        per_node.update(held)
        per_zone = dict.fromkeys(zone_order, 0)
        for pod in members:
            zone = zones.get(pod["spec"]["nodeName"])
            if zone:
                per_zone[zone] = per_zone.get(zone, 0) + 1
        owners[key] = {"pods": len(members), "nodes": per_node, "skew": held_skew(held, feasible),
                       "zones": per_zone, "zone_skew": skew(per_zone)}
    return owners


def constraints_of(pods):
    """Distinct DoNotSchedule constraints of ``pods`` by "namespace topologyKey selector", each with a pod
    that has it."""
    found = {}
    for pod in pods:
        for constraint in hard_spread_constraints(pod):
            key = "%s %s %s maxSkew=%s" % (pod["metadata"]["namespace"], constraint.get("topologyKey"),
                                           canonical_json(constraint.get("labelSelector") or {}),
                                           constraint.get("maxSkew", 1))
            found.setdefault(key, (pod, constraint))
    return found


def room_utilization(room, name):
    """The most used of cpu, memory and pods on node ``name``, in percent of its allocatable."""
    shares = [100.0 * (room.allocatable[name][r] - room.free[name][r]) / room.allocatable[name][r]
              for r in RESOURCES if room.allocatable[name][r] > 0]
    return max(shares or [0.0])
