# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Pure pod predicates: why a pod may or may not be evicted, each answer with its reason.

Like kubectl's drain filters, every concern is one small function that looks
at a pod (API JSON) and either has no opinion (None) or returns a Verdict;
``judge`` folds them in order and the first opinion wins. Callers may pass
their own list of filters.
"""

from __future__ import annotations

from dataclasses import dataclass, field

DO_NOT_DISRUPT = ("karpenter.sh/do-not-disrupt", "true")
SAFE_TO_EVICT = ("cluster-autoscaler.kubernetes.io/safe-to-evict", "false")
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
SYSTEM_CRITICAL_CLASSES = ("system-cluster-critical", "system-node-critical")


@dataclass(frozen=True)
class Verdict:
    """What to do with a pod: evict, delete (terminal pods), skip (leave, fine) or refuse (leave, blocking)."""

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


@dataclass(frozen=True)
class PodPlan:
    """A selected pod, the verdict on it, and notes that do not change the verdict (PVCs)."""

    pod: dict
    verdict: Verdict
    notes: tuple = field(default_factory=tuple)

    @property
    def key(self):
        return pod_key(self.pod)

    def summary(self):
        metadata = self.pod["metadata"]
        owner = controller_of(self.pod)
        return {
            "name": metadata["name"],
            "namespace": metadata["namespace"],
            "node": (self.pod.get("spec") or {}).get("nodeName"),
            "owner": "%s/%s" % (owner["kind"], owner["name"]) if owner else None,
            "action": self.verdict.action,
            "reason": self.verdict.reason,
            "detail": self.verdict.detail,
            "notes": list(self.notes),
        }


def pod_key(pod):
    return "%s/%s" % (pod["metadata"]["namespace"], pod["metadata"]["name"])


def controller_of(pod):
    """The ownerReference with controller: true, or None for a bare pod."""
    for reference in (pod.get("metadata") or {}).get("ownerReferences") or []:
        if reference.get("controller"):
            return reference
    return None


def _annotations(pod):
    return (pod.get("metadata") or {}).get("annotations") or {}


def namespace_filter(pod, options):
    namespace = pod["metadata"]["namespace"]
    if options.namespaces and namespace not in options.namespaces:
        return Verdict("skip", "namespace", "namespace %s is not in namespaces" % namespace)
    if namespace in options.exclude_namespaces:
        return Verdict("skip", "namespace", "namespace %s is excluded" % namespace)
    return None


def mirror_filter(pod, options):
    if MIRROR_ANNOTATION in _annotations(pod):
        return Verdict("skip", "mirror", "static pod managed by the kubelet; it cannot be evicted")
    return None


def daemonset_filter(pod, options):
    owner = controller_of(pod)
    if owner and owner.get("kind") == "DaemonSet":
        return Verdict("skip", "daemonset", "owned by DaemonSet %s; it would come back" % owner.get("name"))
    return None


def terminal_filter(pod, options):
    phase = (pod.get("status") or {}).get("phase")
    if phase in ("Succeeded", "Failed"):
        return Verdict("delete", "terminal", "phase %s; deleted without eviction" % phase)
    return None


def terminating_filter(pod, options):
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return Verdict("skip", "terminating", "already being deleted")
    return None


def do_not_disrupt_filter(pod, options):
    annotations = _annotations(pod)
    for key, value in (DO_NOT_DISRUPT, SAFE_TO_EVICT):
        if annotations.get(key) == value and options.respect_do_not_disrupt:
            return Verdict("refuse", "do-not-disrupt",
                           '%s: "%s"; move it by rollout restart, or set respect_do_not_disrupt: false'
                           % (key, value))
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


def local_storage_filter(pod, options):
    volumes = [volume["name"] for volume in (pod.get("spec") or {}).get("volumes") or [] if "emptyDir" in volume]
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


def claim_names(pod):
    return [volume["persistentVolumeClaim"]["claimName"]
            for volume in (pod.get("spec") or {}).get("volumes") or [] if "persistentVolumeClaim" in volume]


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
    return PodPlan(pod=pod, verdict=verdict, notes=tuple(notes))


def expression_matches(expression, labels):
    key, operator = expression["key"], expression["operator"]
    values = expression.get("values") or []
    if operator == "In":
        return key in labels and labels[key] in values
    if operator == "NotIn":
        return key not in labels or labels[key] not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    raise ValueError("unknown label selector operator %s" % operator)


def selector_matches(selector, labels):
    """Whether a metav1.LabelSelector (matchLabels, matchExpressions) selects ``labels``.

    An empty selector selects everything, as it does in a PodDisruptionBudget.
    """
    selector = selector or {}
    labels = labels or {}
    if any(labels.get(key) != value for key, value in (selector.get("matchLabels") or {}).items()):
        return False
    return all(expression_matches(expression, labels) for expression in selector.get("matchExpressions") or [])


def label_selector_string(labels):
    """The label selector text ("a=1,b=2") that selects exactly ``labels``; "" for none."""
    return ",".join("%s=%s" % item for item in sorted(labels.items()))


def pdbs_for(pod, pdbs):
    """The PodDisruptionBudgets (API JSON) of the pod's namespace that select it."""
    namespace = pod["metadata"]["namespace"]
    labels = pod["metadata"].get("labels") or {}
    return [pdb for pdb in pdbs
            if pdb["metadata"]["namespace"] == namespace and selector_matches(pdb["spec"].get("selector"), labels)]


def describe_pdb(pdb):
    status = pdb.get("status") or {}
    return "PDB %s/%s (currentHealthy %s, desiredHealthy %s, disruptionsAllowed %s)" % (
        pdb["metadata"]["namespace"], pdb["metadata"]["name"], status.get("currentHealthy", "?"),
        status.get("desiredHealthy", "?"), status.get("disruptionsAllowed", "?"))


def is_ready(pod):
    return not (pod.get("metadata") or {}).get("deletionTimestamp") and any(
        condition.get("type") == "Ready" and condition.get("status") == "True"
        for condition in (pod.get("status") or {}).get("conditions") or [])


def unavailable_limit(limit, desired):
    """max_unavailable_per_owner as a number of pods: a count, or a percent of ``desired`` rounded
    down, never below 1 (a limit of 0 would make the owner's pods impossible to move)."""
    if limit is None:
        return None
    text = str(limit).strip()
    if text.endswith("%"):
        return max(1, int(desired * float(text[:-1]) / 100))
    return max(1, int(text))


def unavailable_limit_error(limit):
    """Why ``limit`` is not a valid max_unavailable_per_owner (a count >= 1 or a percent 1-100%), or None."""
    number = limit[:-1] if limit.endswith("%") else limit
    if not number.isdigit() or int(number) < 1 or (limit.endswith("%") and int(number) > 100):
        return "max_unavailable_per_owner must be a count like 1 or a percent like 25%%, got %s." % limit
    return None
