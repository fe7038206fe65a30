"""engine.steering's SteeringAcrossSteps: the steering of a move's replacement stays on for its drain, which patches
only the nodes it steers otherwise; the taints come off once, at the end, also when a step failed. The API server is
stood in for by nodes held in memory that the patches change."""

from __future__ import annotations

import copy
import time

import pytest
from builders import node

from ansible_collections.kubeops.rotation.plugins.module_utils.engine import steering as steering_module
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.steering import (
    SteeringAcrossSteps,
    steering_while_moving,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.steering import is_steered


class Nodes:
    """Nodes the steering lists and patches, and each patch sent, as (node, the taint's effect or None). The nodes
    followed meanwhile (engine.steering.NewNodeSteering) are these, and then ``coming``, one event each."""

    def __init__(self, monkeypatch, *nodes):
        self.nodes = {each["metadata"]["name"]: each for each in nodes}
        self.patches = []
        self.coming = []
        self.came = 0
        monkeypatch.setattr(steering_module, "list_nodes", lambda _client: self.listed())
        monkeypatch.setattr(steering_module, "nodes_informer", lambda _client: FollowedNodes(self))

    def listed(self):
        return [copy.deepcopy(each) for each in self.nodes.values()]

    def update_node(self, listed, plan):
        current = self.nodes[listed["metadata"]["name"]]
        _result, patch = plan(current)
        if patch:
            taints = next(op["value"] for op in patch if op.get("path") == "/spec/taints")
            current["spec"]["taints"] = taints
            self.patches.append((current["metadata"]["name"], next(
                (taint["effect"] for taint in taints if taint["key"] == "kubeops.io/rebalancing"), None)))

    def steered(self):
        return sorted(name for name, each in self.nodes.items() if is_steered(each))


class FollowedNodes:
    """What api.watch.BackgroundInformer needs of an Informer: the nodes, then an ADDED event for each of ``coming`` (added to
    the nodes as it comes); its watch then ends at once, which ends the following."""

    def __init__(self, cluster):
        self.cluster = cluster
        self.objects = None
        self.clock = time.monotonic

    def relist(self):
        self.objects = {each["metadata"]["name"]: each for each in self.cluster.listed()}
        return self.objects

    def snapshot(self):
        return "1", dict(self.objects)

    def wait(self, until, _deadline, ended=None):
        answer = until(self.objects, None)
        while self.cluster.coming and not answer:
            added = self.cluster.coming.pop(0)
            self.cluster.nodes[added["metadata"]["name"]] = added
            self.objects[added["metadata"]["name"]] = added
            answer = until(self.objects, ("ADDED", copy.deepcopy(added)))
            self.cluster.came += 1
        return answer


@pytest.fixture
def cluster(monkeypatch):
    return Nodes(monkeypatch, node("old-1", zone="a"), node("later-1", zone="a"), node("later-2", zone="a"),
                 node("new-a", zone="a"), node("new-b", zone="b"))


def test_the_drain_takes_over_the_replacements_steering_and_it_comes_off_once(cluster):
    with SteeringAcrossSteps(cluster) as held:
        with steering_while_moving(cluster, ["later-1", "later-2"], ["old-1"], held=held) as steered:
            assert steered == ["later-1", "later-2", "new-b"]
        assert cluster.steered() == ["later-1", "later-2", "new-b"], "still on between the steps"
        with steering_while_moving(cluster, ["later-1"], ["old-1"], held=held) as steered:
            assert steered == ["later-1", "new-b"]
        assert cluster.steered() == ["later-1", "new-b"]
    assert cluster.steered() == []
    # Each node patched once on and once off: nothing taken off between the steps and put on again.
    assert sorted(cluster.patches, key=str) == sorted([
        ("later-1", "NoSchedule"), ("later-2", "NoSchedule"), ("new-b", "PreferNoSchedule"),
        ("later-2", None), ("later-1", None), ("new-b", None)], key=str)


def test_without_holding_each_step_takes_its_steering_off_at_its_end(cluster):
    for _step in range(2):
        with steering_while_moving(cluster, ["later-1"], ["old-1"]):
            assert cluster.steered() == ["later-1", "new-b"]
        assert cluster.steered() == []
    assert len(cluster.patches) == 8


def test_held_steering_comes_off_when_a_step_fails(cluster):
    with pytest.raises(RuntimeError):
        with SteeringAcrossSteps(cluster) as held:
            with steering_while_moving(cluster, ["later-1"], ["old-1"], held=held):
                raise RuntimeError("the replacement timed out")
    assert cluster.steered() == []


def test_a_node_that_comes_up_in_a_closed_zone_while_pods_move_is_steered_too_and_cleared_at_the_end(cluster):
    cluster.coming = [node("launched-b", zone="b"), node("launched-a", zone="a"),
                      node("cordoned-b", zone="b", unschedulable=True)]
    with SteeringAcrossSteps(cluster) as held:
        with steering_while_moving(cluster, ["later-1"], ["old-1"], held=held):
            wait_until(lambda: cluster.came == 3)
            assert cluster.steered() == ["later-1", "launched-b", "new-b"], "zone a is the pods' own"
            assert ("launched-b", "PreferNoSchedule") in cluster.patches
    assert cluster.steered() == []


def test_without_a_zone_to_keep_no_node_is_followed(cluster, monkeypatch):
    monkeypatch.setattr(steering_module, "nodes_informer", lambda _client: pytest.fail("nodes followed"))
    with steering_while_moving(cluster, ["later-1"]):
        assert cluster.steered() == ["later-1"]
    assert cluster.steered() == []


def wait_until(condition, seconds=5):
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)
