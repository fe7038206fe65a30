from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.module_utils.plan.placeholders import (
    Exclusion,
    PlaceholderPods,
    autoscaler_refusal,
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
from builders import node, pod

NOT_OLD = {"key": "kubernetes.io/hostname", "operator": "NotIn", "values": ["old-1", "old-2"]}
SET = {"kubeops.io/warm-set": "warm"}


def build(replicas=3, zone=None, exclude_nodes=(), exclude_hostnames=frozenset(), exclude_by_label=False, **pods):
    return placeholder_deployment(PlaceholderPods("warm", "kubeops", "kubeops-placeholder", **pods), replicas, zone,
                                  Exclusion(exclude_nodes, exclude_hostnames, exclude_by_label))


def pod_spec(deployment):
    return deployment["spec"]["template"]["spec"]


def test_one_placeholder_per_node_by_hostname_anti_affinity():
    deployment = build()
    assert deployment["spec"]["replicas"] == 3 and deployment["spec"]["selector"] == {"matchLabels": SET}
    assert deployment["spec"]["template"]["metadata"]["labels"] == dict(SET, **{
        "app.kubernetes.io/managed-by": "kubeops.rotation"})
    assert pod_spec(deployment)["affinity"] == {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": SET}}]}}
    assert pod_spec(deployment)["priorityClassName"] == "kubeops-placeholder"
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}


def test_placeholders_ask_autoscalers_to_leave_them_and_their_node_alone():
    deployment = build()
    assert deployment["spec"]["template"]["metadata"]["annotations"] == {
        "karpenter.sh/do-not-disrupt": "true", "cluster-autoscaler.kubernetes.io/safe-to-evict": "false",
        "kubeops.io/placeholder-spec": deployment["metadata"]["annotations"]["kubeops.io/placeholder-spec"]}


def test_excluded_nodes_become_a_not_in_term_of_their_own():
    affinity = pod_spec(build(exclude_nodes=["old-2", "old-1"]))["affinity"]
    assert affinity["nodeAffinity"] == {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [NOT_OLD]}]}}


def test_excluded_nodes_hostname_labels_are_excluded_too_when_they_differ_from_the_names():
    # Karpenter's KWOK nodes are named kwok-<claim>-..., their hostname label is the NodeClaim's name.
    affinity = pod_spec(build(exclude_nodes=["kwok-a-1"], exclude_hostnames={"a"}))["affinity"]
    term = affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
    assert term == {"matchExpressions": [
        {"key": "kubernetes.io/hostname", "operator": "NotIn", "values": ["a", "kwok-a-1"]}]}
    assert excluded_hostnames(build(exclude_nodes=["kwok-a-1"], exclude_hostnames={"a"})) == {"a", "kwok-a-1"}
    assert excluded_hostnames(build()) == set() and excluded_hostnames(None) == set()


def test_a_rotations_nodes_are_excluded_by_its_label_the_way_karpenter_accepts():
    deployment = build(exclude_nodes=["kwok-a-1"], exclude_hostnames={"a"}, exclude_by_label=True,
                       node_selector={"karpenter.sh/nodepool": "general"})
    term = pod_spec(deployment)["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"][0]
    assert term == {"matchExpressions": [{"key": "kubeops.io/rotating", "operator": "DoesNotExist"}]}
    assert excludes_by_label(deployment) and not excludes_by_label(build(exclude_nodes=["old-1"]))
    assert excluded_hostnames(deployment) == set()


def test_placeholders_on_excluded_nodes_count_only_for_the_current_spec():
    current = build(exclude_nodes=["old-1"])["metadata"]["annotations"]["kubeops.io/placeholder-spec"]
    on_old = pod("p-1", node_name="old-1", annotations={"kubeops.io/placeholder-spec": current})
    stale = pod("p-2", node_name="old-1", annotations={"kubeops.io/placeholder-spec": "older"})
    elsewhere = pod("p-3", node_name="new-1", annotations={"kubeops.io/placeholder-spec": current})
    assert placeholders_on([on_old, stale, elsewhere], ["old-1"], {current}) == ["p-1 on old-1"]
    leaving = pod("p-4", node_name="old-1", annotations={"kubeops.io/placeholder-spec": current}, deleting=True)
    assert placeholders_on([leaving], ["old-1"], {current}) == []


def test_excluded_nodes_are_added_to_every_given_node_affinity_term():
    preferred = [{"weight": 1, "preference": {"matchExpressions": [{"key": "spot", "operator": "Exists"}]}}]
    given = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["new"]}]},
        {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["spare"]}]}]},
        "preferredDuringSchedulingIgnoredDuringExecution": preferred}
    affinity = pod_spec(build(node_affinity=given, exclude_nodes={"old-1", "old-2"}))["affinity"]
    assert affinity["nodeAffinity"] == {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["new"]}, NOT_OLD]},
            {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["spare"]}, NOT_OLD]}]},
        "preferredDuringSchedulingIgnoredDuringExecution": preferred}
    assert given["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]["matchExpressions"] == [
        {"key": "pool", "operator": "In", "values": ["new"]}], "the caller's affinity is left alone"


def test_without_node_affinity_or_exclusions_there_is_no_node_affinity():
    assert "nodeAffinity" not in pod_spec(build())["affinity"]


def test_a_preferred_only_node_affinity_is_kept_as_given():
    preferred = {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "preference": {"matchExpressions": [{"key": "spot", "operator": "Exists"}]}}]}
    assert pod_spec(build(node_affinity=preferred))["affinity"]["nodeAffinity"] == preferred


def test_pool_selector_tolerations_and_requests_reach_the_pod():
    spec = pod_spec(build(node_selector={"pool": "new"}, tolerations=[{"key": "gpu", "operator": "Exists"}],
                          requests={"cpu": "1"}, image="pause:test"))
    assert spec["nodeSelector"] == {"pool": "new"}
    assert spec["tolerations"] == [{"key": "gpu", "operator": "Exists"}]
    assert spec["containers"] == [{"name": "placeholder", "image": "pause:test",
                                   "resources": {"requests": {"cpu": "1"}}}]
    assert pod_spec(build())["containers"][0]["resources"]["requests"] == {"cpu": "10m", "memory": "16Mi"}


def test_the_spec_hash_changes_with_the_pod_spec_only():
    def spec_hash(deployment):
        return deployment["metadata"]["annotations"]["kubeops.io/placeholder-spec"]

    assert len(spec_hash(build())) == 16
    assert spec_hash(build()) == spec_hash(build(replicas=7))
    assert spec_hash(build()) != spec_hash(build(exclude_nodes=["old-1"]))
    assert spec_hash(build()) != spec_hash(build(requests={"cpu": "20m"}))
    assert spec_hash(build()) != spec_hash(build(node_selector={"pool": "new"}))


def test_priority_class_never_preempts_and_is_not_the_default():
    assert priority_class("kubeops-placeholder", -10) == {
        "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
        "metadata": {"name": "kubeops-placeholder", "labels": {"app.kubernetes.io/managed-by": "kubeops.rotation"}},
        "value": -10, "globalDefault": False, "preemptionPolicy": "Never",
        "description": "Placeholders of kubeops.rotation warm nodes: any real pod preempts them."}


def test_warm_nodes_are_those_with_a_ready_placeholder_on_a_ready_schedulable_node():
    nodes = {name: node(name) for name in ("warm-1", "warm-2", "cordoned", "down", "old-1")}
    nodes["cordoned"] = node("cordoned", unschedulable=True)
    nodes["down"] = node("down", ready="False")
    placeholders = [pod("p1", "warm-2", labels=SET), pod("p2", "warm-1", labels=SET),
                    pod("p3", "warm-1", labels=SET), pod("p4", "cordoned", labels=SET),
                    pod("p5", "down", labels=SET), pod("p6", "old-1", labels=SET),
                    pod("p7", "unknown", labels=SET), pod("p8", None, labels=SET, phase="Pending", ready=False)]
    assert warm_nodes_of(placeholders, nodes, exclude_nodes=["old-1"]) == ["warm-1", "warm-2"]
    assert warm_nodes_of(placeholders, nodes) == ["old-1", "warm-1", "warm-2"]
    assert warm_nodes_of([pod("starting", "warm-1", ready=False)], nodes) == []


def test_a_placeholder_set_asked_for_by_zone_has_one_deployment_per_zone_named_after_it():
    assert placeholder_name("warm") == "warm"
    assert placeholder_name("warm", "zone-a") == "warm-zone-a"
    assert build(zone="zone-a")["metadata"]["name"] == "warm-zone-a"
    assert build()["metadata"]["name"] == "warm"


def test_a_zones_placeholders_are_pinned_to_the_zone_and_labelled_with_it():
    pool = {"pool": "new"}
    deployment = build(zone="zone-a", node_selector=pool)
    in_zone = dict(SET, **{"kubeops.io/warm-zone": "zone-a"})
    assert pod_spec(deployment)["nodeSelector"] == {"pool": "new", "topology.kubernetes.io/zone": "zone-a"}
    assert pool == {"pool": "new"}, "the caller's node selector is left alone"
    assert deployment["spec"]["selector"] == {"matchLabels": in_zone}
    assert deployment["metadata"]["labels"] == deployment["spec"]["template"]["metadata"]["labels"] == dict(
        in_zone, **{"app.kubernetes.io/managed-by": "kubeops.rotation"})


def test_the_placeholders_of_every_zone_of_a_set_repel_each_other_by_the_set_label_only():
    assert pod_spec(build(zone="zone-a"))["affinity"] == {"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": SET}}]}}


def test_missing_warm_counts_what_each_zone_still_lacks():
    zones = {"w1": "zone-a", "w2": "zone-a", "w3": "zone-b"}
    warm = ["w1", "w2", "w3"]
    assert missing_warm(warm, zones, {"zone-a": 3, "zone-b": 1, "zone-c": 2}) == {"zone-a": 1, "zone-c": 2}
    assert missing_warm(warm, zones, {"zone-a": 2, "zone-b": 0}) == {}


def test_missing_warm_for_no_zone_counts_warm_nodes_of_every_zone():
    zones = {"w1": "zone-a", "w2": "zone-b"}
    assert missing_warm(["w1", "w2"], zones, {None: 2}) == {}
    assert missing_warm(["w1", "w2"], zones, {None: 3}) == {None: 1}
    assert missing_warm([], {}, {None: 1}) == {None: 1}


def test_only_an_autoscalers_refusal_of_a_pending_placeholder_counts_not_the_schedulers_waiting():
    pending = {"metadata": {"name": "warm-c-1", "labels": {"kubeops.io/warm-zone": "zone-c"}}, "spec": {}}
    placed = {"metadata": {"name": "warm-a-1", "labels": {"kubeops.io/warm-zone": "zone-a"}}, "spec": {"nodeName": "n"}}

    def event(name, reason, component, message="m"):
        return {"involvedObject": {"name": name}, "reason": reason, "source": {"component": component},
                "message": message}

    karpenter = event("warm-c-1", "FailedScheduling", "karpenter", "incompatible with nodepool ab")
    assert refused_placeholders([pending, placed], [
        event("warm-c-1", "FailedScheduling", "default-scheduler"), karpenter,
        event("warm-a-1", "FailedScheduling", "karpenter")]) == {
            "warm-c-1": ("zone-c", "karpenter: incompatible with nodepool ab")}
    assert autoscaler_refusal(event("p", "NotTriggerScaleUp", "cluster-autoscaler", "max node group size reached")) \
        == "cluster-autoscaler: max node group size reached"
    assert refused_placeholders([pending], [event("warm-c-1", "FailedScheduling", "default-scheduler")]) == {}
