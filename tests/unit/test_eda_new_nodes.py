"""The event source kubeops.rotation.new_nodes and its decisions (plan/node_events.py) without a cluster: what
counts as a node that joined, the debounce window, the arguments, the event, and the event loop fed by a scripted
watch."""

from __future__ import annotations

import asyncio
import datetime
import importlib
import json
import os
import subprocess
import sys
import threading
from types import SimpleNamespace

import pytest
from builders import node as built_node

from ansible_collections.kubeops.rotation.plugins.module_utils.api import watch as watch_module
from ansible_collections.kubeops.rotation.plugins.module_utils.api.client import Client
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.node_events import (
    CONNECTION_OPTIONS,
    Backoff,
    ChangeTracker,
    Counted,
    Debouncer,
    NodeTracker,
    availability,
    connection_params,
    node_record,
    node_shape,
    nodeclaims_by_node,
    nodes_event,
    settings_from_args,
    unknown_args,
)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTIONS_ROOT = os.path.join(REPO, ".cache", "checkout")
PLUGIN = "ansible_collections.kubeops.rotation.extensions.eda.plugins.event_source.new_nodes"
PLUGIN_FILE = os.path.join(REPO, "extensions", "eda", "plugins", "event_source", "new_nodes.py")
NOT_READY_TAINT = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}
UNREGISTERED_TAINT = {"key": "karpenter.sh/unregistered", "effect": "NoExecute"}

source = importlib.import_module(PLUGIN)


def node(name, uid=None, deleting=False, **kwargs):
    """A Ready node (builders.node) with a uid, as the API gives it."""
    made = built_node(name, **kwargs)
    made["metadata"]["uid"] = uid or "uid-" + name
    if deleting:
        made["metadata"]["deletionTimestamp"] = "2026-12-03T06:00:00Z"
    return made


# --- what counts ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("changes, reason", [
    ({}, "Ready and schedulable"),
    ({"ready": "False"}, "not Ready"),
    ({"ready": "Unknown"}, "not Ready"),
    ({"unschedulable": True}, "cordoned"),
    ({"taints": [NOT_READY_TAINT]}, "tainted node.kubernetes.io/not-ready:NoSchedule"),
    ({"taints": [UNREGISTERED_TAINT]}, "tainted karpenter.sh/unregistered:NoExecute"),
    ({"deleting": True}, "being deleted"),
])
def test_a_node_counts_only_when_ready_not_cordoned_not_tainted_and_not_deleting(changes, reason):
    verdict = availability(node("n1", **changes))
    assert verdict == (reason == "Ready and schedulable", reason)


def test_prefer_no_schedule_taints_and_tolerated_taint_keys_do_not_keep_a_node_out():
    soft = node("n1", taints=[{"key": "kubeops.io/rotating", "effect": "PreferNoSchedule"}])
    gpu = node("n2", taints=[{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}])
    assert availability(soft).available
    assert not availability(gpu).available
    assert availability(gpu, tolerated_taints=("nvidia.com/gpu",)).available
    assert not availability(dict(gpu, spec={"taints": gpu["spec"]["taints"] + [NOT_READY_TAINT]}),
                            tolerated_taints=("nvidia.com/gpu",)).available


def test_a_node_without_conditions_yet_does_not_count():
    fresh = node("n1")
    fresh["status"].pop("conditions")
    assert availability(fresh) == (False, "not Ready")


# --- the tracker ---------------------------------------------------------------------------------------------

def test_nodes_ready_at_the_start_do_not_count_and_a_new_one_counts_once_when_ready_and_untainted():
    tracker = NodeTracker()
    counted, gone = tracker.listed([node("old-1"), node("old-2")])
    assert counted == [] and gone == [] and tracker.ignored_at_start == ["old-1", "old-2"]
    assert tracker.observe("MODIFIED", node("old-1")) is None, "a heartbeat of a node that was Ready at the start"
    assert tracker.observe("ADDED", node("new", ready="False", taints=[NOT_READY_TAINT])) is None
    assert tracker.observe("MODIFIED", node("new", taints=[NOT_READY_TAINT])) is None, "Ready, still tainted"
    joined = tracker.observe("MODIFIED", node("new"))
    assert joined.name == "new" and joined.existed_at_start is False
    assert tracker.observe("MODIFIED", node("new")) is None, "counted once"
    assert tracker.observe("MODIFIED", node("new", ready="False")) is None
    assert tracker.observe("MODIFIED", node("new")) is None, "Ready again after a blip is not a new node"


def test_include_existing_counts_the_nodes_ready_at_the_start_as_existing():
    tracker = NodeTracker(include_existing=True)
    counted, _gone = tracker.listed([node("old-1"), node("old-2", unschedulable=True)])
    assert [(one.name, one.existed_at_start) for one in counted] == [("old-1", True)]
    assert tracker.ignored_at_start == []


def test_a_cordoned_or_not_ready_node_counts_when_it_becomes_schedulable():
    tracker = NodeTracker()
    tracker.listed([node("broken", ready="False")])
    assert tracker.observe("ADDED", node("cordoned", unschedulable=True)) is None
    assert tracker.observe("MODIFIED", node("cordoned")).existed_at_start is False
    assert tracker.observe("MODIFIED", node("broken")).existed_at_start is True


def test_a_relist_after_a_lost_watch_counts_nodes_that_joined_meanwhile_and_forgets_deleted_ones():
    tracker = NodeTracker()
    tracker.listed([node("old"), node("pending", ready="False"), node("doomed")])
    counted, gone = tracker.listed([node("old"), node("pending"), node("joined-meanwhile")])
    assert sorted(one.name for one in counted) == ["joined-meanwhile", "pending"]
    assert gone == ["uid-doomed"]
    assert tracker.listed([node("old"), node("pending"), node("joined-meanwhile")]) == ([], [])


def test_a_node_deleted_and_made_again_under_the_same_name_counts_again():
    tracker = NodeTracker()
    tracker.listed([])
    assert tracker.observe("ADDED", node("n1", uid="a"))
    assert tracker.observe("DELETED", node("n1", uid="a")) is None
    assert tracker.observe("ADDED", node("n1", uid="b")).uid == "b"
    assert tracker.observe("BOOKMARK", node("n1", uid="c")) is None


# --- the window ----------------------------------------------------------------------------------------------

def test_ten_nodes_within_the_window_go_out_as_one():
    window = Debouncer(30)
    for second in range(10):
        window.add("uid-%d" % second, "n%d" % second, now=100.0 + second * 3)
        assert not window.due(100.0 + second * 3)
    assert window.deadline == 130.0
    assert not window.due(129.9)
    items, opened = window.take()
    assert items == ["n%d" % second for second in range(10)] and opened == 100.0
    assert window.deadline is None and window.take() == ([], None)


def test_nodes_of_two_windows_go_out_as_two_events():
    window = Debouncer(30)
    events = []
    for now, name in ((0.0, "a"), (10.0, "b"), (31.0, "c"), (45.0, "d"), (70.0, "e")):
        if window.due(now):
            events.append(window.take()[0])
        window.add(name, name, now)
    if window.due(61.0):
        events.append(window.take()[0])
    assert events == [["a", "b"], ["c", "d"]]
    assert window.deadline == 100.0, "e opened a third window"


def test_a_node_deleted_within_the_window_leaves_it_and_an_empty_window_closes():
    window = Debouncer(5)
    window.add("a", "a", 0.0)
    window.add("b", "b", 1.0)
    window.add("a", "a again", 2.0)
    window.discard("a")
    assert window.deadline == 5.0
    window.discard("b")
    assert window.deadline is None and not window.due(10.0)


def test_backoff_doubles_to_thirty_seconds_with_jitter_and_resets():
    backoff = Backoff(rand=lambda: 0.5)
    assert [backoff.next() for _attempt in range(9)] == [0.5, 1, 2, 4, 8, 16, 30, 30, 30]
    backoff.reset()
    assert backoff.next() == 0.5
    assert 0.4 <= Backoff(rand=lambda: 0.0).next() < Backoff(rand=lambda: 0.999).next() <= 0.6


# --- arguments -----------------------------------------------------------------------------------------------

def test_connection_options_come_from_args_by_name_or_alias_else_from_k8s_auth_variables():
    environ = {"K8S_AUTH_KUBECONFIG": "~/env-kubeconfig", "K8S_AUTH_CONTEXT": "env-context",
               "K8S_AUTH_VERIFY_SSL": "no", "K8S_AUTH_API_KEY": "env-token", "K8S_AUTH_SSL_CA_CERT": "/env/ca"}
    params = connection_params({"context": "arg-context", "ssl_ca_cert": "/arg/ca", "api_key": ""}, environ)
    assert params["kubeconfig"] == "~/env-kubeconfig", "expanded by the client, as for the modules"
    assert params["context"] == "arg-context"
    assert params["ca_cert"] == "/arg/ca"
    assert params["validate_certs"] is False
    assert params["api_key"] == "env-token", "an empty argument falls back like an absent one"
    assert params["host"] is None and params["impersonate_groups"] is None
    assert connection_params({"kubeconfig": {"clusters": []}}, {})["kubeconfig"] == {"clusters": []}


@pytest.mark.parametrize("args, message", [
    ({"validate_certs": "maybe"}, "validate_certs must be true or false"),
    ({"client_cert": "/c"}, "client_cert and client_key go together"),
    ({"impersonate_groups": ["g"]}, "impersonate_groups needs impersonate_user"),
    ({"debounce_seconds": "soon"}, "debounce_seconds must be a number"),
    ({"debounce_seconds": -1}, "between 0 and 3600"),
    ({"label_selector": ["a=b"]}, "label_selector must be a string"),
    ({"tolerated_taints": [""]}, "tolerated_taints must be a list of non-empty strings"),
    ({"include_existing": "sometimes"}, "include_existing must be true or false"),
    ({"changes": ["labels", "annotations"]}, "changes takes labels and taints, got annotations"),
    ({"changes_debounce_seconds": "now"}, "changes_debounce_seconds must be a number"),
])
def test_wrong_arguments_are_refused_naming_the_argument(args, message):
    with pytest.raises(ValueError, match=message):
        settings_from_args(args, {})


def test_settings_defaults_and_templated_strings():
    settings = settings_from_args(None, {})
    assert settings.debounce_seconds == 30.0 and settings.label_selector is None
    assert settings.include_existing is False and settings.tolerated_taints == ()
    # What a rulebook's "{{ ... | default('') }}" gives: strings.
    settings = settings_from_args({"debounce_seconds": "2.5", "label_selector": " ", "include_existing": "true",
                                   "tolerated_taints": "nvidia.com/gpu, dedicated"}, {})
    assert settings.debounce_seconds == 2.5 and settings.label_selector is None and settings.include_existing
    assert settings.tolerated_taints == ("nvidia.com/gpu", "dedicated")
    assert unknown_args({"debounce_second": 3, "verify_ssl": False, "label_selector": "a"}) == \
        ["debounce_second"]


def test_connection_options_are_the_modules_own():
    ansible_module = pytest.importorskip("ansible_collections.kubeops.rotation.plugins.module_utils.ansible_module")
    spec = ansible_module.CONNECTION_ARGUMENT_SPEC
    ours = {name: (tuple(aliases), tuple(variables)) for name, aliases, variables, _kind in CONNECTION_OPTIONS}
    theirs = {name: (tuple(option.get("aliases", ())), tuple(option["fallback"][1]) if "fallback" in option else ())
              for name, option in spec.items()}
    assert ours == theirs


# --- the event -----------------------------------------------------------------------------------------------

def test_the_event_names_the_nodes_with_zones_pool_and_their_nodeclaims():
    settings = settings_from_args({"debounce_seconds": 30, "label_selector": "pool=general"}, {})
    karpenter = {"karpenter.sh/nodepool": "general", "karpenter.sh/capacity-type": "spot",
                 "node.kubernetes.io/instance-type": "m5.large"}
    counted = [Counted("uid-b", "b", node("b", zone="z2", labels=karpenter), False),
               Counted("uid-a", "a", node("a", zone="z1"), True)]
    claims = [
        {"metadata": {"name": "general-x1", "labels": {"karpenter.sh/nodepool": "general"}},
         "status": {"nodeName": "b", "conditions": [{"type": "Initialized", "status": "True"}]}},
        {"metadata": {"name": "general-x2", "labels": {"karpenter.sh/nodepool": "general"}}, "status": {}},
        {"metadata": {"name": "general-x3", "deletionTimestamp": "2026-12-03T06:00:00Z"}, "status": {}},
    ]
    by_node, pending = nodeclaims_by_node(claims)
    assert by_node == {"b": "general-x1"}
    assert pending == [{"name": "general-x2", "nodepool": "general", "node": None}]
    opened = datetime.datetime(2026, 12, 3, 6, 0, 0, tzinfo=datetime.timezone.utc)
    records = [node_record(one, "2026-12-03T06:00:00.000000Z", by_node.get(one.name)) for one in counted]
    event = nodes_event(records, opened, opened + datetime.timedelta(seconds=30.2), settings, pending)
    assert event["new_nodes"] == ["a", "b"] and event["count"] == 2
    assert event["zones"] == {"z1": ["a"], "z2": ["b"]}
    b = event["nodes"][1]
    assert (b["nodepool"], b["capacity_type"], b["instance_type"], b["nodeclaim"], b["zone"]) == \
        ("general", "spot", "m5.large", "general-x1", "z2")
    assert b["existed_at_start"] is False and event["nodes"][0]["existed_at_start"] is True
    assert b["allocatable"] == {"cpu": "4", "memory": "16Gi", "pods": "110"}
    assert b["labels"]["kubernetes.io/hostname"] == "b"
    assert event["window"] == {"opened_at": "2026-12-03T06:00:00.000000Z", "closed_at": "2026-12-03T06:00:30.200000Z",
                               "seconds": 30.2, "debounce_seconds": 30.0}
    assert event["label_selector"] == "pool=general" and event["pending_nodeclaims"] == pending
    assert json.loads(json.dumps(event)) == event, "plain JSON, as rulebooks and AWX take it"
    assert "pending_nodeclaims" not in nodes_event(records, opened, opened, settings), "no NodeClaim API"


def test_nodeclaims_where_there_is_no_karpenter_are_asked_again_after_ten_minutes_and_a_failure_is_not_fatal(
        monkeypatch):
    answers = [None, None, "fail", [{"metadata": {"name": "c1"}, "status": {}}]]
    calls = []

    def read(client, label_selector=None, _request_timeout=None):
        calls.append((label_selector, _request_timeout))
        answer = answers[len(calls) - 1]
        if answer == "fail":
            raise RuntimeError("connection reset")
        return answer

    monkeypatch.setattr(source, "served_node_claims", read)
    clock = [0.0]
    settings = settings_from_args({"label_selector": "pool=a"}, {})
    new_nodes = source.NewNodesSource(settings, client=None, clock=lambda: clock[0])
    results = []
    for now in (0.0, 100.0, 700.0, 1400.0, 1401.0):
        clock[0] = now
        results.append(new_nodes._nodeclaims())  # pylint: disable=protected-access
    assert results == [None, None, None, None, [{"metadata": {"name": "c1"}, "status": {}}]]
    assert calls == [("pool=a", 15)] * 4, "not asked at 100 s: the API was absent at 0 s"


class FakeNodesApi:
    """list_node answers from a script: an exception to raise, or the pages (items, resourceVersion) of one list,
    as the API's JSON."""

    def __init__(self, lists):
        self.lists = list(lists)
        self.pages = []
        self.selectors = []

    def list_node(self, limit, _continue, _preload_content, label_selector=None, allow_watch_bookmarks=None):
        assert not _preload_content and allow_watch_bookmarks
        self.selectors.append(label_selector)
        if _continue is None:
            answer = self.lists.pop(0)
            if isinstance(answer, Exception):
                raise answer
            self.pages = list(answer)
        items, version = self.pages.pop(0)
        metadata = {"resourceVersion": version, "continue": "next" if self.pages else None}
        return SimpleNamespace(data=json.dumps({"items": items, "metadata": metadata}).encode())


class FakeClient:
    """The nodes of a FakeNodesApi, listed page by page as the collection's client lists them."""

    list_with_version = Client.list_with_version

    def __init__(self, api):
        self.core = api


def test_following_nodes_survives_failures_relists_after_a_lost_watch_and_resumes_from_the_last_version(
        monkeypatch):
    api = FakeNodesApi([RuntimeError("connection refused"),
                        [([node("a")], "10"), ([node("b")], "10")],  # two pages of one snapshot, at version 10
                        [([node("a"), node("b"), node("c")], "20")]])
    client = FakeClient(api)
    stop = threading.Event()
    versions = []

    def watch(list_method, version, timeout, **kwargs):
        versions.append((version, kwargs.get("label_selector")))
        if len(versions) == 1:
            raise watch_module.WatchExpired()
        if len(versions) == 2:
            yield "ADDED", node("d")
            yield "BOOKMARK", {"metadata": {"resourceVersion": "25"}}
            return
        stop.set()
        yield "MODIFIED", node("d")

    monkeypatch.setattr(watch_module, "watch", watch)
    delivered = []
    source.follow_nodes(client, "pool=a", delivered.append, stop, backoff=Backoff(lambda: 0.5, first=0.001, cap=0.01))
    assert [(kind, [one["metadata"]["name"] for one in payload] if kind == "listed" else payload["metadata"]["name"])
            for kind, payload in delivered] == [("listed", ["a", "b"]), ("listed", ["a", "b", "c"]), ("ADDED", "d"),
                                                ("MODIFIED", "d")]
    assert versions == [("10", "pool=a"), ("20", "pool=a"), ("25", "pool=a")], \
        "watched from the list's version, from a new list's after the 410, then from the bookmark's"
    assert api.selectors == ["pool=a"] * 4


class CountingBackoff(Backoff):
    """A Backoff of a millisecond that counts its delays."""

    def __init__(self):
        super().__init__(lambda: 0.5, first=0.001, cap=0.001)
        self.delays = 0

    def next(self):
        self.delays += 1
        return super().next()


def test_a_watch_that_ends_at_once_with_nothing_is_opened_again_only_after_a_backoff(monkeypatch):
    api = FakeNodesApi([[([node("a")], "10")]])
    stop = threading.Event()
    opened = []

    def watch(_list_method, version, _timeout, **_kwargs):
        opened.append(version)
        if len(opened) == 5:
            stop.set()
        return iter(())

    monkeypatch.setattr(watch_module, "watch", watch)
    backoff = CountingBackoff()
    source.follow_nodes(FakeClient(api), None, [].append, stop, backoff=backoff)
    assert opened == ["10"] * 5 and backoff.delays == 5, "one backoff after each, not a busy loop"


# --- the event loop, fed by a scripted watch instead of a cluster --------------------------------------------

class ScriptedWatch:
    """Stands in for follow_nodes: delivers (delay, item) pairs from its thread, then waits for the stop."""

    def __init__(self, script):
        self.script = script
        self.stopped = threading.Event()

    def __call__(self, client, label_selector, deliver, stop):
        for delay, item in self.script:
            if stop.wait(delay):
                break
            deliver(item)
        stop.wait()
        self.stopped.set()


def run_source(monkeypatch, script, seconds, debounce, **args):
    """Run the source's event loop on ``script`` for ``seconds``; the events it put, and whether its watch thread
    was told to stop."""
    scripted = ScriptedWatch(script)
    monkeypatch.setattr(source, "follow_nodes", scripted)
    monkeypatch.setattr(source, "served_node_claims", lambda client, **kwargs: None)
    settings = settings_from_args(dict({"debounce_seconds": debounce}, **args), {})
    queue = asyncio.Queue()

    async def scenario():
        task = asyncio.ensure_future(source.NewNodesSource(settings, client=None).run(queue))
        await asyncio.sleep(seconds)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(scenario())
    events = []
    while not queue.empty():
        events.append(queue.get_nowait())
    return events, scripted.stopped.wait(2)


def test_the_loop_puts_one_event_for_ten_nodes_joining_within_the_window_ignoring_startup_and_cordoned(
        monkeypatch):
    script = [(0, ("listed", [node("old-1"), node("old-2")]))]
    script += [(0.02, ("ADDED", node("new-%d" % index, taints=[NOT_READY_TAINT]))) for index in range(10)]
    script += [(0.01, ("ADDED", node("cordoned", unschedulable=True)))]
    script += [(0.02, ("MODIFIED", node("new-%d" % index))) for index in range(10)]
    events, stopped = run_source(monkeypatch, script, seconds=1.5, debounce=0.5)
    assert [event["new_nodes"] for event in events] == [["new-%d" % index for index in range(10)]]
    assert events[0]["window"]["seconds"] >= 0.5
    assert stopped, "cancelling the source stops its watch thread"


def test_the_loop_puts_two_events_for_two_bursts_further_apart_than_the_window(monkeypatch):
    script = [(0, ("listed", [])), (0.05, ("ADDED", node("a"))), (0.05, ("ADDED", node("b"))),
              (0.6, ("ADDED", node("c"))), (0.05, ("DELETED", node("c"))), (0.05, ("ADDED", node("d")))]
    events, _stopped = run_source(monkeypatch, script, seconds=1.6, debounce=0.3)
    assert [event["new_nodes"] for event in events] == [["a", "b"], ["d"]], "c was deleted within its window"


GPU_TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}


def test_a_label_and_a_taint_changed_give_one_change_event_and_life_cycle_changes_none():
    tracker = ChangeTracker(("labels", "taints"))
    assert tracker.listed([node("a", labels={"tier": "web"}), node("b")]) == [], "nothing changed at the start"
    cordoned = node("b", unschedulable=True, taints=[{"key": "node.kubernetes.io/unschedulable",
                                                      "effect": "NoSchedule"}],
                    labels={"kubeops.io/rotating": "true"})
    assert tracker.see(cordoned) is None, "a cordon and this collection's own label are no user's change"
    before = tracker.see(node("a", labels={"tier": "batch", "disk": "ssd"}))
    assert before == ({"kubernetes.io/hostname": "a", "tier": "web"}, frozenset())
    tracker.see(node("b", taints=[GPU_TAINT]))
    records = tracker.records({"uid-a": before, "uid-b": node_shape(node("b"))})
    assert records == [
        {"name": "a", "uid": "uid-a", "labels": {"added": {"disk": "ssd"}, "removed": {},
                                                 "changed": {"tier": ["web", "batch"]}}},
        {"name": "b", "uid": "uid-b", "taints": {"added": ["dedicated=gpu:NoSchedule"], "removed": []}}]


def test_only_the_kinds_asked_for_count_and_a_change_undone_within_the_window_sends_nothing():
    tracker = ChangeTracker(("taints",))
    tracker.listed([node("a")])
    assert tracker.see(node("a", labels={"tier": "batch"})) is None, "labels were not asked for"
    before = tracker.see(node("a", taints=[GPU_TAINT]))
    tracker.see(node("a"))
    assert tracker.records({"uid-a": before}) == []


def test_the_loop_puts_a_change_event_seconds_after_a_taint_and_no_new_nodes_event_for_it(monkeypatch):
    script = [(0, ("listed", [node("a"), node("b")])), (0.05, ("MODIFIED", node("a", taints=[GPU_TAINT]))),
              (0.05, ("MODIFIED", node("b", labels={"tier": "batch"})))]
    events, _stopped = run_source(monkeypatch, script, seconds=1.0, debounce=0.3, changes="labels,taints",
                                  changes_debounce_seconds=0.3)
    assert [[record["name"] for record in event["node_changes"]] for event in events] == [["a", "b"]]
    assert events[0]["count"] == 2 and events[0]["window"]["debounce_seconds"] == 0.3


# --- no kubernetes needed ------------------------------------------------------------------------------------

BLOCKED_IMPORT = """
import importlib, json, sys


class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("kubernetes", "urllib3", "ansible"):
            raise ImportError("%s is not importable here" % name)


sys.meta_path.insert(0, Block())
sys.path.insert(0, sys.argv[1])
source = importlib.import_module(sys.argv[2])
tracker = importlib.import_module(sys.argv[3]).NodeTracker()
tracker.listed([])
node = {"metadata": {"name": "n1", "uid": "u1"}, "spec": {},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
print(json.dumps({"counted": tracker.observe("ADDED", node).name, "import_error": str(source.KUBERNETES_IMPORT_ERROR)}))
"""


def test_the_source_and_its_decisions_import_and_work_without_kubernetes_or_ansible():
    completed = subprocess.run([sys.executable, "-c", BLOCKED_IMPORT, COLLECTIONS_ROOT, PLUGIN, NodeTracker.__module__],
                               capture_output=True, text=True, check=False, cwd=REPO)
    assert completed.returncode == 0, completed.stderr
    report = json.loads(completed.stdout)
    assert report["counted"] == "n1" and "not importable" in report["import_error"]


def test_without_kubernetes_main_fails_at_once_saying_so():
    script = BLOCKED_IMPORT.split("tracker = ", maxsplit=1)[0] + (
        "import asyncio\n"
        "try:\n"
        "    asyncio.run(source.main(asyncio.Queue(), {'debounce_seconds': 1}))\n"
        "except ImportError as exc:\n"
        "    print(exc)\n")
    completed = subprocess.run([sys.executable, "-c", script, COLLECTIONS_ROOT, PLUGIN],
                               capture_output=True, text=True, check=False, cwd=REPO, timeout=60)
    assert "needs the kubernetes Python library" in completed.stdout, completed.stderr


def test_run_by_path_as_ansible_rulebook_does_it_finds_the_collection_it_is_installed_in(tmp_path):
    """ansible-rulebook runs the file with runpy, outside Ansible's collection loader."""
    installed = tmp_path / "ansible_collections" / "kubeops" / "rotation"
    installed.parent.mkdir(parents=True)
    os.symlink(REPO, str(installed))
    path = str(installed / "extensions" / "eda" / "plugins" / "event_source" / "new_nodes.py")
    script = "import runpy, sys; module = runpy.run_path(sys.argv[1]); print(module['main'].__name__, " \
             "module['new_client'].__module__)"
    completed = subprocess.run([sys.executable, "-c", script, path], capture_output=True, text=True, check=False,
                               cwd=str(tmp_path), env=dict(os.environ, PYTHONPATH=""))
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.split() == ["main", "ansible_collections.kubeops.rotation.plugins.module_utils.api.client"]
    assert os.path.exists(PLUGIN_FILE)
