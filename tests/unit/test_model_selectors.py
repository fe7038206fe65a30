from __future__ import annotations

import pytest

from ansible_collections.kubeops.rotation.plugins.module_utils.model.selectors import (
    expression_matches,
    field_selector_text_error,
    label_key_error,
    label_value_error,
    labels_match,
    labels_text,
    selector_matches,
    selector_text,
    selector_text_error,
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


@pytest.mark.parametrize("text", [
    "", "app=web", "app==web", "app!=web", "app", "!legacy", "app=", "a=,b", "tier in (a,b)", "tier notin (a)",
    "x in (a,)", "x notin (in)", "gen>5", "gen < -3", "karpenter.sh/nodepool=general", " app = web , !b ",
    "app=web,tier in (a,b),!legacy", "kubeops.io/test=t1a2b3", "a.b-c_d=V.1-2_3",
])
def test_selectors_the_api_server_takes_are_valid(text):
    assert selector_text_error(text) is None


def test_every_selector_the_collection_writes_is_valid():
    selector = {"matchLabels": {"tier": "front", "app": "web"}, "matchExpressions": [
        {"key": "zone", "operator": "In", "values": ["a", "b"]},
        {"key": "env", "operator": "NotIn", "values": ["dev"]},
        {"key": "gpu", "operator": "Exists"},
        {"key": "legacy", "operator": "DoesNotExist"}]}
    assert selector_text_error(selector_text(selector)) is None


@pytest.mark.parametrize("text, reason", [
    ("app in (a", 'the list after "app in" has no closing ")"'),
    ("=x", 'it needs a label key where "=" is'),
    ("a==b==c", '"==" follows a==b where "," or the end should be'),
    ("a b", '"b" follows the key a where an operator (=, ==, !=, in, notin, <, >) should be'),
    ("a=b,", 'a label key must follow the "," after a=b'),
    (",a", 'it needs a label key where "," is'),
    ("!a=b", '"=" follows !a where "," or the end should be'),
    ("!", '"!" must be followed by a label key'),
    ("a in ()", "a in () has no values"),
    ("a in a", "a in needs its values in parentheses, like a in (a,b)"),
    ("a in (a b)", '"b" follows the value a of a in where "," or ")" should be'),
    ("a in (=)", '"=" is among the values of a in'),
    ("a>b", "a > needs a whole number after it"),
    ("a=(b)", '"(" follows a= where a value should be'),
    ("in=5", 'it needs a label key where "in" is'),
    ("a=b c", '"c" follows a=b where "," or the end should be'),
])
def test_malformed_selectors_say_where_and_what(text, reason):
    assert selector_text_error(text) == reason


@pytest.mark.parametrize("text", ["a=-x", "a in (ok,-bad)", "Bad_/x=1", "a/b/c=1", "%s=1" % ("k" * 64),
                                  "a=%s" % ("v" * 64), "/a=1"])
def test_keys_and_values_the_api_server_refuses_are_malformed(text):
    assert "label" in selector_text_error(text)


def test_label_keys_and_values_follow_the_api_servers_rules():
    assert label_key_error("app") is None
    assert label_key_error("karpenter.sh/nodepool") is None
    assert label_key_error("") == "a label key cannot be empty"
    assert label_key_error(None) == "a label key cannot be empty"
    assert "prefix" in label_key_error("Karpenter.SH/nodepool")
    assert "at most 63" in label_key_error("-app")
    assert label_value_error("") is None
    assert label_value_error("general-v2") is None
    assert "at most 63" in label_value_error("v" * 64)
    assert "at most 63" in label_value_error("web-")
    assert label_value_error(2) == "the label value 2 is not a string (quote it)"
    assert label_value_error(True) == "the label value True is not a string (quote it)"


@pytest.mark.parametrize("text", ["", "status.phase=Running", "status.phase!=Running,spec.nodeName=n1",
                                  "spec.nodeName==n1", "a=b,", "metadata.name=a\\,b", "a=b\\=c"])
def test_field_selectors_the_api_server_takes_are_valid(text):
    assert field_selector_text_error(text) is None


@pytest.mark.parametrize("text, reason", [
    ("status.phase", "status.phase is not field=value, field==value or field!=value"),
    ("=Running", '"" in =Running is not a field name like status.phase'),
    ("status phase=Running", '"status phase" in status phase=Running is not a field name like status.phase'),
    ("a=b\\", "it ends with a lone \\"),
    ("a=\\x", "\\x is not an escape (a field selector knows \\\\ \\, \\=)"),
])
def test_malformed_field_selectors_say_what(text, reason):
    assert field_selector_text_error(text) == reason
