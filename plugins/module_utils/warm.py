# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Warm nodes: placeholder pods that make the autoscaler bring up nodes before anything moves.

Pure: ``placeholder_deployment`` builds the Deployment of pause pods (one per
node by hostname anti-affinity, the target pool's selector, affinity and
tolerations, small requests, a negative priority so real pods preempt them),
and ``nodes_needed`` computes how many pool nodes hold the pods of given
nodes. ``WarmNodes`` applies them and waits, by watching the placeholders,
until enough of them run on Ready, schedulable nodes.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import time

from ansible_collections.kubeops.rotation.plugins.module_utils.client import ApiException, WatchExpired
from ansible_collections.kubeops.rotation.plugins.module_utils.eviction import SelectionError, select_pods
from ansible_collections.kubeops.rotation.plugins.module_utils.nodes import is_schedulable
from ansible_collections.kubeops.rotation.plugins.module_utils.pods import (
    FilterOptions,
    is_ready,
    judge,
    label_selector_string,
)

MANAGED_BY = {"app.kubernetes.io/managed-by": "kubeops.rotation"}
SET_LABEL = "kubeops.io/warm-set"
SPEC_HASH = "kubeops.io/placeholder-spec"
PLACEHOLDER_ANNOTATIONS = {
    # An autoscaler that consolidates nearly empty nodes would otherwise remove the warm nodes.
    "karpenter.sh/do-not-disrupt": "true",
    "cluster-autoscaler.kubernetes.io/safe-to-evict": "false",
}
RESOURCES = ("cpu", "memory", "pods")
_SUFFIXES = {"": 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
             "Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40, "Pi": 2 ** 50, "Ei": 2 ** 60}


def parse_quantity(text):
    """A Kubernetes quantity ("100m", "16Gi", "2", "1e3") as a number of base units (cores, bytes, pods)."""
    match = re.match(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)$", str(text).strip())
    if not match or match.group(2) not in _SUFFIXES:
        raise ValueError("not a Kubernetes quantity: %r" % (text,))
    return float(match.group(1)) * _SUFFIXES[match.group(2)]


def pod_requests(pod):
    """Requests of a pod as the scheduler counts them: the sum of its containers, or its largest
    init container when that is larger, plus its overhead; every pod counts 1 against "pods"."""
    spec = pod.get("spec") or {}
    totals = {"cpu": 0.0, "memory": 0.0}
    for container in spec.get("containers") or []:
        for resource, value in ((container.get("resources") or {}).get("requests") or {}).items():
            if resource in totals:
                totals[resource] += parse_quantity(value)
    for container in spec.get("initContainers") or []:
        for resource, value in ((container.get("resources") or {}).get("requests") or {}).items():
            if resource in totals:
                totals[resource] = max(totals[resource], parse_quantity(value))
    for resource, value in (spec.get("overhead") or {}).items():
        if resource in totals:
            totals[resource] += parse_quantity(value)
    totals["pods"] = 1.0
    return totals


def _selector_satisfied(pod, labels):
    node_selector = (pod.get("spec") or {}).get("nodeSelector") or {}
    return all(labels.get(key) == value for key, value in node_selector.items())


def nodes_needed(pods, template_allocatable, pool_labels):
    """How many pool nodes hold the movable pods of ``pods``, and how that was computed. Pure.

    DaemonSet pods come back on every node, so their requests per node (the
    average over the source nodes) are taken off each new node's allocatable.
    Pods whose node selector the pool's labels do not satisfy will not go to
    the pool and are left out, by name.
    """
    movable, per_node_daemon, not_for_pool = [], {r: 0.0 for r in RESOURCES}, []
    source_nodes = {(pod.get("spec") or {}).get("nodeName") for pod in pods}
    for pod in pods:
        verdict = judge(pod, FilterOptions(force=True, delete_emptydir_data=True, respect_do_not_disrupt=False,
                                           evict_system_critical=True)).verdict
        if verdict.reason == "daemonset":
            for resource, value in pod_requests(pod).items():
                per_node_daemon[resource] += value / max(1, len(source_nodes))
        elif verdict.action == "evict":
            if _selector_satisfied(pod, pool_labels):
                movable.append(pod)
            else:
                not_for_pool.append("%s/%s" % (pod["metadata"]["namespace"], pod["metadata"]["name"]))
    allocatable = {resource: parse_quantity(template_allocatable.get(resource, 0)) for resource in RESOURCES}
    free = {resource: allocatable[resource] - per_node_daemon[resource] for resource in RESOURCES}
    total = {resource: sum(pod_requests(pod)[resource] for pod in movable) for resource in RESOURCES}
    per_resource = {}
    for resource in RESOURCES:
        if total[resource] <= 0:
            per_resource[resource] = 0
        elif free[resource] <= 0:
            raise ValueError("a template node has no %s left after DaemonSet pods (%g allocatable, %g for "
                             "DaemonSets)" % (resource, allocatable[resource], per_node_daemon[resource]))
        else:
            per_resource[resource] = int(math.ceil(total[resource] / free[resource] - 1e-9))
    count = max(per_resource.values()) if movable else 0
    explanation = {
        "pods": len(movable),
        "requests": {resource: round(total[resource], 3) for resource in RESOURCES},
        "node_allocatable": {resource: round(allocatable[resource], 3) for resource in RESOURCES},
        "daemonset_requests_per_node": {resource: round(per_node_daemon[resource], 3) for resource in RESOURCES},
        "nodes_by_resource": per_resource,
        "not_for_pool": sorted(not_for_pool),
        "summary": "%d pods requesting cpu %g, memory %g, pods %d need %d node(s) of cpu %g, memory %g, pods %d "
                   "(after DaemonSets); the tightest resource decides" % (
                       len(movable), total["cpu"], total["memory"], total["pods"], count, free["cpu"],
                       free["memory"], free["pods"]),
    }
    return count, explanation


def placeholder_deployment(name, namespace, replicas, priority_class, node_selector=None, node_affinity=None,
                           tolerations=None, requests=None, exclude_nodes=None, image="registry.k8s.io/pause:3.10"):
    """The placeholder Deployment: one pause pod per node, on the pool, never on ``exclude_nodes``. Pure."""
    labels = dict(MANAGED_BY, **{SET_LABEL: name})
    affinity = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {SET_LABEL: name}}}]}}
    terms = [dict(term) for term in ((node_affinity or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
                                     or {}).get("nodeSelectorTerms") or [{}]]
    if exclude_nodes:
        not_old = {"key": "kubernetes.io/hostname", "operator": "NotIn", "values": sorted(exclude_nodes)}
        terms = [dict(term, matchExpressions=list(term.get("matchExpressions") or []) + [not_old]) for term in terms]
    if any(term for term in terms):
        affinity["nodeAffinity"] = dict(node_affinity or {}, requiredDuringSchedulingIgnoredDuringExecution={
            "nodeSelectorTerms": terms})
    pod_spec = {
        "priorityClassName": priority_class,
        "terminationGracePeriodSeconds": 0,
        "nodeSelector": dict(node_selector or {}),
        "tolerations": list(tolerations or []),
        "affinity": affinity,
        "containers": [{"name": "placeholder", "image": image,
                        "resources": {"requests": dict(requests or {"cpu": "10m", "memory": "16Mi"})}}],
    }
    spec_hash = hashlib.sha256(json.dumps(pod_spec, sort_keys=True).encode()).hexdigest()[:16]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": labels, "annotations": {SPEC_HASH: spec_hash}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {SET_LABEL: name}},
            # A changed spec replaces every placeholder at once: nothing real runs in them.
            "strategy": {"type": "Recreate"},
            "template": {"metadata": {"labels": labels, "annotations": dict(PLACEHOLDER_ANNOTATIONS)},
                         "spec": pod_spec},
        },
    }


def priority_class(name, value):
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": name, "labels": dict(MANAGED_BY)}, "value": value, "globalDefault": False,
            "preemptionPolicy": "Never",
            "description": "Placeholders of kubeops.rotation warm nodes: any real pod preempts them."}


def warm_nodes_of(placeholders, nodes_by_name, exclude_nodes=()):
    """Names of the nodes where a placeholder runs Ready and the node is Ready and schedulable. Pure."""
    names = set()
    for pod in placeholders:
        node_name = (pod.get("spec") or {}).get("nodeName")
        node = nodes_by_name.get(node_name)
        if node and is_ready(pod) and is_schedulable(node) and node_name not in set(exclude_nodes or ()):
            names.add(node_name)
    return sorted(names)


class WarmNodes:
    """Applies a placeholder set and waits for its nodes."""

    def __init__(self, client, name, namespace, clock=time.monotonic):
        self.client = client
        self.name = name
        self.namespace = namespace
        self.clock = clock
        self.selector = "%s=%s" % (SET_LABEL, name)

    def existing(self):
        try:
            return self.client.to_dict(self.client.apps.read_namespaced_deployment(self.name, self.namespace))
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def ensure_prerequisites(self, class_name, class_value, check_mode):
        """Create the namespace and the PriorityClass when missing; returns what was created."""
        created = []
        try:
            self.client.core.read_namespace(self.namespace)
        except ApiException as exc:
            if exc.status != 404:
                raise
            created.append("Namespace %s" % self.namespace)
            if not check_mode:
                self.client.core.create_namespace({"metadata": {"name": self.namespace, "labels": dict(MANAGED_BY)}})
        try:
            self.client.scheduling.read_priority_class(class_name)
        except ApiException as exc:
            if exc.status != 404:
                raise
            created.append("PriorityClass %s" % class_name)
            if not check_mode:
                self.client.scheduling.create_priority_class(priority_class(class_name, class_value))
        return created

    def apply(self, desired, check_mode):
        """Create, update or leave the Deployment; returns (action, before replicas, after replicas)."""
        current = self.existing()
        if current is None:
            if not check_mode:
                self.client.apps.create_namespaced_deployment(self.namespace, desired)
            return "created", None, desired["spec"]["replicas"]
        same_spec = (current["metadata"].get("annotations") or {}).get(SPEC_HASH) == \
            desired["metadata"]["annotations"][SPEC_HASH]
        before = current["spec"].get("replicas")
        if same_spec and before == desired["spec"]["replicas"]:
            return "unchanged", before, before
        if not check_mode:
            desired = dict(desired, metadata=dict(desired["metadata"],
                                                  resourceVersion=current["metadata"]["resourceVersion"]))
            self.client.apps.replace_namespaced_deployment(self.name, self.namespace, desired)
        return ("scaled" if same_spec else "updated"), before, desired["spec"]["replicas"]

    def placeholders(self):
        return self.client.list_all(self.client.core.list_namespaced_pod, namespace=self.namespace,
                                    label_selector=self.selector)

    def warm(self, exclude_nodes, node_selector=None):
        """(warm node names, placeholders): two list requests, however many nodes."""
        placeholders = self.placeholders()
        selector = label_selector_string(node_selector or {}) or None
        nodes = self.client.list_all(self.client.core.list_node, label_selector=selector)
        return warm_nodes_of(placeholders, {node["metadata"]["name"]: node for node in nodes}, exclude_nodes), \
            placeholders

    def wait(self, count, exclude_nodes, node_selector, timeout):
        """Watch the placeholders until ``count`` run on Ready, schedulable nodes; returns (nodes, error or None)."""
        deadline = self.clock() + timeout
        warm, placeholders = self.warm(exclude_nodes, node_selector)
        resource_version = self.client.core.list_namespaced_pod(
            self.namespace, label_selector=self.selector, limit=1).metadata.resource_version
        while len(warm) < count:
            remaining = deadline - self.clock()
            if remaining <= 0:
                return warm, self.timeout_message(count, warm, placeholders, timeout)
            try:
                for _event_type, pod in self.client.watch(self.client.core.list_namespaced_pod, resource_version,
                                                          min(remaining, 5), namespace=self.namespace,
                                                          label_selector=self.selector):
                    resource_version = pod["metadata"].get("resourceVersion") or resource_version
                    if is_ready(pod):
                        break
            except WatchExpired:
                resource_version = None
            # A node turning Ready after its placeholder is not a placeholder event: look again every pass.
            warm, placeholders = self.warm(exclude_nodes, node_selector)
        return warm, None

    def timeout_message(self, count, warm, placeholders, timeout):
        pending = [pod for pod in placeholders if not (pod.get("spec") or {}).get("nodeName")]
        reasons = []
        for pod in pending[:5]:
            events = self.client.core.list_namespaced_event(
                self.namespace, field_selector="involvedObject.name=%s" % pod["metadata"]["name"]).items
            last = events[-1].message if events else "no event yet"
            reasons.append("%s: %s" % (pod["metadata"]["name"], last))
        return ("Timed out after %s s waiting for %d warm node(s): %d ready (%s); %d placeholder(s) pending%s. "
                "The placeholders stay; rerun to keep waiting, or state: absent to remove them." % (
                    timeout, count, len(warm), ", ".join(warm) or "none", len(pending),
                    ": " + "; ".join(reasons) if reasons else ""))

    def remove(self, class_name, check_mode):
        """Delete the placeholders, then the PriorityClass and namespace if ours and no longer used."""
        removed = []
        if self.existing() is not None:
            removed.append("Deployment %s/%s" % (self.namespace, self.name))
            if not check_mode:
                self.client.apps.delete_namespaced_deployment(self.name, self.namespace,
                                                              body={"propagationPolicy": "Foreground"})
        others = [d for d in self._managed_deployments() if d["metadata"]["name"] != self.name]
        if others:
            return removed
        try:
            klass = self.client.scheduling.read_priority_class(class_name)
            if (klass.metadata.labels or {}).get("app.kubernetes.io/managed-by") == MANAGED_BY[
                    "app.kubernetes.io/managed-by"]:
                removed.append("PriorityClass %s" % class_name)
                if not check_mode:
                    self.client.scheduling.delete_priority_class(class_name)
        except ApiException as exc:
            if exc.status != 404:
                raise
        return removed

    def _managed_deployments(self):
        try:
            return self.client.list_all(self.client.apps.list_namespaced_deployment, namespace=self.namespace,
                                        label_selector="app.kubernetes.io/managed-by=kubeops.rotation")
        except ApiException as exc:
            if exc.status == 404:
                return []
            raise


def template_allocatable(client, params):
    """The allocatable of one node of the pool: template_capacity, template_node, or a node matching node_selector."""
    if params.get("template_capacity"):
        return dict(params["template_capacity"]), "template_capacity"
    if params.get("template_node"):
        nodes, missing = client.read_nodes([params["template_node"]])
        if missing:
            raise SelectionError("No node named %s; nothing was changed." % params["template_node"])
        return nodes[0]["status"]["allocatable"], "node %s" % params["template_node"]
    selector = label_selector_string(params.get("node_selector") or {})
    nodes = client.list_all(client.core.list_node, label_selector=selector or None) if selector else []
    if not nodes:
        raise SelectionError("capacity_for_nodes needs the size of a pool node: no node matches node_selector, so "
                             "give template_capacity (for example {cpu: '4', memory: 16Gi, pods: '110'}) or "
                             "template_node; nothing was changed.")
    return nodes[0]["status"]["allocatable"], "node %s of the pool" % nodes[0]["metadata"]["name"]


def ensure_warm_nodes(client, params, check_mode=False):
    """The warm_nodes module's work; returns (result, failure message or None)."""
    started = time.monotonic()
    runner = WarmNodes(client, params["name"], params["namespace"])
    result = {"changed": False, "name": params["name"], "namespace": params["namespace"]}
    if params["state"] == "absent":
        removed = runner.remove(params["priority_class"], check_mode)
        result.update(changed=bool(removed), removed=removed, nodes=[],
                      elapsed_seconds=round(time.monotonic() - started, 2))
        return result, None
    count = params.get("count")
    if params.get("capacity_for_nodes"):
        pods, _names = select_pods(client, nodes=params["capacity_for_nodes"])
        allocatable, source = template_allocatable(client, params)
        count, explanation = nodes_needed(pods, allocatable, params.get("node_selector") or {})
        explanation["template"] = source
        result["computed"] = explanation
    desired = placeholder_deployment(params["name"], params["namespace"], count, params["priority_class"],
                                     params.get("node_selector"), params.get("node_affinity"),
                                     params.get("tolerations"), params.get("requests"), params.get("exclude_nodes"),
                                     params.get("image") or "registry.k8s.io/pause:3.10")
    created = runner.ensure_prerequisites(params["priority_class"], params["priority"], check_mode)
    action, before, after = runner.apply(desired, check_mode)
    result.update(changed=bool(created) or action != "unchanged", action=action, created=created, count=count,
                  diff={"before": {"replicas": before}, "after": {"replicas": after}})
    failure = None
    if check_mode or not params.get("wait", True) or count == 0:
        nodes = runner.warm(params.get("exclude_nodes"), params.get("node_selector"))[0] \
            if action != "created" else []
    else:
        nodes, failure = runner.wait(count, params.get("exclude_nodes"), params.get("node_selector"),
                                     params["timeout"])
    result.update(nodes=nodes, elapsed_seconds=round(time.monotonic() - started, 2))
    return result, failure
