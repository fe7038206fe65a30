# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Steering the scheduler with the temporary ``kubeops.io/rebalancing`` taint: towards the planned nodes
in a rebalance pass, and, while a rotation moves pods, away from the nodes it drains later and towards the
zone a pod leaves."""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass

from ansible_collections.kubeops.rotation.plugins.module_utils.api.client import each_concurrently
from ansible_collections.kubeops.rotation.plugins.module_utils.api.errors import ApiException, is_not_found
from ansible_collections.kubeops.rotation.plugins.module_utils.api.nodes import list_nodes, nodes_informer
from ansible_collections.kubeops.rotation.plugins.module_utils.api.watch import BackgroundInformer
from ansible_collections.kubeops.rotation.plugins.module_utils.api.workloads import pods_in
from ansible_collections.kubeops.rotation.plugins.module_utils.model.nodes import node_name
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.steering import (
    closed_zones,
    is_steered,
    new_node_effect,
    steering_patch,
    steering_while_moving_effects,
    strict_when_warmed,
    with_room,
)


def steer(client, nodes, effects):
    """Give each of ``nodes`` (as listed) that ``effects`` names the steering taint with its effect there (node
    name -> effect; None takes it off): a patch for each node that needs one, no read first (a node changed since
    is read again, one deleted since is left alone), a few at a time (api.client.each_concurrently)."""
    def patch(node):
        effect = effects[node_name(node)]
        try:
            client.update_node(node, lambda current: (None, steering_patch(current, effect)))
        except ApiException as exc:
            if not is_not_found(exc):
                raise

    each_concurrently(patch, [node for node in nodes if node_name(node) in effects])


def set_steering(client, nodes, effect):
    """The steering taint with ``effect`` on ``nodes`` (as listed), or off them (``effect`` None): steer."""
    steer(client, nodes, dict.fromkeys((node_name(node) for node in nodes), effect))


def clear_steering(client, names):
    """Take the steering taint off the nodes ``names`` that still carry it: one list, a patch for each."""
    wanted = set(names)
    if wanted:
        set_steering(client, [node for node in list_nodes(client)
                              if node_name(node) in wanted and is_steered(node)], None)


class NewNodeSteering:
    """While pods move, the nodes that come up in a zone closed to them get that zone's steering taint as they
    appear (plan.steering.new_node_effect): every node followed by a watch in a thread of its own
    (api.watch.BackgroundInformer), from the first ``close`` that closes a zone until ``stop``. ``steered`` holds the nodes it
    tainted; once stopped, it taints no more."""

    # The longest a thread follows the nodes; ``stop`` ends it sooner, at its next event or watch's end.
    LONGEST_SECONDS = 6 * 3600

    def __init__(self, client):
        self.client = client
        self.closed = {}
        self.known = set()
        self.steered = set()
        self._followed = None
        self._stopped = False
        # Held while a node is tainted, so that ``stop`` returns only once ``steered`` is complete.
        self._lock = threading.Lock()

    def close(self, closed, known):
        """Close the zones of ``closed`` (zone -> effect, plan.steering.closed_zones) to the nodes that come up from
        now on, those of ``known`` (node names) aside."""
        with self._lock:
            self.closed = dict(closed)
            self.known |= set(known)
        if self.closed and self._followed is None and not self._stopped:
            self._followed = BackgroundInformer(nodes_informer(self.client), time.monotonic() + self.LONGEST_SECONDS,
                                                on_change=self._changed).__enter__()

    def _changed(self, objects, change):
        nodes = objects.values() if change is None or change[1] is None else \
            [] if change[0] == "DELETED" else [change[1]]
        with self._lock:
            seen = self.known | self.steered
            for node in list(nodes):
                effect = None if self._stopped else new_node_effect(node, self.closed, seen)
                if effect:
                    seen.add(node_name(node))
                    steer(self.client, [node], {node_name(node): effect})
                    self.steered.add(node_name(node))

    def stop(self):
        with self._lock:
            self._stopped = True
        if self._followed is not None:
            self._followed.stop()


class SteeringAcrossSteps:
    """The steering of the steps of one move (a replacement, then a drain) kept from one step to the next: each
    step's steering_while_moving leaves its taints on, so that the next one changes only the nodes it wants
    otherwise instead of taking every taint off and putting it back; they come off once, when the ``with``
    block ends, however it ends."""

    def __init__(self, client):
        self.client = client
        self.steered = set()
        # The nodes the move's warm step saw its placeholders run on: a pod list followed by a watch may not
        # have their bindings yet when the next step steers.
        self.warm_hosts = set()
        self.new_nodes = NewNodeSteering(client)

    def __enter__(self):
        return self

    def __exit__(self, *_exc):
        self.new_nodes.stop()
        clear_steering(self.client, sorted(self.steered | self.new_nodes.steered))


@dataclass(frozen=True)
class MovingPods:
    """What the steering needs to know of the pods that will move: ``request``, the smallest of their requests
    (plan.capacity.smallest_request); ``leaving``, the keys of the pods whose room frees as they go (a restarted
    workload's old pods, wherever they run); ``needs``, their summed requests (plan.capacity.total_requests);
    ``pods``, the pods themselves, whose rules (anti-affinity by hostname) the warmed zones must meet too."""

    request: dict | None = None
    leaving: tuple = ()
    needs: dict | None = None
    pods: tuple = ()


@contextlib.contextmanager
def steering_while_moving(client, avoid_nodes=(), keep_zones_of=(), moving=MovingPods(), listed=None,
                          every_pod=None, held=None):
    """While the block runs, the steering taint tells the scheduler where the pods replaced meanwhile go;
    yields the steered node names. On the Ready, uncordoned nodes only:

    - those of ``avoid_nodes`` carry it with NoSchedule, so that nothing that moves lands there (the nodes
      a rotation drains in a later batch: a scheduler asked only not to prefer them takes an empty one
      rather than preempt a warm node's placeholder);
    - with ``keep_zones_of`` (the nodes the pods leave, or run on now), those outside the zones of these
      carry it with PreferNoSchedule, so that the replacements come back in their own zone when it has room
      (its default spreading would otherwise even them out).

    With ``moving.request`` (MovingPods), only the nodes with room for it are steered: a full node takes none
    of them anyway, and a large cluster would otherwise be patched node by node, twice, for every step. The
    pods ``moving.leaving`` free their room as they go, so it counts as free. Taints a killed run left are
    removed first. With ``moving.needs``, the other zones' nodes carry NoSchedule instead when the zones kept
    are warmed with room for them (strict_when_warmed). One list of the nodes (and one of the pods, with
    ``moving.request``) serves it all, or ``listed`` (every node, every pod) when the caller listed them
    already, or ``every_pod`` (api.watch.BackgroundInformer) when the caller follows them; with neither nodes to avoid
    nor zones to keep nothing is read or steered. With ``held`` (SteeringAcrossSteps), the taints stay on
    after the block, for the next step, and ``held`` takes them off.
    """
    if not avoid_nodes and not keep_zones_of:
        yield []
        return
    nodes = listed[0] if listed else list_nodes(client)
    effects = steering_while_moving_effects(nodes, avoid_nodes, keep_zones_of)
    if moving.request and effects:
        pods = listed[1] if listed else every_pod.objects() if every_pod else pods_in(client)
        effects = strict_when_warmed(with_room(effects, nodes, pods, moving.request, moving.leaving), nodes, pods,
                                     keep_zones_of, moving.needs, moving.leaving,
                                     held.warm_hosts if held is not None else (), moving.pods)
    left = {node_name(node): None for node in nodes if is_steered(node) and node_name(node) not in effects}
    steered = sorted(effects)
    closed = closed_zones(nodes, effects, avoid_nodes)
    listed_names = [node_name(node) for node in nodes]
    if held is not None:
        # Held from the step before, or left by a killed run: they come off with the new ones going on.
        held.steered.difference_update(left)
        held.steered.update(steered)
        steer(client, nodes, dict(left, **effects))
        held.new_nodes.close(closed, listed_names)
        yield steered
        return
    new_nodes = NewNodeSteering(client)
    try:
        # The taints a killed run left come off in the same round of patches as the new ones go on.
        steer(client, nodes, dict(left, **effects))
        new_nodes.close(closed, listed_names)
        yield steered
    finally:
        new_nodes.stop()
        clear_steering(client, sorted(set(steered) | new_nodes.steered))
