# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""kubernetes.core's k8s_drain carried out by this collection's engine: cordon and uncordon through
engine.cordon; a drain as k8s_drain does it (cordon, then the pods, and the cordon undone when pods refuse the
drain) with the pods judged and evicted by engine.drain. What is said and returned is plan.k8s_drain's."""

from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.module_utils.engine.cordon import CordonRequest, apply_cordon
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.drain import DrainJob, PodSelection, drain
from ansible_collections.kubeops.rotation.plugins.module_utils.model.errors import Blocked, Refused, TimedOut
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.k8s_drain import (
    deadline_warning,
    drain_report,
    failure_report,
    held_back,
    refusal_message,
    schedulable_text,
)


def set_schedulable(client, request, check_mode):
    """State cordon or uncordon of a DrainRequest: the node made unschedulable or schedulable."""
    change = _cordon(client, request.name, request.state == "cordon", check_mode)
    return {"changed": change.changed,
            "result": schedulable_text(request.name, change.before["unschedulable"], request.state)}


def drain_node(client, request, check_mode):
    """State drain of a DrainRequest: cordon the node, then evict (or delete) its pods; returns
    plan.k8s_drain.drain_report.

    Pods that refuse the drain stop it before any eviction and undo the cordon made here (Refused). A wait that
    runs out while only evicted pods are still terminating is a warning, as in k8s_drain; pods still held by
    their PDBs at the deadline fail it (TimedOut), and so do evictions the API server refused (Blocked), with
    the node left cordoned.
    """
    cordon = _cordon(client, request.name, True, check_mode)
    was_unschedulable = cordon.before["unschedulable"]
    selection = PodSelection(nodes=(request.name,), pod_selector=request.pod_selector)
    try:
        drained = drain(client, DrainJob(selection, request.options, request.settings), check_mode=check_mode)
    except Refused as exc:
        if cordon.changed and not check_mode:
            _cordon(client, request.name, False, check_mode)
        raise Refused(refusal_message(request.name, exc.result.get("pods") or [], was_unschedulable),
                      failure_report(False, exc.result))
    except TimedOut as exc:
        entries = exc.result.get("pods") or []
        if held_back(entries):
            raise TimedOut(_left_unschedulable(exc, request.name), failure_report(cordon.changed, exc.result))
        drained = dict(exc.result, warnings=[deadline_warning(entries, request.settings.timeout)])
    except Blocked as exc:
        raise Blocked(_left_unschedulable(exc, request.name), failure_report(cordon.changed, exc.result))
    return drain_report(request.name, was_unschedulable, cordon.changed, drained)


def _cordon(client, name, unschedulable, check_mode):
    """The NodeChange that makes node ``name`` unschedulable or schedulable, whoever cordoned it."""
    state = "cordoned" if unschedulable else "uncordoned"
    request = CordonRequest(names=(name,), state=state, why="kubeops.rotation.k8s_drain", taint=False, force=True)
    (change,) = apply_cordon(client, request, check_mode=check_mode)
    return change


def _left_unschedulable(exc, name):
    return "%s Node %s is left unschedulable." % (exc, name)
