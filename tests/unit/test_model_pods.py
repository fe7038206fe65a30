from __future__ import annotations

import pytest

from ansible_collections.kubeops.rotation.plugins.module_utils.model.errors import NotFound
from ansible_collections.kubeops.rotation.plugins.module_utils.model.pods import (
    by_node_and_key,
    claim_names,
    controller_of,
    do_not_disrupt_annotation,
    is_ready,
    is_terminal,
    is_terminating,
    moved_to,
    node_of,
    pod_key,
    pods_of_named_nodes,
)
from builders import node, pod


def test_a_pod_is_named_by_namespace_and_name_and_knows_its_node():
    assert pod_key(pod("web-1", namespace="shop")) == "shop/web-1"
    assert node_of(pod(node_name="n7")) == "n7"
    assert node_of({"metadata": {"name": "p"}}) is None


def test_pods_of_named_nodes_come_from_the_lists_sorted_by_node_then_key():
    nodes = [node("n2"), node("n1"), node("n3")]
    pods = [pod("b", node_name="n2"), pod("a", node_name="n2", namespace="default"), pod("c", node_name="n3"),
            pod("d", node_name="n1"), pod("pending", node_name=None)]
    found, names = pods_of_named_nodes(["n2", "n1", "n2"], nodes, pods)
    assert [pod_key(each) for each in found] == ["ns/d", "default/a", "ns/b"]
    assert names == ["n1", "n2"]
    assert sorted(pods, key=by_node_and_key)[0] is pods[4]  # a pod on no node comes first


def test_a_name_that_no_listed_node_has_is_not_found():
    with pytest.raises(NotFound, match="^No node named n9, nx; nothing was changed.$"):
        pods_of_named_nodes(["n1", "nx", "n9"], [node("n1")], [pod(node_name="n1")])


def test_the_controller_is_the_owner_reference_marked_controller():
    subject = pod()
    subject["metadata"]["ownerReferences"].insert(0, {"kind": "ConfigMap", "name": "cm"})
    assert controller_of(subject) == {"kind": "ReplicaSet", "name": "web-rs", "controller": True}
    assert controller_of(pod(kind=None)) is None
    assert controller_of({"metadata": {"ownerReferences": [{"kind": "ConfigMap", "name": "cm"}]}}) is None


def test_terminal_terminating_and_ready():
    assert is_terminal(pod(phase="Succeeded")) and is_terminal(pod(phase="Failed"))
    assert not is_terminal(pod(phase="Running"))
    assert is_terminating(pod(deleting=True)) and not is_terminating(pod())
    assert is_ready(pod()) and not is_ready(pod(ready=False))
    assert not is_ready(pod(deleting=True)), "a terminating pod is not ready whatever its condition says"


def test_do_not_disrupt_annotation_is_the_one_that_asks_with_its_value():
    assert do_not_disrupt_annotation(pod(annotations={"karpenter.sh/do-not-disrupt": "true"})) == \
        ("karpenter.sh/do-not-disrupt", "true")
    assert do_not_disrupt_annotation(pod(annotations={"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"})) \
        == ("cluster-autoscaler.kubernetes.io/safe-to-evict", "false")
    assert do_not_disrupt_annotation(pod(annotations={"karpenter.sh/do-not-disrupt": "false",
                                                      "cluster-autoscaler.kubernetes.io/safe-to-evict": "true"})) \
        is None


@pytest.mark.parametrize("value", ["true", "30m", "1h30m", "1.5h", "90s"])
def test_karpenter_do_not_disrupt_counts_as_true_or_as_a_go_duration(value):
    assert do_not_disrupt_annotation(pod(annotations={"karpenter.sh/do-not-disrupt": value})) == \
        ("karpenter.sh/do-not-disrupt", value)


@pytest.mark.parametrize("value", ["false", "abc", "", "30", "m"])
def test_karpenter_do_not_disrupt_neither_true_nor_a_duration_does_not_count(value):
    assert do_not_disrupt_annotation(pod(annotations={"karpenter.sh/do-not-disrupt": value})) is None


def test_safe_to_evict_false_counts_when_karpenters_annotation_does_not():
    subject = pod(annotations={"karpenter.sh/do-not-disrupt": "abc",
                               "cluster-autoscaler.kubernetes.io/safe-to-evict": "false"})
    assert do_not_disrupt_annotation(subject) == ("cluster-autoscaler.kubernetes.io/safe-to-evict", "false")


def test_claim_names_are_the_persistent_volume_claims_only():
    subject = pod(volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "data-db-0"}},
                           {"name": "tmp", "emptyDir": {}},
                           {"name": "logs", "persistentVolumeClaim": {"claimName": "logs"}}])
    assert claim_names(subject) == ["data-db-0", "logs"]
    assert claim_names(pod()) == []


def test_moved_to_copies_the_pod_onto_another_node_leaving_the_original():
    original = pod(node_name="old", nodeSelector={"pool": "a"})
    moved = moved_to(original, "new")
    assert node_of(moved) == "new" and moved["spec"]["nodeSelector"] == {"pool": "a"}
    assert node_of(original) == "old"
