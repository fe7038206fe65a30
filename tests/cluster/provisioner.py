"""A test fixture that plays the cloud for warm-node tests: a tiny autoscaler.

Every second it looks at the pods the scheduler could not place (and has not
nominated a node for, where it preempts a lower priority). A pod whose
node selector or required node affinity names the pool label (``pool_label``
of the pools file) and that a pool's labels satisfy makes it create a kwok
node of that pool, with the pool's labels and capacity, up to the pool's
``max_nodes``. Nodes created in the last ``upcoming_seconds`` count as
coming, as cluster-autoscaler counts upcoming nodes, so one pending pod does
not start a node per tick.

A pool may span zones (``zones``): a pending pod that requires a zone (by
node selector or node affinity on ``topology.kubernetes.io/zone``) gets a
node in that zone, as Karpenter provisions; one that does not gets a node in
the pool's first zone.

Its nodes carry a finalizer, as Karpenter's do: deleting such a Node (the
rotation's retire step) leaves it Terminating until this provisioner "shuts
the instance down" by removing the finalizer.

Pools file (YAML)::

    pool_label: kubeops.io/pool
    upcoming_seconds: 15
    pools:
      - name: warm
        labels: {}
        zones: [zone-a, zone-b]
        capacity: {cpu: "4", memory: 16Gi, pods: "110"}
        max_nodes: 10
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fakenodes import fake_node  # noqa: E402

PROVISIONED_BY_LABEL = "kubeops.io/provisioned-by"
ZONE_LABEL = "topology.kubernetes.io/zone"
PROVISIONER_NAME = "test-provisioner"
FINALIZER = "kubeops.io/test-provisioner"


def expression_matches(expression, labels):
    key, operator = expression["key"], expression["operator"]
    values = expression.get("values") or []
    if operator == "In":
        return labels.get(key) in values
    if operator == "NotIn":
        return labels.get(key) not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    if operator in ("Gt", "Lt") and key in labels:
        difference = int(labels[key]) - int(values[0])
        return difference > 0 if operator == "Gt" else difference < 0
    return False


def required_terms(pod):
    affinity = (pod.get("spec") or {}).get("affinity") or {}
    required = (affinity.get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    return required.get("nodeSelectorTerms") or []


def asks_for_pool(pod, pool_label):
    """Whether the pod's node selector or required node affinity names the pool label."""
    if pool_label in ((pod.get("spec") or {}).get("nodeSelector") or {}):
        return True
    return any(expression["key"] == pool_label
               for term in required_terms(pod) for expression in term.get("matchExpressions") or [])


def labels_satisfy(pod, labels):
    """Whether a node with ``labels`` satisfies the pod's node selector and required node affinity."""
    selector = (pod.get("spec") or {}).get("nodeSelector") or {}
    if any(labels.get(key) != value for key, value in selector.items()):
        return False
    terms = required_terms(pod)
    return not terms or any(
        all(expression_matches(expression, labels) for expression in term.get("matchExpressions") or [])
        for term in terms)


def is_unschedulable(pod):
    return any(condition.get("type") == "PodScheduled" and condition.get("reason") == "Unschedulable"
               for condition in (pod.get("status") or {}).get("conditions") or [])


def is_preempting(pod):
    """Whether the scheduler has nominated a node for the pod, where it preempts pods of a lower priority (a warm
    placeholder): the pod will run there, and Karpenter starts no node for it (IsProvisionable leaves out a pod that
    IsPreempting)."""
    return bool((pod.get("status") or {}).get("nominatedNodeName"))


def pool_zone_for(pod, pool, pool_label):
    """The zone of ``pool`` (None for a pool without zones) whose node would satisfy the pod, or False."""
    labels = dict(pool["labels"], **{pool_label: pool["name"]})
    for zone in pool.get("zones") or [None]:
        if labels_satisfy(pod, dict(labels, **({ZONE_LABEL: zone} if zone else {}))):
            return zone
    return False


def nodes_to_create(pending_pods, pools, pool_label, pool_nodes, now, upcoming_seconds):
    """(pool name, zone) -> how many nodes to create now; zone None for a pool without zones. Pure.

    ``pool_nodes`` maps (pool name, zone) to the creation times (datetime) of
    the nodes this provisioner made there that still exist.
    """
    wanted = {}
    for pod in pending_pods:
        if not is_unschedulable(pod) or is_preempting(pod) or not asks_for_pool(pod, pool_label):
            continue
        for pool in pools:
            zone = pool_zone_for(pod, pool, pool_label)
            if zone is not False:
                wanted[(pool["name"], zone)] = wanted.get((pool["name"], zone), 0) + 1
                break
    plan = {}
    for pool in pools:
        room = pool.get("max_nodes", 10) - sum(len(times) for (name, _zone), times in pool_nodes.items()
                                               if name == pool["name"])
        for zone in pool.get("zones") or [None]:
            created = pool_nodes.get((pool["name"], zone), [])
            upcoming = sum(1 for when in created if (now - when).total_seconds() < upcoming_seconds)
            count = min(wanted.get((pool["name"], zone), 0) - upcoming, room)
            if count > 0:
                plan[(pool["name"], zone)] = count
                room -= count
    return plan


def run(kubeconfig, pools_file, interval=1.0):
    import urllib3
    import yaml
    from kubernetes import client, config

    with open(pools_file) as handle:
        settings = yaml.safe_load(handle)
    pool_label = settings.get("pool_label", "kubeops.io/pool")
    upcoming_seconds = settings.get("upcoming_seconds", 15)
    pools = settings["pools"]
    api_client = config.new_client_from_config(config_file=kubeconfig)
    api_client.user_agent = "kubeops-test-provisioner"  # in the API server's audit log, apart from kubernetes.core
    core = client.CoreV1Api(api_client)
    to_dict = api_client.sanitize_for_serialization
    print("provisioner watching pools %s" % [pool["name"] for pool in pools], flush=True)
    while True:
        try:
            tick(core, to_dict, pools, pool_label, upcoming_seconds)
        except client.ApiException as exc:  # a conflict: try again next tick
            print("tick failed: %s %s" % (exc.status, exc.reason), flush=True)
        except urllib3.exceptions.HTTPError as exc:  # the API server is down or restarting: it comes back
            print("tick failed: %s" % exc, flush=True)
        time.sleep(interval)


def tick(core, to_dict, pools, pool_label, upcoming_seconds):
    """One look at the cluster: finish terminating nodes, create the nodes pending pods need."""
    nodes = core.list_node(label_selector="%s=%s" % (PROVISIONED_BY_LABEL, PROVISIONER_NAME)).items
    pool_nodes = {}
    pools_by_name = {pool["name"]: pool for pool in pools}
    for node in nodes:
        if node.metadata.deletion_timestamp and FINALIZER in (node.metadata.finalizers or []):
            finalizers = [name for name in node.metadata.finalizers if name != FINALIZER]
            # A JSON patch: a strategic merge patch would merge the finalizer list, not replace it.
            core.patch_node(node.metadata.name, [
                {"op": "test", "path": "/metadata/resourceVersion", "value": node.metadata.resource_version},
                {"op": "replace", "path": "/metadata/finalizers", "value": finalizers}])
            print("terminated %s" % node.metadata.name, flush=True)
            continue
        name = node.metadata.labels.get(pool_label)
        zone = node.metadata.labels.get(ZONE_LABEL) if (pools_by_name.get(name) or {}).get("zones") else None
        pool_nodes.setdefault((name, zone), []).append(node.metadata.creation_timestamp)
    pending = [to_dict(pod) for pod in core.list_pod_for_all_namespaces(
        field_selector="spec.nodeName=,status.phase=Pending").items]
    now = datetime.datetime.now(datetime.timezone.utc)
    plan = nodes_to_create(pending, pools, pool_label, pool_nodes, now, upcoming_seconds)
    for pool in pools:
        for zone in pool.get("zones") or [None]:
            for _count in range(plan.get((pool["name"], zone), 0)):
                name = "%s-%s" % (pool["name"], uuid.uuid4().hex[:6])
                labels = dict(pool["labels"], **{pool_label: pool["name"], PROVISIONED_BY_LABEL: PROVISIONER_NAME})
                if zone:
                    labels[ZONE_LABEL] = zone
                core.create_node(fake_node(name, labels, pool.get("capacity"), finalizers=[FINALIZER]))
                print("created %s for pool %s%s" % (name, pool["name"], " in " + zone if zone else ""), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--pools", required=True, help="pools file (YAML)")
    args = parser.parse_args()
    run(args.kubeconfig, args.pools)


if __name__ == "__main__":
    main()
