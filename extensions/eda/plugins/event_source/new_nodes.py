# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""kubeops.rotation.new_nodes: an Event-Driven Ansible source of nodes that joined the cluster.

Watches the cluster's Nodes and puts one event on the queue for the nodes that
became Ready and schedulable within ``debounce_seconds`` of the first of them,
so that a rulebook can run one rebalance pass within seconds of new capacity
instead of a CronJob every five minutes.

Arguments (all optional):

    kubeconfig, context, host, api_key, ca_cert, client_cert, client_key,
    validate_certs, proxy, no_proxy, impersonate_user, impersonate_groups:
        the connection options of the collection's modules, with the same
        names, aliases and K8S_AUTH_* environment variable fallbacks.
    label_selector:     only the nodes it picks (for example one node pool).
    debounce_seconds:   how long after the first node more may join the same
                        event; default 30.
    include_existing:   count the nodes already Ready and schedulable when the
                        source starts (in its first event); default false.
    tolerated_taints:   taint keys that do not make a node unschedulable here
                        (a dedicated pool's taint); default none.
    changes:            also send an event when the labels or the taints of
                        nodes change ([labels], [taints] or both); default
                        none.
    changes_debounce_seconds: how long after the first change more may join
                        the same event; default 5.

Example rulebook:

    - name: Rebalance when nodes join
      hosts: all
      sources:
        - kubeops.rotation.new_nodes:
            debounce_seconds: 30
      rules:
        - name: Even out pods onto the new nodes
          condition: event.new_nodes is defined
          action:
            run_playbook:
              name: kubeops.rotation.rebalance

With ``changes``, a rulebook can run the node_taints and node_affinity
rebalance passes seconds after a taint or a label changes (see EXAMPLES).

See DOCUMENTATION below for the event's fields.
"""

from __future__ import annotations

import asyncio
import datetime
import importlib
import json
import logging
import os
import random
import sys
import threading
import time

DOCUMENTATION = r"""
---
short_description: Events for nodes that became Ready and schedulable, debounced
description:
  - Lists the nodes, then watches them. A node counts when it is Ready, not
    cordoned, not being deleted, and has no C(NoSchedule) or C(NoExecute)
    taint (C(node.kubernetes.io/not-ready), C(node.cloudprovider.kubernetes.io/uninitialized),
    C(karpenter.sh/unregistered), a CNI's or a CSI driver's start-up taint,
    ...) other than those in O(tolerated_taints).
  - Each node (by uid) counts once, when it first is so. Nodes that already
    are when the source starts do not count unless O(include_existing); a node
    that was not Ready or cordoned then counts when it becomes so.
  - The first node that counts opens a window of O(debounce_seconds); every
    node that counts before it closes goes into the same, one event. A node
    deleted meanwhile is left out. So an event comes at most
    O(debounce_seconds) after its first node became schedulable.
  - Where the Karpenter C(karpenter.sh/v1) NodeClaim API exists, the
    NodeClaims are read when an event goes out, to name each node's claim and
    the claims still on their way (C(pending_nodeclaims)); nothing else depends
    on them.
  - An expired watch (HTTP 410) or a broken stream is followed by a new list,
    which also counts the nodes that joined meanwhile; any other failure
    (the API server away, a refused request) is logged and retried with
    backoff from 0.5 s to 30 s. The source never stops by itself.
options:
  kubeconfig:
    description:
      - Path to a kubeconfig file, or the kubeconfig itself as a dictionary.
        Without it and without O(host), E(KUBECONFIG) or C(~/.kube/config),
        else the in-cluster service account.
      - Falls back to E(K8S_AUTH_KUBECONFIG).
    type: raw
  context:
    description: The kubeconfig context to use. Falls back to E(K8S_AUTH_CONTEXT).
    type: str
  host:
    description: URL of the API server, over the kubeconfig's. Falls back to E(K8S_AUTH_HOST).
    type: str
  api_key:
    description: Bearer token. Falls back to E(K8S_AUTH_API_KEY).
    type: str
  ca_cert:
    description: CA bundle of the API server. Falls back to E(K8S_AUTH_CA_CERT), then E(K8S_AUTH_SSL_CA_CERT).
    type: path
    aliases: [ssl_ca_cert]
  client_cert:
    description: Client certificate. Falls back to E(K8S_AUTH_CLIENT_CERT), then E(K8S_AUTH_CERT_FILE).
    type: path
    aliases: [cert_file]
  client_key:
    description: Key of O(client_cert). Falls back to E(K8S_AUTH_CLIENT_KEY), then E(K8S_AUTH_KEY_FILE).
    type: path
    aliases: [key_file]
  validate_certs:
    description: >-
      Whether to verify the API server's certificate. Falls back to E(K8S_AUTH_VALIDATE_CERTS), then
      E(K8S_AUTH_VERIFY_SSL).
    type: bool
    aliases: [verify_ssl]
  proxy:
    description: HTTP proxy to the API server. Falls back to E(K8S_AUTH_PROXY).
    type: str
  no_proxy:
    description: >-
      Comma-separated hosts, domain suffixes, IP addresses and CIDR ranges reached without O(proxy). Falls back to
      E(K8S_AUTH_NO_PROXY).
    type: str
  impersonate_user:
    description: User to act as. Falls back to E(K8S_AUTH_IMPERSONATE_USER).
    type: str
  impersonate_groups:
    description: >-
      Groups to act as; needs O(impersonate_user). Falls back to E(K8S_AUTH_IMPERSONATE_GROUPS), comma-separated.
    type: list
    elements: str
  label_selector:
    description:
      - Only the nodes this label selector picks, for example
        V(karpenter.sh/nodepool=general). Every node when empty.
      - Also selects the pending NodeClaims reported.
    type: str
  debounce_seconds:
    description: How long after the first node of an event others may join it. 0 sends each burst at once.
    type: float
    default: 30
  include_existing:
    description: Count the nodes already Ready and schedulable at the start, in the first event.
    type: bool
    default: false
  tolerated_taints:
    description:
      - Keys of C(NoSchedule) and C(NoExecute) taints that do not keep a node
        from counting, for a pool whose pods tolerate them (V(nvidia.com/gpu), V(dedicated)).
    type: list
    elements: str
    default: []
  changes:
    description:
      - Also send an event (with O(changes_debounce_seconds) of its own) when
        the labels (V(labels)) or the C(NoSchedule) and C(NoExecute) taints
        (V(taints)) of nodes change, so that a rulebook can move the pods a
        new taint or a changed label no longer lets run there.
      - The labels and taints of the node's life cycle and of this collection
        do not count (C(node.kubernetes.io/), C(node.cloudprovider.kubernetes.io/),
        C(karpenter.sh/), C(kubeops.io/)) - a cordon, a node becoming Ready or a
        rebalance pass's own steering taint sends nothing.
    type: list
    elements: str
    choices: [labels, taints]
    default: []
  changes_debounce_seconds:
    description: How long after the first change of an event others may join it.
    type: float
    default: 5
event:
  new_nodes:
    description: Names of the nodes of the event, sorted.
    type: list
  count:
    description: How many.
    type: int
  zones:
    description: The names per C(topology.kubernetes.io/zone) (V("") for a node without one).
    type: dict
  nodes:
    description:
      - Per node C(name), C(uid), C(zone), C(region), C(instance_type),
        C(capacity_type), C(nodepool) (Karpenter), C(nodeclaim) (when read),
        C(created), C(ready_since) (the Ready condition's lastTransitionTime),
        C(available_at) (when the source saw it count), C(existed_at_start),
        C(kubelet_version), C(allocatable), C(taints) and C(labels).
    type: list
  window:
    description: C(opened_at), C(closed_at) (UTC), C(seconds) between them and C(debounce_seconds).
    type: dict
  label_selector:
    description: The O(label_selector), or null.
    type: str
  pending_nodeclaims:
    description:
      - NodeClaims not being deleted whose node is not yet initialized (C(name),
        C(nodepool), C(node)); more capacity on its way. Only where the NodeClaim API exists.
    type: list
  node_changes:
    description:
      - In the events of O(changes) (instead of C(new_nodes)), per node whose labels or taints changed within the
        window, sorted by name, C(name), C(uid) and what changed since the window opened; C(labels) with
        C(added) and C(removed) (key -> value) and C(changed) (key -> [before, after]), C(taints) with C(added) and
        C(removed) (C(key=value:effect)). Events of O(changes) also have C(count), C(window) and C(label_selector).
    type: list
"""

EXAMPLES = r"""
- name: Rebalance within seconds of new nodes, not every five minutes
  hosts: all
  sources:
    - name: Nodes of the general pool that became Ready and schedulable
      kubeops.rotation.new_nodes:
        label_selector: karpenter.sh/nodepool=general
        debounce_seconds: 30
  rules:
    - name: Even out pods onto them
      condition: event.new_nodes is defined
      action:
        run_playbook:
          name: kubeops.rotation.rebalance
          extra_vars:
            rebalance_run_id: rebalance-on-new-nodes
            rebalance_reason: "nodes joined: {{ event.new_nodes | join(', ') }}"

- name: Move the pods a new taint or a changed label no longer lets run where they are
  hosts: all
  sources:
    - kubeops.rotation.new_nodes:
        changes: [labels, taints]
  rules:
    - name: Fix what the change broke
      condition: event.node_changes is defined
      action:
        run_playbook:
          name: kubeops.rotation.rebalance
          extra_vars:
            rebalance_strategies: [node_taints, node_affinity]
            rebalance_run_id: rebalance-on-node-changes

- name: Print the events (connection from K8S_AUTH_KUBECONFIG, or a token)
  hosts: all
  sources:
    - kubeops.rotation.new_nodes:
        host: https://10.0.0.1:6443
        api_key: "{{ cluster_token }}"
        ca_cert: /etc/kubeops/ca.crt
        debounce_seconds: 10
        include_existing: true
  rules:
    - name: Print
      condition: event.new_nodes is defined
      action:
        print_event:
          pretty: true
"""

LOGGER = logging.getLogger("kubeops.rotation.new_nodes")

# The nodes are watched this long at a time, each watch within api.watch's window (a silent one ends after it).
WATCH_SECONDS = 120
NODECLAIM_RECHECK_SECONDS = 600


def _collection_on_path():
    """Make ``ansible_collections.kubeops.rotation`` importable, for its client and its decisions (plan/node_events.py).

    ansible-rulebook runs this file by its path (runpy), outside Ansible's collection loader; installed, the file
    is at <root>/ansible_collections/kubeops/rotation/extensions/eda/plugins/event_source/, so <root> goes on
    sys.path when the collection is not importable already.
    """
    try:
        importlib.import_module("ansible_collections.kubeops.rotation.plugins.module_utils.model.nodes")
        return
    except ImportError:
        pass
    parts = os.path.abspath(__file__).split(os.sep)
    if len(parts) > 8 and parts[-8:-5] == ["ansible_collections", "kubeops", "rotation"]:
        sys.path.append(os.sep.join(parts[:-8]) or os.sep)


_collection_on_path()
try:
    from ansible_collections.kubeops.rotation.plugins.module_utils.api.client import (
        KUBERNETES_IMPORT_ERROR,
        new_client,
    )
    from ansible_collections.kubeops.rotation.plugins.module_utils.api.errors import ApiException, api_error_message
    from ansible_collections.kubeops.rotation.plugins.module_utils.api.karpenter import served_node_claims
    from ansible_collections.kubeops.rotation.plugins.module_utils.api.watch import (
        RELISTED,
        WATCH_WINDOW_SECONDS,
        Informer,
    )
    from ansible_collections.kubeops.rotation.plugins.module_utils.model.times import micro_time
    from ansible_collections.kubeops.rotation.plugins.module_utils.plan.node_events import (
        Backoff,
        ChangeTracker,
        Debouncer,
        NodeTracker,
        changes_event,
        node_record,
        nodeclaims_by_node,
        nodes_event,
        settings_from_args,
        unknown_args,
    )
except ImportError as exc:
    raise ImportError(
        "kubeops.rotation.new_nodes needs the kubeops.rotation collection installed "
        "(ansible-galaxy collection install kubeops.rotation), not this file alone: %s" % exc) from exc


# ---------------------------------------------------------------------------------------------------------------
# Acting: the watch in a thread of its own, the window and the queue in the event loop. What counts, what changed
# and the events are plan/node_events.py's.
# ---------------------------------------------------------------------------------------------------------------

def _utc_now():
    return datetime.datetime.now(datetime.timezone.utc)


def _describe(exc):
    if ApiException is not None and isinstance(exc, ApiException):
        return api_error_message(exc)
    return "%s: %s" % (type(exc).__name__, exc)


def follow_nodes(client, label_selector, deliver, stop, backoff=None):
    """List the nodes, then watch them, for ever: ``deliver(("listed", nodes))`` after every list and
    ``deliver((type, node))`` for every watch event, until ``stop`` is set. Runs in a thread of its own."""
    backoff = backoff or Backoff(random.random)
    selector = {"label_selector": label_selector} if label_selector else {}
    # Bookmarks keep the version to watch from recent, so that a quiet watch expires less often.
    informer = Informer(client, client.core.list_node, allow_watch_bookmarks=True, **selector)

    def until(objects, change):
        if change is RELISTED:
            deliver(("listed", list(objects.values())))
            return RELISTED  # back off before watching again: a stream that breaks at once is no busy loop
        if change is not None:
            deliver(change)
            backoff.reset()
        return stop.is_set()

    def ended(seconds, quiet):
        if quiet and seconds < WATCH_WINDOW_SECONDS / 2:  # one that ends at once, again and again (a proxy's timeout)
            return stop.wait(backoff.next())
        backoff.reset()  # a watch that ran its time: open it again from where it was
        return stop.is_set()

    while not stop.is_set():
        try:
            if informer.objects is None:
                deliver(("listed", list(informer.relist().values())))
            if informer.wait(until, informer.clock() + WATCH_SECONDS, ended) is RELISTED:
                delay = backoff.next()
                LOGGER.info("The watch of nodes expired or its stream broke; listing them again, and watching again "
                            "in %.1f s.", delay)
                stop.wait(delay)
        except Exception as exc:  # pylint: disable=broad-except  # never end: the next list tells what was missed
            informer.objects = None
            delay = backoff.next()
            LOGGER.warning("Watching nodes failed (%s); trying again in %.1f s.", _describe(exc), delay)
            stop.wait(delay)


class NewNodesSource:
    """The source: a thread follows the nodes; the event loop keeps the tracker and the window and puts events."""

    def __init__(self, settings, client, clock=time.monotonic, now=_utc_now):
        self.settings = settings
        self.client = client
        self.clock = clock
        self.now = now
        self.tracker = NodeTracker(settings.tolerated_taints, settings.include_existing)
        self.window = Debouncer(settings.debounce_seconds)
        self.changes = ChangeTracker(settings.changes) if settings.changes else None
        self.changes_window = Debouncer(settings.changes_debounce_seconds)
        self.nodeclaims_absent_since = None

    async def run(self, queue):
        loop = asyncio.get_running_loop()
        inbox = asyncio.Queue()
        stop = threading.Event()

        def deliver(item):
            try:
                loop.call_soon_threadsafe(inbox.put_nowait, item)
            except RuntimeError:  # the event loop is closed: nobody listens any more
                stop.set()

        thread = threading.Thread(target=follow_nodes, name="kubeops-new-nodes", daemon=True,
                                  args=(self.client, self.settings.label_selector, deliver, stop))
        thread.start()
        try:
            while True:
                deadlines = [window.deadline for window in (self.window, self.changes_window)
                             if window.deadline is not None]
                timeout = max(0.0, min(deadlines) - self.clock()) if deadlines else None
                try:
                    self.handle(await asyncio.wait_for(inbox.get(), timeout))
                    while not inbox.empty():
                        self.handle(inbox.get_nowait())
                except asyncio.TimeoutError:
                    pass
                if self.window.due(self.clock()):
                    await queue.put(await self.event(loop))
                if self.changes_window.due(self.clock()):
                    event = self.changes_event()
                    if event["count"]:
                        await queue.put(event)
        finally:
            stop.set()

    def handle(self, item):
        kind, payload = item
        now = self.clock()
        if self.changes is not None:
            self._changes(kind, payload, now)
        if kind == "listed":
            first = not self.tracker.started
            counted, gone = self.tracker.listed(payload)
            for uid in gone:
                self.window.discard(uid)
            if first:
                LOGGER.info("Watching nodes%s: %d listed, %d already Ready and schedulable %s.",
                            " (%s)" % self.settings.label_selector if self.settings.label_selector else "",
                            len(payload), len(self.tracker.ignored_at_start) + len(counted),
                            "and counted" if self.settings.include_existing else "and left out")
        else:
            if kind == "DELETED":
                self.window.discard(payload["metadata"]["uid"])
            one = self.tracker.observe(kind, payload)
            counted = [one] if one else []
        for node in counted:
            LOGGER.info("Node %s is Ready and schedulable.", node.name)
            self.window.add(node.uid, (node, self.now()), now)

    def _changes(self, kind, payload, now):
        if kind == "listed":
            changed = self.changes.listed(payload)
        elif kind == "DELETED":
            self.changes.forget(payload["metadata"]["uid"])
            self.changes_window.discard(payload["metadata"]["uid"])
            changed = []
        elif kind in ("ADDED", "MODIFIED"):
            before = self.changes.see(payload)
            changed = [(payload["metadata"]["uid"], before)] if before else []
        else:
            changed = []
        for uid, before in changed:
            self.changes_window.add(uid, (uid, before, self.now()), now)

    def changes_event(self):
        """The event of the changes window (its count 0 when every node changed back meanwhile)."""
        items, _opened = self.changes_window.take()
        records = self.changes.records({uid: before for uid, before, _seen in items})
        event = changes_event(records, min(seen for _uid, _before, seen in items), self.now(), self.settings)
        if records:
            LOGGER.info("Nodes changed: %s.", ", ".join(record["name"] for record in records))
        return event

    async def event(self, loop):
        items, _opened = self.window.take()
        claims = await loop.run_in_executor(None, self._nodeclaims)
        by_node, pending = nodeclaims_by_node(claims) if claims is not None else ({}, None)
        records = [node_record(node, micro_time(seen), by_node.get(node.name)) for node, seen in items]
        event = nodes_event(records, min(seen for _node, seen in items), self.now(), self.settings, pending)
        LOGGER.info("Nodes joined: %s.", ", ".join(event["new_nodes"]))
        return event

    def _nodeclaims(self):
        now = self.clock()
        if self.nodeclaims_absent_since is not None and now - self.nodeclaims_absent_since < NODECLAIM_RECHECK_SECONDS:
            return None
        try:
            claims = served_node_claims(self.client, label_selector=self.settings.label_selector, _request_timeout=15)
        except Exception as exc:  # pylint: disable=broad-except  # enrichment only: the event goes out without it
            LOGGER.warning("Reading the NodeClaims failed (%s); this event goes without them.", _describe(exc))
            return None
        # No Karpenter here: asked again only after a while, in case it gets installed.
        self.nodeclaims_absent_since = now if claims is None else None
        return claims


async def main(queue, args):
    """The entry point ansible-rulebook calls: puts an event on ``queue`` for each window of new nodes."""
    args = dict(args or {})
    for name in unknown_args(args):
        LOGGER.warning("kubeops.rotation.new_nodes has no argument %r; it is ignored.", name)
    settings = settings_from_args(args, os.environ)
    if KUBERNETES_IMPORT_ERROR:
        raise ImportError("kubeops.rotation.new_nodes needs the kubernetes Python library: %s"
                          % KUBERNETES_IMPORT_ERROR)
    client = new_client(settings.connection)
    await NewNodesSource(settings, client).run(queue)


if __name__ == "__main__":
    # python new_nodes.py '{"debounce_seconds": 5, "include_existing": true}' prints the events it would put.

    class MockQueue:
        async def put(self, event):
            print(json.dumps(event, indent=2, sort_keys=True), flush=True)

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    asyncio.run(main(MockQueue(), json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}))
