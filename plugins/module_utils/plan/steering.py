# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The temporary ``kubeops.io/rebalancing`` taint that steers replacements to the planned nodes: of every move
that evicts (a drain keeping its zones, a restart, a rebalance pass), so it lives beside the plans, not under one."""

from __future__ import annotations

import heapq

from ansible_collections.kubeops.rotation.plugins.module_utils.model.keys import HOSTNAME_LABEL, STEERING_TAINT_KEY
from ansible_collections.kubeops.rotation.plugins.module_utils.model.nodes import (
    is_cordoned,
    is_ready,
    node_name,
    taints_of,
    zone_of,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.model.patches import guarded
from ansible_collections.kubeops.rotation.plugins.module_utils.model.pods import (
    is_placeholder,
    is_terminating,
    node_of,
    pod_key,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.model.quantities import pod_requests
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.capacity import (
    free_by_node,
    free_room,
    holds,
    nodes_with_room,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.placement import (
    inter_pod_refusal,
    required_pod_terms,
    term_selects,
)


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


def steering_while_moving_effects(nodes, avoid_nodes=(), keep_zones_of=()):
    """Node name -> the effect of its steering taint while pods move, on the Ready, uncordoned ``nodes`` only:
    NoSchedule for those of ``avoid_nodes``; PreferNoSchedule for the others that are in a zone, but not in
    one of the nodes ``keep_zones_of`` (the nodes the pods leave, or run on now). Pure."""
    avoided = set(avoid_nodes)
    keep = set(keep_zones_of)
    zones = {zone_of(node) for node in nodes if node_name(node) in keep} - {None}
    effects = {}
    for node in nodes:
        if not is_ready(node) or is_cordoned(node):
            continue
        if node_name(node) in avoided:
            effects[node_name(node)] = "NoSchedule"
        elif zones and zone_of(node) and zone_of(node) not in zones:
            effects[node_name(node)] = "PreferNoSchedule"
    return effects


def closed_zones(nodes, effects, avoid_nodes=()):
    """Zone -> the effect the steering ``effects`` give the nodes of the zones the pods that move keep away from
    (the nodes of ``avoid_nodes`` aside): what a node that comes up there meanwhile must carry too. Pure."""
    avoided = set(avoid_nodes)
    closed = {}
    for node in nodes:
        effect = effects.get(node_name(node))
        if effect and zone_of(node) and node_name(node) not in avoided and closed.get(zone_of(node)) != "NoSchedule":
            closed[zone_of(node)] = effect
    return closed


def new_node_effect(node, closed, known):
    """The steering effect a node that came up while pods move must carry, or None: one not among ``known`` (the
    node names the steering listed), in a zone ``closed`` (closed_zones) to them, schedulable, and not steered yet.
    An autoscaler brings nodes up for any pending pod, and the scheduler likes an empty node best. Pure."""
    effect = closed.get(zone_of(node))
    if not effect or node_name(node) in known or is_cordoned(node) or is_steered(node):
        return None
    return effect


def with_room(effects, nodes, pods, request, leaving=()):
    """The ``effects`` of the nodes with room for ``request`` (plan.capacity.smallest_request) once the pods
    ``leaving`` (pod keys) are gone, a placeholder's room counted as free: a node without it takes none of the pods
    that move. A node whose room a placeholder holds is steered too, since the scheduler would preempt it. Pure."""
    gone = set(leaving)
    staying = [pod for pod in pods if pod_key(pod) not in gone and not is_placeholder(pod)]
    roomy = nodes_with_room([node for node in nodes if node_name(node) in effects], staying, request)
    return {name: effect for name, effect in effects.items() if name in roomy}


def strict_when_warmed(effects, nodes, pods, keep_zones_of, needs, leaving=(), warm_hosts=(), moving_pods=()):
    """``effects`` with PreferNoSchedule turned into NoSchedule when the zones of ``keep_zones_of`` are warmed
    for the pods that move: each has a Ready, uncordoned node of its own (not one of ``keep_zones_of``) that runs
    a warm placeholder (among ``pods``, or one of ``warm_hosts``, the nodes a warm step saw them on), and their
    such nodes have room for ``needs`` (the summed requests of the pods that move, those ``leaving`` counted as
    gone, the placeholders' as free: they are preempted) and, with ``moving_pods`` (the pods that move), a node
    for each of them in its own zone (each_placed). A preference loses to the scheduler's other scores, and on a
    large cluster to its sampling of the nodes it scores; a zone warmed for its pods needs no other. A pod that
    its own zone cannot take (two that repel each other by hostname, one warm node) would stay Pending with the
    other zones closed, and an autoscaler would launch a node for it. ``effects`` as they are otherwise. Pure."""
    keep = set(keep_zones_of)
    zones = {zone_of(node) for node in nodes if node_name(node) in keep} - {None}
    if not needs or not zones or "PreferNoSchedule" not in effects.values():
        return effects
    gone = set(leaving)
    staying, hosts = [], set(warm_hosts)
    for pod in pods:
        if is_placeholder(pod):
            hosts.add(node_of(pod))
        elif pod_key(pod) not in gone and not is_terminating(pod):
            staying.append(pod)
    own = [node for node in nodes if zone_of(node) in zones and node_name(node) not in keep
           and effects.get(node_name(node)) != "NoSchedule" and is_ready(node) and not is_cordoned(node)]
    if {zone_of(node) for node in own if node_name(node) in hosts} != zones:
        return effects
    # A placeholder gives its room up to any real pod (it is preempted): it is not counted in ``staying``.
    if not holds(free_room(own, staying), needs):
        return effects
    if moving_pods and not each_placed(own, staying, moving_pods, {node_name(node): zone_of(node) for node in nodes}):
        return effects
    return {name: "NoSchedule" if effect == "PreferNoSchedule" else effect for name, effect in effects.items()}


def each_placed(nodes, staying, moving_pods, zone_by_node):
    """Whether each of ``moving_pods`` finds a node among ``nodes`` in the zone of the node it leaves (any of them
    when that zone is unknown), the largest first, each on the node with the most free cpu that has room for its
    requests and where the required pod affinity and anti-affinity of it and of the pods there allow it
    (plan.placement.inter_pod_refusal), the pods placed before it counted there. ``staying`` run where they are.
    Pure."""
    by_name = {node_name(node): node for node in nodes}
    pods_by_node = {name: [] for name in by_name}
    for pod in staying:
        if node_of(pod) in pods_by_node:
            pods_by_node[node_of(pod)].append(pod)
    free = free_by_node(nodes, staying)
    repelling = [term for pods in pods_by_node.values() for pod in pods
                 for term in required_pod_terms(pod, "podAntiAffinity")]
    by_zone = {}
    for name, node in by_name.items():
        by_zone.setdefault(zone_of(node), []).append((-free[name].get("cpu", 0.0), name))
    by_zone[None] = [entry for entries in list(by_zone.values()) for entry in entries]
    for entries in by_zone.values():
        heapq.heapify(entries)
    for pod in sorted(moving_pods, key=lambda each: -pod_requests(each).get("cpu", 0.0)):
        terms = required_pod_terms(pod, "podAffinity") + required_pod_terms(pod, "podAntiAffinity") + [
            term for term in repelling if term_selects(term, pod)]
        chosen = _most_free_taking(pod, by_zone.get(zone_by_node.get(node_of(pod)), []), free,
                                   _rules_allow(pod, terms, by_name, pods_by_node))
        if chosen is None:
            return False
        pods_by_node[chosen].append(pod)
        repelling.extend(required_pod_terms(pod, "podAntiAffinity"))
    return True


def _rules_allow(pod, terms, by_name, pods_by_node):
    """Node name -> whether the required pod rules let ``pod`` on it, ``terms`` being those that concern it (its
    own, and the residents' that select it): none, any node; only anti-affinity by hostname, the node's own pods
    alone decide, which keeps a large cluster's check short (an affinity asks where the pods it wants run)."""
    if not terms:
        return lambda _name: True
    if not required_pod_terms(pod, "podAffinity") and all(term.topology_key == HOSTNAME_LABEL for term in terms):
        return lambda name: not inter_pod_refusal(pod, by_name[name], {name: by_name[name]},
                                                  {name: pods_by_node[name]})
    return lambda name: not inter_pod_refusal(pod, by_name[name], by_name, pods_by_node)


def _most_free_taking(pod, entries, free, allowed):
    """The node of the heap ``entries`` ((-free cpu, name)) with the most free cpu that has room for the pod and
    that ``allowed`` (name -> bool) lets it on, its room taken by the pod and its place in the heap updated; or
    None. The nodes passed over go back as they were."""
    request = pod_requests(pod)
    passed, chosen = [], None
    while entries and chosen is None:
        entry = heapq.heappop(entries)
        if holds(free[entry[1]], request) and allowed(entry[1]):
            chosen = entry[1]
        else:
            passed.append(entry)
    if chosen is not None:
        for resource, value in request.items():
            free[chosen][resource] = free[chosen].get(resource, 0.0) - value
        passed.append((-free[chosen].get("cpu", 0.0), chosen))
    for entry in passed:
        heapq.heappush(entries, entry)
    return chosen
