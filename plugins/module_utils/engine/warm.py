# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Warm nodes: apply a placeholder set (plan.placeholders) with PlaceholderSet, and wait with WarmNodes, by
watching the placeholders, until enough of them run on Ready, schedulable nodes."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from ansible_collections.kubeops.rotation.plugins.module_utils.api.errors import ApiException
from ansible_collections.kubeops.rotation.plugins.module_utils.api.events import event_messages, pod_events
from ansible_collections.kubeops.rotation.plugins.module_utils.api.nodes import list_nodes
from ansible_collections.kubeops.rotation.plugins.module_utils.api.placeholders import (
    create_deployment,
    create_namespace,
    create_priority_class,
    delete_deployment,
    delete_priority_class,
    read_namespace,
    read_priority_class,
    replace_deployment,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.api.snapshot import select_pods, template_allocatable
from ansible_collections.kubeops.rotation.plugins.module_utils.api.watch import RELISTED
from ansible_collections.kubeops.rotation.plugins.module_utils.api.workloads import (
    pods_in,
    pods_informer,
    pods_version,
    read_workload,
    workloads_in,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.progress import tell_progress
from ansible_collections.kubeops.rotation.plugins.module_utils.model.errors import Blocked, InvalidInput, TimedOut
from ansible_collections.kubeops.rotation.plugins.module_utils.model.inputs import (
    first_error,
    labels_error,
    names_error,
    number_error,
    quantities_error,
    text_error,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.model.keys import (
    MANAGED_BY,
    MANAGED_BY_LABEL,
    MANAGER,
    PLACEHOLDER_SPEC,
    WARM_SET_LABEL,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.model.keys import HOSTNAME_LABEL, ROTATING_LABEL
from ansible_collections.kubeops.rotation.plugins.module_utils.model.nodes import node_labels, node_name, zone_of
from ansible_collections.kubeops.rotation.plugins.module_utils.model.owners import Workload
from ansible_collections.kubeops.rotation.plugins.module_utils.model.pods import is_ready, is_terminating
from ansible_collections.kubeops.rotation.plugins.module_utils.model.quantities import RESOURCES
from ansible_collections.kubeops.rotation.plugins.module_utils.model.selectors import labels_text
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.capacity import nodes_needed
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.progress import not_ready_text
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.placeholders import (
    DEFAULT_IMAGE,
    Exclusion,
    PlaceholderPods,
    excluded_hostnames,
    excludes_by_label,
    missing_warm,
    placeholder_deployment,
    placeholder_name,
    placeholders_on,
    priority_class,
    refused_placeholders,
    warm_nodes_of,
)

# How long a placeholder may wait before an autoscaler's refusal of it ends the wait: a refusal seen sooner may be
# one the autoscaler takes back once a node it is launching registers.
REFUSAL_GRACE_SECONDS = 30


class PlaceholderSet:
    """A placeholder set's Deployments (one, or one per zone), with the namespace and PriorityClass they need:
    applied, kept off the nodes they must not warm, removed."""

    def __init__(self, client, name, namespace):
        self.client = client
        self.name = name
        self.namespace = namespace

    def existing(self, name):
        return read_workload(self.client, Workload("Deployment", self.namespace, name))

    def ensure_prerequisites(self, class_name, class_value, check_mode):
        """Create the namespace and the PriorityClass when missing; returns what was created."""
        created = []
        if read_namespace(self.client, self.namespace) is None:
            created.append("Namespace %s" % self.namespace)
            if not check_mode:
                create_namespace(self.client, {"metadata": {"name": self.namespace, "labels": dict(MANAGED_BY)}})
        if read_priority_class(self.client, class_name) is None:
            created.append("PriorityClass %s" % class_name)
            if not check_mode:
                create_priority_class(self.client, priority_class(class_name, class_value))
        return created

    def apply(self, desired, check_mode):
        """Create, update or leave one Deployment; returns (action, before replicas, after replicas)."""
        name = desired["metadata"]["name"]
        current = self.existing(name)
        if current is None:
            if not check_mode:
                create_deployment(self.client, self.namespace, desired)
            return "created", None, desired["spec"]["replicas"]
        same_spec = self._same_spec(current, desired)
        before = current["spec"].get("replicas")
        if self._is(current, desired):
            return "unchanged", before, before
        if not check_mode:
            desired = dict(desired, metadata=dict(desired["metadata"],
                                                  resourceVersion=current["metadata"]["resourceVersion"]))
            try:
                replace_deployment(self.client, self.namespace, name, desired)
            except ApiException as exc:
                # A replace whose answer was lost and that was sent again finds its own change there.
                if exc.status != 409 or not self._is(self.existing(name), desired):
                    raise
        return ("scaled" if same_spec else "updated"), before, desired["spec"]["replicas"]

    @staticmethod
    def _same_spec(current, desired):
        """Whether the Deployment ``current`` has the placeholder spec of ``desired``."""
        return (current["metadata"].get("annotations") or {}).get(PLACEHOLDER_SPEC) == \
            desired["metadata"]["annotations"][PLACEHOLDER_SPEC]

    def _is(self, current, desired):
        """Whether the Deployment ``current`` has the spec and replicas of ``desired``."""
        return current is not None and self._same_spec(current, desired) and \
            current["spec"].get("replicas") == desired["spec"]["replicas"]

    def exclusion(self, exclude_nodes, zones):
        """(by label, hostnames) for keeping the placeholders off ``exclude_nodes``: by the label
        kubeops.io/rotating when every one of them that exists carries it (a rotation's nodes), else by their
        hostname labels, with those the set's Deployments already exclude. A set keeps its way once written,
        so that its spec does not change as the nodes are retired."""
        if not exclude_nodes:
            return False, set()
        names = set(exclude_nodes)
        existing = [node for node in list_nodes(self.client) if node_name(node) in names]
        written = [self.existing(placeholder_name(self.name, zone)) for zone in zones]
        if existing:
            by_label = all(ROTATING_LABEL in node_labels(node) for node in existing)
        else:
            by_label = any(excludes_by_label(deployment) for deployment in written)
        if by_label:
            return True, set()
        hostnames = {node_labels(node).get(HOSTNAME_LABEL) for node in existing} - {None}
        for deployment in written:
            hostnames |= excluded_hostnames(deployment)
        return False, hostnames

    def remove(self, class_name, check_mode):
        """Delete the placeholders, then the PriorityClass and namespace if ours and no longer used."""
        removed = []
        managed = self._managed_deployments()
        ours = [deployment for deployment in managed
                if (deployment["metadata"].get("labels") or {}).get(WARM_SET_LABEL) == self.name]
        # A Deployment deleted in the foreground stays until its pods are gone: deleting it again changes nothing.
        for deployment in ours:
            if is_terminating(deployment):
                continue
            removed.append("Deployment %s/%s" % (self.namespace, deployment["metadata"]["name"]))
            if not check_mode:
                delete_deployment(self.client, self.namespace, deployment["metadata"]["name"],
                                  {"propagationPolicy": "Foreground"})
        if len(ours) < len(managed):
            return removed
        klass = read_priority_class(self.client, class_name)
        if klass and (klass["metadata"].get("labels") or {}).get(MANAGED_BY_LABEL) == MANAGER:
            removed.append("PriorityClass %s" % class_name)
            if not check_mode:
                delete_priority_class(self.client, class_name)
        return removed

    def _managed_deployments(self):
        return workloads_in(self.client, "Deployment", self.namespace, labels_text(MANAGED_BY))


class WarmNodes:
    """Waits, by watching a placeholder set's pods, until enough of them run on Ready, schedulable nodes."""

    def __init__(self, client, name, namespace, clock=time.monotonic):
        self.client = client
        self.namespace = namespace
        self.clock = clock
        self.selector = labels_text({WARM_SET_LABEL: name})

    def placeholders(self):
        return pods_in(self.client, self.namespace, self.selector)

    def warm(self, exclude_nodes, node_selector=None):
        """(warm node names, their zones, placeholders): two list requests, however many nodes."""
        placeholders = self.placeholders()
        nodes = list_nodes(self.client, labels_text(node_selector) or None)
        by_name = {node_name(node): node for node in nodes}
        warm = warm_nodes_of(placeholders, by_name, exclude_nodes)
        return warm, {name: zone_of(by_name[name]) for name in warm}, placeholders

    def wait(self, counts, exclude_nodes, node_selector, timeout, specs=()):
        """Watch the placeholders until ``counts`` ({zone or None: nodes}) run on Ready, schedulable nodes;
        returns the nodes, or raises TimedOut (its result holds the nodes warm so far), or Blocked at once when
        placeholders of the current ``specs`` run on ``exclude_nodes``."""
        started = self.clock()
        deadline = started + timeout
        warm, zones, placeholders = self.warm(exclude_nodes, node_selector)
        placeholder_pods = pods_informer(self.client, self.namespace, label_selector=self.selector,
                                         clock=self.clock).start_from(pods_version(self.client, self.namespace))
        while missing_warm(warm, zones, counts):
            self.check_not_on(exclude_nodes, placeholders, specs)
            if self.clock() - started >= REFUSAL_GRACE_SECONDS:
                self.check_autoscaler(placeholders, warm)
            remaining = deadline - self.clock()
            if remaining <= 0:
                raise TimedOut(self.timeout_message(counts, warm, zones, placeholders, timeout), {"nodes": warm})
            tell_progress(self.progress_line(counts, warm, zones, placeholders))
            placeholder_pods.wait(lambda _objects, change: change is RELISTED or bool(change and is_ready(change[1])),
                                  self.clock() + min(remaining, 5))
            # A node turning Ready after its placeholder is not a placeholder event: look again every pass.
            warm, zones, placeholders = self.warm(exclude_nodes, node_selector)
        return warm

    @staticmethod
    def progress_line(counts, warm, zones, placeholders):
        missing = missing_warm(warm, zones, counts)
        wanted = sum(counts.values())
        line = "warming nodes: %d of %d ready" % (wanted - sum(missing.values()), wanted)
        if list(counts) != [None]:
            line += " (missing %s)" % ", ".join("%d in zone %s" % (count, zone)
                                                for zone, count in sorted(missing.items()))
        not_ready = [pod for pod in placeholders if not is_ready(pod)]
        if not_ready:
            line += "; placeholders waiting for a node: %s" % not_ready_text(not_ready)
        return line

    def check_autoscaler(self, placeholders, warm):
        """Fail, rather than at the timeout, when the autoscaler said it will not bring up a node for a placeholder
        (a zone its pool does not serve, a limit reached)."""
        if not any(not (pod.get("spec") or {}).get("nodeName") for pod in placeholders):
            return
        refused = refused_placeholders(placeholders, pod_events(self.client, self.namespace))
        if refused:
            name, (zone, reason) = sorted(refused.items())[0]
            where = " in zone %s" % zone if zone else ""
            raise Blocked("The autoscaler will not bring up a warm node%s for placeholder %s: %s. %d warm node(s) "
                          "ready (%s). The placeholders stay; fix the pool (or the zones asked for) and rerun, or "
                          "state: absent to remove them." % (where, name, reason, len(warm), ", ".join(warm) or "none"),
                          {"nodes": warm})

    @staticmethod
    def check_not_on(exclude_nodes, placeholders, specs):
        """Fail at once, rather than at the timeout, when placeholders run on nodes they must not warm."""
        wrong = placeholders_on(placeholders, exclude_nodes, specs)
        if wrong:
            raise Blocked("Placeholders run on nodes they must not warm (the rotation's own nodes): %s. Waiting "
                          "cannot make them warm nodes; remove the placeholders (state: absent) and warm again." %
                          ", ".join(wrong))

    def timeout_message(self, counts, warm, zones, placeholders, timeout):
        pending = [pod for pod in placeholders if not (pod.get("spec") or {}).get("nodeName")]
        reasons = []
        for pod in pending[:5]:
            messages = event_messages(self.client, self.namespace, pod["metadata"]["name"])
            last = messages[-1] if messages else "no event yet"
            reasons.append("%s: %s" % (pod["metadata"]["name"], last))
        missing = missing_warm(warm, zones, counts)
        wanted = "%d warm node(s)" % sum(counts.values()) if list(counts) == [None] else \
            "warm nodes (%s)" % ", ".join("%s in zone %s" % (count, zone) for zone, count in sorted(counts.items()))
        return ("Timed out after %s s waiting for %s: %d ready (%s)%s; %d placeholder(s) pending%s. "
                "The placeholders stay; rerun to keep waiting, or state: absent to remove them." % (
                    timeout, wanted, len(warm), ", ".join(warm) or "none",
                    "" if list(counts) == [None] else ", missing %s" % ", ".join(
                        "%d in zone %s" % (count, zone) for zone, count in sorted(missing.items())),
                    len(pending), ": " + "; ".join(reasons) if reasons else ""))


@dataclass(frozen=True)
class WarmSettings:
    """A placeholder set: where its pods may run, how many (or per zone, or sized for the pods of some
    nodes), and waiting."""

    name: str = "warm-nodes"
    namespace: str = "kubeops-warm"
    present: bool = True
    count: int | None = None
    zones: tuple = ()
    capacity_for_nodes: tuple = ()
    template_capacity: dict | None = None
    template_node: str | None = None
    node_selector: dict = field(default_factory=dict)
    node_affinity: dict | None = None
    tolerations: tuple = ()
    requests: dict | None = None
    exclude_nodes: tuple = ()
    priority_class: str = "kubeops-warm-placeholder"
    priority: int = -10
    image: str = DEFAULT_IMAGE
    wait: bool = True
    timeout: int = 600

    @classmethod
    def from_params(cls, params, prefix=""):
        """The settings from a module's parameters (warm_nodes', or evict's ``warm_first``, whose names ``prefix``
        gives in errors; an option it does not take keeps its default here), or InvalidInput before anything is
        read."""
        given = {key: value for key, value in params.items() if value is not None}
        default = cls()
        settings = cls(
            name=given.get("name", default.name), namespace=given.get("namespace", default.namespace),
            present=given.get("state", "present") == "present", count=given.get("count"),
            zones=tuple(given.get("zones", ())), capacity_for_nodes=tuple(given.get("capacity_for_nodes", ())),
            template_capacity=given.get("template_capacity"), template_node=given.get("template_node"),
            node_selector=given.get("node_selector", {}), node_affinity=given.get("node_affinity"),
            tolerations=tuple(given.get("tolerations", ())), requests=given.get("requests"),
            exclude_nodes=tuple(given.get("exclude_nodes", ())),
            priority_class=given.get("priority_class", default.priority_class),
            priority=given.get("priority", default.priority), image=given.get("image", default.image),
            wait=given.get("wait", default.wait), timeout=given.get("timeout", default.timeout))
        error = first_error(
            text_error(prefix + "name", settings.name, optional=False),
            text_error(prefix + "namespace", settings.namespace, optional=False),
            number_error(prefix + "count", settings.count, 0),
            zones_error(prefix + "zones", given.get("zones")),
            names_error(prefix + "capacity_for_nodes", given.get("capacity_for_nodes"), "node"),
            quantities_error(prefix + "template_capacity", settings.template_capacity, required=RESOURCES,
                             above_zero=True),
            text_error(prefix + "template_node", settings.template_node),
            labels_error(prefix + "node_selector", settings.node_selector),
            quantities_error(prefix + "requests", settings.requests),
            names_error(prefix + "exclude_nodes", list(settings.exclude_nodes) or None, "node"),
            text_error(prefix + "priority_class", settings.priority_class, optional=False),
            number_error(prefix + "timeout", settings.timeout, 1))
        if error:
            raise InvalidInput(error)
        if settings.priority >= 0:
            raise InvalidInput("%spriority must be negative so that real pods preempt the placeholders, got %s."
                               % (prefix, settings.priority))
        return settings


def zones_error(name, zones):
    """Why a zones option is refused: empty, a count below 0, or a zone named twice."""
    if zones is None:
        return None
    if not zones:
        return "%s is empty: give at least one zone and its count." % name
    seen = set()
    for index, entry in enumerate(zones, 1):
        if entry["count"] < 0:
            return "%s[%d].count must be 0 or more, got %s." % (name, index, entry["count"])
        zone = (entry["zone"] or "").strip() or None
        if zone in seen:
            return "%s names the zone %s twice." % (name, zone or "(any zone)")
        seen.add(zone)
    return None


ACTION_WEIGHT = {"unchanged": 0, "scaled": 1, "updated": 2, "created": 3}


def ensure_warm_nodes(client, settings, check_mode=False):
    """The warm_nodes module's work; returns the result, or raises TimedOut carrying it."""
    started = time.monotonic()
    placeholder_set = PlaceholderSet(client, settings.name, settings.namespace)
    warm_nodes = WarmNodes(client, settings.name, settings.namespace)
    result = {"changed": False, "name": settings.name, "namespace": settings.namespace}
    if not settings.present:
        removed = placeholder_set.remove(settings.priority_class, check_mode)
        result.update(changed=bool(removed), removed=removed, nodes=[],
                      elapsed_seconds=round(time.monotonic() - started, 2))
        return result
    counts = {entry["zone"] or None: entry["count"] for entry in settings.zones} or {None: settings.count}
    if settings.capacity_for_nodes:
        pods, _names = select_pods(client, nodes=settings.capacity_for_nodes)
        allocatable, source = template_allocatable(client, settings.template_capacity, settings.template_node,
                                                   settings.node_selector)
        count, explanation = nodes_needed(pods, allocatable, settings.node_selector)
        explanation["template"] = source
        result["computed"] = explanation
        counts = {None: count}
    created = placeholder_set.ensure_prerequisites(settings.priority_class, settings.priority, check_mode)
    by_label, hostnames = placeholder_set.exclusion(settings.exclude_nodes, counts)
    sets, before, after = [], {}, {}
    for zone, count in sorted(counts.items(), key=lambda item: item[0] or ""):
        placeholder_pods = PlaceholderPods(settings.name, settings.namespace, settings.priority_class,
                                           settings.node_selector, settings.node_affinity, settings.tolerations,
                                           settings.requests, settings.image)
        desired = placeholder_deployment(placeholder_pods, count, zone,
                                         Exclusion(settings.exclude_nodes, frozenset(hostnames), by_label))
        action, before[zone or "-"], after[zone or "-"] = placeholder_set.apply(desired, check_mode)
        sets.append({"name": desired["metadata"]["name"], "zone": zone, "action": action, "count": count,
                     "spec": desired["metadata"]["annotations"][PLACEHOLDER_SPEC]})
    action = max((entry["action"] for entry in sets), key=ACTION_WEIGHT.get)
    if list(counts) == [None]:
        before, after = before["-"], after["-"]
    result.update(changed=bool(created) or action != "unchanged", action=action, created=created,
                  count=sum(counts.values()), sets=sets, diff={"before": {"replicas": before},
                                                               "after": {"replicas": after}})
    if check_mode or not settings.wait or not any(counts.values()):
        nodes = warm_nodes.warm(settings.exclude_nodes, settings.node_selector)[0] if action != "created" else []
    else:
        try:
            nodes = warm_nodes.wait(counts, settings.exclude_nodes, settings.node_selector, settings.timeout,
                                    {entry["spec"] for entry in sets})
        except TimedOut as exc:
            result.update(exc.result, elapsed_seconds=round(time.monotonic() - started, 2))
            exc.result = result
            raise
    result.update(nodes=nodes, elapsed_seconds=round(time.monotonic() - started, 2))
    return result
