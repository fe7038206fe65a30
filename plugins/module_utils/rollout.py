# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Rollout restart, and rollout status decided the way ``kubectl rollout status`` decides it.

The pure half: ``rollout_status`` reads a workload (API JSON) and says
whether its rollout is complete, still going, or will not complete by
waiting; ``restart_plan`` says whether a workload needs restarting under a
restart id and builds the patch. The acting half, ``RolloutRestart``,
patches the workloads, at most ``max_concurrent`` at a time, and waits for
each by watching it.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from ansible_collections.kubeops.rotation.plugins.module_utils.client import ApiException, WatchExpired
from ansible_collections.kubeops.rotation.plugins.module_utils.pods import controller_of, label_selector_string
from ansible_collections.kubeops.rotation.plugins.module_utils.times import parse_time, utc_now

RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"
RESTART_ID = "kubeops.io/restart-id"
KINDS = ("Deployment", "StatefulSet", "DaemonSet")


@dataclass(frozen=True)
class Status:
    """``state`` is done, progressing, or stuck (waiting would not help: reported, not waited on)."""

    state: str
    message: str


def _condition(obj, condition_type):
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition.get("type") == condition_type:
            return condition
    return {}


def rollout_status(kind, obj):
    """Whether a Deployment, StatefulSet or DaemonSet has finished rolling out, by kubectl's rules."""
    metadata = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    name = "%s %s/%s" % (kind, metadata.get("namespace"), metadata.get("name"))
    observed = metadata.get("generation", 0) <= status.get("observedGeneration", 0)
    if kind == "Deployment":
        if spec.get("paused"):
            return Status("stuck", "%s is paused; resume it to let the rollout go on" % name)
        if not observed:
            return Status("progressing", "waiting for %s spec update to be observed" % name)
        progressing = _condition(obj, "Progressing")
        if progressing.get("reason") == "ProgressDeadlineExceeded":
            return Status("stuck", "%s exceeded its progress deadline: %s" % (name, progressing.get("message")))
        replicas = spec.get("replicas", 1)
        updated = status.get("updatedReplicas", 0)
        if updated < replicas:
            return Status("progressing", "%s: %d out of %d new replicas have been updated" % (name, updated, replicas))
        if status.get("replicas", 0) > updated:
            return Status("progressing", "%s: %d old replicas are pending termination" % (
                name, status.get("replicas", 0) - updated))
        if status.get("availableReplicas", 0) < updated:
            return Status("progressing", "%s: %d of %d updated replicas are available" % (
                name, status.get("availableReplicas", 0), updated))
        return Status("done", "%s successfully rolled out" % name)
    strategy = (spec.get("updateStrategy") or {}).get("type", "RollingUpdate")
    if strategy != "RollingUpdate":
        return Status("stuck", "%s has updateStrategy %s: its pods change only when deleted" % (name, strategy))
    if kind == "StatefulSet":
        if not status.get("observedGeneration") or not observed:
            return Status("progressing", "waiting for %s spec update to be observed" % name)
        replicas = spec.get("replicas", 1)
        if status.get("readyReplicas", 0) < replicas:
            return Status("progressing", "%s: waiting for %d pods to be ready" % (
                name, replicas - status.get("readyReplicas", 0)))
        partition = ((spec.get("updateStrategy") or {}).get("rollingUpdate") or {}).get("partition") or 0
        if partition:
            if status.get("updatedReplicas", 0) < replicas - partition:
                return Status("progressing", "%s: waiting for partitioned roll out to finish: %d out of %d new pods "
                              "have been updated" % (name, status.get("updatedReplicas", 0), replicas - partition))
            return Status("done", "%s: partitioned roll out complete" % name)
        if status.get("updateRevision") != status.get("currentRevision"):
            return Status("progressing", "%s: waiting for rolling update to complete %d pods at revision %s" % (
                name, status.get("updatedReplicas", 0), status.get("updateRevision")))
        return Status("done", "%s rolling update complete" % name)
    if not observed:
        return Status("progressing", "waiting for %s spec update to be observed" % name)
    desired = status.get("desiredNumberScheduled", 0)
    if status.get("updatedNumberScheduled", 0) < desired:
        return Status("progressing", "%s: %d out of %d new pods have been updated" % (
            name, status.get("updatedNumberScheduled", 0), desired))
    if status.get("numberAvailable", 0) < desired:
        return Status("progressing", "%s: %d of %d updated pods are available" % (
            name, status.get("numberAvailable", 0), desired))
    return Status("done", "%s successfully rolled out" % name)


def restart_plan(obj, restart_id=None, restarted_after=None):
    """(restart?, reason): a workload already restarted under ``restart_id``, or since ``restarted_after``
    (RFC 3339), is not restarted again, so that a rerun of a rotation never restarts a workload twice."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    template_annotations = (((obj.get("spec") or {}).get("template") or {}).get("metadata") or {}).get(
        "annotations") or {}
    if restart_id and annotations.get(RESTART_ID) == restart_id:
        return False, "already restarted under restart_id %s at %s" % (restart_id, template_annotations.get(
            RESTARTED_AT))
    restarted_at = template_annotations.get(RESTARTED_AT)
    if restarted_after and restarted_at and parse_time(restarted_at) >= parse_time(restarted_after):
        return False, "already restarted at %s, after %s" % (restarted_at, restarted_after)
    return True, "restarted"


def restart_patch(now, restart_id=None):
    """The strategic merge patch of ``kubectl rollout restart``, plus our restart id on the workload."""
    patch = {"spec": {"template": {"metadata": {"annotations": {RESTARTED_AT: now}}}}}
    if restart_id:
        patch["metadata"] = {"annotations": {RESTART_ID: restart_id}}
    return patch


def owners_on_nodes(pods, replica_set_owners, include_daemonsets=False):
    """(kind, namespace, name) of the workloads owning ``pods``, and the pods of each. Pure.

    ``replica_set_owners`` maps (namespace, ReplicaSet name) to its Deployment
    name, or None for a ReplicaSet of its own.
    """
    owners = {}
    for pod in pods:
        owner = controller_of(pod)
        if not owner:
            continue
        namespace = pod["metadata"]["namespace"]
        kind, name = owner["kind"], owner["name"]
        if kind == "ReplicaSet":
            name = replica_set_owners.get((namespace, name))
            kind = "Deployment"
            if not name:
                continue
        if kind not in KINDS or (kind == "DaemonSet" and not include_daemonsets):
            continue
        owners.setdefault((kind, namespace, name), []).append(
            "%s/%s on %s" % (namespace, pod["metadata"]["name"], (pod.get("spec") or {}).get("nodeName")))
    return owners


@dataclass
class Workload:
    kind: str
    namespace: str
    name: str
    pods_on_nodes: list = field(default_factory=list)
    action: str = "planned"
    reason: str = ""
    rollout: str = "not waited"
    rollout_message: str = ""
    seconds: float = 0.0
    landed_on_avoided_nodes: list = field(default_factory=list)

    @property
    def label(self):
        return "%s %s/%s" % (self.kind, self.namespace, self.name)

    def result(self):
        return {"kind": self.kind, "namespace": self.namespace, "name": self.name, "action": self.action,
                "reason": self.reason, "rollout": self.rollout, "rollout_message": self.rollout_message,
                "seconds": self.seconds,
                "pods_on_nodes": self.pods_on_nodes, "landed_on_avoided_nodes": self.landed_on_avoided_nodes}


class RolloutRestart:
    """Restarts workloads, ``max_concurrent`` at a time, each waited for by watching it until ``deadline``."""

    def __init__(self, client, restart_id=None, restarted_after=None, wait=True, avoid_nodes=(), max_concurrent=1,
                 clock=time.monotonic):
        self.client = client
        self.restart_id = restart_id
        self.restarted_after = restarted_after
        self.wait = wait
        self.avoid_nodes = set(avoid_nodes or ())
        self.max_concurrent = max_concurrent
        self.clock = clock
        self.lock = threading.Lock()

    def api(self, kind):
        apps = self.client.apps
        return {
            "Deployment": (apps.read_namespaced_deployment, apps.patch_namespaced_deployment,
                           apps.list_namespaced_deployment),
            "StatefulSet": (apps.read_namespaced_stateful_set, apps.patch_namespaced_stateful_set,
                            apps.list_namespaced_stateful_set),
            "DaemonSet": (apps.read_namespaced_daemon_set, apps.patch_namespaced_daemon_set,
                          apps.list_namespaced_daemon_set),
        }[kind]

    def read(self, workload):
        read, _patch, _list = self.api(workload.kind)
        return self.client.to_dict(read(workload.name, workload.namespace))

    def run(self, workloads, timeout, check_mode=False):
        deadline = self.clock() + timeout
        if check_mode:
            for workload in workloads:
                needed, reason = restart_plan(self.read(workload), self.restart_id, self.restarted_after)
                workload.action = "planned" if needed else "already_restarted"
                workload.reason = "would be restarted" if needed else reason
            return workloads
        with ThreadPoolExecutor(max_workers=max(1, self.max_concurrent)) as pool:
            list(pool.map(lambda workload: self.restart_and_wait(workload, deadline), workloads))
        return workloads

    def restart_and_wait(self, workload, deadline):
        started = self.clock()
        obj = self.read(workload)
        needed, reason = restart_plan(obj, self.restart_id, self.restarted_after)
        if needed:
            _read, patch, _list = self.api(workload.kind)
            body = restart_patch(utc_now(), self.restart_id)
            obj = self.client.to_dict(patch(workload.name, workload.namespace, body))
            workload.action = "restarted"
        else:
            workload.action = "already_restarted"
        workload.reason = reason
        if self.wait:
            status = self.wait_for_rollout(workload, obj, deadline)
            workload.rollout, workload.rollout_message = status.state, status.message
            if status.state == "done" and self.avoid_nodes:
                workload.landed_on_avoided_nodes = self.pods_on_avoided_nodes(workload, obj)
        workload.seconds = round(self.clock() - started, 2)

    def wait_for_rollout(self, workload, obj, deadline):
        """Watch the workload until its rollout is done, stuck, or ``deadline`` passes."""
        _read, _patch, list_method = self.api(workload.kind)
        status = rollout_status(workload.kind, obj)
        resource_version = obj["metadata"]["resourceVersion"]
        while status.state == "progressing":
            remaining = deadline - self.clock()
            if remaining <= 0:
                return Status("timeout", status.message + self.conditions(obj))
            try:
                for _event_type, changed in self.client.watch(
                        list_method, resource_version, remaining, namespace=workload.namespace,
                        field_selector="metadata.name=%s" % workload.name):
                    resource_version = changed["metadata"].get("resourceVersion") or resource_version
                    if changed.get("spec"):
                        obj = changed
                        status = rollout_status(workload.kind, obj)
                        if status.state != "progressing":
                            break
            except WatchExpired:
                obj = self.read(workload)
                status = rollout_status(workload.kind, obj)
                resource_version = obj["metadata"]["resourceVersion"]
        return status

    @staticmethod
    def conditions(obj):
        conditions = (obj.get("status") or {}).get("conditions") or []
        if not conditions:
            return ""
        return " (conditions: %s)" % "; ".join(
            "%s=%s %s: %s" % (c.get("type"), c.get("status"), c.get("reason"), c.get("message")) for c in conditions)

    def pods_on_avoided_nodes(self, workload, obj):
        labels = ((obj.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
        selector = label_selector_string(labels)
        pods = self.client.list_all(self.client.core.list_namespaced_pod, namespace=workload.namespace,
                                    label_selector=selector)
        return sorted("%s on %s" % (pod["metadata"]["name"], pod["spec"].get("nodeName")) for pod in pods
                      if (pod.get("spec") or {}).get("nodeName") in self.avoid_nodes
                      and not pod["metadata"].get("deletionTimestamp"))


def find_workloads(client, targets=None, namespaces=None, label_selector=None, on_nodes=None,
                   include_daemonsets=False):
    """The workloads to restart: explicit targets, those matching a label selector, and the owners of pods on nodes."""
    found = {}
    for target in targets or []:
        found[(target["kind"], target["namespace"], target["name"])] = []
    if label_selector:
        kinds = KINDS if include_daemonsets else KINDS[:2]
        for namespace in namespaces or [None]:
            for kind in kinds:
                method = _lister(client, kind, namespace)
                kwargs = {"namespace": namespace} if namespace else {}
                for obj in client.list_all(method, label_selector=label_selector, **kwargs):
                    found.setdefault((kind, obj["metadata"]["namespace"], obj["metadata"]["name"]), [])
    if on_nodes:
        pods = client.list_all(client.core.list_pod_for_all_namespaces)
        # A pod already terminating is leaving anyway; it is no reason to restart its owner.
        pods = [pod for pod in pods if (pod.get("spec") or {}).get("nodeName") in set(on_nodes)
                and not pod["metadata"].get("deletionTimestamp")
                and (not namespaces or pod["metadata"]["namespace"] in namespaces)]
        replica_set_owners = {}
        for pod in pods:
            owner = controller_of(pod)
            if owner and owner["kind"] == "ReplicaSet":
                key = (pod["metadata"]["namespace"], owner["name"])
                if key not in replica_set_owners:
                    replica_set_owners[key] = _deployment_of(client, *key)
        for key, pod_names in owners_on_nodes(pods, replica_set_owners, include_daemonsets).items():
            found.setdefault(key, []).extend(pod_names)
    return [Workload(kind, namespace, name, sorted(pods)) for (kind, namespace, name), pods in sorted(found.items())]


def _lister(client, kind, namespace):
    suffix = {"Deployment": "deployment", "StatefulSet": "stateful_set", "DaemonSet": "daemon_set"}[kind]
    if namespace:
        return getattr(client.apps, "list_namespaced_%s" % suffix)
    return getattr(client.apps, "list_%s_for_all_namespaces" % suffix)


def _deployment_of(client, namespace, replica_set):
    try:
        owner = controller_of(client.to_dict(client.apps.read_namespaced_replica_set(replica_set, namespace)))
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise
    return owner["name"] if owner and owner.get("kind") == "Deployment" else None


def restart_workloads(client, params, check_mode=False):
    """Find, restart and wait, from the module's parameters; returns (result, failure message or None, warnings)."""
    started = time.monotonic()
    workloads = find_workloads(client, params["targets"], params["namespaces"], params["label_selector"],
                               params["on_nodes"], params["include_daemonsets"])
    runner = RolloutRestart(client, params["restart_id"], params["restarted_after"], params["wait"],
                            params["avoid_nodes"], params["max_concurrent"])
    entries = [workload.result() for workload in runner.run(workloads, params["timeout"], check_mode)]
    summary = {"workloads": len(entries)}
    for entry in entries:
        for key in (entry["action"], entry["rollout"]):
            summary[key] = summary.get(key, 0) + 1
    result = {"changed": any(entry["action"] == "restarted" for entry in entries), "workloads": entries,
              "summary": summary, "elapsed_seconds": round(time.monotonic() - started, 2)}
    warnings = ["%s %s/%s has pods on nodes to avoid: %s" % (
        entry["kind"], entry["namespace"], entry["name"], ", ".join(entry["landed_on_avoided_nodes"]))
        for entry in entries if entry["landed_on_avoided_nodes"]]
    unfinished = [entry for entry in entries if entry["rollout"] in ("stuck", "timeout")]
    failure = None
    if unfinished:
        done = sum(1 for entry in entries if entry["rollout"] == "done")
        failure = ("%d rollout(s) did not complete: %s. %d of %d workloads rolled out; rerunning with the same "
                   "restart_id does not restart them again." % (
                       len(unfinished), "; ".join(entry["rollout_message"] for entry in unfinished), done,
                       len(entries)))
    return result, failure, warnings
