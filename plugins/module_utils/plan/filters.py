# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Why a pod may or may not be evicted, each answer with its reason.

Like kubectl's drain filters, every concern is one small function that looks
at a pod (API JSON) and either has no opinion (None) or returns a Verdict;
``judge`` folds them in order and the first opinion wins. Callers may pass
their own list of filters.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ansible_collections.kubeops.rotation.plugins.module_utils.model.keys import MIRROR_ANNOTATION
from ansible_collections.kubeops.rotation.plugins.module_utils.model.pods import (
    annotations_of,
    claim_names,
    controller_of,
    do_not_disrupt_annotation,
    is_terminating,
    node_of,
    pod_key,
)

SYSTEM_CRITICAL_CLASSES = ("system-cluster-critical", "system-node-critical")


@dataclass(frozen=True)
class Verdict:
    """What to do with a pod: evict, delete (terminal pods), wait (already being deleted: wait until it is
    gone), skip (leave, fine) or refuse (leave, blocking)."""

    action: str
    reason: str
    detail: str = ""


@dataclass(frozen=True)
class FilterOptions:
    force: bool = False
    delete_emptydir_data: bool = False
    respect_do_not_disrupt: bool = True
    evict_system_critical: bool = False
    namespaces: tuple = ()
    exclude_namespaces: tuple = ()
    # False makes a DaemonSet pod refuse the drain instead of being left in place, as kubectl drain does
    # without --ignore-daemonsets (and kubernetes.core's k8s_drain without delete_options.ignore_daemonsets).
    ignore_daemonsets: bool = True


# Options under which only what can never be evicted is skipped: how capacity and moves see pods.
ANYTHING_MOVABLE = FilterOptions(force=True, delete_emptydir_data=True, respect_do_not_disrupt=False,
                                 evict_system_critical=True)


# The verdicts that take the pod away.
REMOVING = ("evict", "delete")
# The note of an emptyDir volume of a pod to be removed.
EMPTYDIR_LOST = "emptyDir %s: its data is lost with the pod"


@dataclass(frozen=True)
class PodPlan:
    """A selected pod, the verdict on it, and notes that do not change the verdict (PVCs, emptyDir data lost)."""

    pod: dict
    verdict: Verdict
    notes: tuple = field(default_factory=tuple)

    @property
    def key(self):
        return pod_key(self.pod)

    @property
    def removes(self):
        """Whether the pod is to be evicted or deleted."""
        return self.verdict.action in REMOVING

    def summary(self):
        metadata = self.pod["metadata"]
        owner = controller_of(self.pod)
        return {
            "name": metadata["name"],
            "namespace": metadata["namespace"],
            "node": node_of(self.pod),
            "owner": "%s/%s" % (owner["kind"], owner["name"]) if owner else None,
            "action": self.verdict.action,
            "reason": self.verdict.reason,
            "detail": self.verdict.detail,
            "notes": list(self.notes),
        }


def namespace_filter(pod, options):
    namespace = pod["metadata"]["namespace"]
    if options.namespaces and namespace not in options.namespaces:
        return Verdict("skip", "namespace", "namespace %s is not in namespaces" % namespace)
    if namespace in options.exclude_namespaces:
        return Verdict("skip", "namespace", "namespace %s is excluded" % namespace)
    return None


def mirror_filter(pod, options):
    if MIRROR_ANNOTATION in annotations_of(pod):
        return Verdict("skip", "mirror", "static pod managed by the kubelet; it cannot be evicted")
    return None


def daemonset_filter(pod, options):
    owner = controller_of(pod)
    if not owner or owner.get("kind") != "DaemonSet":
        return None
    if not options.ignore_daemonsets:
        return Verdict("refuse", "daemonset", "owned by DaemonSet %s, which would put it back; set "
                                              "ignore_daemonsets: true to leave it in place" % owner.get("name"))
    return Verdict("skip", "daemonset", "owned by DaemonSet %s; it would come back" % owner.get("name"))


def goes_with_its_node(pod):
    """DaemonSet and static pods are never moved: they run where their node is, and go with it."""
    return daemonset_filter(pod, ANYTHING_MOVABLE) is not None or mirror_filter(pod, None) is not None


def terminal_filter(pod, options):
    phase = (pod.get("status") or {}).get("phase")
    if phase in ("Succeeded", "Failed"):
        return Verdict("delete", "terminal", "phase %s; deleted without eviction" % phase)
    return None


def terminating_filter(pod, options):
    if is_terminating(pod):
        return Verdict("wait", "terminating", "already being deleted; waited for until it is gone")
    return None


def do_not_disrupt_filter(pod, options):
    annotation = do_not_disrupt_annotation(pod)
    if annotation and options.respect_do_not_disrupt:
        return Verdict("refuse", "do-not-disrupt",
                       '%s: "%s"; move it by rollout restart, or set respect_do_not_disrupt: false' % annotation)
    return None


def system_critical_filter(pod, options):
    priority_class = (pod.get("spec") or {}).get("priorityClassName")
    if priority_class in SYSTEM_CRITICAL_CLASSES and not options.evict_system_critical:
        return Verdict("refuse", "system-critical",
                       "priority class %s; set evict_system_critical: true to evict it" % priority_class)
    return None


def unreplicated_filter(pod, options):
    if controller_of(pod) is None and not options.force:
        return Verdict("refuse", "unreplicated",
                       "no controller would recreate it; set force: true to evict it anyway")
    return None


def emptydir_volumes(pod):
    """Names of the pod's emptyDir volumes: local data that goes when the pod goes."""
    return [volume["name"] for volume in (pod.get("spec") or {}).get("volumes") or [] if "emptyDir" in volume]


def local_storage_filter(pod, options):
    volumes = emptydir_volumes(pod)
    if volumes and not options.delete_emptydir_data:
        return Verdict("refuse", "local-storage",
                       "emptyDir %s would be lost; set delete_emptydir_data: true" % ", ".join(volumes))
    return None


DEFAULT_FILTERS = (
    namespace_filter,
    mirror_filter,
    daemonset_filter,
    terminal_filter,
    terminating_filter,
    do_not_disrupt_filter,
    system_critical_filter,
    unreplicated_filter,
    local_storage_filter,
)


def judge(pod, options, claim_zones=None, filters=DEFAULT_FILTERS):
    """The PodPlan of one pod: the first filter's verdict, or evict; PVCs are noted with their zone.

    ``claim_zones`` maps "namespace/claim" to the zone its PersistentVolume is
    bound to, or None when the volume can attach anywhere.
    """
    verdict = next((v for v in (check(pod, options) for check in filters) if v is not None),
                   Verdict("evict", "evictable"))
    notes = []
    for claim in claim_names(pod):
        zone = (claim_zones or {}).get("%s/%s" % (pod["metadata"]["namespace"], claim))
        notes.append("uses PVC %s%s" % (claim, " (volume bound to zone %s)" % zone if zone else ""))
    if verdict.action in REMOVING:
        notes.extend(EMPTYDIR_LOST % volume for volume in emptydir_volumes(pod))
    return PodPlan(pod=pod, verdict=verdict, notes=tuple(notes))


def loses_emptydir_data(entry):
    """Whether a pod's entry (PodPlan.summary) notes emptyDir data that its removal loses."""
    return any(note.startswith("emptyDir ") for note in entry.get("notes") or ())


def judge_all(pods, options, claim_zones=None, filters=DEFAULT_FILTERS):
    """Judge every pod; the PodPlans in the order of ``pods``."""
    return [judge(pod, options, claim_zones, filters) for pod in pods]


def refused(plans):
    return [pod_plan for pod_plan in plans if pod_plan.verdict.action == "refuse"]


def refusal_message(plans):
    entries = ["%s (%s: %s)" % (p.key, p.verdict.reason, p.verdict.detail) for p in refused(plans)]
    return ("Refusing to evict anything: %d pod(s) cannot be evicted safely: %s. Nothing was evicted; "
            "fix them or set skip_refused: true to evict the others." % (len(entries), "; ".join(entries)))


DRAIN_LEAVES = ("daemonset", "mirror", "terminal", "namespace")


def left_behind(plans):
    """Keys of the pods a drain should have removed: all but DaemonSet, mirror, terminal and out-of-scope pods."""
    return [pod_plan.key for pod_plan in plans if pod_plan.verdict.reason not in DRAIN_LEAVES]
