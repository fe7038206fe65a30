"""engine.cordon.apply_cordon against the in-memory api/ of fake_api: a cordon made once, check mode that patches
nothing, a node changed between its read and its patch planned again, a rotation's phase in the same patch."""

from __future__ import annotations

import pytest

from ansible_collections.kubeops.rotation.plugins.module_utils.engine import cordon as cordon_module
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.cordon import CordonRequest, apply_cordon
from ansible_collections.kubeops.rotation.plugins.module_utils.model.errors import NotFound
from ansible_collections.kubeops.rotation.plugins.module_utils.model.keys import CORDONED_BY, ROTATION_PHASE
from builders import node
from fake_api import FakeApi

NOW = "2026-12-03T06:00:00Z"
CORDON = CordonRequest(names=("n1",), why="kernel update")


@pytest.fixture
def fake(monkeypatch):
    return FakeApi().install(monkeypatch, cordon_module).add("nodes", node("n1", annotations={}), node("n2"))


def cordon(fake, request=CORDON, check_mode=False):
    return apply_cordon(fake.client(), request, check_mode, now=NOW)


def test_a_cordon_made_twice_changes_the_node_once(fake):
    (first,) = cordon(fake)
    (again,) = cordon(fake)
    assert first.changed and not again.changed
    assert fake.called("patch_node") == ["n1"], "the second finds it done and sends nothing"
    stored = fake.copy_of("nodes", "n1")
    assert stored["spec"]["unschedulable"] and stored["metadata"]["annotations"][CORDONED_BY] == "admin"
    assert again.reason == "already cordoned by admin at %s" % NOW


def test_check_mode_says_what_would_change_and_patches_nothing(fake):
    (change,) = cordon(fake, check_mode=True)
    assert change.changed and change.after["unschedulable"]
    assert fake.called("patch_node") == [] and not fake.copy_of("nodes", "n1")["spec"]["unschedulable"]


def test_a_node_cordoned_by_someone_else_between_read_and_patch_is_planned_again_and_left_as_it_is(fake):
    fake.script("patch_node", lambda: fake.update("nodes", "n1", lambda obj: obj["spec"].update(unschedulable=True)))
    (change,) = cordon(fake)
    assert fake.called("patch_node") == ["n1"] and fake.called("read_node") == ["n1"], "refused (422), read again"
    assert change.action == "none" and not change.changed
    assert CORDONED_BY not in fake.copy_of("nodes", "n1")["metadata"]["annotations"]


def test_uncordon_leaves_a_cordon_someone_else_made_unless_forced(fake):
    fake.update("nodes", "n1", lambda obj: obj["spec"].update(unschedulable=True))
    (kept,) = cordon(fake, CordonRequest(names=("n1",), state="uncordoned"))
    assert not kept.changed and fake.copy_of("nodes", "n1")["spec"]["unschedulable"]
    (forced,) = cordon(fake, CordonRequest(names=("n1",), state="uncordoned", force=True))
    assert forced.changed and not fake.copy_of("nodes", "n1")["spec"]["unschedulable"]


def test_a_rotations_cordon_records_its_phase_in_the_same_patch(fake):
    (change,) = cordon(fake, CordonRequest(names=("n1",), rotation_id="r1"))
    assert change.changed and fake.called("patch_node") == ["n1"]
    assert fake.copy_of("nodes", "n1")["metadata"]["annotations"][ROTATION_PHASE] == "cordoned"


def test_a_selector_and_names_cordon_each_node_once_sorted_by_name(fake):
    changes = cordon(fake, CordonRequest(names=("n2",), selector="kubernetes.io/hostname in (n1,n2)"))
    assert [change.name for change in changes] == ["n1", "n2"] and all(change.changed for change in changes)
    assert sorted(fake.called("patch_node")) == ["n1", "n2"]


def test_a_node_that_does_not_exist_stops_the_cordon_before_any_patch(fake):
    with pytest.raises(NotFound, match="gone"):
        cordon(fake, CordonRequest(names=("n1", "gone")))
    assert fake.called("patch_node") == []
