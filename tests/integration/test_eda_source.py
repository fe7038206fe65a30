"""The Event-Driven Ansible source kubeops.rotation.new_nodes and the rulebook rebalance_on_new_nodes on the real
control plane.

The source is loaded from the installed collection the way ansible-rulebook loads it (runpy on its path, outside
Ansible's collection loader) and its ``main`` runs with a real asyncio.Queue; the rulebook runs in ansible-rulebook
itself (``make rulebook-venv``), which runs the collection's rebalance playbook when nodes join.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import os
import runpy
import signal
import subprocess
import sys
import threading
import time

import pytest
import yaml
from ansible_run import INSTALLED_COLLECTIONS
from conftest import REPO, TEST_LABEL, wait_until
from fakenodes import fake_node
from kube import deployment, running_pods, unless_missing

import cluster as local_cluster
from flaky_proxy import FlakyProxy, kubeconfig_through

SOURCE_FILE = os.path.join(INSTALLED_COLLECTIONS, "ansible_collections", "kubeops", "rotation", "extensions", "eda",
                           "plugins", "event_source", "new_nodes.py")
RULEBOOK_BIN = os.path.join(REPO, ".cache", "venv-rulebook", "bin")
DEBOUNCE = 5.0
# From the window's end to the event on the queue: the NodeClaim read and the loop's turn, on a busy machine.
SLACK = 5.0
# A watch whose connection went silent ends within this (api.watch: a window of 30 s, read timeout 5 s longer).
SILENT_WATCH_SECONDS = 35


class LogWatcher(logging.Handler):
    """Sets ``watching`` once the source logs that it listed the nodes and watches them."""

    def __init__(self):
        super().__init__(logging.INFO)
        self.watching = threading.Event()
        self.lines = []

    def emit(self, record):
        message = record.getMessage()
        self.lines.append(message)
        if message.startswith("Watching nodes"):
            self.watching.set()


@pytest.fixture
def source_log():
    logger = logging.getLogger("kubeops.rotation.new_nodes")
    handler = LogWatcher()
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(level)


@pytest.fixture
def extra_nodes(cluster):
    """create(name, labels, unschedulable) makes a kwok node at once, without waiting; deleted after the test."""
    created = []

    def create(name, labels, unschedulable=False):
        manifest = fake_node(name, labels)
        manifest["spec"]["unschedulable"] = unschedulable
        cluster.core.create_node(manifest)
        created.append(name)
        return name

    yield create
    for name in created:
        unless_missing(cluster.core.delete_node, name)


@contextlib.asynccontextmanager
async def running_source(main, args, source_log):
    """The source's ``main`` running on a queue, once it listed the nodes and watches them: (queue, its task);
    cancelled after."""
    queue = asyncio.Queue()
    task = asyncio.ensure_future(main(queue, args))
    try:
        while not source_log.watching.is_set():
            assert not task.done(), task.exception()
            await asyncio.sleep(0.05)
        yield queue, task
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def schedulable_since(cluster, name):
    """When the node was Ready (its condition's lastTransitionTime), once it is Ready without the not-ready taint."""
    node = cluster.core.read_node(name)
    ready = [c for c in node.status.conditions or [] if c.type == "Ready" and c.status == "True"]
    if ready and not node.spec.unschedulable and not any(
            taint.effect in ("NoSchedule", "NoExecute") for taint in node.spec.taints or []):
        return ready[0].last_transition_time
    return None


def test_ten_nodes_joining_give_one_event_naming_them_and_neither_earlier_nor_cordoned_nodes(
        cluster, test_id, make_nodes, extra_nodes, source_log):
    selector = "%s=%s" % (TEST_LABEL, test_id)
    earlier = make_nodes(2, prefix="earlier")
    main = runpy.run_path(SOURCE_FILE)["main"]
    args = {"kubeconfig": cluster.kubeconfig, "label_selector": selector, "debounce_seconds": DEBOUNCE}
    new = ["%s-new-%d" % (test_id, index) for index in range(10)]
    cordoned = "%s-cordoned" % test_id
    timings = {}

    async def scenario():
        async with running_source(main, args, source_log) as (queue, _task):
            timings["start"] = time.monotonic()
            await asyncio.to_thread(lambda: [extra_nodes(name, {TEST_LABEL: test_id}) for name in new])
            await asyncio.to_thread(extra_nodes, cordoned, {TEST_LABEL: test_id}, True)
            timings["created"] = time.monotonic()
            first = await asyncio.wait_for(queue.get(), DEBOUNCE + 60)
            timings["event"] = time.monotonic()
            timings["ready_since"] = await asyncio.to_thread(
                lambda: {name: schedulable_since(cluster, name) for name in new})
            # No second event for the same nodes, nor for the cordoned one, within another window.
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(queue.get(), DEBOUNCE + 2)
            # Uncordoned, it is a node that joined: the next window, alone.
            await asyncio.to_thread(cluster.core.patch_node, cordoned, {"spec": {"unschedulable": False}})
            timings["uncordoned"] = time.monotonic()
            second = await asyncio.wait_for(queue.get(), DEBOUNCE + 60)
            timings["second"] = time.monotonic()
            return first, second

    first, second = asyncio.run(scenario())

    assert first["new_nodes"] == sorted(new) and first["count"] == 10, first["new_nodes"]
    assert not set(earlier) & set(first["new_nodes"]), "nodes Ready before the source started do not count"
    assert cordoned not in first["new_nodes"], "a cordoned node does not count"
    assert first["label_selector"] == selector
    assert all(node["existed_at_start"] is False and node["labels"][TEST_LABEL] == test_id for node in first["nodes"])
    assert "pending_nodeclaims" not in first, "no Karpenter NodeClaim API on this cluster"
    assert DEBOUNCE <= first["window"]["seconds"] < DEBOUNCE + SLACK
    assert all(timings["ready_since"].values()), "every node of the event is Ready and schedulable on the cluster"
    assert second["new_nodes"] == [cordoned] and second["nodes"][0]["existed_at_start"] is False

    # The measure: from a node being Ready and schedulable (the source's own clock and the Ready condition's) to
    # its event on the queue.
    closed = parse(first["window"]["closed_at"])
    seen = sorted(parse(node["available_at"]) for node in first["nodes"])
    ready = sorted(timings["ready_since"].values())
    report = {
        "created -> event (s)": round(timings["event"] - timings["created"], 2),
        "first node counted -> event (s)": round((closed - seen[0]).total_seconds(), 2),
        "last node counted -> event (s)": round((closed - seen[-1]).total_seconds(), 2),
        "last Ready condition -> event (s, whole seconds)": round((closed - ready[-1]).total_seconds(), 2),
        "uncordoned -> event (s)": round(timings["second"] - timings["uncordoned"], 2),
        "spread of the ten counted (s)": round((seen[-1] - seen[0]).total_seconds(), 2),
    }
    print("new_nodes timings with debounce_seconds=%s: %s" % (DEBOUNCE, report))
    assert timings["event"] - timings["created"] < DEBOUNCE + SLACK + 10
    assert (closed - seen[-1]).total_seconds() <= DEBOUNCE + SLACK


def test_a_taint_and_a_label_changed_give_a_change_event_within_seconds(cluster, test_id, make_nodes, source_log):
    selector = "%s=%s" % (TEST_LABEL, test_id)
    tainted, relabelled = make_nodes(2, labels={"tier": "web"}, prefix="changed")
    main = runpy.run_path(SOURCE_FILE)["main"]
    args = {"kubeconfig": cluster.kubeconfig, "label_selector": selector, "changes": ["labels", "taints"],
            "changes_debounce_seconds": 1}

    async def scenario():
        async with running_source(main, args, source_log) as (queue, _task):
            started = time.monotonic()
            await asyncio.to_thread(cluster.core.patch_node, tainted, {"spec": {"taints": [
                {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}})
            await asyncio.to_thread(cluster.core.patch_node, relabelled, {"metadata": {"labels": {"tier": "batch"}}})
            event = await asyncio.wait_for(queue.get(), 1 + SLACK)
            return event, time.monotonic() - started

    event, seconds = asyncio.run(scenario())
    print("a change to its event: %.2f s" % seconds)
    assert "new_nodes" not in event
    assert [(record["name"], record.get("taints"), record.get("labels", {}).get("changed"))
            for record in event["node_changes"]] == [
        (tainted, {"added": ["dedicated=gpu:NoSchedule"], "removed": []}, None),
        (relabelled, None, {"tier": ["web", "batch"]})]


def test_the_source_rides_through_an_api_server_outage_and_counts_nodes_that_join_after_it(
        cluster, test_id, extra_nodes, source_log):
    if not cluster.state_dir:
        pytest.skip("stopping the API server needs the local control plane")
    main = runpy.run_path(SOURCE_FILE)["main"]
    args = {"kubeconfig": cluster.kubeconfig, "label_selector": "%s=%s" % (TEST_LABEL, test_id),
            "debounce_seconds": DEBOUNCE}
    new = ["%s-after-%d" % (test_id, index) for index in range(3)]

    def api_answers():
        try:
            return cluster.core.list_node(limit=1) is not None
        except Exception:  # pylint: disable=broad-except  # still away
            return False

    async def scenario():
        async with running_source(main, args, source_log) as (queue, task):
            await asyncio.to_thread(local_cluster.outage, cluster.state_dir, "kube-apiserver", 8)
            await asyncio.to_thread(wait_until, api_answers, 60, "the API server to answer again")
            await asyncio.to_thread(lambda: [extra_nodes(name, {TEST_LABEL: test_id}) for name in new])
            event = await asyncio.wait_for(queue.get(), DEBOUNCE + 90)
            assert not task.done(), "the source is still running"
            return event

    event = asyncio.run(scenario())
    assert event["new_nodes"] == sorted(new)
    assert any("Watching nodes failed" in line or "listing them again" in line for line in source_log.lines), \
        source_log.lines


def test_the_source_lists_again_after_its_watch_went_silent_and_counts_nodes_that_join_after_it(
        cluster, test_id, extra_nodes, source_log, tmp_path):
    main = runpy.run_path(SOURCE_FILE)["main"]
    new = ["%s-late-%d" % (test_id, index) for index in range(2)]
    server = cluster.core.api_client.configuration.host.rsplit(":", 1)

    async def scenario(proxy):
        args = {"kubeconfig": kubeconfig_through(proxy, cluster.kubeconfig, tmp_path / "through-proxy"),
                "label_selector": "%s=%s" % (TEST_LABEL, test_id), "debounce_seconds": DEBOUNCE}
        async with running_source(main, args, source_log) as (queue, task):
            # A NAT that forgets the watch's connection: nothing closes it, nothing comes through it any more.
            proxy.cut()
            await asyncio.sleep(1)
            proxy.restore()
            started = time.monotonic()
            await asyncio.to_thread(lambda: [extra_nodes(name, {TEST_LABEL: test_id}) for name in new])
            event = await asyncio.wait_for(
                queue.get(), SILENT_WATCH_SECONDS + DEBOUNCE + SLACK + 20)
            assert not task.done(), "the source is still running"
            return event, time.monotonic() - started

    with FlakyProxy(server[0].split("//")[1], int(server[1])) as proxy:
        event, seconds = asyncio.run(scenario(proxy))
    print("the event came %.0f s after the nodes joined; proxy: %s" % (seconds, proxy.stats))
    assert event["new_nodes"] == sorted(new)
    assert any("listing them again" in line for line in source_log.lines), source_log.lines


def parse(moment):
    """An aware datetime from the source's timestamps (UTC, microseconds)."""
    return datetime.datetime.strptime(moment, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)


# --- the rulebook, in ansible-rulebook -----------------------------------------------------------------------

def pods_per_node(cluster, namespace, nodes):
    counts = {name: 0 for name in nodes}
    for pod in cluster.pods(namespace, "app=web"):
        if pod.metadata.deletion_timestamp is None and pod.spec.node_name in counts:
            counts[pod.spec.node_name] += 1
    return counts


def rebalance_events(cluster, namespace):
    return [event.message for event in cluster.core.list_namespaced_event(namespace).items
            if event.reason == "Evicted" and "rebalance after nodes joined" in (event.message or "")]


@pytest.fixture
def rulebook(cluster, tmp_path):
    """start(inventory vars, rulebook vars) runs ansible-rulebook on the collection's rulebook in the background;
    returns the path of its output. Stopped (SIGINT, then SIGKILL of its process group) after the test."""
    if not os.path.exists(os.path.join(RULEBOOK_BIN, "ansible-rulebook")):
        pytest.skip("no ansible-rulebook: `make rulebook-venv` installs it into .cache/venv-rulebook")
    started = []

    def start(inventory_vars, rulebook_vars):
        inventory = tmp_path / "inventory.yml"
        inventory.write_text(yaml.safe_dump({"all": {"hosts": {"localhost": dict(
            inventory_vars, ansible_connection="local", ansible_python_interpreter=sys.executable)}}}))
        variables = tmp_path / "vars.yml"
        variables.write_text(yaml.safe_dump(rulebook_vars))
        output = tmp_path / "ansible-rulebook.log"
        env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=INSTALLED_COLLECTIONS, ANSIBLE_NOCOLOR="1",
                   ANSIBLE_LOCALHOST_WARNING="0", K8S_AUTH_KUBECONFIG=cluster.kubeconfig,
                   PATH=RULEBOOK_BIN + os.pathsep + os.environ.get("PATH", ""))
        env.pop("KUBECONFIG", None)
        with open(output, "w") as handle:
            started.append(subprocess.Popen(
                [os.path.join(RULEBOOK_BIN, "ansible-rulebook"), "--rulebook",
                 "kubeops.rotation.rebalance_on_new_nodes", "-i", str(inventory), "-e", str(variables), "-v"],
                stdout=handle, stderr=subprocess.STDOUT, cwd=str(tmp_path), env=env, start_new_session=True))
        return output

    yield start
    for process in started:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGINT)
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(10)


def test_the_rulebook_runs_the_rebalance_playbook_when_nodes_join(cluster, namespace, test_id, make_nodes, rulebook):
    selector = "%s=%s" % (TEST_LABEL, test_id)
    old = make_nodes(2, prefix="old")
    cluster.apps.create_namespaced_deployment(namespace, deployment("web", 8, {TEST_LABEL: test_id}))
    wait_until(lambda: running_pods(cluster, namespace, "app=web", 8), 90, "8 web pods on the two old nodes")
    output = rulebook({"rebalance_namespaces": [namespace], "rebalance_max_unavailable_per_owner": "100%",
                       "rebalance_timeout": 120},
                      {"new_nodes_label_selector": selector, "new_nodes_debounce_seconds": 3})

    def log():
        return output.read_text()

    wait_until(lambda: "Watching nodes" in log(), 180, "ansible-rulebook to start the source:\n%s" % log()[-3000:])
    new = make_nodes(2, prefix="new")
    joined = time.monotonic()
    try:
        wait_until(lambda: all(pods_per_node(cluster, namespace, new).values())
                   and rebalance_events(cluster, namespace), 240, "the rebalance playbook")
    except pytest.fail.Exception:
        # ansible-rulebook's output as it is now, not as it was when the wait began
        pytest.fail("timed out after 240 s waiting for the rebalance playbook to move pods onto %s:\n%s" % (
            new, log()[-6000:]))
    elapsed = time.monotonic() - joined
    wait_until(lambda: running_pods(cluster, namespace, "app=web", 8), 120, "8 web pods Ready again")

    counts = pods_per_node(cluster, namespace, old + new)
    assert max(counts.values()) - min(counts.values()) <= 1, counts
    messages = rebalance_events(cluster, namespace)
    assert all("rebalance after nodes joined: %s" % ", ".join(sorted(new)) in message for message in messages), \
        messages
    wait_until(lambda: "PLAY RECAP" in log(), 60, "the playbook's end in ansible-rulebook's output")
    assert "kubeops.rotation.rebalance" in log() and "failed=0" in log(), log()[-4000:]
    print("rulebook: nodes Ready -> pods moved by the rebalance playbook in %.1f s (debounce 3 s)" % elapsed)
