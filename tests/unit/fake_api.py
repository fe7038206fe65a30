"""An in-memory stand-in for api/, so that engine/ is tested in milliseconds: what a loop decides on a 429, a 410,
a lost answer or a 500, without a cluster.

``FakeApi`` holds pods, PDBs, nodes, workloads and Leases as the API's JSON and answers the named calls of api/
that engine/ makes (api.workloads, api.leases, api.client.separate_client, api.watch.watch) by the contracts of
their docstrings, and the Client methods it calls (list_with_version, read_nodes, update_node, whoami). What a call
does is what the API server does with it:

- an eviction is refused by the PDB that selects the pod when it allows no disruption (429 with the
  DisruptionBudget cause), by several PDBs with a 500, by a uid precondition with a 409, a missing pod with a 404;
  accepted, it takes one of the PDB's disruptions and the pod terminates, gone ``termination_seconds`` later;
- every write gives the object a new resourceVersion and an event, which a watch from an earlier version yields;
- a Lease or a node patch guarded by an older resourceVersion is refused (409, 422).

Anything else is scripted: ``script(call, *answers)`` answers the next calls of ``call`` (optionally only those about
object ``name``) with, in turn: an exception to raise unapplied (``api_error``, ``pdb_refusal``, ``rate_limited``,
``unreachable``, WatchExpired), ``LostAnswer(applied)`` (a write whose answer the connection lost: applied or not,
ConnectionFailed either way, as the client raises it for a write it may not repeat), or a callable run first
(another actor changing the cluster just before the call is answered). ``at(seconds, action)`` changes the cluster at
a time of the fake's clock (the disruption controller, a kubelet). The errors are those api/ raises once its client
gave up: a read's transient faults are repeated there (api.client.retry_delay) and not seen by engine/.

Time is the fake's ``clock`` (a ManualClock unless given): ``sleep`` and a watch with nothing to say move it to
the next scheduled action or their end, so that a wait of minutes takes no time.
"""

from __future__ import annotations

import copy
import heapq
import itertools
import json
import math
import re
import threading

from ansible_collections.kubeops.rotation.plugins.module_utils.api import watch as watch_module
from ansible_collections.kubeops.rotation.plugins.module_utils.api.client import run_request_hooks
from ansible_collections.kubeops.rotation.plugins.module_utils.api.errors import ApiException, ConnectionFailed
from ansible_collections.kubeops.rotation.plugins.module_utils.api.watch import WATCH_WINDOW_SECONDS, Informer
from ansible_collections.kubeops.rotation.plugins.module_utils.model.owners import Workload
from ansible_collections.kubeops.rotation.plugins.module_utils.model.pdbs import pdbs_for
from ansible_collections.kubeops.rotation.plugins.module_utils.model.pods import controller_of

API_PACKAGE = "ansible_collections.kubeops.rotation.plugins.module_utils.api."
# What engine/ imports from api/ that makes no request: used as it is.
PURE = frozenset(["ApiException", "ConnectionFailed", "api_message", "is_pdb_refusal", "is_not_found",
                  "api_error_message", "each_concurrently", "WatchExpired", "RELISTED"])
DELETED_AT = "2026-12-03T06:00:00Z"


class ManualClock:
    """Seconds that pass only when the code under test sleeps or waits."""

    def __init__(self, start=1000.0):
        self.now = start

    def __call__(self):
        return self.now

    def advance_to(self, moment):
        self.now = max(self.now, moment)


def api_error(status, message, reason="", causes=None):
    """An ApiException as the client raises it, its body the API server's Status."""
    exc = ApiException(status=status, reason=reason or "Error %d" % status)
    details = {"causes": causes} if causes else {}
    exc.body = json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message,
                           "reason": exc.reason, "details": details, "code": status})
    return exc


def pdb_refusal(pdb_name="web", desired=3, healthy=3):
    """The API server's refusal of an eviction its PodDisruptionBudget does not allow."""
    return api_error(429, "Cannot evict pod as it would violate the pod's disruption budget.", "TooManyRequests",
                     [{"reason": "DisruptionBudget", "message": "The disruption budget %s needs %d healthy pods and "
                       "has %d currently" % (pdb_name, desired, healthy)}])


def rate_limited():
    """A 429 of the API server's own limits (API Priority and Fairness), not a PDB's."""
    return api_error(429, "Too many requests, please try again later.", "TooManyRequests")


def unreachable(what="Read timed out. (read timeout=20)"):
    return ConnectionFailed("Cannot reach the API server at https://fake:6443: %s" % what)


class LostAnswer:
    """A write whose answer the connection lost: ``applied`` or not, the caller cannot tell."""

    def __init__(self, applied):
        self.applied = applied


def selects(selector_text, labels):
    """Whether a label selector's text (equality and set based, as api/ sends them) selects ``labels``."""
    for part in re.findall(r"[^,(]+(?:\([^)]*\))?", selector_text or ""):
        part = part.strip()
        found = re.match(r"^(\S+)\s+(in|notin)\s+\((.*)\)$", part)
        if found:
            key, operator, values = found.group(1), found.group(2), {v.strip() for v in found.group(3).split(",")}
            if (labels.get(key) in values) != (operator == "in"):
                return False
        elif "!=" in part:
            key, value = part.split("!=", 1)
            if labels.get(key) == value:
                return False
        elif "=" in part:
            key, value = part.replace("==", "=").split("=", 1)
            if labels.get(key) != value:
                return False
        elif (part.startswith("!") and part[1:] in labels) or (not part.startswith("!") and part not in labels):
            return False
    return True


def fields_match(field_selector, obj):
    """Whether ``obj`` has the fields of an equality field selector ("spec.nodeName=n1,metadata.name=x")."""
    for part in (field_selector or "").split(","):
        if part:
            path, value = part.split("=", 1)
            found = obj
            for key in path.split("."):
                found = (found or {}).get(key)
            if found != value:
                return False
    return True


class FakeList:
    """The list call an Informer of the fake lists and watches: which objects, for which client."""

    def __init__(self, fake, client, kind):
        self.fake, self.client, self.kind = fake, client, kind


class FakeApiClient:
    """The hooks of api.client.RetryingApiClient that engine.lease sets."""

    def __init__(self):
        self.before_request = None
        self.before_first_write = None
        self.first_write_lock = threading.Lock()


class FakeClient:
    """What engine/ holds as its client: the Client methods it calls, answered by the fake."""

    def __init__(self, fake):
        self.fake = fake
        self.api_client = FakeApiClient()

    def list_with_version(self, list_method, page_size=None, **kwargs):
        return self.fake.list(self, list_method.kind, **kwargs)

    def list_all(self, list_method, page_size=None, **kwargs):
        return self.list_with_version(list_method, page_size, **kwargs)[0]

    def whoami(self):
        """Client.whoami: a SelfSubjectReview, which is a POST."""
        self.fake.request(self, "POST", "whoami")
        return {"username": "admin", "groups": ["system:masters"]}

    def read_nodes(self, names=None, selector=None):
        """Client.read_nodes: nodes named in ``names`` plus those matching ``selector``, sorted by name, and the
        names that do not exist."""
        self.fake.request(self, "GET", "read_nodes")
        with self.fake.lock:
            nodes = {name: self.fake.copy_of("nodes", name) for name in names or () if ("nodes", name) in self.fake}
            nodes.update((n["metadata"]["name"], copy.deepcopy(n)) for n in self.fake.store["nodes"].values()
                         if selector and selects(selector, n["metadata"].get("labels") or {}))
        return [nodes[name] for name in sorted(nodes)], [name for name in names or () if name not in nodes]

    def update_node(self, node, plan, apply=True, attempts=3):
        """Client.update_node: patch a node with what ``plan(node)`` returns, (result, patch); when the node
        changed in between (409, 422), read again and planned again, up to ``attempts`` times."""
        for attempt in itertools.count(1):
            result, patch = plan(node)
            if not apply or not patch:
                return result
            try:
                self.fake.patch_node(self, node["metadata"]["name"], patch)
                return result
            except ApiException as exc:
                if exc.status not in (409, 422) or attempt >= attempts:
                    raise
            node = self.fake.read_node(self, node["metadata"]["name"])


class FakeApi:
    """The cluster as api/ shows it to engine/ (see the module's docstring)."""

    def __init__(self, clock=None, termination_seconds=2.0):
        self.clock = clock or ManualClock()
        self.termination_seconds = termination_seconds
        self.lock = threading.RLock()
        self.store = {"pods": {}, "pdbs": {}, "nodes": {}, "leases": {}, "workloads": {}}
        self.version = 100
        self.log = []  # (resourceVersion, kind, event type, object)
        self.scripts = {}
        self.later = []
        self._order = itertools.count()
        self.calls = []  # (call, what it was about, when), in the order they came
        self.accepted = []  # (pod uid, when) of each eviction or deletion the fake accepted

    # The cluster as tests set it up and change it.

    def add(self, kind, *objects):
        for obj in objects:
            obj = copy.deepcopy(obj)
            metadata = obj["metadata"]
            metadata.setdefault("uid", "uid-%s-%s" % (kind, metadata["name"]))
            self._write(kind, obj, "ADDED")
        return self

    def update(self, kind, key, change):
        """Apply ``change(obj)`` to a stored object, as another actor does."""
        with self.lock:
            obj = copy.deepcopy(self.store[kind][key])
            change(obj)
            self._write(kind, obj, "MODIFIED")

    def remove(self, kind, key):
        """Delete a stored object, as another actor does."""
        with self.lock:
            self._write(kind, copy.deepcopy(self.store[kind][key]), "DELETED")

    def set_pdb_status(self, name, namespace="ns", **status):
        """The disruption controller's view of PDB ``name`` changed (disruptionsAllowed=..., currentHealthy=...)."""
        self.update("pdbs", (namespace, name), lambda pdb: pdb.setdefault("status", {}).update(status))

    def at(self, seconds, action):
        """Run ``action()`` once the clock reaches ``seconds``."""
        with self.lock:
            heapq.heappush(self.later, (seconds, next(self._order), action))

    def script(self, call, *answers, name=None, repeat=False):
        """Answer the next calls of ``call`` (about object ``name`` only, when given) with ``answers``, in turn; with
        ``repeat``, the last one for ever."""
        with self.lock:
            self.scripts[call, name] = [list(answers), repeat]

    def called(self, call):
        """What each call of ``call`` was about, in order."""
        return [what for name, what, _when in self.calls if name == call]

    def called_at(self, call):
        """When each call of ``call`` came."""
        return [when for name, _what, when in self.calls if name == call]

    def __contains__(self, kind_key):
        return kind_key[1] in self.store[kind_key[0]]

    def copy_of(self, kind, key):
        return copy.deepcopy(self.store[kind].get(key))

    # Time.

    def sleep(self, seconds):
        self.run_until(self.clock() + seconds)

    def run_until(self, moment):
        """Let the clock reach ``moment``, running what was scheduled on the way."""
        while True:
            with self.lock:
                due = self.later[0][0] if self.later and self.later[0][0] <= moment else None
            if due is None:
                self.clock.advance_to(moment)
                return
            self.clock.advance_to(due)
            self._catch_up()

    def _catch_up(self):
        while True:
            with self.lock:
                if not self.later or self.later[0][0] > self.clock():
                    return
                action = heapq.heappop(self.later)[2]
            action()

    # The requests, as api/ makes them.

    def request(self, client, method, call, name=None):
        """One request of ``client``: its hooks (engine.lease's), then the scripted answer, if any: returns it when
        it is LostAnswer, raises it when it is an exception."""
        run_request_hooks(client.api_client, method)
        self._catch_up()
        with self.lock:
            self.calls.append((call, name, self.clock()))
            if len(self.calls) > 20000:
                raise AssertionError("a runaway loop: %s" % self.calls[-10:])
            script = self.scripts.get((call, name)) or self.scripts.get((call, None))
            answer = None
            if script and script[0]:
                answer = script[0][0] if script[1] and len(script[0]) == 1 else script[0].pop(0)
        if callable(answer):
            answer()
            return None
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def _answer(self, lost, work):
        """Do ``work()`` unless the answer was lost before it was applied; then raise what a lost answer raises."""
        if lost is None or lost.applied:
            result = work()
        if lost is not None:
            raise unreachable()
        return result

    def list(self, client, kind, namespace=None, label_selector=None, field_selector=None):
        self.request(client, "GET", "list", kind)
        with self.lock:
            items = [copy.deepcopy(obj) for obj in self.store[kind].values()
                     if self._in_scope(obj, namespace, label_selector, field_selector)]
            return items, str(self.version)

    def watch(self, list_method, resource_version, timeout, namespace=None, label_selector=None, field_selector=None):
        """api.watch.watch: the events after ``resource_version`` of what ``list_method`` lists, for
        ``timeout`` seconds or WATCH_WINDOW_SECONDS; WatchExpired as scripted (a 410, a broken stream)."""
        self.request(list_method.client, "GET", "watch", list_method.kind)
        ends = self.clock() + max(1, int(math.ceil(min(timeout, WATCH_WINDOW_SECONDS))))
        seen = int(resource_version)
        while True:
            with self.lock:
                events = [(version, event_type, copy.deepcopy(obj)) for version, kind, event_type, obj in self.log
                          if version > seen and kind == list_method.kind and
                          self._in_scope(obj, namespace, label_selector, field_selector)]
                seen = self.version
            for _version, event_type, obj in events:
                yield event_type, obj
            if not events:
                with self.lock:
                    due = self.later[0][0] if self.later else None
                if due is None or due > ends:
                    self.run_until(ends)
                    return
                self.run_until(due)

    @staticmethod
    def _in_scope(obj, namespace, label_selector, field_selector):
        metadata = obj["metadata"]
        return (namespace is None or metadata.get("namespace") == namespace) and \
            selects(label_selector, metadata.get("labels") or {}) and fields_match(field_selector, obj)

    def _write(self, kind, obj, event_type):
        with self.lock:
            self.version += 1
            obj["metadata"]["resourceVersion"] = str(self.version)
            key = _key(kind, obj)
            if event_type == "DELETED":
                self.store[kind].pop(key, None)
            else:
                self.store[kind][key] = obj
            self.log.append((self.version, kind, event_type, copy.deepcopy(obj)))
            return copy.deepcopy(obj)

    # api.workloads

    def evict_pod(self, client, pod, delete_options=None):
        metadata = pod["metadata"]
        lost = self.request(client, "POST", "evict_pod", metadata["name"])
        options = delete_options or {"preconditions": {"uid": metadata["uid"]}}
        self._answer(lost, lambda: self._evict((metadata["namespace"], metadata["name"]), options))

    def _evict(self, key, options):
        with self.lock:
            current = self._precondition(key, options)
            if not current["metadata"].get("deletionTimestamp") and \
                    (current.get("status") or {}).get("phase") not in ("Succeeded", "Failed", "Pending"):
                pdbs = pdbs_for(current, list(self.store["pdbs"].values()))
                if len(pdbs) > 1:
                    raise api_error(500, "This pod has more than one PodDisruptionBudget, which the eviction "
                                         "subresource does not support.", "InternalError")
                if pdbs:
                    status = pdbs[0].get("status") or {}
                    if not status.get("disruptionsAllowed"):
                        raise pdb_refusal(pdbs[0]["metadata"]["name"], status.get("desiredHealthy", 0),
                                          status.get("currentHealthy", 0))
                    self.update("pdbs", key[:1] + (pdbs[0]["metadata"]["name"],),
                                lambda pdb: pdb["status"].update(disruptionsAllowed=status["disruptionsAllowed"] - 1))
            self._terminate(key, current)

    def delete_pod(self, client, pod, delete_options):
        metadata = pod["metadata"]
        lost = self.request(client, "DELETE", "delete_pod", metadata["name"])
        key = (metadata["namespace"], metadata["name"])
        self._answer(lost, lambda: self._terminate(key, self._precondition(key, delete_options)))

    def _precondition(self, key, options):
        current = self.store["pods"].get(key)
        if current is None:
            raise api_error(404, 'pods "%s" not found' % key[1], "NotFound")
        uid = ((options or {}).get("preconditions") or {}).get("uid")
        if uid and uid != current["metadata"]["uid"]:
            raise api_error(409, 'Operation cannot be fulfilled on Pod "%s": Precondition failed: UID in '
                                 'precondition: %s, UID in object meta: %s' % (key[1], uid, current["metadata"]["uid"]),
                            "Conflict")
        return current

    def _terminate(self, key, current):
        self.accepted.append((current["metadata"]["uid"], self.clock()))
        if current["metadata"].get("deletionTimestamp"):
            return
        terminating = copy.deepcopy(current)
        terminating["metadata"]["deletionTimestamp"] = DELETED_AT
        self._write("pods", terminating, "MODIFIED")
        self.at(self.clock() + self.termination_seconds, lambda: self._gone(key, current["metadata"]["uid"]))

    def _gone(self, key, uid):
        with self.lock:
            current = self.store["pods"].get(key)
            if current is not None and current["metadata"]["uid"] == uid:
                self.remove("pods", key)

    def pod_now(self, client, pod):
        metadata = pod["metadata"]
        self.request(client, "GET", "pod_now", metadata["name"])
        current = self.copy_of("pods", (metadata["namespace"], metadata["name"]))
        return current if current is not None and current["metadata"]["uid"] == metadata["uid"] else None

    def pods_in(self, client, namespace=None, label_selector=None):
        return self.list(client, "pods", namespace, label_selector)[0]

    def pdbs_in(self, client, namespace=None):
        return self.list(client, "pdbs", namespace)[0]

    def pods_version(self, client, namespace=None, node=None):
        self.request(client, "GET", "pods_version")
        return str(self.version)

    def pods_informer(self, client, namespace=None, node=None, label_selector=None, clock=None):
        """An Informer (api.watch's own) of the fake's pods; on the fake's clock, as every Informer of a run is on
        the run's clock (time.monotonic) when it runs for real."""
        kwargs = {"namespace": namespace, "label_selector": label_selector,
                  "field_selector": "spec.nodeName=%s" % node if node else None}
        return Informer(client, FakeList(self, client, "pods"), clock or self.clock,
                        **{key: value for key, value in kwargs.items() if value})

    def pdbs_informer(self, client, namespace=None):
        kwargs = {"namespace": namespace} if namespace else {}
        return Informer(client, FakeList(self, client, "pdbs"), self.clock, **kwargs)

    def read_workload(self, client, workload, required=False):
        self.request(client, "GET", "read_workload", workload.name)
        found = self.copy_of("workloads", (workload.kind, workload.namespace, workload.name))
        if found is None and required:
            raise api_error(404, '%s "%s" not found' % (workload.kind, workload.name), "NotFound")
        return found

    def deployment_of(self, client, namespace, replica_set):
        obj = self.read_workload(client, Workload("ReplicaSet", namespace, replica_set))
        owner = controller_of(obj) if obj else None
        return Workload("Deployment", namespace, owner["name"]) if owner and owner.get("kind") == "Deployment" else None

    # api.events

    def create_event(self, client, namespace, body):
        lost = self.request(client, "POST", "create_event", body["involvedObject"]["name"])
        self._answer(lost, lambda: None)

    # api.leases and api.client.separate_client

    def read_lease(self, client, name, namespace):
        self.request(client, "GET", "read_lease", name)
        return self.copy_of("leases", (namespace, name))

    def create_lease(self, client, namespace, body):
        lost = self.request(client, "POST", "create_lease", body["metadata"]["name"])

        def create():
            with self.lock:
                if (namespace, body["metadata"]["name"]) in self.store["leases"]:
                    raise api_error(409, 'leases "%s" already exists' % body["metadata"]["name"], "AlreadyExists")
                obj = copy.deepcopy(body)
                obj["metadata"].update(namespace=namespace, uid="uid-lease-%s" % body["metadata"]["name"])
                return self._write("leases", obj, "ADDED")
        return self._answer(lost, create)

    def replace_lease(self, client, name, namespace, body):
        lost = self.request(client, "PUT", "replace_lease", name)

        def replace():
            with self.lock:
                current = self.store["leases"].get((namespace, name))
                if current is None:
                    raise api_error(404, 'leases "%s" not found' % name, "NotFound")
                if body["metadata"].get("resourceVersion") != current["metadata"]["resourceVersion"]:
                    raise api_error(409, 'Operation cannot be fulfilled on leases.coordination.k8s.io "%s": the '
                                         'object has been modified; please apply your changes to the latest version '
                                         'and try again' % name, "Conflict")
                obj = copy.deepcopy(body)
                obj["metadata"].update(namespace=namespace, uid=current["metadata"]["uid"])
                return self._write("leases", obj, "MODIFIED")
        return self._answer(lost, replace)

    def separate_client(self, client, timeout, retry_budget):
        """A client on connections of its own: hooks of its own, the same cluster."""
        return FakeClient(self)

    # What Client.update_node sends.

    def read_node(self, client, name):
        self.request(client, "GET", "read_node", name)
        found = self.copy_of("nodes", name)
        if found is None:
            raise api_error(404, 'nodes "%s" not found' % name, "NotFound")
        return found

    def patch_node(self, client, name, patch):
        lost = self.request(client, "PATCH", "patch_node", name)

        def apply():
            with self.lock:
                node = copy.deepcopy(self.store["nodes"].get(name))
                if node is None:
                    raise api_error(404, 'nodes "%s" not found' % name, "NotFound")
                for operation in patch:
                    _apply(node, operation)
                return self._write("nodes", node, "MODIFIED")
        return self._answer(lost, apply)

    # Wiring.

    def client(self):
        return FakeClient(self)

    def install(self, monkeypatch, *modules):
        """Answer, in each of ``modules``, every call it imported from api/, and api.watch's watch: a call the fake
        does not answer fails here rather than reaching for a cluster."""
        for module in modules:
            for name, value in vars(module).items():
                if (getattr(value, "__module__", None) or "").startswith(API_PACKAGE) and name not in PURE:
                    if not hasattr(self, name):
                        raise AssertionError("%s calls api's %s, which the fake does not answer" % (module, name))
                    monkeypatch.setattr(module, name, getattr(self, name))
        monkeypatch.setattr(watch_module, "watch", self.watch)
        return self


def _key(kind, obj):
    metadata = obj["metadata"]
    if kind == "nodes":
        return metadata["name"]
    if kind == "workloads":
        return (obj["kind"], metadata["namespace"], metadata["name"])
    return (metadata["namespace"], metadata["name"])


def _apply(obj, operation):
    """One JSON patch operation (add, replace, remove, test) on ``obj``; a failed test is the API server's 422."""
    *parents, last = [part.replace("~1", "/").replace("~0", "~") for part in operation["path"].split("/")[1:]]
    target = obj
    for part in parents:
        target = target.setdefault(part, {})
    if operation["op"] == "test":
        if target.get(last) != operation["value"]:
            raise api_error(422, "the server rejected our request due to an error in our request: testing value "
                                 "%s failed" % operation["path"], "Invalid")
    elif operation["op"] == "remove":
        del target[last]
    else:
        target[last] = copy.deepcopy(operation["value"])
