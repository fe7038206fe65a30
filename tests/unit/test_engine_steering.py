"""engine.steering's HeldSteering: the steering of a move's replacement stays on for its drain, which patches only
the nodes it steers otherwise; the taints come off once, at the end, also when a step failed. The API server is stood
in for by nodes held in memory that the patches change."""

from __future__ import annotations

import copy

import pytest
from builders import node

from ansible_collections.kubeops.rotation.plugins.module_utils.engine import steering as steering_module
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.steering import (
    HeldSteering,
    steering_while_moving,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.steering import is_steered


class Nodes:
    """Nodes the steering lists and patches, and each patch sent, as (node, the taint's effect or None)."""

    def __init__(self, monkeypatch, *nodes):
        self.nodes = {each["metadata"]["name"]: each for each in nodes}
        self.patches = []
        monkeypatch.setattr(steering_module, "list_nodes", lambda _client: self.listed())

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


@pytest.fixture
def cluster(monkeypatch):
    return Nodes(monkeypatch, node("old-1", zone="a"), node("later-1", zone="a"), node("later-2", zone="a"),
                 node("new-a", zone="a"), node("new-b", zone="b"))


def test_the_drain_takes_over_the_replacements_steering_and_it_comes_off_once(cluster):
    with HeldSteering(cluster) as held:
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
        with HeldSteering(cluster) as held:
            with steering_while_moving(cluster, ["later-1"], ["old-1"], held=held):
                raise RuntimeError("the replacement timed out")
    assert cluster.steered() == []
