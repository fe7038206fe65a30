# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""kubernetes.core's k8s_drain contract, as plain data: its options made into what the engine takes (filter
options, eviction settings, one pod selector), and what it returns made from what the engine reports per pod
(the ``result`` line, the refusal in kubectl's words, the warnings)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ansible_collections.kubeops.rotation.plugins.module_utils.model.errors import InvalidInput
from ansible_collections.kubeops.rotation.plugins.module_utils.model.inputs import first_error, selector_error, text_error
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.eviction import EvictionSettings
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.filters import (
    REMOVING,
    FilterOptions,
    loses_emptydir_data,
)

# Without wait_timeout, k8s_drain waits for nothing once its evictions are accepted; the engine still waits out
# the evictions a PodDisruptionBudget refuses (where k8s_drain failed at the first refusal), for this long.
PDB_WAIT_WITHOUT_WAIT_TIMEOUT = 300

# The outcomes of a pod that the drain took (in check mode, would take) off its node.
TAKEN = ("evicted", "deleted", "planned", "terminating")
# The outcomes of a pod that the drain could not take: a PDB held it at the deadline, it was never asked, or
# the API server refused it.
HELD = ("blocked", "pending", "failed")

# Why pods refuse a drain, in the words of kubectl drain (which k8s_drain reports too), by the filters' reason,
# each with the option that lifts it.
REFUSALS = (
    ("daemonset", "cannot delete DaemonSet-managed Pods",
     "delete_options.ignore_daemonsets: true leaves them in place"),
    ("local-storage", "cannot delete Pods with local storage",
     "delete_options.delete_emptydir_data: true deletes them, emptyDir data and all"),
    ("unreplicated", "cannot delete Pods not managed by ReplicationController, ReplicaSet, Job, DaemonSet or "
                     "StatefulSet", "delete_options.force: true deletes them for good"),
)
# kubectl drain's warnings for what a drain lost for good on the options that allowed it.
UNMANAGED_WARNING = "Deleting Pods not managed by ReplicationController, ReplicaSet, Job, DaemonSet or StatefulSet"
LOCAL_STORAGE_WARNING = "Deleting Pods with local storage"


@dataclass(frozen=True)
class DrainRequest:
    """A k8s_drain task, typed: which node, what to do, and for a drain the engine's pod selector, filter options
    and eviction settings."""

    name: str
    state: str
    pod_selector: str | None
    options: FilterOptions
    settings: EvictionSettings

    @classmethod
    def from_params(cls, params, prefix=""):
        """The request of k8s_drain's parameters (a suboption of ``delete_options`` left out is kubernetes.core's
        default), or InvalidInput before anything is read or changed. The pod selectors are checked only for a
        drain, the only state that reads them."""
        state = params.get("state") or "drain"
        selector = pod_selector(params.get("pod_selectors"))
        error = first_error(text_error(prefix + "name", params.get("name"), optional=False),
                            selector_error(prefix + "pod_selectors", selector) if state == "drain" else None)
        if error:
            raise InvalidInput(error)
        delete_options = params.get("delete_options") or {}
        return cls(name=params["name"], state=state, pod_selector=selector, options=filter_options(delete_options),
                   settings=eviction_settings(delete_options))


def pod_selector(pod_selectors):
    """k8s_drain's list of selectors as one label selector: its terms joined, all of which a pod must match."""
    return ",".join(pod_selectors) if pod_selectors else None


def filter_options(delete_options):
    """The filters as k8s_drain judges pods: bare pods, emptyDir and DaemonSet pods refuse the drain unless
    their option lifts it; do-not-disrupt annotations and system-critical priority classes, which k8s_drain
    does not know, refuse nothing."""
    return FilterOptions(force=bool(delete_options.get("force")),
                         delete_emptydir_data=bool(delete_options.get("delete_emptydir_data")),
                         ignore_daemonsets=bool(delete_options.get("ignore_daemonsets")),
                         respect_do_not_disrupt=False, evict_system_critical=True)


def eviction_settings(delete_options):
    """The engine's settings for k8s_drain's wait_timeout (unset: no wait for the pods to be gone; 0: wait for
    ever; a negative value waits for nothing, as there) and terminate_grace_period (a negative value: the pod's
    own, as kubectl's -1)."""
    wait_timeout = delete_options.get("wait_timeout")
    waits = wait_timeout is not None and wait_timeout >= 0
    if not waits:
        timeout = PDB_WAIT_WITHOUT_WAIT_TIMEOUT
    else:
        timeout = math.inf if wait_timeout == 0 else wait_timeout
    grace = delete_options.get("terminate_grace_period")
    return EvictionSettings(timeout=timeout, wait=waits,
                            grace_period=grace if grace is not None and grace >= 0 else None,
                            disable_eviction=bool(delete_options.get("disable_eviction")))


def schedulable_text(name, was_unschedulable, state):
    """k8s_drain's ``result`` for state cordon or uncordon, by whether the node was unschedulable before."""
    wanted = state == "cordon"
    return "node %s %smarked %s." % (name, "already " if was_unschedulable == wanted else "",
                                     "unschedulable" if wanted else "schedulable")


def drain_text(name, was_unschedulable, taken):
    """k8s_drain's ``result`` for a drain that took ``taken`` pods off the node."""
    text = schedulable_text(name, was_unschedulable, "cordon")
    return text + (" %d Pod(s) deleted from node." % taken if taken else "")


def entry_key(entry):
    return "%s/%s" % (entry["namespace"], entry["name"])


def taken_pods(entries):
    """Keys of the pods the drain evicted or deleted (in check mode, would)."""
    return [entry_key(entry) for entry in entries if entry["action"] in REMOVING and entry["outcome"] in TAKEN]


def held_back(entries):
    """The entries of the pods the drain could not take off the node."""
    return [entry for entry in entries if entry["outcome"] in HELD]


def refusal_message(name, entries, was_unschedulable):
    """Why the drain of node ``name`` was refused, every refused pod named under kubectl's words for its
    reason, and the state it is left in."""
    refused = [entry for entry in entries if entry["outcome"] == "refused"]
    parts = []
    for reason, words, remedy in REFUSALS:
        keys = [entry_key(entry) for entry in refused if entry["reason"] == reason]
        if keys:
            parts.append("%s (%s): %s" % (words, remedy, ", ".join(keys)))
    known = {reason for reason, _words, _remedy in REFUSALS}
    parts.extend("cannot delete Pod %s (%s)" % (entry_key(entry), entry["detail"])
                 for entry in refused if entry["reason"] not in known)
    return "Node %s not drained: %s. Nothing was evicted; the node is left %s, as it was." % (
        name, "; ".join(parts), "unschedulable" if was_unschedulable else "schedulable")


def drain_warnings(entries):
    """kubectl drain's warnings for the pods evicted that nothing brings back: those no controller recreates
    (force) and the emptyDir data of those that had some (delete_emptydir_data). A finished pod loses nothing."""
    evicted = [entry for entry in entries if entry["action"] == "evict" and entry["outcome"] in TAKEN]
    warnings = []
    unmanaged = [entry_key(entry) for entry in evicted if entry["owner"] is None]
    if unmanaged:
        warnings.append("%s: %s." % (UNMANAGED_WARNING, ", ".join(unmanaged)))
    local = [entry_key(entry) for entry in evicted if loses_emptydir_data(entry)]
    if local:
        warnings.append("%s: %s." % (LOCAL_STORAGE_WARNING, ", ".join(local)))
    return warnings


def deadline_warning(entries, seconds):
    """The warning of a wait that ran out while only evicted pods were still terminating (k8s_drain warns,
    not fails, then)."""
    terminating = [entry_key(entry) for entry in entries if entry["outcome"] == "terminating"]
    return "wait_timeout of %s s ran out while these pods were still terminating: %s." % (
        seconds, ", ".join(terminating))


def failure_report(cordoned, drained):
    """What a drain that failed returns: ``changed`` when the node was cordoned (``cordoned``) or a pod taken, the
    warnings for what was lost, and the engine's report of ``drained`` (its per-pod entries, their summary, the
    pods left on the node, the time it took)."""
    entries = drained.get("pods") or []
    report = {key: drained[key] for key in ("pods", "summary", "remaining", "elapsed_seconds") if key in drained}
    report.update(changed=bool(cordoned or taken_pods(entries)),
                  warnings=drain_warnings(entries) + list(drained.get("warnings") or ()))
    return report


def drain_report(name, was_unschedulable, cordoned, drained):
    """What k8s_drain returns for a drain: failure_report, and its ``result`` line."""
    return dict(failure_report(cordoned, drained),
                result=drain_text(name, was_unschedulable, len(taken_pods(drained.get("pods") or []))))
