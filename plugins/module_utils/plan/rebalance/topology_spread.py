# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Strategy ``topology_spread``: repair DoNotSchedule topology spread constraints, any topology key."""

from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.module_utils.model.pods import node_of, pod_key
from ansible_collections.kubeops.rotation.plugins.module_utils.model.selectors import selector_matches
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.placement import domain_counts
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.rebalance.spread import constraints_of, skew


def balance(planner):
    """Move pods that break their own DoNotSchedule topology spread constraints from the most to the least
    populated domains."""
    for key, (sample, constraint) in sorted(constraints_of(planner.pods).items()):
        max_skew = constraint.get("maxSkew", 1)
        topology_key = constraint.get("topologyKey")
        namespace = sample["metadata"]["namespace"]
        while True:
            counts = domain_counts(sample, constraint, planner.nodes, planner.room.pods_by_node)
            if skew(counts) <= max_skew:
                break
            high = max(sorted(counts), key=lambda domain: counts[domain])
            members = {pod_key(pod) for pods in planner.room.pods_by_node.values() for pod in pods
                       if pod["metadata"]["namespace"] == namespace
                       and selector_matches(constraint.get("labelSelector"), pod["metadata"].get("labels"))}
            donors = [pod for pod in planner.pods if pod_key(pod) in members
                      and planner.domain(node_of(pod), topology_key) == high]
            targets = spread_targets(planner, counts, members, topology_key, counts[high] - 2)
            reasons = planner.try_move(sorted(donors, key=pod_key), targets, "topology_spread",
                                       "%s: %s has %d, max skew %d" % (topology_key, high, counts[high], max_skew))
            if reasons is not None:
                planner.record_stuck("topology_spread", key, skew(counts), reasons)
                break


def spread_targets(planner, counts, members, topology_key, most):
    """Nodes of the domains with at most ``most`` members, the emptiest domain and node first."""
    ranked = []
    for name in planner.room.nodes:
        domain = planner.domain(name, topology_key)
        if domain in counts and counts[domain] <= most:
            here = sum(1 for pod in planner.room.pods_by_node[name] if pod_key(pod) in members)
            ranked.append((counts[domain], here, name))
    return [name for _count, _here, name in sorted(ranked)]
