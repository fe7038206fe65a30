from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.module_utils.model.patches import (
    annotation_path,
    annotations_patch,
    guarded,
)
from builders import node


def test_annotation_paths_escape_slash_and_tilde():
    assert annotation_path("kubeops.io/rotation-id") == "/metadata/annotations/kubeops.io~1rotation-id"
    assert annotation_path("a~b/c") == "/metadata/annotations/a~0b~1c"


def test_a_missing_annotations_map_is_created_whole():
    assert annotations_patch(node(), {"a/b": "1", "c": "2"}) == [
        {"op": "add", "path": "/metadata/annotations", "value": {"a/b": "1", "c": "2"}}]
    assert annotations_patch(node(), {}, removed=["a"]) == []


def test_only_changed_keys_are_set_and_only_present_keys_removed():
    subject = node(annotations={"same": "1", "old": "x", "gone": "y"})
    assert annotations_patch(subject, {"same": "1", "old": "new", "added": "2"}, removed=["gone", "absent"]) == [
        {"op": "add", "path": "/metadata/annotations/old", "value": "new"},
        {"op": "add", "path": "/metadata/annotations/added", "value": "2"},
        {"op": "remove", "path": "/metadata/annotations/gone"}]
    assert annotations_patch(subject, {"same": "1"}) == []


def test_guarded_leads_with_the_resource_version_test_and_keeps_nothing_empty():
    operations = [{"op": "add", "path": "/spec/unschedulable", "value": True}]
    assert guarded(node(resource_version="7"), operations) == [
        {"op": "test", "path": "/metadata/resourceVersion", "value": "7"}] + operations
    assert guarded(node(), []) == []
