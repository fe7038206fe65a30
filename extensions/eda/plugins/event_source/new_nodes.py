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
from collections import namedtuple

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
        C(karpenter.sh/), C(kubeops.io/)): a cordon, a node becoming Ready or a
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

# The shared connection options (module_utils/ansible_module.py CONNECTION_ARGUMENT_SPEC, which a unit test compares
# with this): name, aliases, environment variables (the first one set and not empty wins), kind.
CONNECTION_OPTIONS = (
    ("kubeconfig", (), ("K8S_AUTH_KUBECONFIG",), "raw"),
    ("context", (), ("K8S_AUTH_CONTEXT",), "str"),
    ("host", (), ("K8S_AUTH_HOST",), "str"),
    ("api_key", (), ("K8S_AUTH_API_KEY",), "str"),
    ("ca_cert", ("ssl_ca_cert",), ("K8S_AUTH_CA_CERT", "K8S_AUTH_SSL_CA_CERT"), "path"),
    ("client_cert", ("cert_file",), ("K8S_AUTH_CLIENT_CERT", "K8S_AUTH_CERT_FILE"), "path"),
    ("client_key", ("key_file",), ("K8S_AUTH_CLIENT_KEY", "K8S_AUTH_KEY_FILE"), "path"),
    ("validate_certs", ("verify_ssl",), ("K8S_AUTH_VALIDATE_CERTS", "K8S_AUTH_VERIFY_SSL"), "bool"),
    ("proxy", (), ("K8S_AUTH_PROXY",), "str"),
    ("no_proxy", (), ("K8S_AUTH_NO_PROXY",), "str"),
    ("impersonate_user", (), ("K8S_AUTH_IMPERSONATE_USER",), "str"),
    ("impersonate_groups", (), ("K8S_AUTH_IMPERSONATE_GROUPS",), "list"),
)
SOURCE_OPTIONS = ("label_selector", "debounce_seconds", "include_existing", "tolerated_taints", "changes",
                  "changes_debounce_seconds")
DEFAULT_DEBOUNCE_SECONDS = 30.0
DEFAULT_CHANGES_DEBOUNCE_SECONDS = 5.0
CHANGE_KINDS = ("labels", "taints")
# Labels and taints of a node's life cycle and of this collection's own steps: a change of these is no user's.
LIFE_CYCLE_PREFIXES = ("node.kubernetes.io/", "node.cloudprovider.kubernetes.io/", "karpenter.sh/", "kubeops.io/")
# A watch ends after this long and is opened again from where it was; a stop waits for it at most this long.
WATCH_SECONDS = 120
NODECLAIM_RECHECK_SECONDS = 600
BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")
REGION_LABEL = "topology.kubernetes.io/region"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
CAPACITY_TYPE_LABELS = ("karpenter.sh/capacity-type", "eks.amazonaws.com/capacityType")
TRUE_WORDS = ("true", "yes", "on", "1", "y", "t")
FALSE_WORDS = ("false", "no", "off", "0", "n", "f")


def _collection_on_path():
    """Make ``ansible_collections.kubeops.rotation`` importable, for its client and node facts.

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
    from ansible_collections.kubeops.rotation.plugins.module_utils.api.watch import RELISTED, Informer
    from ansible_collections.kubeops.rotation.plugins.module_utils.model.karpenter import (
        claim_node,
        claim_pool,
        is_initialized,
    )
    from ansible_collections.kubeops.rotation.plugins.module_utils.model.keys import NODEPOOL_LABEL
    from ansible_collections.kubeops.rotation.plugins.module_utils.model.nodes import (
        is_cordoned,
        is_ready,
        node_condition,
        node_labels,
        taint_text,
        taints_of,
        zone_of,
    )
except ImportError as exc:
    raise ImportError(
        "kubeops.rotation.new_nodes needs the kubeops.rotation collection installed "
        "(ansible-galaxy collection install kubeops.rotation), not this file alone: %s" % exc) from exc


# ---------------------------------------------------------------------------------------------------------------
# Pure: arguments, what counts, the window, the event. No kubernetes, no clock, no randomness unless passed in.
# ---------------------------------------------------------------------------------------------------------------

Settings = namedtuple("Settings", ("connection label_selector debounce_seconds include_existing tolerated_taints "
                                   "changes changes_debounce_seconds"))
Availability = namedtuple("Availability", "available reason")
Counted = namedtuple("Counted", "uid name node existed_at_start")


def _boolean(name, value):
    if isinstance(value, bool):
        return value
    if str(value).strip().lower() in TRUE_WORDS:
        return True
    if str(value).strip().lower() in FALSE_WORDS:
        return False
    raise ValueError("%s must be true or false, got %r." % (name, value))


def _strings(name, value):
    if isinstance(value, str):
        value = [item.strip() for item in value.split(",")]
    if not isinstance(value, (list, tuple)) or not all(isinstance(item, str) and item for item in value):
        raise ValueError("%s must be a list of non-empty strings, got %r." % (name, value))
    return list(value)


def connection_params(args, environ):
    """The connection options of ``args`` (by name or alias), else from the K8S_AUTH_* variables, as
    api.client.new_client takes them."""
    params = {}
    for name, aliases, variables, kind in CONNECTION_OPTIONS:
        value = next((args[key] for key in (name,) + aliases if args.get(key) not in (None, "")), None)
        if value is None:
            value = next((environ[variable] for variable in variables if environ.get(variable)), None)
        if value is None:
            params[name] = None
        elif kind == "bool":
            params[name] = _boolean(name, value)
        elif kind == "list":
            params[name] = _strings(name, value)
        elif kind == "path":
            params[name] = os.path.expanduser(str(value))
        elif kind == "raw":
            params[name] = value if isinstance(value, dict) else str(value)
        else:
            params[name] = str(value)
    if bool(params["client_cert"]) != bool(params["client_key"]):
        raise ValueError("client_cert and client_key go together: give both or neither.")
    if params["impersonate_groups"] and not params["impersonate_user"]:
        raise ValueError("impersonate_groups needs impersonate_user.")
    return params


def settings_from_args(args, environ):
    """Settings from the source's arguments, or ValueError naming the one that is wrong."""
    args = dict(args or {})
    debounce = _seconds(args, "debounce_seconds", DEFAULT_DEBOUNCE_SECONDS)
    changes = args.get("changes")
    changes = tuple(_strings("changes", changes)) if changes else ()
    unknown = sorted(set(changes) - set(CHANGE_KINDS))
    if unknown:
        raise ValueError("changes takes %s, got %s." % (" and ".join(CHANGE_KINDS), ", ".join(unknown)))
    selector = args.get("label_selector")
    if selector is not None and not isinstance(selector, str):
        raise ValueError("label_selector must be a string such as karpenter.sh/nodepool=general, got %r." % selector)
    tolerated = args.get("tolerated_taints")
    return Settings(connection=connection_params(args, environ),
                    label_selector=(selector or "").strip() or None,
                    debounce_seconds=debounce,
                    include_existing=_boolean("include_existing", args.get("include_existing", False)),
                    tolerated_taints=tuple(_strings("tolerated_taints", tolerated) if tolerated else ()),
                    changes=changes,
                    changes_debounce_seconds=_seconds(args, "changes_debounce_seconds",
                                                      DEFAULT_CHANGES_DEBOUNCE_SECONDS))


def _seconds(args, name, default):
    value = args.get(name)
    if value in (None, ""):
        value = default
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ValueError("%s must be a number of seconds, got %r." % (name, value)) from None
    if not 0 <= value <= 3600:
        raise ValueError("%s must be between 0 and 3600, got %s." % (name, value))
    return value


def unknown_args(args):
    """Argument names this source does not know (typos), sorted."""
    known = set(SOURCE_OPTIONS)
    for name, aliases, _variables, _kind in CONNECTION_OPTIONS:
        known.update((name,) + aliases)
    return sorted(set(args or {}) - known)


def availability(node, tolerated_taints=()):
    """Whether new pods can be scheduled on ``node`` now, and if not, why."""
    if (node.get("metadata") or {}).get("deletionTimestamp"):
        return Availability(False, "being deleted")
    if not is_ready(node):
        return Availability(False, "not Ready")
    if is_cordoned(node):
        return Availability(False, "cordoned")
    blocking = ["%s:%s" % (taint.get("key"), taint.get("effect")) for taint in taints_of(node)
                if taint.get("effect") in BLOCKING_EFFECTS and taint.get("key") not in tolerated_taints]
    if blocking:
        return Availability(False, "tainted %s" % ", ".join(blocking))
    return Availability(True, "Ready and schedulable")


class NodeTracker:
    """Which nodes count: each node, by uid, once, when it first is Ready and schedulable.

    ``listed`` takes a whole list (the first one at start, the others after a
    lost watch), ``observe`` one watch event. Both return the nodes that count
    now (``Counted``); ``listed`` also the uids that are gone.
    """

    def __init__(self, tolerated_taints=(), include_existing=False):
        self.tolerated_taints = tuple(tolerated_taints)
        self.include_existing = include_existing
        self.started = False
        self.known = {}  # uid -> name of every node seen
        self.counted = set()  # uids that counted, or were available at the start
        self.ignored_at_start = []  # names of the nodes available at the start, not counted
        self.at_start = set()  # uids of the first list: a node there that becomes available later existed

    def listed(self, nodes):
        at_start, self.started = not self.started, True
        if at_start:
            self.at_start = {node["metadata"]["uid"] for node in nodes}
        present = set()
        counted = []
        for node in nodes:
            present.add(node["metadata"]["uid"])
            now_counted = self._see(node, at_start)
            if now_counted:
                counted.append(now_counted)
        gone = sorted(set(self.known) - present)
        for uid in gone:
            self.forget(uid)
        return counted, gone

    def observe(self, event_type, node):
        """The node if this watch event makes it count, else None. DELETED forgets it."""
        if event_type == "DELETED":
            self.forget(node["metadata"]["uid"])
            return None
        if event_type not in ("ADDED", "MODIFIED"):
            return None
        return self._see(node, False)

    def forget(self, uid):
        self.known.pop(uid, None)
        self.counted.discard(uid)

    def _see(self, node, at_start):
        metadata = node["metadata"]
        uid = metadata["uid"]
        self.known[uid] = metadata["name"]
        if uid in self.counted:
            return None
        verdict = availability(node, self.tolerated_taints)
        if not verdict.available:
            return None
        self.counted.add(uid)
        if at_start and not self.include_existing:
            self.ignored_at_start.append(metadata["name"])
            return None
        return Counted(uid=uid, name=metadata["name"], node=node, existed_at_start=uid in self.at_start)


def _users(key):
    return not str(key).startswith(LIFE_CYCLE_PREFIXES)


def node_shape(node):
    """What a change event compares: the node's labels and its NoSchedule and NoExecute taints
    ("key=value:effect"), those of its life cycle and of this collection left out."""
    labels = {key: value for key, value in node_labels(node).items() if _users(key)}
    taints = frozenset(taint_text(taint) for taint in taints_of(node)
                       if taint.get("effect") in BLOCKING_EFFECTS and _users(taint.get("key")))
    return labels, taints


def shape_change(before, after, kinds):
    """What changed from one node_shape to another, of ``kinds`` ("labels", "taints"), or None."""
    change = {}
    if "labels" in kinds:
        old, new = before[0], after[0]
        labels = {"added": {key: new[key] for key in sorted(set(new) - set(old))},
                  "removed": {key: old[key] for key in sorted(set(old) - set(new))},
                  "changed": {key: [old[key], new[key]] for key in sorted(set(old) & set(new))
                              if old[key] != new[key]}}
        if any(labels.values()):
            change["labels"] = labels
    if "taints" in kinds and before[1] != after[1]:
        change["taints"] = {"added": sorted(after[1] - before[1]), "removed": sorted(before[1] - after[1])}
    return change or None


class ChangeTracker:
    """The shape (node_shape) each node had when last seen; ``see`` returns it when the node changed since in
    one of ``kinds``, else None. A node first seen has not changed."""

    def __init__(self, kinds):
        self.kinds = tuple(kinds)
        self.shapes = {}  # uid -> (name, node_shape)

    def see(self, node):
        uid, name = node["metadata"]["uid"], node["metadata"]["name"]
        before = self.shapes.get(uid)
        self.shapes[uid] = (name, node_shape(node))
        if before is not None and shape_change(before[1], self.shapes[uid][1], self.kinds):
            return before[1]
        return None

    def listed(self, nodes):
        """(uid, shape before) of the nodes a whole list shows changed; the nodes gone are forgotten."""
        present = {node["metadata"]["uid"] for node in nodes}
        for uid in set(self.shapes) - present:
            self.forget(uid)
        return [(node["metadata"]["uid"], before) for node in nodes for before in [self.see(node)] if before]

    def forget(self, uid):
        self.shapes.pop(uid, None)

    def records(self, befores):
        """The event's records for {uid: shape when its window opened}: the change since, sorted by name; a node
        changed back, or gone, is left out."""
        records = []
        for uid, before in befores.items():
            if uid in self.shapes:
                name, shape = self.shapes[uid]
                change = shape_change(before, shape, self.kinds)
                if change:
                    records.append(dict({"name": name, "uid": uid}, **change))
        return sorted(records, key=lambda record: record["name"])


class Debouncer:
    """Collects items from the first one for ``seconds``; then they go out together.

    Times are whatever clock the caller passes (monotonic seconds). The window
    opens at the first ``add`` and closes ``seconds`` later however many come;
    an item discarded meanwhile leaves it, and an empty window closes.
    """

    def __init__(self, seconds):
        self.seconds = seconds
        self.opened = None
        self.items = {}

    def add(self, key, item, now):
        if not self.items:
            self.opened = now
        self.items.setdefault(key, item)

    def discard(self, key):
        self.items.pop(key, None)
        if not self.items:
            self.opened = None

    @property
    def deadline(self):
        return None if self.opened is None else self.opened + self.seconds

    def due(self, now):
        return self.opened is not None and now >= self.deadline

    def take(self):
        """The items of the window, in the order they came, and the time it opened; the window is empty after."""
        items, opened = list(self.items.values()), self.opened
        self.items, self.opened = {}, None
        return items, opened


class Backoff:
    """0.5 s, 1 s, 2 s, ... up to 30 s, each within +-20 % (``rand`` gives [0, 1))."""

    def __init__(self, first=0.5, cap=30.0, rand=random.random):
        self.first, self.cap, self.rand = first, cap, rand
        self.failures = 0

    def next(self):
        delay = min(self.cap, self.first * 2 ** min(self.failures, 16))
        self.failures += 1
        return delay * (0.8 + 0.4 * self.rand())

    def reset(self):
        self.failures = 0


def node_record(counted, available_at, nodeclaim=None):
    """What the event says about one node."""
    node = counted.node
    labels = node_labels(node)
    status = node.get("status") or {}
    return {
        "name": counted.name,
        "uid": counted.uid,
        "zone": zone_of(node),
        "region": labels.get(REGION_LABEL),
        "instance_type": labels.get(INSTANCE_TYPE_LABEL),
        "capacity_type": next((labels[key] for key in CAPACITY_TYPE_LABELS if key in labels), None),
        "nodepool": labels.get(NODEPOOL_LABEL),
        "nodeclaim": nodeclaim,
        "created": node["metadata"].get("creationTimestamp"),
        "ready_since": (node_condition(node, "Ready") or {}).get("lastTransitionTime"),
        "available_at": available_at,
        "existed_at_start": counted.existed_at_start,
        "kubelet_version": (status.get("nodeInfo") or {}).get("kubeletVersion"),
        "allocatable": dict(status.get("allocatable") or {}),
        "taints": list(taints_of(node)),
        "labels": dict(labels),
    }


def nodeclaims_by_node(claims):
    """NodeClaim name per node name, and the claims on their way (not deleting, node not yet initialized)."""
    by_node, pending = {}, []
    for claim in claims:
        metadata = claim.get("metadata") or {}
        node = claim_node(claim)
        if node:
            by_node[node] = metadata.get("name")
        if not metadata.get("deletionTimestamp") and not is_initialized(claim):
            pending.append({"name": metadata.get("name"), "nodepool": claim_pool(claim), "node": node})
    return by_node, sorted(pending, key=lambda claim: claim["name"] or "")


def nodes_event(records, opened_at, closed_at, settings, pending_nodeclaims=None):
    """The event for the records of one window. ``opened_at`` and ``closed_at`` are aware datetimes."""
    records = sorted(records, key=lambda record: record["name"])
    zones = {}
    for record in records:
        zones.setdefault(record["zone"] or "", []).append(record["name"])
    event = {
        "new_nodes": [record["name"] for record in records],
        "count": len(records),
        "zones": zones,
        "nodes": records,
        "window": {"opened_at": _iso(opened_at), "closed_at": _iso(closed_at),
                   "seconds": round((closed_at - opened_at).total_seconds(), 3),
                   "debounce_seconds": settings.debounce_seconds},
        "label_selector": settings.label_selector,
    }
    if pending_nodeclaims is not None:
        event["pending_nodeclaims"] = pending_nodeclaims
    return event


def changes_event(records, opened_at, closed_at, settings):
    """The event for the node changes of one window (ChangeTracker.records)."""
    return {
        "node_changes": records,
        "count": len(records),
        "window": {"opened_at": _iso(opened_at), "closed_at": _iso(closed_at),
                   "seconds": round((closed_at - opened_at).total_seconds(), 3),
                   "debounce_seconds": settings.changes_debounce_seconds},
        "label_selector": settings.label_selector,
    }


def _iso(moment):
    return moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# ---------------------------------------------------------------------------------------------------------------
# Acting: the watch in a thread of its own, the window and the queue in the event loop.
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
    backoff = backoff or Backoff()
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
        if quiet and seconds < WATCH_SECONDS / 2:  # one that ends at once, again and again (a proxy's timeout)
            return stop.wait(backoff.next())
        backoff.reset()  # a watch that ran its time: open it again from where it was
        return stop.is_set()

    while not stop.is_set():
        try:
            if informer.objects is None:
                deliver(("listed", list(informer.relist().values())))
            if informer.wait(until, informer.clock() + WATCH_SECONDS, ended) is RELISTED:
                delay = backoff.next()
                LOGGER.info("The watch of nodes expired or its stream broke; listed them again, watching in %.1f s.",
                            delay)
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
        records = [node_record(node, _iso(seen), by_node.get(node.name)) for node, seen in items]
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
