"""A test fixture that plays the cloud for warm-node tests: a tiny autoscaler.

Every second it looks at the pods the scheduler could not place. A pod whose
node selector or required node affinity names the pool label (``pool_label``
of the pools file) and that a pool's labels satisfy makes it create a kwok
node of that pool, with the pool's labels and capacity, up to the pool's
``max_nodes``. Nodes created in the last ``upcoming_seconds`` count as
coming, as cluster-autoscaler counts upcoming nodes, so one pending pod does
not start a node per tick.

Its nodes carry a finalizer, as Karpenter's do: deleting such a Node (the
rotation's retire step) leaves it Terminating until this provisioner "shuts
the instance down" by removing the finalizer.

Pools file (YAML)::

    pool_label: kubeops.io/pool
    upcoming_seconds: 15
    pools:
      - name: warm
        labels: {kubeops.io/pool: warm, topology.kubernetes.io/zone: zone-a}
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


def nodes_to_create(pending_pods, pools, pool_label, pool_nodes, now, upcoming_seconds):
    """Pool name -> how many nodes to create now. Pure: plain dicts in, plain dict out.

    ``pool_nodes`` maps a pool name to the creation times (datetime) of the
    nodes this provisioner made for it that still exist.
    """
    wanted = {}
    for pod in pending_pods:
        if not is_unschedulable(pod) or not asks_for_pool(pod, pool_label):
            continue
        for pool in pools:
            if labels_satisfy(pod, dict(pool["labels"], **{pool_label: pool["name"]})):
                wanted[pool["name"]] = wanted.get(pool["name"], 0) + 1
                break
    plan = {}
    for pool in pools:
        created = pool_nodes.get(pool["name"], [])
        upcoming = sum(1 for when in created if (now - when).total_seconds() < upcoming_seconds)
        room = pool.get("max_nodes", 10) - len(created)
        count = min(wanted.get(pool["name"], 0) - upcoming, room)
        if count > 0:
            plan[pool["name"]] = count
    return plan


def run(kubeconfig, pools_file, interval=1.0):
    import yaml
    from kubernetes import client, config

    with open(pools_file) as handle:
        settings = yaml.safe_load(handle)
    pool_label = settings.get("pool_label", "kubeops.io/pool")
    upcoming_seconds = settings.get("upcoming_seconds", 15)
    pools = settings["pools"]
    api_client = config.new_client_from_config(config_file=kubeconfig)
    core = client.CoreV1Api(api_client)
    to_dict = api_client.sanitize_for_serialization
    print("provisioner watching pools %s" % [pool["name"] for pool in pools], flush=True)
    while True:
        try:
            tick(core, to_dict, pools, pool_label, upcoming_seconds)
        except client.ApiException as exc:  # a conflict or a restart of the API server: try again next tick
            print("tick failed: %s %s" % (exc.status, exc.reason), flush=True)
        time.sleep(interval)


def tick(core, to_dict, pools, pool_label, upcoming_seconds):
    """One look at the cluster: finish terminating nodes, create the nodes pending pods need."""
    nodes = core.list_node(label_selector="%s=%s" % (PROVISIONED_BY_LABEL, PROVISIONER_NAME)).items
    pool_nodes = {}
    for node in nodes:
        if node.metadata.deletion_timestamp and FINALIZER in (node.metadata.finalizers or []):
            finalizers = [name for name in node.metadata.finalizers if name != FINALIZER]
            # A JSON patch: a strategic merge patch would merge the finalizer list, not replace it.
            core.patch_node(node.metadata.name, [
                {"op": "test", "path": "/metadata/resourceVersion", "value": node.metadata.resource_version},
                {"op": "replace", "path": "/metadata/finalizers", "value": finalizers}])
            print("terminated %s" % node.metadata.name, flush=True)
            continue
        pool_nodes.setdefault(node.metadata.labels.get(pool_label), []).append(node.metadata.creation_timestamp)
    pending = [to_dict(pod) for pod in core.list_pod_for_all_namespaces(
        field_selector="spec.nodeName=,status.phase=Pending").items]
    now = datetime.datetime.now(datetime.timezone.utc)
    plan = nodes_to_create(pending, pools, pool_label, pool_nodes, now, upcoming_seconds)
    for pool in pools:
        for name in ["%s-%s" % (pool["name"], uuid.uuid4().hex[:6]) for _count in range(plan.get(pool["name"], 0))]:
            labels = dict(pool["labels"], **{pool_label: pool["name"], PROVISIONED_BY_LABEL: PROVISIONER_NAME})
            core.create_node(fake_node(name, labels, pool.get("capacity"), finalizers=[FINALIZER]))
            print("created %s for pool %s" % (name, pool["name"]), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--pools", required=True, help="pools file (YAML)")
    args = parser.parse_args()
    run(args.kubeconfig, args.pools)


if __name__ == "__main__":
    main()
