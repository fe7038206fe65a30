# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The words of the progress line (engine.progress): how much is left, and what it waits for."""

from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.module_utils.model.pods import is_ready, is_terminating, node_of, pod_key
from ansible_collections.kubeops.rotation.plugins.module_utils.model.selectors import selector_matches

SHOWN_REASONS = 3
SHOWN_PODS = 3


def counted(reasons):
    """'3 for A; 1 for B' from a list of reasons, the commonest first, the rest summed up."""
    counts = {}
    for reason in reasons:
        counts[reason] = counts.get(reason, 0) + 1
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    parts = ["%d %s" % (count, reason) for reason, count in ranked[:SHOWN_REASONS]]
    rest = sum(count for _reason, count in ranked[SHOWN_REASONS:])
    if rest:
        parts.append("%d for other reasons" % rest)
    return "; ".join(parts)


def why_not_ready(pod):
    """Why a pod is not Ready: Pending with the scheduler's reason, or the container's waiting reason."""
    status = pod.get("status") or {}
    node = node_of(pod)
    if not node:
        scheduled = next((condition for condition in status.get("conditions") or ()
                          if condition.get("type") == "PodScheduled"), {})
        return "%s Pending: %s" % (pod_key(pod), scheduled.get("message") or scheduled.get("reason")
                                   or "not scheduled yet")
    waiting = [((container.get("state") or {}).get("waiting") or {}).get("reason")
               for container in status.get("containerStatuses") or ()]
    waiting = [reason for reason in waiting if reason]
    return "%s on %s not Ready%s" % (pod_key(pod), node, " (%s)" % ", ".join(sorted(set(waiting))) if waiting else "")


def not_ready_text(pods):
    """The first few pods' reasons, and how many more."""
    reasons = [why_not_ready(pod) for pod in sorted(pods, key=pod_key)]
    more = len(reasons) - SHOWN_PODS
    return "; ".join(reasons[:SHOWN_PODS]) + (" and %d more" % more if more > 0 else "")


def eviction_line(removed, total, terminating, waiting):
    """The line of an eviction run: ``waiting`` holds one reason per pod not yet asked or refused."""
    line = "evicting: %d of %d pods gone" % (removed, total)
    if terminating:
        line += ", %d terminating" % terminating
    if waiting:
        line += "; waiting: %s" % counted(waiting)
    return line


def pdb_shortfall(pdb, pods):
    """What keeps a PodDisruptionBudget from allowing a disruption, from the pods of its namespace: its pods that
    are not Ready (Pending with the scheduler's reason, or on which node), and those its controller has not
    created yet (after an API server restart, a controller can take minutes to see that it is short)."""
    selected = [pod for pod in pods if pod["metadata"].get("namespace") == pdb["metadata"]["namespace"]
                and not is_terminating(pod) and selector_matches(pdb["spec"].get("selector"),
                                                                 pod["metadata"].get("labels") or {})]
    parts = []
    not_ready = [pod for pod in selected if not is_ready(pod)]
    if not_ready:
        parts.append(not_ready_text(not_ready))
    expected = (pdb.get("status") or {}).get("expectedPods")
    if expected is not None and expected > len(selected):
        parts.append("%d of %d pods not created yet by their controller" % (expected - len(selected), expected))
    return "; ".join(parts)
