# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Strategy ``duplicates``: replicas of one owner piled on some nodes while others that can run them have fewer."""

from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.module_utils.model.pods import node_of, pod_key


def balance(planner):
    """Move replicas of one owner from the nodes with the most of them to those with the fewest, until max
    minus min per node is at most ``max_skew``; a move only where two nodes differ by 2 or more."""
    for owner, members in sorted(planner.groups.by_owner().items()):
        feasible = planner.room.accepting(members[0])
        keys = {pod_key(pod) for pod in members}
        while True:
            # Only the nodes that hold some of the owner's pods; every other feasible node has none.
            counts = planner.room.located(keys)
            held = [counts[name] for name in counts if name in feasible]
            lowest = min(held) if len(held) == len(feasible) and held else 0
            highest = max(counts.values()) if counts else 0
            if not feasible or highest - lowest <= planner.settings.max_skew:
                break
            reasons, moved = [], False
            for donor in sorted(counts, key=lambda name: (-counts[name], name)):
                if counts[donor] - lowest < 2:
                    break
                targets = DuplicateTargets(planner, feasible, counts, counts[donor] - 2)
                first = next(iter(targets), None)
                here = [pod for pod in members if node_of(pod) == donor and pod_key(pod) not in
                        planner.moved]
                failed = planner.try_move(sorted(here, key=pod_key), targets, "duplicates",
                                          "%s has %d on %s, %d on %s" % (owner, counts[donor], donor,
                                                                         counts.get(first, 0) if first else lowest,
                                                                         first or "-"))
                if failed is None:
                    moved = True
                    break
                reasons.extend(failed)
            if not moved:
                planner.record_stuck("duplicates", owner, highest - lowest, reasons)
                break


class DuplicateTargets:
    """The ``feasible`` nodes with at most ``most`` of the owner's pods (``counts``, node -> pods where
    there are some), the fewest first, then the most free cpu, then by name. Iterated lazily, since a move
    mostly takes the first; each iteration sees the free cpu of the PlacementSimulator as it is then."""

    def __init__(self, planner, feasible, counts, most):
        self.room = planner.room
        self.feasible = feasible
        self.counts = counts
        self.most = most

    def __iter__(self):
        yield from (name for name in self.room.by_free_cpu() if name in self.feasible and name not in self.counts)
        held = {}
        for name, count in self.counts.items():
            if name in self.feasible and count <= self.most:
                held.setdefault(count, []).append(name)
        for count in sorted(held):
            yield from sorted(held[count], key=lambda name: (-self.room.free[name]["cpu"], name))
