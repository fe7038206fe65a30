# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""What the event source kubeops.rotation.new_nodes decides: its settings, which nodes count as joined, what
changed on a node, the debounce window and the events.

The source (extensions/eda/plugins/event_source/new_nodes.py) only watches: it passes in the nodes it listed or
saw change, its monotonic clock's readings, the times of an event (aware datetimes) and the jitter of its retries.
"""

from __future__ import annotations

import os
from collections import namedtuple

from ansible_collections.kubeops.rotation.plugins.module_utils.model.karpenter import (
    claim_node,
    claim_pool,
    is_initialized,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.model.keys import (
    CAPACITY_TYPE_LABELS,
    INSTANCE_TYPE_LABEL,
    NODEPOOL_LABEL,
    REGION_LABEL,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.model.nodes import (
    blocking_taints,
    is_cordoned,
    is_ready,
    node_condition,
    node_labels,
    taint_text,
    taints_of,
    zone_of,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.model.times import micro_time

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
TRUE_WORDS = ("true", "yes", "on", "1", "y", "t")
FALSE_WORDS = ("false", "no", "off", "0", "n", "f")

Settings = namedtuple("Settings", ("connection label_selector debounce_seconds include_existing tolerated_taints "
                                   "changes changes_debounce_seconds"))
Availability = namedtuple("Availability", "available reason")
Counted = namedtuple("Counted", "uid name node existed_at_start")


# --- the arguments -------------------------------------------------------------------------------------------

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


# --- which nodes count ---------------------------------------------------------------------------------------

def availability(node, tolerated_taints=()):
    """Whether new pods can be scheduled on ``node`` now, and if not, why."""
    if (node.get("metadata") or {}).get("deletionTimestamp"):
        return Availability(False, "being deleted")
    if not is_ready(node):
        return Availability(False, "not Ready")
    if is_cordoned(node):
        return Availability(False, "cordoned")
    blocking = ["%s:%s" % (taint.get("key"), taint.get("effect")) for taint in blocking_taints(node)
                if taint.get("key") not in tolerated_taints]
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


# --- what changed --------------------------------------------------------------------------------------------

def _users(key):
    return not str(key).startswith(LIFE_CYCLE_PREFIXES)


def node_shape(node):
    """What a change event compares: the node's labels and its NoSchedule and NoExecute taints
    ("key=value:effect"), those of its life cycle and of this collection left out."""
    labels = {key: value for key, value in node_labels(node).items() if _users(key)}
    taints = frozenset(taint_text(taint) for taint in blocking_taints(node) if _users(taint.get("key")))
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


# --- the window, and the watch's retries ---------------------------------------------------------------------

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

    def __init__(self, rand, first=0.5, cap=30.0):
        self.first, self.cap, self.rand = first, cap, rand
        self.failures = 0

    def next(self):
        delay = min(self.cap, self.first * 2 ** min(self.failures, 16))
        self.failures += 1
        return delay * (0.8 + 0.4 * self.rand())

    def reset(self):
        self.failures = 0


# --- the events ----------------------------------------------------------------------------------------------

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
        "window": _window(opened_at, closed_at, settings.debounce_seconds),
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
        "window": _window(opened_at, closed_at, settings.changes_debounce_seconds),
        "label_selector": settings.label_selector,
    }


def _window(opened_at, closed_at, debounce_seconds):
    return {"opened_at": micro_time(opened_at), "closed_at": micro_time(closed_at),
            "seconds": round((closed_at - opened_at).total_seconds(), 3), "debounce_seconds": debounce_seconds}
