"""The API objects the unit tests feed the collection, as the API's JSON, each with sensible defaults.

Every builder takes keyword arguments for what a test needs to say and gives
a complete, ordinary object otherwise: a Ready node with room, a Running
pod of a ReplicaSet, a PDB, a finished Deployment rollout.
"""

from __future__ import annotations

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
# What a patch of a node() with its default resourceVersion starts with: the guard that it is still that node.
GUARD = {"op": "test", "path": "/metadata/resourceVersion", "value": "42"}


def node(name="n1", zone=None, labels=None, annotations=None, taints=None, unschedulable=False, ready="True",
         cpu="4", memory="16Gi", pods="110", kubelet="v1.35.4", created="2026-11-01T00:00:00Z",
         resource_version="42"):
    """A node labelled with its hostname (and ``zone`` when given). ``annotations=None`` leaves the
    annotations map out, as the API does for a node without any."""
    all_labels = {HOSTNAME: name}
    if zone:
        all_labels[ZONE] = zone
    all_labels.update(labels or {})
    metadata = {"name": name, "resourceVersion": resource_version, "creationTimestamp": created, "labels": all_labels}
    if annotations is not None:
        metadata["annotations"] = dict(annotations)
    return {"metadata": metadata,
            "spec": {"unschedulable": unschedulable, "taints": list(taints or [])},
            "status": {"nodeInfo": {"kubeletVersion": kubelet},
                       "allocatable": {"cpu": cpu, "memory": memory, "pods": pods},
                       "conditions": [{"type": "Ready", "status": ready}]}}


def pod(name="p", node_name="n1", app="web", kind="ReplicaSet", owner=None, namespace="ns", labels=None,
        annotations=None, cpu="100m", memory="64Mi", phase="Running", ready=True, deleting=False, created=None,
        **spec):
    """A pod labelled app=``app``, controlled by a ``kind`` named ``owner`` ("<app>-rs" for a ReplicaSet,
    ``app`` otherwise; ``kind=None`` for a bare pod), with one container requesting ``cpu`` and ``memory``.
    Further keyword arguments go into its spec (volumes, affinity, nodeSelector, ...)."""
    metadata = {"name": name, "namespace": namespace, "uid": "uid-" + name,
                "labels": dict({"app": app}, **(labels or {})), "annotations": dict(annotations or {})}
    if kind:
        metadata["ownerReferences"] = [{"kind": kind, "name": owner or (app + "-rs" if kind == "ReplicaSet" else app),
                                        "controller": True}]
    if deleting:
        metadata["deletionTimestamp"] = "2026-12-03T06:00:00Z"
    if created:
        metadata["creationTimestamp"] = created
    status = {"phase": phase}
    if ready:
        status["conditions"] = [{"type": "Ready", "status": "True"}]
    return {"metadata": metadata, "status": status,
            "spec": dict({"nodeName": node_name, "containers": [
                {"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}, **spec)}


def zone_spread(app="web", max_skew=1, when="DoNotSchedule"):
    """A topology spread constraint over zones of the pods labelled app=``app``."""
    return {"maxSkew": max_skew, "topologyKey": ZONE, "whenUnsatisfiable": when,
            "labelSelector": {"matchLabels": {"app": app}}}


def anti_affinity(app):
    """A pod's affinity: never on a node with a pod labelled app=``app`` (required, by hostname)."""
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": HOSTNAME, "labelSelector": {"matchLabels": {"app": app}}}]}}


def pdb(name="web", namespace="ns", selector=None, allowed=0, healthy=None, blocked_since=None, min_available=None,
        max_unavailable=None, expected=None):
    """A PodDisruptionBudget selecting app=``name`` unless ``selector`` is given; ``healthy`` is
    (currentHealthy, desiredHealthy); ``blocked_since`` adds a DisruptionAllowed=False condition;
    ``min_available`` or ``max_unavailable`` go into its spec, ``expected`` is its status's expectedPods."""
    status = {"disruptionsAllowed": allowed}
    if healthy:
        status.update(currentHealthy=healthy[0], desiredHealthy=healthy[1])
    if expected is not None:
        status["expectedPods"] = expected
    if blocked_since:
        status["conditions"] = [{"type": "DisruptionAllowed", "status": "False", "lastTransitionTime": blocked_since}]
    spec = {"selector": {"matchLabels": {"app": name}} if selector is None else selector}
    if min_available is not None:
        spec["minAvailable"] = min_available
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    return {"metadata": {"name": name, "namespace": namespace}, "spec": spec, "status": status}


def replica_set(name="web-rs", deployment="web", namespace="ns"):
    """A ReplicaSet controlled by Deployment ``deployment`` (None for a ReplicaSet of its own)."""
    metadata = {"name": name, "namespace": namespace}
    if deployment:
        metadata["ownerReferences"] = [{"kind": "Deployment", "name": deployment, "controller": True}]
    return {"metadata": metadata}


def _workload(name, namespace, generation, observed, annotations, template_annotations, spec, status):
    return {"metadata": {"name": name, "namespace": namespace, "generation": generation,
                         "annotations": dict(annotations or {})},
            "spec": dict(spec, template={"metadata": {"annotations": dict(template_annotations or {})}}),
            "status": dict(status, observedGeneration=observed)}


def deployment(name="web", namespace="ns", generation=2, observed=2, replicas=3, updated=3, total=3, available=3,
               paused=False, conditions=(), annotations=None, template_annotations=None):
    """A Deployment; by default its rollout is done."""
    return _workload(name, namespace, generation, observed, annotations, template_annotations,
                     {"replicas": replicas, "paused": paused},
                     {"updatedReplicas": updated, "replicas": total, "availableReplicas": available,
                      "conditions": list(conditions)})


def statefulset(name="db", namespace="ns", generation=1, observed=1, replicas=3, ready=3, current="a", update="a",
                updated=3, strategy="RollingUpdate", partition=None, annotations=None, template_annotations=None):
    """A StatefulSet; by default its rolling update is complete."""
    update_strategy = {"type": strategy}
    if partition is not None:
        update_strategy["rollingUpdate"] = {"partition": partition}
    return _workload(name, namespace, generation, observed, annotations, template_annotations,
                     {"replicas": replicas, "updateStrategy": update_strategy},
                     {"readyReplicas": ready, "currentRevision": current, "updateRevision": update,
                      "updatedReplicas": updated})


def daemonset(name="agent", namespace="ns", generation=1, observed=1, desired=3, updated=3, available=3,
              strategy=None):
    """A DaemonSet; by default its rollout is done and its spec leaves the update strategy to the API's default."""
    return _workload(name, namespace, generation, observed, None, None,
                     {"updateStrategy": {"type": strategy}} if strategy else {},
                     {"desiredNumberScheduled": desired, "updatedNumberScheduled": updated,
                      "numberAvailable": available})
