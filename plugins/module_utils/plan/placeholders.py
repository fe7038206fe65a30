# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The placeholder pods that make the autoscaler bring up warm nodes, and which nodes they warmed.

``placeholder_deployment`` builds the Deployment of pause pods (``PlaceholderPods``): one per node by hostname
anti-affinity, the target pool's selector, affinity and tolerations, small requests, a negative priority so real
pods preempt them, off the nodes of an ``Exclusion``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from ansible_collections.kubeops.rotation.plugins.module_utils.model.keys import (
    DO_NOT_DISRUPT,
    HOSTNAME_LABEL,
    MANAGED_BY,
    PLACEHOLDER_SPEC,
    ROTATING_LABEL,
    SAFE_TO_EVICT,
    WARM_SET_LABEL,
    WARM_ZONE_LABEL,
    ZONE_LABEL,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.model.nodes import is_schedulable
from ansible_collections.kubeops.rotation.plugins.module_utils.model.pods import is_ready, node_of

DEFAULT_IMAGE = "registry.k8s.io/pause:3.10"
# An autoscaler that consolidates nearly empty nodes would otherwise remove the warm nodes.
PLACEHOLDER_ANNOTATIONS = dict([DO_NOT_DISRUPT, SAFE_TO_EVICT])


def placeholder_name(name, zone=None):
    """The Deployment of a placeholder set, one per zone when the set is asked for by zone."""
    return "%s-%s" % (name, zone) if zone else name


@dataclass(frozen=True)
class PlaceholderPods:
    """What every placeholder pod of a set is: the set's name and namespace, its PriorityClass and image, where
    it may run (the pool's node selector, node affinity and tolerations) and what it requests."""

    name: str
    namespace: str
    priority_class: str
    node_selector: dict | None = None
    node_affinity: dict | None = None
    tolerations: tuple = ()
    requests: dict | None = None
    image: str = DEFAULT_IMAGE


@dataclass(frozen=True)
class Exclusion:
    """The nodes a set's placeholders keep off: ``nodes`` by their names and ``hostnames`` (their hostname
    labels, which may differ from their names), or, ``by_label``, every node labelled ``kubeops.io/rotating``
    (a rotation labels all its nodes so), the one way Karpenter accepts: it refuses hostname and metadata.name
    terms, and would count an excluded node as room and launch nothing without the label."""

    nodes: tuple = ()
    hostnames: frozenset = frozenset()
    by_label: bool = False


def placeholder_deployment(pods, replicas, zone=None, exclusion=Exclusion()):
    """The placeholder Deployment of ``replicas`` ``pods`` (PlaceholderPods): one pause pod per node, on the
    pool (in ``zone`` when given), never on the nodes of ``exclusion``. Pure. The placeholders of one set repel
    each other in every zone, so that each warms a node of its own."""
    labels = dict(MANAGED_BY, **{WARM_SET_LABEL: pods.name})
    selector = {WARM_SET_LABEL: pods.name}
    node_selector = pods.node_selector
    if zone:
        selector[WARM_ZONE_LABEL] = zone
        labels[WARM_ZONE_LABEL] = zone
        node_selector = dict(node_selector or {}, **{ZONE_LABEL: zone})
    affinity = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": HOSTNAME_LABEL, "labelSelector": {"matchLabels": {WARM_SET_LABEL: pods.name}}}]}}
    node_affinity = placeholder_node_affinity(pods.node_affinity, exclusion)
    if node_affinity:
        affinity["nodeAffinity"] = node_affinity
    pod_spec = {
        "priorityClassName": pods.priority_class,
        "terminationGracePeriodSeconds": 0,
        "nodeSelector": dict(node_selector or {}),
        "tolerations": list(pods.tolerations or []),
        "affinity": affinity,
        "containers": [{"name": "placeholder", "image": pods.image,
                        "resources": {"requests": dict(pods.requests or {"cpu": "10m", "memory": "16Mi"})}}],
    }
    spec_hash = hashlib.sha256(json.dumps(pod_spec, sort_keys=True).encode()).hexdigest()[:16]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": placeholder_name(pods.name, zone), "namespace": pods.namespace, "labels": labels,
                     "annotations": {PLACEHOLDER_SPEC: spec_hash}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": selector},
            # A changed spec replaces every placeholder at once: nothing real runs in them.
            "strategy": {"type": "Recreate"},
            "template": {"metadata": {"labels": labels,
                                      "annotations": dict(PLACEHOLDER_ANNOTATIONS, **{PLACEHOLDER_SPEC: spec_hash})},
                         "spec": pod_spec},
        },
    }


def placeholder_node_affinity(node_affinity, exclusion):
    """The placeholders' node affinity: the pool's ``node_affinity`` with the term that keeps them off the
    nodes of ``exclusion`` added to each of its required terms; None when there is neither."""
    terms = [dict(term) for term in ((node_affinity or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
                                     or {}).get("nodeSelectorTerms") or [{}]]
    if exclusion.nodes:
        if exclusion.by_label:
            not_old = {"key": ROTATING_LABEL, "operator": "DoesNotExist"}
        else:
            not_old = {"key": HOSTNAME_LABEL, "operator": "NotIn",
                       "values": sorted(set(exclusion.hostnames or ()) | set(exclusion.nodes))}
        terms = [dict(term, matchExpressions=list(term.get("matchExpressions") or []) + [not_old]) for term in terms]
    if any(term for term in terms):
        return dict(node_affinity or {}, requiredDuringSchedulingIgnoredDuringExecution={"nodeSelectorTerms": terms})
    return dict(node_affinity) if node_affinity else None


def priority_class(name, value):
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": name, "labels": dict(MANAGED_BY)}, "value": value, "globalDefault": False,
            "preemptionPolicy": "Never",
            "description": "Placeholders of kubeops.rotation warm nodes: any real pod preempts them."}


def warm_nodes_of(placeholders, nodes_by_name, exclude_nodes=()):
    """Names of the nodes where a placeholder runs Ready and the node is Ready and schedulable."""
    names = set()
    excluded = set(exclude_nodes or ())
    for pod in placeholders:
        node_name = node_of(pod)
        node = nodes_by_name.get(node_name)
        if node and is_ready(pod) and is_schedulable(node) and node_name not in excluded:
            names.add(node_name)
    return sorted(names)


def _required_expressions(deployment):
    affinity = ((((deployment or {}).get("spec") or {}).get("template") or {}).get("spec") or {}).get("affinity") or {}
    terms = ((affinity.get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get(
        "nodeSelectorTerms") or []
    return [expression for term in terms for expression in term.get("matchExpressions") or []]


def excluded_hostnames(deployment):
    """The hostname values a placeholder Deployment keeps its pods off, so that a node retired since it was
    written stays excluded and the spec does not change under the placeholders."""
    return {value for expression in _required_expressions(deployment)
            if expression.get("key") == HOSTNAME_LABEL and expression.get("operator") == "NotIn"
            for value in expression.get("values") or []}


def excludes_by_label(deployment):
    """Whether a placeholder Deployment keeps its pods off the nodes labelled kubeops.io/rotating."""
    return any(expression.get("key") == ROTATING_LABEL and expression.get("operator") == "DoesNotExist"
               for expression in _required_expressions(deployment))


def placeholders_on(placeholders, node_names, specs):
    """"placeholder on node" for each placeholder of the current ``specs`` (spec hashes) bound to one of
    ``node_names``; placeholders of an older spec are on their way out."""
    names = set(node_names or ())
    return sorted("%s on %s" % (pod["metadata"]["name"], node_of(pod)) for pod in placeholders
                  if node_of(pod) in names and not pod["metadata"].get("deletionTimestamp")
                  and (pod["metadata"].get("annotations") or {}).get(PLACEHOLDER_SPEC) in specs)


def missing_warm(warm, zone_by_node, counts):
    """{zone: nodes still missing} for ``counts`` ({zone or None: wanted}) given the warm node names;
    None counts warm nodes of any zone."""
    missing = {}
    for zone, wanted in counts.items():
        have = sum(1 for name in warm if zone is None or zone_by_node.get(name) == zone)
        if have < wanted:
            missing[zone] = wanted - have
    return missing


# Events by which an autoscaler says it will not bring up a node for a pod: Karpenter's FailedScheduling (its own,
# not the scheduler's) and cluster-autoscaler's NotTriggerScaleUp.
AUTOSCALER_COMPONENTS = ("karpenter", "cluster-autoscaler")


def autoscaler_refusal(event):
    """The autoscaler's reason, in its words, when ``event`` (API JSON) says it will not bring up a node for the
    pod; None otherwise (the scheduler's own FailedScheduling is only waiting)."""
    component = ((event.get("source") or {}).get("component") or event.get("reportingComponent") or "").lower()
    reason = event.get("reason")
    if reason == "NotTriggerScaleUp" or (reason == "FailedScheduling" and component in AUTOSCALER_COMPONENTS):
        return "%s: %s" % (component or "autoscaler", event.get("message") or reason)
    return None


def refused_placeholders(placeholders, events):
    """{placeholder name: (its zone, the autoscaler's reason)} for the placeholders not yet on a node that an
    autoscaler said it will not bring a node up for (the last such event of each)."""
    pending = {pod["metadata"]["name"]: ((pod["metadata"].get("labels") or {}).get(WARM_ZONE_LABEL))
               for pod in placeholders if not (pod.get("spec") or {}).get("nodeName")}
    refused = {}
    for event in events:
        name = (event.get("involvedObject") or {}).get("name")
        refusal = autoscaler_refusal(event) if name in pending else None
        if refusal:
            refused[name] = (pending[name], refusal)
    return refused
