"""api.watch.Informer, the one way the collection watches: a list, then a watch, listed again when the watch
expired or broke; and BackgroundInformer, an Informer kept current by a thread. The API server's list and watch are stood in
for by scripts of their answers."""

from __future__ import annotations

import itertools
import threading
import time

import pytest

from ansible_collections.kubeops.rotation.plugins.module_utils.api import watch as watch_module
from ansible_collections.kubeops.rotation.plugins.module_utils.api.errors import ConnectionFailed
from ansible_collections.kubeops.rotation.plugins.module_utils.api.watch import (
    RELISTED,
    BackgroundInformer,
    Informer,
    WatchExpired,
)


def obj(uid, version, ready=False):
    return {"metadata": {"uid": uid, "resourceVersion": str(version)}, "ready": ready}


class Lists:
    """list_with_version answering each list from a script: (items, version)."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.calls = 0

    def list_with_version(self, _list_method, **_kwargs):
        self.calls += 1
        return self.answers.pop(0)


@pytest.fixture
def watches(monkeypatch):
    """The watch streams to answer, in turn: each a list of (type, object), or an exception to raise after them."""
    streams = []
    started_from = []

    def fake_watch(_list_method, version, _timeout, **_kwargs):
        started_from.append(version)
        events, failure = streams.pop(0) if streams else ([], None)
        yield from events
        if failure:
            raise failure

    monkeypatch.setattr(watch_module, "watch", fake_watch)
    return streams, started_from


def test_it_lists_once_then_follows_the_watch_and_hands_each_change_to_until(watches):
    streams, started_from = watches
    streams.append(([("ADDED", obj("b", 11)), ("BOOKMARK", {"metadata": {"resourceVersion": "12"}}),
                     ("MODIFIED", obj("b", 13, ready=True))], None))
    lists = Lists(([obj("a", 9)], "10"))
    seen = []

    def until(objects, change):
        seen.append(change)
        return objects.get("b", {}).get("ready")
    assert Informer(lists, "list pods").wait(until, deadline=float("inf")) is True
    assert lists.calls == 1 and started_from == ["10"]
    assert seen == [None, ("ADDED", obj("b", 11)), ("MODIFIED", obj("b", 13, ready=True))], "no bookmark told"


def test_an_expired_or_broken_watch_is_listed_again_and_watched_from_that_list(watches):
    streams, started_from = watches
    streams.append(([("DELETED", obj("a", 11))], WatchExpired()))
    streams.append(([("ADDED", obj("c", 21))], None))
    lists = Lists(([obj("a", 9)], "10"), ([obj("b", 19)], "20"))
    changes = []

    def until(objects, change):
        changes.append((sorted(objects), change))
        return "c" in objects
    informer = Informer(lists, "list pods")
    assert informer.wait(until, deadline=float("inf"))
    assert started_from == ["10", "20"] and informer.version == "21"
    assert changes[1:3] == [([], ("DELETED", obj("a", 11))), (["b"], RELISTED)]


def test_ended_hears_of_each_watch_that_ended_by_itself_and_may_end_the_wait(watches):
    streams, started_from = watches
    streams.append(([("BOOKMARK", {"metadata": {"resourceVersion": "8"}})], None))
    clock = iter([0.0, 1.0, 2.0, 2.5]).__next__
    heard = []

    def ended(seconds, quiet):
        heard.append((seconds, quiet))
        return len(heard) == 2
    informer = Informer(Lists(), "list pods", clock=clock).start_from("7")
    assert informer.wait(lambda objects, change: False, deadline=10.0, ended=ended) is False
    assert started_from == ["7", "8"] and heard == [(1.0, False), (0.5, True)], "a bookmark is not nothing"


def test_started_from_a_version_it_lists_nothing_reopens_a_watch_that_ended_and_stops_at_the_deadline(watches):
    streams, started_from = watches
    clock = iter([0.0, 5.0, 11.0]).__next__
    lists = Lists()
    informer = Informer(lists, "list pods", clock=clock).start_from("7", {"a": obj("a", 6)})
    assert informer.wait(lambda objects, change: "a" not in objects, deadline=10.0) is False
    assert lists.calls == 0 and started_from == ["7", "7"]


def test_changes_counts_each_list_and_each_event_but_no_bookmark_even_when_the_version_stays(watches):
    streams, _started_from = watches
    streams.append(([("ADDED", obj("b", 11)), ("BOOKMARK", {"metadata": {"resourceVersion": "12"}}),
                     ("MODIFIED", {"metadata": {"uid": "b"}}), ("DELETED", obj("a", 13))], WatchExpired()))
    lists = Lists(([obj("a", 9)], "10"), ([obj("b", 19)], "20"))
    informer = Informer(lists, "list pods")
    seen = []

    def until(_objects, change):
        seen.append((informer.changes, informer.version))
        return change == RELISTED
    assert informer.wait(until, deadline=float("inf"))
    assert seen == [(1, "10"), (2, "11"), (3, "12"), (4, "13"), (5, "20")]
    assert informer.start_from("20", informer.objects).changes == 6


class HeldWatches:
    """Watch streams for a BackgroundInformer Informer's thread: each yields its events, then waits until released."""

    def __init__(self, monkeypatch, *streams):
        self.streams = list(streams)
        self.release = threading.Event()
        self.opened = 0
        monkeypatch.setattr(watch_module, "watch", self.watch)

    def watch(self, _list_method, _version, _timeout, **_kwargs):
        self.opened += 1
        events, failure = self.streams.pop(0) if self.streams else ([], None)
        yield from events
        if failure:
            raise failure
        self.release.wait(5)


def eventually(condition, seconds=5.0):
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)
    return condition()


def test_followed_lists_once_and_its_thread_keeps_what_it_holds_current(monkeypatch):
    held = HeldWatches(monkeypatch, ([("ADDED", obj("b", 11)), ("DELETED", obj("a", 12))], None))
    lists = Lists(([obj("a", 9)], "10"))
    with BackgroundInformer(Informer(lists, "list pods"), deadline=time.monotonic() + 60) as followed:
        assert eventually(lambda: followed.snapshot() == ("12", {"b": obj("b", 11)}))
        assert followed.objects() == [obj("b", 11)] and lists.calls == 1
    held.release.set()
    assert eventually(lambda: not followed._thread.is_alive()), "the thread ends once its block has"


def test_followed_lists_again_on_each_read_once_its_watch_failed(monkeypatch):
    HeldWatches(monkeypatch, ([], ConnectionFailed("the API server is gone")))
    lists = Lists(([obj("a", 9)], "10"), ([obj("b", 19)], "20"))
    with BackgroundInformer(Informer(lists, "list pods"), deadline=time.monotonic() + 60) as followed:
        assert eventually(lambda: not followed._thread.is_alive())
        assert followed.snapshot() == ("20", {"b": obj("b", 19)}) and lists.calls == 2


class HeldLists(Lists):
    """Lists whose first answer comes once released, as a list of thousands of pods takes its time."""

    def __init__(self, *answers):
        super().__init__(*answers)
        self.release = threading.Event()

    def list_with_version(self, list_method, **kwargs):
        if self.calls == 0:
            self.release.wait(5)
        answer = super().list_with_version(list_method, **kwargs)
        if isinstance(answer, Exception):
            raise answer
        return answer


def test_followed_lists_in_its_thread_so_the_block_goes_on_and_its_first_read_waits_for_the_list(monkeypatch):
    HeldWatches(monkeypatch)
    lists = HeldLists(([obj("a", 9)], "10"))
    with BackgroundInformer(Informer(lists, "list pods"), deadline=time.monotonic() + 60) as followed:
        read = []
        reader = threading.Thread(target=lambda: read.append(followed.snapshot()))
        reader.start()
        reader.join(0.2)
        assert reader.is_alive() and not read, "the read waits for the list"
        lists.release.set()
        reader.join(5)
        assert read == [("10", {"a": obj("a", 9)})] and lists.calls == 1


def test_followed_whose_list_failed_in_its_thread_lists_in_the_reader_which_hears_the_error(monkeypatch):
    HeldWatches(monkeypatch)
    lists = HeldLists(ConnectionFailed("the API server is gone"), ConnectionFailed("still gone"))
    lists.release.set()
    with BackgroundInformer(Informer(lists, "list pods"), deadline=time.monotonic() + 60) as followed:
        with pytest.raises(ConnectionFailed, match="still gone"):
            followed.ready().objects()


def test_followed_stopped_before_its_block_ends_stops_watching_at_its_next_event(monkeypatch):
    held = HeldWatches(monkeypatch, ([], None))
    ticks = itertools.count(0, 2)  # each watch lasts long enough to be opened again, until the deadline
    informer = Informer(Lists(([obj("a", 9)], "10")), "list pods", clock=lambda: next(ticks))
    with BackgroundInformer(informer, deadline=100) as followed:
        assert followed.objects() == [obj("a", 9)]
        followed.stop()
        held.release.set()
        assert eventually(lambda: not followed._thread.is_alive())
        assert held.opened == 1, "no watch opened again"
