# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""How many nodes of a pool hold given pods: the warm-node count of a rotation batch."""

from __future__ import annotations

import math

from ansible_collections.kubeops.rotation.plugins.module_utils.model.errors import InvalidInput
from ansible_collections.kubeops.rotation.plugins.module_utils.model.pods import is_terminal, node_of, pod_key
from ansible_collections.kubeops.rotation.plugins.module_utils.model.quantities import (
    RESOURCES,
    amount_text,
    amounts_text,
    pod_requests,
    resource_amounts,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.model.selectors import labels_match
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.filters import ANYTHING_MOVABLE, judge


def nodes_needed(pods, template_allocatable, pool_labels):
    """How many pool nodes hold the movable pods of ``pods``, and how that was computed. Pure.

    DaemonSet pods come back on every node, so their requests per node (the
    average over the source nodes) are taken off each new node's allocatable.
    Pods whose node selector the pool's labels do not satisfy, or that request
    a resource the template does not offer (a GPU), will not go to the pool and
    are left out, by name; the fit check then says where they can go, if anywhere.
    """
    allocatable = resource_amounts(template_allocatable)
    resources = _named([allocatable])
    movable, per_node_daemon, not_for_pool = [], dict.fromkeys(resources, 0.0), []
    source_nodes = {node_of(pod) for pod in pods}
    for pod in pods:
        verdict = judge(pod, ANYTHING_MOVABLE).verdict
        if verdict.reason == "daemonset":
            for resource, value in pod_requests(pod).items():
                if resource in per_node_daemon:
                    per_node_daemon[resource] += value / max(1, len(source_nodes))
        elif verdict.action == "evict":
            offered = all(allocatable.get(resource, 0) > 0 for resource, value in pod_requests(pod).items() if value)
            if offered and labels_match((pod.get("spec") or {}).get("nodeSelector"), pool_labels):
                movable.append(pod)
            else:
                not_for_pool.append(pod_key(pod))
    free = {resource: allocatable[resource] - per_node_daemon[resource] for resource in resources}
    total = total_requests(movable, resources)
    per_resource = {}
    for resource in resources:
        if total[resource] <= 0:
            per_resource[resource] = 0
        elif free[resource] <= 0:
            raise InvalidInput("a template node has no %s left after DaemonSet pods (%s allocatable, %s for "
                               "DaemonSets)" % (resource, amount_text(resource, allocatable[resource]),
                                                amount_text(resource, per_node_daemon[resource])))
        else:
            per_resource[resource] = int(math.ceil(total[resource] / free[resource] - 1e-9))
    count = max(per_resource.values()) if movable else 0
    explanation = {
        "pods": len(movable),
        "requests": {resource: round(total[resource], 3) for resource in resources},
        "node_allocatable": {resource: round(allocatable[resource], 3) for resource in resources},
        "daemonset_requests_per_node": {resource: round(per_node_daemon[resource], 3) for resource in resources},
        "nodes_by_resource": per_resource,
        "not_for_pool": sorted(not_for_pool),
        "summary": "%d pod(s) requesting %s need %d node(s) of %s (after DaemonSets); the tightest resource "
                   "decides" % (len(movable), amounts_text(total, ("cpu", "memory")), count, amounts_text(free)),
    }
    return count, explanation


def smallest_request(requests):
    """The least of each resource over request dicts (pod_requests), or None when there are none: a node
    without room for it has room for none of those pods. A resource some of them do not request counts 0. Pure."""
    requests = list(requests)
    if not requests:
        return None
    return {resource: min(request.get(resource, 0.0) for request in requests) for resource in _named(requests)}


def free_by_node(nodes, pods):
    """Node name -> the allocatable of each of ``nodes`` less what the pods on it request (terminating ones too,
    as the scheduler counts them until they are gone; not finished ones). Pure."""
    free = {node["metadata"]["name"]: resource_amounts((node.get("status") or {}).get("allocatable"))
            for node in nodes}
    for pod in pods:
        room = free.get(node_of(pod))
        if room is not None and not is_terminal(pod):
            for resource, value in pod_requests(pod).items():
                room[resource] = room.get(resource, 0.0) - value
    return free


def holds(room, request):
    """Whether ``room`` (resource -> amount free) holds ``request``, every resource it names: a resource the
    room does not offer (a GPU on a node without one) holds none of it. Pure."""
    return all(room.get(resource, 0.0) >= value - 1e-9 for resource, value in request.items() if value > 0)


def nodes_with_room(nodes, pods, request):
    """The names of ``nodes`` whose room (free_by_node) still holds ``request``. Pure."""
    return {name for name, room in free_by_node(nodes, pods).items() if holds(room, request)}


def free_room(nodes, pods):
    """The room of ``nodes`` (free_by_node), summed per resource any of them offers. Pure."""
    rooms = list(free_by_node(nodes, pods).values())
    return {resource: sum(room.get(resource, 0.0) for room in rooms) for resource in _named(rooms)}


def total_requests(pods, resources=None):
    """What ``pods`` request together, per resource of ``resources``, or of every resource one of them requests
    (cpu, memory and pods always). Pure."""
    requests = [pod_requests(pod) for pod in pods]
    return {resource: sum(request.get(resource, 0.0) for request in requests)
            for resource in (resources or _named(requests))}


def _named(amounts):
    """cpu, memory and pods, then every other resource one of the dicts ``amounts`` names."""
    others = {resource for amount in amounts for resource in amount} - set(RESOURCES)
    return RESOURCES + tuple(sorted(others))
