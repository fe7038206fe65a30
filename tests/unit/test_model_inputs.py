from __future__ import annotations

import pytest

from ansible_collections.kubeops.rotation.plugins.module_utils.model.inputs import (
    field_selector_error,
    first_empty,
    first_error,
    labels_error,
    names_error,
    number_error,
    pod_keys_error,
    quantities_error,
    selector_error,
    text_error,
)


def test_first_error_is_the_first_reason_given():
    assert first_error(None, None) is None
    assert first_error(None, "b is wrong.", "c is wrong.") == "b is wrong."


def test_a_value_not_given_is_never_refused():
    assert text_error("rotation_id", None) is None
    assert names_error("nodes", None) is None
    assert selector_error("node_selector", None) is None
    assert field_selector_error("field_selector", None) is None
    assert number_error("timeout", None, 1) is None
    assert quantities_error("requests", None) is None
    assert labels_error("node_selector", None) is None


@pytest.mark.parametrize("text", ["", "  ", "\t"])
def test_an_empty_or_blank_text_is_refused_naming_the_option(text):
    assert text_error("rotation_id", text) == "rotation_id is empty: give a value or leave the option out."
    assert text_error("rotation_id", text, optional=False) == "rotation_id is empty: give a value."
    assert text_error("rotation_id", "r1") is None


def test_lists_of_names_must_name_something_and_every_entry_must_be_a_name():
    assert names_error("nodes", ["a", "b"]) is None
    assert names_error("nodes", [], "node") == "nodes is empty: name at least one node, or leave the option out."
    assert names_error("nodes", [], "node", optional=False) == "nodes is empty: name at least one node."
    assert names_error("nodes", ["a", " "], "node") == "nodes has an empty node (item 2)."
    assert names_error("nodes", [None], "node") == "nodes has an empty node (item 1)."


def test_pods_are_named_namespace_slash_name():
    assert pod_keys_error("pods", ["ns/a", "ns/b"]) is None
    assert pod_keys_error("pods", []) is None
    assert pod_keys_error("planned_evictions", ["ns", "ns/a", "/a", "a/b/c"]) == \
        "planned_evictions takes namespace/name, got ns, /a, a/b/c."


def test_the_first_empty_entry_is_counted_from_one():
    assert first_empty(["a", "b"]) is None
    assert first_empty(["a", " ", ""]) == 2
    assert first_empty([None]) == 1
    assert first_empty([]) is None


@pytest.mark.parametrize("name, check", [("node_selector", selector_error), ("field_selector", field_selector_error)])
def test_an_empty_selector_is_refused_since_it_selects_everything(name, check):
    assert check(name, " ") == "%s is empty: to Kubernetes an empty selector selects everything; give one or " \
                               "leave the option out." % name


def test_a_malformed_label_selector_is_quoted_with_the_reason():
    assert selector_error("pod_selector", "app=web,tier in (a,b)") is None
    assert selector_error("pod_selector", " a==b==c ") == \
        'pod_selector "a==b==c" is not a label selector: "==" follows a==b where "," or the end should be.'
    assert selector_error("node_selector", "app in (a") == \
        'node_selector "app in (a" is not a label selector: the list after "app in" has no closing ")".'


def test_a_malformed_field_selector_is_quoted_with_the_reason():
    assert field_selector_error("field_selector", "status.phase=Running") is None
    assert field_selector_error("field_selector", "status.phase") == \
        'field_selector "status.phase" is not a field selector: status.phase is not field=value, field==value ' \
        'or field!=value.'


@pytest.mark.parametrize("value, minimum, error", [
    (0, 1, "timeout must be 1 or more, got 0."),
    (-1, 0, "timeout must be 0 or more, got -1."),
    (1, 1, None),
    (0, 0, None),
])
def test_numbers_below_their_minimum_are_refused(value, minimum, error):
    assert number_error("timeout", value, minimum) == error


def test_a_number_read_from_what_was_written_is_shown_as_written():
    assert number_error("drain_node_timeout", 0, 1, shown="False") == "drain_node_timeout must be 1 or more, got False."
    assert number_error("drain_node_timeout", -1, 1, shown="-1.0") == "drain_node_timeout must be 1 or more, got -1.0."
    assert number_error("drain_node_timeout", 1, 1, shown="1.0") is None


def test_quantities_must_parse_and_be_positive_where_a_size_is_needed():
    capacity = {"cpu": "3920m", "memory": "15Gi", "pods": 58}
    resources = ("cpu", "memory", "pods")
    assert quantities_error("template_capacity", capacity, required=resources, above_zero=True) is None
    assert quantities_error("template_capacity", {"cpu": "4"}, required=resources) == \
        "template_capacity needs cpu, memory, pods; memory, pods missing."
    assert quantities_error("template_capacity", dict(capacity, memory="16 GB"), required=resources) == \
        'template_capacity.memory "16 GB" is not a Kubernetes quantity (like 500m, 2, 16Gi).'
    assert quantities_error("template_capacity", dict(capacity, cpu="0"), above_zero=True) == \
        "template_capacity.cpu must be more than 0, got 0."
    assert quantities_error("requests", {"cpu": "0", "memory": "16Mi"}) is None
    assert quantities_error("requests", {"cpu": "-10m"}) == "requests.cpu must be 0 or more, got -10m."
    assert quantities_error("requests", {"cpu": "lots"}) == \
        'requests.cpu "lots" is not a Kubernetes quantity (like 500m, 2, 16Gi).'
    assert quantities_error("requests", {"cpu": ["1"]}) == \
        "requests.cpu \"['1']\" is not a Kubernetes quantity (like 500m, 2, 16Gi)."
    assert quantities_error("requests", {}) is None


def test_labels_must_be_label_keys_and_string_values():
    assert labels_error("node_selector", {"karpenter.sh/nodepool": "general", "zone": ""}) is None
    assert labels_error("node_selector", {"version": 2}) == \
        "node_selector.version: the label value 2 is not a string (quote it)."
    assert labels_error("node_selector", {"bad key": "x"}).startswith("node_selector: the label key bad key must")
    assert labels_error("node_selector", {"pool": "general-"}).startswith(
        "node_selector.pool: the label value general- must")
