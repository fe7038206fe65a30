"""Manifests and a disruption watcher shared by the integration tests."""

from __future__ import annotations

import datetime
import re
import threading

from kubernetes import watch
from kubernetes.client.rest import ApiException

PAUSE = "registry.k8s.io/pause:3.10"
# kwok keeps a deleted pod Terminating this long, like a kubelet stopping it.
TERMINATION_DELAY = {"pod-delete.stage.kwok.x-k8s.io/delay": "2s"}
RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"
EVICTIONS = re.compile(r'^apiserver_request_total\{(?=[^}]*subresource="eviction")(?=[^}]*resource="pods")'
                       r'[^}]*code="(\d+)"[^}]*\} (\S+)$', re.M)


def pod_spec(node_selector, grace=2, volumes=None, **extra):
    spec = {
        "nodeSelector": node_selector,
        "terminationGracePeriodSeconds": grace,
        "containers": [{"name": "app", "image": PAUSE,
                        "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}],
    }
    if volumes:
        spec["volumes"] = volumes
    spec.update(extra)
    return spec


def template(labels, spec, annotations=None):
    return {"metadata": {"labels": labels, "annotations": dict(TERMINATION_DELAY, **(annotations or {}))},
            "spec": spec}


def deployment(name, replicas, node_selector, labels=None, spread=False, anti_affinity=False, annotations=None,
               volumes=None):
    labels = labels or {"app": name}
    spec = pod_spec(node_selector, volumes=volumes)
    if spread:
        spec["topologySpreadConstraints"] = [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                                              "whenUnsatisfiable": "DoNotSchedule",
                                              "labelSelector": {"matchLabels": labels}}]
    if anti_affinity:
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": labels}}]}}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": template(labels, spec, annotations)}}


def stateful_set(name, replicas, node_selector):
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name},
            "spec": {"replicas": replicas, "serviceName": name, "selector": {"matchLabels": labels},
                     "template": template(labels, pod_spec(node_selector))}}


def daemon_set(name, node_selector):
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name},
            "spec": {"selector": {"matchLabels": labels}, "template": template(labels, pod_spec(node_selector))}}


def bare_pod(name, node_name, annotations=None, owner=None):
    metadata = {"name": name, "labels": {"app": name}, "annotations": dict(TERMINATION_DELAY, **(annotations or {}))}
    if owner:
        metadata["ownerReferences"] = [owner]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": dict(pod_spec({}), nodeName=node_name)}


def pdb(name, selector_labels, min_available=None, max_unavailable=None):
    spec = {"selector": {"matchLabels": selector_labels}}
    if min_available is not None:
        spec["minAvailable"] = min_available
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name}, "spec": spec}


def workload_templates(cluster, namespace):
    """"Kind/name" -> (generation, restartedAt) of every Deployment and StatefulSet of the namespace: a restart
    bumps the generation and sets kubectl.kubernetes.io/restartedAt on the pod template."""
    found = {}
    for kind, items in (("Deployment", cluster.apps.list_namespaced_deployment(namespace).items),
                        ("StatefulSet", cluster.apps.list_namespaced_stateful_set(namespace).items)):
        for item in items:
            found["%s/%s" % (kind, item.metadata.name)] = (
                item.metadata.generation, (item.spec.template.metadata.annotations or {}).get(RESTARTED_AT))
    return found


def unless_missing(call, *args, **kwargs):
    """What ``call(*args, **kwargs)`` returns, or None where the API server answers 404 (there is no such object)."""
    try:
        return call(*args, **kwargs)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def is_ready(pod):
    return pod.metadata.deletion_timestamp is None and any(
        c.type == "Ready" and c.status == "True" for c in (pod.status.conditions or []))


def running_pods(cluster, namespace, selector, count):
    pods = [pod for pod in cluster.pods(namespace, selector) if pod.status.phase == "Running" and is_ready(pod)]
    return pods if len(pods) == count else None


class InBackground:
    """Runs its ``_run`` in a thread of its own within a ``with`` block; ``_stop`` is set as the block ends."""

    def __init__(self):
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(10)


class DisruptionWatcher(InBackground):
    """Watches a namespace's pods while a play runs and records what a user would call disruption.

    ``min_ready[app]``: the fewest Ready pods an ``app`` label had at any moment;
    ``max_terminating[app]``: the most of its pods Terminating at once (evictions in flight);
    ``first[uid]``: (app, node) of each pod there at the start; ``churned[app]``: pods created while it watched
    and deleted again (a replacement that did not stay).
    """

    def __init__(self, cluster, namespace):
        super().__init__()
        self.cluster = cluster
        self.namespace = namespace
        self.pods = {}
        self.first = {}
        self.churned = {}
        self.churned_pods = []
        self.min_ready = {}
        self.max_terminating = {}

    def __enter__(self):
        listed = self.cluster.core.list_namespaced_pod(self.namespace)
        self.pods = {pod.metadata.uid: pod for pod in listed.items}
        self.first = {uid: ((pod.metadata.labels or {}).get("app"), pod.spec.node_name)
                      for uid, pod in self.pods.items()}
        self.churned = {}
        self.churned_pods = []
        self._measure()
        self._resource_version = listed.metadata.resource_version
        return super().__enter__()

    def _run(self):
        watcher = watch.Watch()
        while not self._stop.is_set():
            try:
                for event in watcher.stream(self.cluster.core.list_namespaced_pod, self.namespace,
                                            resource_version=self._resource_version, timeout_seconds=1):
                    self._resource_version = event["object"].metadata.resource_version
                    self._record(event["type"], event["object"])
                    if self._stop.is_set():
                        break
            except Exception:  # pylint: disable=broad-except  # the API server went away (fault tests)
                self._relist()

    def _relist(self):
        """Start again from a fresh list once the API server answers again."""
        while not self._stop.wait(0.5):
            try:
                listed = self.cluster.core.list_namespaced_pod(self.namespace)
            except Exception:  # pylint: disable=broad-except  # still away
                continue
            self.pods = {pod.metadata.uid: pod for pod in listed.items}
            self._measure()
            self._resource_version = listed.metadata.resource_version
            return

    def _record(self, event_type, pod):
        """One event, counted in O(1): a namespace of thousands of pods sends thousands of events a minute, and a
        watcher that fell behind would miss the last ones when it stops."""
        uid = pod.metadata.uid
        app = (pod.metadata.labels or {}).get("app")
        before = self.pods.get(uid)
        if before is not None:
            self._count(before, -1)
        if event_type == "DELETED":
            self.pods.pop(uid, None)
            if uid not in self.first:
                self.churned[app] = self.churned.get(app, 0) + 1
                self.churned_pods.append("%s on %s" % (pod.metadata.name, pod.spec.node_name))
        else:
            self.pods[uid] = pod
            self._count(pod, 1)
        self._extremes(app)
        if before is not None and (before.metadata.labels or {}).get("app") != app:
            self._extremes((before.metadata.labels or {}).get("app"))

    def _count(self, pod, sign):
        app = (pod.metadata.labels or {}).get("app")
        self._ready[app] = self._ready.get(app, 0) + (sign if is_ready(pod) else 0)
        self._terminating[app] = self._terminating.get(app, 0) + (sign if pod.metadata.deletion_timestamp else 0)

    def _extremes(self, app):
        if app in self._ready:
            self.min_ready[app] = min(self.min_ready.get(app, self._ready[app]), self._ready[app])
            self.max_terminating[app] = max(self.max_terminating.get(app, 0), self._terminating[app])

    def _measure(self):
        """Every pod counted again (at the start and after a list)."""
        self._ready, self._terminating = {}, {}
        for known in self.pods.values():
            self._count(known, 1)
        for app in self._ready:
            self._extremes(app)


def eviction_requests(cluster):
    """Eviction requests the API server has answered since it started, by HTTP code, from its own /metrics."""
    counts = {}
    for code, value in EVICTIONS.findall(cluster.kubectl("get", "--raw", "/metrics").stdout):
        counts[code] = counts.get(code, 0) + int(float(value))
    return counts


def evictions_since(cluster, before, code="201"):
    return eviction_requests(cluster).get(code, 0) - before.get(code, 0)


def surge_leftovers(cluster, namespace):
    """What a replacement first may leave behind in a namespace, in words: Deployments still marked as surging,
    pods still marked as leaving."""
    found = ["Deployment %s still carries %s" % (item.metadata.name, key)
             for item in cluster.apps.list_namespaced_deployment(namespace).items
             for key in ("kubeops.io/surge", "kubeops.io/surging")
             if key in (item.metadata.annotations or {}) or key in (item.metadata.labels or {})]
    found.extend("pod %s still carries kubeops.io/leaving" % pod.metadata.name for pod in cluster.pods(namespace)
                 if "kubeops.io/leaving" in (pod.metadata.annotations or {}) and not pod.metadata.deletion_timestamp)
    return found


class LeaseSampler(InBackground):
    """Reads the cluster's Lease every second, straight from the API server, while a play runs: ``oldest`` is the
    most seconds a renewal of ``run_id``'s had aged at any sample while it held the Lease, ``renew_deadline`` the
    deadline its holder wrote on it, ``samples`` how many reads found it held by that run."""

    NAME, NAMESPACE = "kubeops-rotation", "kube-system"

    def __init__(self, cluster, run_id):
        super().__init__()
        self.cluster = cluster
        self.run_id = run_id
        self.oldest = 0.0
        self.renew_deadline = None
        self.samples = 0

    def _run(self):
        while not self._stop.wait(1.0):
            try:
                lease = self.cluster.coordination.read_namespaced_lease(self.NAME, self.NAMESPACE)
            except Exception:  # pylint: disable=broad-except  # not created yet
                continue
            annotations = lease.metadata.annotations or {}
            if not lease.spec.holder_identity or annotations.get("kubeops.io/run-id") != self.run_id:
                continue
            self.samples += 1
            self.renew_deadline = float(annotations["kubeops.io/renew-deadline-seconds"])
            age = (datetime.datetime.now(datetime.timezone.utc) - lease.spec.renew_time).total_seconds()
            self.oldest = max(self.oldest, age)
