"""engine.replacement_pods' view of one workload's pods, and of the other pods its PDBs select, worked out once per
change of the namespace's Informer: the answers of a scan of every pod at each call, scanned again after each event
and after a list again, kept in between. The API server's list and watch are stood in for by scripts of their
answers."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from builders import pdb, pod

from ansible_collections.kubeops.rotation.plugins.module_utils.api import watch as watch_module
from ansible_collections.kubeops.rotation.plugins.module_utils.api.watch import RELISTED, WatchExpired
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.replacement_pods import Replacing, WorkloadPods
from ansible_collections.kubeops.rotation.plugins.module_utils.model.owners import Workload
from ansible_collections.kubeops.rotation.plugins.module_utils.model.pods import is_ready, is_terminal, is_terminating
from ansible_collections.kubeops.rotation.plugins.module_utils.model.selectors import selector_matches
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.replacement import Budget

SELECTOR = {"matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "track", "operator": "NotIn", "values": ["canary"]}]}
SPEC = {"selector": SELECTOR, "template": {"metadata": {"labels": {"app": "web", "track": "stable"}}}}
PDBS = [pdb("web"), pdb("everything", selector={}), pdb("db"),
        pdb("stable", selector={"matchExpressions": [{"key": "track", "operator": "In", "values": ["stable"]}]})]


def namespace_pods():
    return [pod("web-0"), pod("web-1", ready=False), pod("web-2", deleting=True), pod("web-3", phase="Succeeded"),
            pod("web-canary", labels={"track": "canary"}), pod("db-0", app="db"),
            pod("db-1", app="db", labels={"track": "stable"}),
            pod("bare", app="tool", kind=None, labels={"track": "stable"})]


class Client:
    """The namespace's pods listed from a script of (items, version), its PDBs as given."""

    def __init__(self, *lists):
        self.core = SimpleNamespace(list_namespaced_pod="list pods")
        self.policy = SimpleNamespace(list_namespaced_pod_disruption_budget="list pdbs")
        self.lists = list(lists)

    def list_with_version(self, _list_method, **_kwargs):
        return self.lists.pop(0)

    def list_all(self, _list_method, **_kwargs):
        return PDBS


@pytest.fixture
def watches(monkeypatch):
    """The watch streams to answer, in turn: each a list of (type, object), and an exception to raise after them."""
    streams = []

    def fake_watch(_list_method, _version, _timeout, **_kwargs):
        events, failure = streams.pop(0)
        yield from events
        if failure:
            raise failure

    monkeypatch.setattr(watch_module, "watch", fake_watch)
    return streams


def scanned(objects, selector):
    """The live pods ``selector`` selects, from every pod of the namespace, as they were found at each call."""
    return [p for p in objects.values() if not is_terminal(p) and not is_terminating(p)
            and selector_matches(selector, p["metadata"].get("labels") or {})]


def scanned_budgets(objects, mine):
    budgets = []
    for each in PDBS:
        if selector_matches(each["spec"]["selector"], SPEC["template"]["metadata"]["labels"]):
            others = [p for p in scanned(objects, each["spec"]["selector"]) if p["metadata"]["uid"] not in mine]
            budgets.append(Budget(each, len(others), sum(1 for p in others if is_ready(p))))
    return budgets


def names(pods):
    return [p["metadata"]["name"] for p in pods]


def web_pods(client):
    return WorkloadPods(Replacing(client, "run", float("inf")), Workload("Deployment", "ns", "web"), SPEC)


def assert_as_scanned(state):
    objects = state.informer.objects
    mine = scanned(objects, SELECTOR)
    assert list(state.mine()) == mine
    assert state.ready() == sum(1 for p in mine if is_ready(p))
    assert state.budgets() == scanned_budgets(objects, {p["metadata"]["uid"] for p in mine})


def test_the_workloads_pods_and_its_budgets_are_those_a_scan_of_every_pod_finds():
    state = web_pods(Client((namespace_pods(), "10")))
    assert names(state.mine()) == ["web-0", "web-1"]
    assert [(b.name, b.others_expected, b.others_ready) for b in state.budgets()] == [
        ("ns/web", 1, 1), ("ns/everything", 4, 4), ("ns/stable", 2, 2)]
    assert_as_scanned(state)


def test_they_are_kept_while_the_informer_does_not_change():
    state = web_pods(Client((namespace_pods(), "10")))
    mine, budgets = state.mine(), state.budgets()
    state.informer.objects.clear()
    assert state.mine() is mine and state.budgets() == budgets


def test_each_event_and_each_list_again_are_seen_even_when_the_version_stays(watches):
    """builders.pod has no resourceVersion: the Informer's version stays as it was through these events."""
    client = Client((namespace_pods(), "10"), ([pod("web-0"), pod("web-9"), pod("db-0", app="db")], "20"))
    watches.append(([("ADDED", pod("web-5")), ("MODIFIED", pod("web-0", deleting=True)),
                     ("MODIFIED", pod("web-1")), ("ADDED", pod("db-2", app="db")),
                     ("BOOKMARK", {"metadata": {"resourceVersion": "10"}}), ("DELETED", pod("web-5"))],
                    WatchExpired()))
    state = web_pods(client)
    seen = []

    def until(_objects, change):
        assert state.informer.version == ("20" if change == RELISTED else "10")
        assert_as_scanned(state)
        seen.append((names(state.mine()), state.ready(), state.budgets()[1].others_expected))
        return change == RELISTED
    assert state.informer.wait(until, deadline=float("inf"))
    assert seen == [(["web-0", "web-1"], 1, 4), (["web-0", "web-1", "web-5"], 2, 4), (["web-1", "web-5"], 1, 4),
                    (["web-1", "web-5"], 2, 4), (["web-1", "web-5"], 2, 5), (["web-1"], 1, 5),
                    (["web-0", "web-9"], 2, 1)]


def test_after_one_event_only_its_pod_is_looked_at_again(watches):
    watches.append(([("ADDED", pod("web-5")), ("DELETED", pod("web-0"))], None))
    state = web_pods(Client((namespace_pods(), "10")))
    looked_at = []
    wanted = state._mine.wanted

    def counting(each):
        looked_at.append(each["metadata"]["name"])
        return wanted(each)
    state._mine.wanted = counting
    state.mine()
    assert len(looked_at) == len(namespace_pods())
    del looked_at[:]
    state.informer.wait(lambda _objects, change: names(state.mine()) == ["web-1", "web-5"], deadline=float("inf"))
    assert looked_at == ["web-5"]
