# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Strategy ``topology_spread``: repair DoNotSchedule topology spread constraints, any topology key."""

from __future__ import annotations

import heapq

from ansible_collections.kubeops.rotation.plugins.module_utils.model.pods import node_of, pod_key
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.rebalance.spread import skew


def balance(planner):
    """Move pods that break their own DoNotSchedule topology spread constraints from the most to the least
    populated domains."""
    for key, (sample, constraint) in sorted(planner.groups.constraints().items()):
        max_skew = constraint.get("maxSkew", 1)
        topology_key = constraint.get("topologyKey")
        namespace = sample["metadata"]["namespace"]
        while True:
            counts = planner.room.domain_counts(sample, constraint)
            if skew(counts) <= max_skew:
                break
            high = max(sorted(counts), key=lambda domain: counts[domain])
            matching = planner.room.pods_matching(namespace, constraint.get("labelSelector"))
            members = {pod_key(pod) for pod, _name in matching}
            donors = [planner.pods_by_key[member] for member in members if member in planner.pods_by_key
                      and planner.domain(node_of(planner.pods_by_key[member]), topology_key) == high]
            here = {}
            for _pod, name in matching:
                here[name] = here.get(name, 0) + 1
            targets = SpreadTargets(planner, counts, here, topology_key, counts[high] - 2)
            reasons = planner.try_move(sorted(donors, key=pod_key), targets, "topology_spread",
                                       "%s: %s has %d, max skew %d" % (topology_key, high, counts[high], max_skew))
            if reasons is not None:
                planner.record_stuck("topology_spread", key, skew(counts), reasons)
                break


class SpreadTargets:
    """The nodes of the domains with at most ``most`` members, the emptiest domain and node first, then by
    name; ``here`` is node name -> members on it. Iterated lazily, since a move mostly takes the first."""

    def __init__(self, planner, counts, here, topology_key, most):
        self.by_domain = planner.room.nodes_by_domain(topology_key)
        self.counts = counts
        self.here = here
        self.topology_key = topology_key
        self.most = most
        self.domain = planner.domain

    def __iter__(self):
        levels = {}
        for domain, count in self.counts.items():
            if count <= self.most:
                levels.setdefault(count, []).append(domain)
        for count in sorted(levels):
            domains = set(levels[count])
            # Nodes without members come first, by name; those with some after, fewest first.
            yield from (name for name in heapq.merge(*(self.by_domain[domain] for domain in sorted(domains)))
                        if name not in self.here)
            yield from (name for _here, name in sorted(
                (self.here[name], name) for name in self.here if self.domain(name, self.topology_key) in domains))
