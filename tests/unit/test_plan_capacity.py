from __future__ import annotations

import pytest

from ansible_collections.kubeops.rotation.plugins.module_utils.model.errors import InvalidInput
from ansible_collections.kubeops.rotation.plugins.module_utils.model.quantities import pod_requests
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.capacity import (
    free_room,
    nodes_needed,
    nodes_with_room,
    smallest_request,
    total_requests,
)
from builders import node, pod

TEMPLATE = {"cpu": "4", "memory": "16Gi", "pods": "110"}
POOL = {"pool": "new"}


def agents(cpu):
    return [pod("agent-%d" % index, "old-%d" % index, kind="DaemonSet", owner="agent", cpu=cpu, memory="0")
            for index in range(2)]


def test_daemonset_requests_come_off_every_new_node():
    movers = [pod("web-%d" % index, "old-%d" % (index % 2), cpu="1", memory="0") for index in range(7)]
    assert nodes_needed(movers, TEMPLATE, POOL)[0] == 2
    count, explanation = nodes_needed(movers + agents("1"), TEMPLATE, POOL)
    assert count == 3, "7 cpu on nodes with 3 cpu left after the agent"
    assert explanation["daemonset_requests_per_node"] == {"cpu": 1.0, "memory": 0.0, "pods": 1.0}
    assert explanation["pods"] == 7 and explanation["requests"]["cpu"] == 7.0
    assert explanation["nodes_by_resource"] == {"cpu": 3, "memory": 0, "pods": 1}


def test_the_tightest_resource_decides():
    movers = [pod("cache-%d" % index, "old-0", cpu="100m", memory="10Gi") for index in range(4)]
    count, explanation = nodes_needed(movers, TEMPLATE, POOL)
    assert count == 3 and explanation["nodes_by_resource"] == {"cpu": 1, "memory": 3, "pods": 1}
    by_pods = nodes_needed(movers * 2, dict(TEMPLATE, memory="100Gi", pods="3"), POOL)
    assert by_pods[0] == 3 and by_pods[1]["nodes_by_resource"] == {"cpu": 1, "memory": 1, "pods": 3}
    assert explanation["summary"].startswith("4 pod(s) requesting 400m CPU, 40 GiB need 3 node(s) of 4 CPU, 16 GiB, 110 pods")


def test_pods_the_pool_cannot_take_are_left_out_by_name():
    pods = [pod("web", "old-0", cpu="1"), pod("pinned", "old-0", cpu="4", nodeSelector={"pool": "old"}),
            pod("anywhere", "old-0", cpu="1", nodeSelector={"pool": "new"})]
    count, explanation = nodes_needed(pods, TEMPLATE, POOL)
    assert count == 1 and explanation["pods"] == 2
    assert explanation["not_for_pool"] == ["ns/pinned"]


def test_every_pod_that_must_leave_counts_even_those_eviction_refuses():
    pods = [pod("bare", "old-0", kind=None, cpu="2"),
            pod("protected", "old-0", cpu="2", annotations={"karpenter.sh/do-not-disrupt": "true"}),
            pod("scratch", "old-0", cpu="2", volumes=[{"name": "tmp", "emptyDir": {}}]),
            pod("done", "old-0", cpu="8", phase="Succeeded"),
            pod("static", "old-0", cpu="8", kind="Node", annotations={"kubernetes.io/config.mirror": "x"})]
    count, explanation = nodes_needed(pods, TEMPLATE, POOL)
    assert explanation["pods"] == 3 and count == 2


def test_nothing_to_move_needs_no_node():
    assert nodes_needed(agents("1"), TEMPLATE, POOL)[0] == 0
    assert nodes_needed([], TEMPLATE, POOL)[0] == 0


def test_daemonsets_that_eat_a_whole_node_are_invalid_input():
    with pytest.raises(InvalidInput, match="a template node has no cpu left after DaemonSet pods"):
        nodes_needed([pod("web", "old-0")] + agents("4"), TEMPLATE, POOL)


def test_the_smallest_request_is_the_least_of_each_resource():
    assert smallest_request([]) is None
    assert smallest_request([{"cpu": 0.5, "memory": 64.0, "pods": 1.0}, {"cpu": 0.1, "memory": 128.0, "pods": 1.0}]) == \
        {"cpu": 0.1, "memory": 64.0, "pods": 1.0}


def test_a_node_has_room_when_what_its_pods_request_leaves_the_request_free():
    nodes = [node("full", cpu="1"), node("roomy", cpu="1"), node("pods-full", cpu="4", pods="2"), node("empty")]
    pods = [pod("a", node_name="full", cpu="500m"), pod("b", node_name="full", cpu="500m", deleting=True),
            pod("c", node_name="roomy", cpu="500m"), pod("d", node_name="roomy", cpu="500m", phase="Succeeded"),
            pod("e", node_name="pods-full"), pod("f", node_name="pods-full")]
    request = {"cpu": 0.5, "memory": 64.0 * 2 ** 20, "pods": 1.0}
    # A terminating pod still counts, as the scheduler counts it; a finished one does not.
    assert nodes_with_room(nodes, pods, request) == {"roomy", "empty"}


def gpu_node(name, gpus):
    built = node(name)
    built["status"]["allocatable"]["example.com/gpu"] = str(gpus)
    return built


def gpu_pod(name, node_name):
    built = pod(name, node_name)
    built["spec"]["containers"][0]["resources"]["requests"]["example.com/gpu"] = "1"
    return built


def test_room_counts_every_resource_the_pods_request_a_gpu_too():
    nodes = [gpu_node("one-free", 2), gpu_node("full", 1), node("no-gpu")]
    pods = [gpu_pod("a", "one-free"), gpu_pod("b", "full"), pod("c", "no-gpu")]
    request = smallest_request([pod_requests(gpu_pod("t", None)), pod_requests(gpu_pod("u", None))])
    assert request["example.com/gpu"] == 1.0
    assert nodes_with_room(nodes, pods, request) == {"one-free"}
    # A pod that asks for none of it lowers the smallest request of it to nothing.
    assert nodes_with_room(nodes, pods, smallest_request([request, pod_requests(pod("v", None))])) == \
        {"one-free", "full", "no-gpu"}
    assert free_room(nodes, pods)["example.com/gpu"] == 1.0
    assert total_requests(pods)["example.com/gpu"] == 2.0 and list(total_requests(pods, ("cpu",))) == ["cpu"]
