# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Strategy ``utilization``: relieve nodes far above the average requests (the most used of cpu, memory, pods)."""

from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.module_utils.model.pods import pod_key
from ansible_collections.kubeops.rotation.plugins.module_utils.model.quantities import pod_requests
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.rebalance.spread import room_utilization


def balance(planner):
    """Nodes whose requests are far above the average give their largest pods to nodes far below it."""
    names = sorted(planner.room.nodes)
    if not names:
        return
    average = sum(room_utilization(planner.room, name) for name in names) / len(names)
    deviation = planner.settings.utilization_deviation
    for donor in sorted(names, key=lambda name: -room_utilization(planner.room, name)):
        while room_utilization(planner.room, donor) > average + deviation:
            receivers = sorted((name for name in names if room_utilization(planner.room, name) < average - deviation),
                               key=lambda name: (room_utilization(planner.room, name), name))
            here = sorted(planner.room.pods_by_node[donor], key=lambda pod: (-pod_requests(pod)["cpu"],
                                                                             -pod_requests(pod)["memory"],
                                                                             pod_key(pod)))
            reasons = try_within_average(planner, here, receivers, average, donor)
            if reasons is not None:
                planner.record_stuck("utilization", donor, round(room_utilization(planner.room, donor) - average, 1),
                                     reasons or ["no node is far below the average %.0f%%" % average])
                break


def try_within_average(planner, pods, receivers, average, donor):
    """Like try_move, but a receiver may not end above the average: moving must not make a new hot node."""
    reason = "%s uses %.0f%%, the average is %.0f%%" % (donor, room_utilization(planner.room, donor), average)
    reasons = []
    for receiver in receivers:
        for pod in planner.movable(pods)[0]:
            planner.room.add(pod, receiver)
            above = room_utilization(planner.room, receiver) > average
            planner.room.remove(pod, receiver)
            if above:
                reasons.append("%s would take %s above the average" % (pod_key(pod), receiver))
                continue
            failed = planner.try_move([pod], [receiver], "utilization", reason)
            if failed is None:
                return None
            reasons.extend(failed)
    return reasons
