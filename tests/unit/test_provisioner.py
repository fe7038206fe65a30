"""The test provisioner's decision, so that the fixture the warm-node tests rely on is itself tested."""

from __future__ import annotations

import datetime

from provisioner import labels_satisfy, nodes_to_create

NOW = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
POOLS = [
    {"name": "warm", "labels": {"topology.kubernetes.io/zone": "zone-a"}, "max_nodes": 3},
    {"name": "other", "labels": {"topology.kubernetes.io/zone": "zone-b"}, "max_nodes": 3},
]
UNSCHEDULABLE = {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}


def pod(node_selector=None, affinity_terms=None, status=None):
    spec = {"nodeSelector": node_selector or {}}
    if affinity_terms:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": affinity_terms}}}
    return {"spec": spec, "status": UNSCHEDULABLE if status is None else status}


def plan(pods, pool_nodes=None):
    return nodes_to_create(pods, POOLS, "kubeops.io/pool", pool_nodes or {}, NOW, 15)


def test_one_node_per_unschedulable_pod_of_a_pool():
    assert plan([pod({"kubeops.io/pool": "warm"})] * 2) == {("warm", None): 2}


def test_pods_that_do_not_name_the_pool_label_are_ignored():
    assert plan([pod({"disktype": "ssd"}), pod()]) == {}


def test_pods_not_yet_judged_unschedulable_are_ignored():
    assert plan([pod({"kubeops.io/pool": "warm"}, status={})]) == {}


def test_pods_preempting_on_a_nominated_node_are_ignored():
    preempting = dict(UNSCHEDULABLE, nominatedNodeName="warm-1")
    assert plan([pod({"kubeops.io/pool": "warm"}, status=preempting), pod({"kubeops.io/pool": "warm"})]) == {
        ("warm", None): 1}


def test_node_affinity_picks_the_pool_whose_labels_match():
    terms = [{"matchExpressions": [{"key": "kubeops.io/pool", "operator": "Exists"},
                                   {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-b"]}]}]
    assert plan([pod(affinity_terms=terms)]) == {("other", None): 1}


def test_upcoming_nodes_are_counted_and_max_nodes_caps():
    recent = NOW - datetime.timedelta(seconds=5)
    old = NOW - datetime.timedelta(seconds=60)
    pods = [pod({"kubeops.io/pool": "warm"})] * 5
    assert plan(pods, {("warm", None): [recent]}) == {("warm", None): 2}
    assert plan(pods, {("warm", None): [old, old, old]}) == {}


def test_not_in_and_does_not_exist_operators():
    labels = {"kubeops.io/pool": "warm", "zone": "a"}
    assert labels_satisfy(pod(affinity_terms=[{"matchExpressions": [
        {"key": "zone", "operator": "NotIn", "values": ["b"]},
        {"key": "gpu", "operator": "DoesNotExist"}]}]), labels)
    assert not labels_satisfy(pod(affinity_terms=[{"matchExpressions": [
        {"key": "zone", "operator": "NotIn", "values": ["a"]}]}]), labels)


def test_a_pool_over_zones_creates_the_node_in_the_zone_the_pod_requires():
    pools = [{"name": "new", "labels": {}, "zones": ["zone-a", "zone-b"], "max_nodes": 3}]
    in_b = pod({"kubeops.io/pool": "new", "topology.kubernetes.io/zone": "zone-b"})
    anywhere = pod({"kubeops.io/pool": "new"})
    assert nodes_to_create([in_b, in_b, anywhere], pools, "kubeops.io/pool", {}, NOW, 15) == {
        ("new", "zone-b"): 2, ("new", "zone-a"): 1}
    nowhere = pod({"kubeops.io/pool": "new", "topology.kubernetes.io/zone": "zone-c"})
    assert nodes_to_create([nowhere], pools, "kubeops.io/pool", {}, NOW, 15) == {}


def test_max_nodes_caps_a_pool_over_all_its_zones():
    pools = [{"name": "new", "labels": {}, "zones": ["zone-a", "zone-b"], "max_nodes": 2}]
    in_b = pod({"kubeops.io/pool": "new", "topology.kubernetes.io/zone": "zone-b"})
    old = NOW - datetime.timedelta(seconds=60)
    assert nodes_to_create([in_b] * 3, pools, "kubeops.io/pool", {("new", "zone-a"): [old]}, NOW, 15) == {
        ("new", "zone-b"): 1}
