"""engine.drain.move: the warming, the replacement and the drain one after the other in one call, with every pod
listed once for them; what each step returned in the result, and carried by the error of a step that failed. The
steps and the followed list of every pod are stood in for here; the integration tests run them on the cluster."""

from __future__ import annotations

import pytest

from ansible_collections.kubeops.rotation.plugins.module_utils.engine import drain as drain_module
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.drain import DrainJob, PodSelection, move
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.replacement import ReplaceSettings
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.warm import WarmSettings
from ansible_collections.kubeops.rotation.plugins.module_utils.model.errors import Blocked, TimedOut
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.eviction import EvictionSettings
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.filters import FilterOptions

WARMING = WarmSettings(name="rotation-r1", count=1, timeout=60)
REPLACING = ReplaceSettings(pods=("shop/db-0",), run_id="r1", timeout=90)
SELECTION = PodSelection(nodes=("old-1",))
REPLACED_DIFF = {"before": {"shop/db-0": "old-1"}, "after": {"shop/db-0": "new-1"}}
EVICTED_DIFF = {"before": {"shop/web-1": "old-1"}, "after": {"shop/web-1": None}}


class Steps:
    """The steps as move calls them, in order; ``failing`` names the one that raises, with its result."""

    def __init__(self, monkeypatch, failing=None, changed=("warm", "replace", "drain")):
        self.calls = []
        self.held_steering = {}
        self.failing = failing
        self.changed = changed
        monkeypatch.setattr(drain_module, "BackgroundInformer", self.followed)
        monkeypatch.setattr(drain_module, "pods_informer", lambda client: "every pod")
        monkeypatch.setattr(drain_module, "ensure_warm_nodes", self.warm)
        monkeypatch.setattr(drain_module, "replace_pods", self.replace)
        monkeypatch.setattr(drain_module, "drain", self.drain)

    def followed(self, informer, deadline):
        steps = self

        class BackgroundInformer:
            def __enter__(self):
                steps.calls.append(("follow", informer, deadline))
                return self

            def __exit__(self, *_exc):
                steps.calls.append(("stop following",))

            def ready(self):
                steps.calls.append(("listed",))
                return self

        return BackgroundInformer()

    def step(self, name, result, error=TimedOut):
        self.calls.append((name,))
        result = dict(result, changed=name in self.changed)
        if self.failing == name:
            raise error("%s failed" % name, result)
        return result

    def warm(self, _client, settings, check_mode):
        assert settings == WARMING and not check_mode
        return self.step("warm", {"nodes": ["new-1"], "elapsed_seconds": 5.0})

    def replace(self, _client, settings, check_mode, every_pod, held_steering):
        assert (settings.avoid_nodes, settings.keep_zones, check_mode) == (("old-1",), True, False)
        self.held_steering["replace"] = held_steering
        return self.step("replace", {"workloads": [], "diff": REPLACED_DIFF, "warnings": ["a surge was left"]})

    def drain(self, _client, job, *_args, **kwargs):
        self.calls.append(("drain", job.selection, "every_pod" in kwargs))
        self.held_steering["drain"] = kwargs.get("held_steering")
        return self.step("drain", {"nodes": ["old-1"], "diff": EVICTED_DIFF}, Blocked)


def moved(warming=WARMING, replacing=REPLACING):
    job = DrainJob(SELECTION, FilterOptions(), EvictionSettings(timeout=30), keep_zones=True, avoid_nodes=("old-1",))
    return move("client", job, warming=warming, replacing=replacing, clock=lambda: 1000.0)


def test_it_warms_then_replaces_then_drains_every_pod_listed_once_while_warming(monkeypatch):
    steps = Steps(monkeypatch)
    result = moved()
    assert steps.calls == [("follow", "every pod", 1000.0 + 60 + 90 + 30), ("warm",), ("listed",), ("replace",),
                           ("drain", SELECTION, True), ("drain",), ("stop following",)]
    assert result["warmed"] == {"nodes": ["new-1"], "elapsed_seconds": 5.0, "changed": True}
    assert result["replaced"] == {"workloads": [], "changed": True}
    assert result["warnings"] == ["a surge was left"] and result["changed"]
    assert steps.held_steering["drain"] is steps.held_steering["replace"] is not None, \
        "the drain takes over the replacement's steering"
    assert result["diff"] == {"before": {"shop/db-0": "old-1", "shop/web-1": "old-1"},
                              "after": {"shop/db-0": "new-1", "shop/web-1": None}}


def test_without_warming_or_replacing_it_is_drain_alone(monkeypatch):
    steps = Steps(monkeypatch)
    result = moved(warming=None, replacing=None)
    assert steps.calls == [("drain", SELECTION, False), ("drain",)]
    assert "warmed" not in result and "replaced" not in result


def test_changed_when_any_step_changed(monkeypatch):
    Steps(monkeypatch, changed=("warm",))
    assert moved(replacing=None)["changed"]
    Steps(monkeypatch, changed=())
    assert not moved()["changed"]


def test_a_warming_that_failed_moves_nothing_and_its_error_carries_what_it_did(monkeypatch):
    steps = Steps(monkeypatch, failing="warm")
    with pytest.raises(TimedOut, match="warm failed") as failed:
        moved()
    assert [call[0] for call in steps.calls] == ["follow", "warm", "stop following"]
    warmed = {"nodes": ["new-1"], "elapsed_seconds": 5.0, "changed": True}
    assert failed.value.result == {"changed": True, "warmed": warmed}


def test_a_drain_that_failed_carries_what_the_steps_before_it_did(monkeypatch):
    Steps(monkeypatch, failing="drain", changed=())
    with pytest.raises(Blocked, match="drain failed") as failed:
        moved()
    result = failed.value.result
    replaced = {"workloads": [], "changed": False}
    assert (result["warmed"]["nodes"], result["replaced"], result["nodes"]) == (["new-1"], replaced, ["old-1"])
    assert result["diff"]["after"] == {"shop/db-0": "new-1", "shop/web-1": None}
