from __future__ import annotations

import pytest

from ansible_collections.kubeops.rotation.plugins.module_utils.model.selectors import (
    expression_matches,
    labels_match,
    labels_text,
    selector_matches,
    selector_text,
)

LABELS = {"app": "web", "tier": "front"}


@pytest.mark.parametrize("operator, key, values, matches", [
    ("In", "tier", ["front", "x"], True),
    ("In", "tier", ["back"], False),
    ("In", "gpu", ["front"], False),
    ("NotIn", "tier", ["front"], False),
    ("NotIn", "tier", ["back"], True),
    ("NotIn", "gpu", ["front"], True),
    ("Exists", "tier", None, True),
    ("Exists", "gpu", None, False),
    ("DoesNotExist", "gpu", None, True),
    ("DoesNotExist", "tier", None, False),
])
def test_each_operator_matches_like_the_api_server(operator, key, values, matches):
    expression = {"key": key, "operator": operator}
    if values is not None:
        expression["values"] = values
    assert expression_matches(expression, LABELS) is matches


def test_an_unknown_operator_is_an_error_not_a_match():
    with pytest.raises(ValueError, match="unknown label selector operator Gt"):
        expression_matches({"key": "tier", "operator": "Gt", "values": ["1"]}, LABELS)
    with pytest.raises(ValueError, match="Gt"):
        selector_text({"matchExpressions": [{"key": "tier", "operator": "Gt", "values": ["1"]}]})


def test_label_selectors_match_like_the_api_server():
    assert selector_matches({}, LABELS)
    assert selector_matches(None, LABELS)
    assert selector_matches({"matchLabels": {"app": "web"}}, LABELS)
    assert not selector_matches({"matchLabels": {"app": "db"}}, LABELS)
    assert not selector_matches({"matchLabels": {"app": "web"}}, None)
    assert selector_matches({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["front", "x"]},
                                                  {"key": "gpu", "operator": "DoesNotExist"}]}, LABELS)
    assert not selector_matches({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["front"]}]},
                                LABELS)


def test_match_labels_and_expressions_must_both_hold():
    both = {"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["x"]}]}
    assert not selector_matches(both, LABELS)
    assert selector_matches(dict(both, matchExpressions=[{"key": "tier", "operator": "Exists"}]), LABELS)


def test_labels_match_wants_every_key_and_value():
    assert labels_match(None, LABELS) and labels_match({}, None)
    assert labels_match({"app": "web"}, LABELS)
    assert not labels_match({"app": "web", "gpu": "true"}, LABELS)
    assert not labels_match({"app": "web"}, None)


def test_selector_text_writes_labels_sorted_then_each_expression():
    selector = {"matchLabels": {"tier": "front", "app": "web"}, "matchExpressions": [
        {"key": "zone", "operator": "In", "values": ["a", "b"]},
        {"key": "env", "operator": "NotIn", "values": ["dev"]},
        {"key": "gpu", "operator": "Exists"},
        {"key": "legacy", "operator": "DoesNotExist"}]}
    assert selector_text(selector) == "app=web,tier=front,zone in (a,b),env notin (dev),gpu,!legacy"
    assert selector_text(None) == "" and selector_text({}) == ""


def test_labels_text_selects_exactly_those_labels():
    assert labels_text({"b": "2", "a": "1"}) == "a=1,b=2"
    assert labels_text(None) == ""


def test_node_requirements_compare_numbers_with_gt_and_lt():
    from ansible_collections.kubeops.rotation.plugins.module_utils.model.selectors import node_requirement_matches

    assert node_requirement_matches({"key": "gen", "operator": "Gt", "values": ["5"]}, {"gen": "6"})
    assert not node_requirement_matches({"key": "gen", "operator": "Gt", "values": ["5"]}, {"gen": "5"})
    assert node_requirement_matches({"key": "gen", "operator": "Lt", "values": ["5"]}, {"gen": "4"})
    assert not node_requirement_matches({"key": "gen", "operator": "Lt", "values": ["5"]}, {})
    assert not node_requirement_matches({"key": "gen", "operator": "Gt", "values": ["5"]}, {"gen": "new"})


def test_node_selector_terms_read_match_fields_and_an_empty_term_selects_nothing():
    from ansible_collections.kubeops.rotation.plugins.module_utils.model.selectors import node_selector_term_matches

    by_name = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
    assert node_selector_term_matches(by_name, {}, {"metadata.name": "n1"})
    assert not node_selector_term_matches(by_name, {}, {"metadata.name": "n2"})
    assert not node_selector_term_matches({}, {"a": "1"}, {"metadata.name": "n1"})
