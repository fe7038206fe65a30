# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Watching instead of polling: the events of a list call until a deadline."""

from __future__ import annotations

import math
import threading
import time

from ansible_collections.kubeops.rotation.plugins.module_utils.api.client import CONNECT_TIMEOUT, lean
from ansible_collections.kubeops.rotation.plugins.module_utils.api.errors import ApiException
from ansible_collections.kubeops.rotation.plugins.module_utils.model.errors import KubeopsError

try:
    import urllib3
    from kubernetes import watch as k8s_watch

    class _JsonWatch(k8s_watch.Watch):
        """A watch whose events carry the object as the API's JSON: building the client's typed object for
        each event, as the client does for every watch, and turning it back into a dict cost more than the
        rest of a drain's own work when it watches a namespace of thousands of pods."""

        def get_return_type(self, func):
            return None
except ImportError:  # reported by the module through missing_required_lib
    k8s_watch = None


class WatchExpired(Exception):
    """The watch's resourceVersion is too old (410 Gone) or its stream broke: list again, then watch from
    the new one."""


# One watch asks the server to end it after this many seconds at most; the caller opens the next one. The client
# gives up WATCH_SILENCE_MARGIN seconds after that: a watch whose connection went silent ends as a broken one
# (listed again) within WATCH_WINDOW_SECONDS + WATCH_SILENCE_MARGIN, not at the caller's deadline or never.
WATCH_WINDOW_SECONDS = 30
WATCH_SILENCE_MARGIN = 5


def watch(list_method, resource_version, timeout, **kwargs):
    """Yield (event type, object as dict) from a watch of ``list_method`` until ``timeout`` seconds pass, or
    WATCH_WINDOW_SECONDS.

    Raises WatchExpired when the API server no longer has ``resource_version``
    (HTTP 410), or when the stream broke or went silent; the caller lists again and watches from the new version.
    """
    watcher = _JsonWatch()
    seconds = max(1, int(math.ceil(min(timeout, WATCH_WINDOW_SECONDS))))
    try:
        for event in watcher.stream(list_method, resource_version=resource_version, timeout_seconds=seconds,
                                    _request_timeout=(CONNECT_TIMEOUT, seconds + WATCH_SILENCE_MARGIN), **kwargs):
            if event["type"] == "ERROR":
                if (event.get("raw_object") or {}).get("code") == 410:
                    raise WatchExpired()
                continue
            yield event["type"], lean(event["object"])
    except ApiException as exc:
        if exc.status == 410:
            raise WatchExpired()
        raise
    except urllib3.exceptions.HTTPError:
        # The stream broke (the API server restarted, "Response ended prematurely") or went silent past its read
        # timeout: what was missed is found by listing again, as after a 410.
        raise WatchExpired()
    finally:
        watcher.stop()


def list_resource_version(list_method, **kwargs):
    """The resourceVersion to start a watch from: that of a one-item list in the same scope."""
    return list_method(limit=1, **kwargs).metadata.resource_version


class Informer:
    """The objects of one list call, kept current by watching it: listed once, then watched; listed again when
    the watch's version expired or its stream broke. ``objects`` maps uid to the object (API JSON); ``changes`` counts
    the times they changed, so that what is worked out from them is kept until they change again (``version`` would
    not do: an event without a resourceVersion leaves it as it was); ``last_change`` is (uid, object, None when
    deleted) of the latest change when it was one event, None after a list, so that a view of them can follow
    event by event."""

    def __init__(self, client, list_method, clock=None, **kwargs):
        self.client = client
        self.list_method = list_method
        self.kwargs = kwargs
        self.clock = clock or time.monotonic
        self.objects = None
        self.version = None
        self.changes = 0
        self.last_change = None
        # Held while the objects change, so that another thread reads them whole (BackgroundInformer).
        self.lock = threading.Lock()

    def start_from(self, version, objects=None):
        """Watch from ``version`` without listing first, knowing ``objects`` ({uid: object}) so far."""
        with self.lock:
            self.version = version
            self.objects = dict(objects or {})
            self.changes += 1
            self.last_change = None
        return self

    def relist(self):
        items, version = self.client.list_with_version(self.list_method, **self.kwargs)
        with self.lock:
            self.version = version
            self.objects = {item["metadata"]["uid"]: item for item in items}
            self.changes += 1
            self.last_change = None
        return self.objects

    def snapshot(self):
        """(resourceVersion, {uid: object}) as of one moment, also while another thread watches."""
        with self.lock:
            return self.version, dict(self.objects or {})

    def wait(self, until, deadline, ended=None):
        """What ``until(objects, change)`` returns, once it is true or ``deadline`` (of the clock) passed.

        ``change`` is what was just seen: (event type, object) after an event, RELISTED after a list that
        replaced the objects, None at the first look. ``ended(seconds, quiet)``, when given, is called after each
        watch that ended by itself, with how long it ran and whether nothing (not even a bookmark) came; the wait
        ends when it returns true. A caller that waits for long guards there against a watch that ends at once,
        again and again (a proxy's timeout), which would otherwise be opened again in a busy loop.
        """
        if self.objects is None:
            self.relist()
        answer = until(self.objects, None)
        while not answer:
            opened = self.clock()
            remaining = deadline - opened
            if remaining <= 0:
                return answer
            quiet = True
            try:
                for event_type, obj in watch(self.list_method, self.version, remaining, **self.kwargs):
                    quiet = False
                    metadata = obj.get("metadata") or {}
                    with self.lock:
                        self.version = metadata.get("resourceVersion") or self.version
                        if event_type == "BOOKMARK":
                            continue
                        if event_type == "DELETED":
                            self.objects.pop(metadata.get("uid"), None)
                        else:
                            self.objects[metadata.get("uid")] = obj
                        self.changes += 1
                        self.last_change = (metadata.get("uid"), None if event_type == "DELETED" else obj)
                    answer = until(self.objects, (event_type, obj))
                    if answer:
                        return answer
            except WatchExpired:
                self.relist()
                answer = until(self.objects, RELISTED)
            else:
                if ended is not None and ended(self.clock() - opened, quiet):
                    return answer
        return answer


class BackgroundInformer:
    """An Informer listed once and kept current by a thread that watches it while the ``with`` block runs (up to
    ``deadline`` of its clock), so that the steps of one move read what it holds at any moment instead of listing it
    again each. The list too is taken by the thread, so that the block's first step (warming nodes) need not wait
    for it; the first read does. Should the thread fail (its list or watch refused), a read lists again in the
    caller's thread, where the error is raised. ``on_change(objects, change)``, when given, is called in the thread
    after the list and with each change it sees (as Informer.wait passes them), so that the block can act on what
    changes meanwhile."""

    def __init__(self, informer, deadline, on_change=None):
        self.informer = informer
        self.deadline = deadline
        self.on_change = on_change
        self._stopped = threading.Event()
        self._listed = threading.Event()
        self._thread = None

    def __enter__(self):
        self._thread = threading.Thread(target=self._follow, name="followed-informer", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *_exc):
        self.stop()

    def stop(self):
        """End the following before the block ends, once nothing will read it any more. Not joined: the thread sees
        this at its next event or at the end of its watch, and holds nothing."""
        self._stopped.set()

    def _follow(self):
        clock = self.informer.clock
        try:
            try:
                self.informer.relist()
            finally:
                self._listed.set()
            while not self._stopped.is_set() and clock() < self.deadline:
                opened = clock()
                self.informer.wait(self._seen, min(self.deadline, opened + FOLLOW_WATCH_SECONDS),
                                   ended=lambda _s, _q: True)
                if clock() - opened < 1:
                    # A watch that ends at once (a proxy's timeout) is not opened again and again: reads list instead.
                    return
        except (ApiException, KubeopsError):
            # A read lists again instead (snapshot), and meets there what stopped this thread (a refused list, a
            # lost connection, a lost Lease).
            return

    def _seen(self, objects, change):
        if self.on_change is not None and not self._stopped.is_set():
            self.on_change(objects, change)
        return self._stopped.is_set()

    def ready(self):
        """Wait until the thread has listed (or failed to); returns self."""
        self._listed.wait()
        return self

    def snapshot(self):
        """(resourceVersion, {uid: object}) as followed until now."""
        self.ready()
        if self.informer.objects is None or not self._thread.is_alive():
            self.informer.relist()
        return self.informer.snapshot()

    def objects(self):
        return list(self.snapshot()[1].values())


# A followed Informer's watch is opened again this often, so that its thread ends soon after its block.
FOLLOW_WATCH_SECONDS = 30

# The change an Informer passes to ``until`` after listing again: anything may have changed.
RELISTED = ("RELISTED", None)
