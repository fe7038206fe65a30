# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Strategy ``duplicates``: replicas of one owner piled on some nodes while others that can run them have fewer."""

from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.module_utils.model.pods import node_of, pod_key
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.placement import node_accepts
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.rebalance.spread import owner_groups


def balance(planner):
    """Move replicas of one owner from the nodes with the most of them to those with the fewest, until max
    minus min per node is at most ``max_skew``; a move only where two nodes differ by 2 or more."""
    for owner, members in sorted(owner_groups(planner.pods, planner.replica_set_owners).items()):
        feasible = [name for name, node in sorted(planner.room.nodes.items()) if node_accepts(members[0], node)]
        while True:
            keys = {pod_key(pod) for pod in members}
            counts = {name: 0 for name in feasible}
            for name, residents in planner.room.pods_by_node.items():
                here = sum(1 for pod in residents if pod_key(pod) in keys)
                if here or name in counts:
                    counts[name] = here
            lowest = min(counts[name] for name in feasible) if feasible else 0
            if not feasible or max(counts.values()) - lowest <= planner.settings.max_skew:
                break
            reasons, moved = [], False
            for donor in sorted(counts, key=lambda name: (-counts[name], name)):
                if counts[donor] - lowest < 2:
                    break
                targets = sorted((name for name in feasible if counts[donor] - counts[name] >= 2),
                                 key=lambda name: (counts[name], -planner.room.free[name]["cpu"], name))
                here = [pod for pod in members if node_of(pod) == donor and pod_key(pod) not in
                        planner.moved]
                failed = planner.try_move(sorted(here, key=pod_key), targets, "duplicates",
                                          "%s has %d on %s, %d on %s" % (owner, counts[donor], donor,
                                                                         counts[targets[0]] if targets else lowest,
                                                                         targets[0] if targets else "-"))
                if failed is None:
                    moved = True
                    break
                reasons.extend(failed)
            if not moved:
                planner.record_stuck("duplicates", owner, max(counts.values()) - lowest, reasons)
                break
