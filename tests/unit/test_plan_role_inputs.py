"""The roles' own input checks (filter kubeops.rotation.input_errors): the modules' rules, the roles' words. The
expected messages are those the roles' Jinja checks gave before the rules moved here, word for word."""

from __future__ import annotations

import re

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.kubeops.rotation.plugins.filter.input_errors import FilterModule
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.role_inputs import jinja_int, role_input_errors

ROTATE_NODES_DEFAULTS = {
    "rotate_nodes_id": "r1", "rotate_nodes_soak_seconds": 0, "rotate_nodes_lease_seconds": 300,
    "rotate_nodes_warm_timeout": 600, "rotate_nodes_restart_timeout": 900, "rotate_nodes_retire_timeout": 600,
    "rotate_nodes_evict_timeout": 600, "rotate_nodes_max_in_flight": None,
    "rotate_nodes_max_unavailable_per_owner": None, "rotate_nodes_retire": "delete", "rotate_nodes_retire_tasks": "",
    "rotate_nodes_gate_timeout": 300, "rotate_nodes_gate_interval": 10, "rotate_nodes_gates": {},
    "rotate_nodes_canary_size": "", "rotate_nodes_canary_soak_seconds": 0, "rotate_nodes_windows": [],
    "rotate_nodes_window_poll_seconds": 30, "rotate_nodes_window_batch_seconds": 600,
    "rotate_nodes_rollback": False, "rotate_nodes_nodes": ["old-1"], "rotate_nodes_node_selector": "",
    "rotate_nodes_target_kubelet_version": "", "rotate_nodes_wanted_labels": {}, "rotate_nodes_max_node_age": "",
    "rotate_nodes_karpenter_drifted": False, "rotate_nodes_karpenter_nodepools": [], "rotate_nodes_batch_size": "1",
    "rotate_nodes_pool_node_selector": {}, "rotate_nodes_pool_zones": [], "rotate_nodes_template_capacity": {},
    "rotate_nodes_abort_if": {},
}
DRAIN_NODE_DEFAULTS = {
    "drain_node_nodes": ["node-1"], "drain_node_node_selector": "", "drain_node_timeout": 300,
    "drain_node_max_in_flight": None, "drain_node_max_per_node": None, "drain_node_max_per_namespace": None,
    "drain_node_max_evictions": None, "drain_node_grace_period": None, "drain_node_max_unavailable_per_owner": None,
    "drain_node_namespaces": [], "drain_node_exclude_namespaces": [],
}
# The rule the roles' Jinja checked max_unavailable_per_owner with, on the value as a trimmed string.
COUNT_OR_PERCENT = r"^0*([1-9][0-9]*|([1-9][0-9]?|100)%)$"


def rotate_nodes(**changed):
    return role_input_errors(dict(ROTATE_NODES_DEFAULTS, **changed), "rotate_nodes")


def drain_node(**changed):
    return role_input_errors(dict(DRAIN_NODE_DEFAULTS, **changed), "drain_node")


def test_the_roles_defaults_with_an_id_or_a_node_are_accepted():
    assert rotate_nodes() == []
    assert drain_node() == []
    assert drain_node(drain_node_nodes=[], drain_node_node_selector="pool=old") == []


@pytest.mark.parametrize("value, number", [
    (3, 3), ("3", 3), (" 3 ", 3), ("-1", -1), ("2.7", 2), (-0.5, 0), ("-1.0", -1), (True, 1), (False, 0),
    (None, 0), ("abc", 0), ("", 0), ("0x10", 0), ("1_000", 1000), ("1e3", 1000), ("inf", 0), ("nan", 0),
])
def test_numbers_are_read_as_jinja_int_filter_reads_them(value, number):
    assert jinja_int(value) == number


def test_rotate_nodes_refuses_each_input_naming_its_variable_in_the_order_of_the_checks():
    assert rotate_nodes(
        rotate_nodes_id=" ", rotate_nodes_soak_seconds=-1, rotate_nodes_lease_seconds=4, rotate_nodes_warm_timeout=0,
        rotate_nodes_restart_timeout="0", rotate_nodes_retire_timeout=-5, rotate_nodes_evict_timeout=0,
        rotate_nodes_max_in_flight=0, rotate_nodes_max_unavailable_per_owner="0%", rotate_nodes_retire="tasks",
        rotate_nodes_retire_tasks=" ") == [
        "rotate_nodes_id is required: a rerun with the same id continues the rotation instead of starting over.",
        "rotate_nodes_soak_seconds must be 0 or more, got -1.",
        "rotate_nodes_lease_seconds must be 5 or more, got 4.",
        "rotate_nodes_warm_timeout must be 1 or more, got 0.",
        "rotate_nodes_restart_timeout must be 1 or more, got 0.",
        "rotate_nodes_retire_timeout must be 1 or more, got -5.",
        "rotate_nodes_evict_timeout must be 1 or more, got 0.",
        "rotate_nodes_max_in_flight must be 1 or more, got 0.",
        "rotate_nodes_max_unavailable_per_owner must be a count like 1 or a percent like 25%, got 0%.",
        "rotate_nodes_retire_tasks is empty: rotate_nodes_retire=tasks needs the task file to run per node.",
    ]


def test_rotate_nodes_needs_retire_tasks_only_when_it_retires_by_tasks():
    assert rotate_nodes(rotate_nodes_retire="tasks", rotate_nodes_retire_tasks="retire.yml") == []
    assert rotate_nodes(rotate_nodes_retire="delete", rotate_nodes_retire_tasks="") == []


def test_a_duration_is_seconds_or_numbers_with_units_and_is_shown_as_it_was_written():
    assert rotate_nodes(rotate_nodes_lease_seconds="4") == ["rotate_nodes_lease_seconds must be 5 or more, got 4."]
    assert rotate_nodes(rotate_nodes_evict_timeout="1h30m", rotate_nodes_soak_seconds="2m", rotate_nodes_gate_timeout=0,
                        rotate_nodes_warm_timeout=" 600 ") == []
    for value in (None, False, "abc", "4.9", "-0.5", "90x"):
        assert rotate_nodes(rotate_nodes_evict_timeout=value) == [
            "rotate_nodes_evict_timeout must be a duration like 90, 90s, 10m or 1h30m, got %s." % value]
    assert rotate_nodes(rotate_nodes_soak_seconds=-1) == ["rotate_nodes_soak_seconds must be 0 or more, got -1."]
    assert rotate_nodes(rotate_nodes_id=None) == [
        "rotate_nodes_id is required: a rerun with the same id continues the rotation instead of starting over."]


@pytest.mark.parametrize("value", [
    "1", "007", "25%", "100%", "0100%", " 5 ", 3, "0", "0%", "000%", "101%", "1000%", "%", "5%%", "+5", "-1", "1.5",
    "abc", "10 %", " ", True, 2.0, "\u0663", "\u00b2",
])
def test_max_unavailable_per_owner_is_a_count_or_a_percent_as_the_jinja_check_matched_it(value):
    expected = [] if re.match(COUNT_OR_PERCENT, str(value).strip()) else [
        "rotate_nodes_max_unavailable_per_owner must be a count like 1 or a percent like 25%%, got %s." % (value,)]
    assert rotate_nodes(rotate_nodes_max_unavailable_per_owner=value) == expected


@pytest.mark.parametrize("value", [None, ""])
def test_max_unavailable_per_owner_null_or_empty_is_left_out(value):
    assert rotate_nodes(rotate_nodes_max_unavailable_per_owner=value) == []
    assert drain_node(drain_node_max_unavailable_per_owner=value) == []


def test_drain_node_refuses_each_input_naming_its_variable_in_the_order_of_the_checks():
    assert drain_node(
        drain_node_nodes=[], drain_node_node_selector="  ", drain_node_timeout=0, drain_node_max_in_flight=0,
        drain_node_max_per_node="-1", drain_node_max_per_namespace=0, drain_node_max_evictions=-1,
        drain_node_grace_period="-2", drain_node_max_unavailable_per_owner="150%",
        drain_node_namespaces=["shop", " "], drain_node_exclude_namespaces=[""]) == [
        "drain_node_nodes and drain_node_node_selector are both empty: name the nodes to drain.",
        "drain_node_timeout must be 1 or more, got 0.",
        "drain_node_max_in_flight must be 1 or more, got 0.",
        "drain_node_max_per_node must be 1 or more, got -1.",
        "drain_node_max_per_namespace must be 1 or more, got 0.",
        "drain_node_max_evictions must be 0 or more, got -1.",
        "drain_node_grace_period must be 0 or more, got -2.",
        "drain_node_max_unavailable_per_owner must be a count like 1 or a percent like 25%, got 150%.",
        "drain_node_namespaces has an empty namespace name.",
        "drain_node_exclude_namespaces has an empty namespace name.",
    ]


def test_drain_node_limits_left_out_are_not_checked_and_zero_evictions_or_grace_are_allowed():
    assert drain_node(drain_node_max_evictions=0, drain_node_grace_period=0) == []
    assert drain_node(drain_node_timeout="0s") == ["drain_node_timeout must be 1 or more, got 0s."]


def test_a_namespace_entry_that_the_evict_module_would_refuse_is_refused_before_the_cordon():
    assert drain_node(drain_node_namespaces=["shop", None]) == ["drain_node_namespaces has an empty namespace name."]


def test_the_filter_applies_the_named_roles_checks_and_refuses_another_role():
    errors = FilterModule().filters()["input_errors"]
    assert errors(dict(DRAIN_NODE_DEFAULTS, drain_node_timeout=0), "drain_node") == [
        "drain_node_timeout must be 1 or more, got 0."]
    with pytest.raises(AnsibleFilterError, match="the roles drain_node, rotate_nodes, not of rebalance"):
        errors({}, "rebalance")


def test_rotate_nodes_refuses_gates_it_does_not_know_and_bounds_of_their_waits():
    assert rotate_nodes(rotate_nodes_gates={"prometheus": {"url": "http://p:9090"}, "grafana": {}, "pager": 1},
                        rotate_nodes_gate_timeout=-1, rotate_nodes_gate_interval=0) == [
        "rotate_nodes_gate_timeout must be 0 or more, got -1.",
        "rotate_nodes_gate_interval must be 1 or more, got 0.",
        "rotate_nodes_gates has no gate kind grafana, pager: the kinds are prometheus, alertmanager, kubernetes, http."]
    assert rotate_nodes(rotate_nodes_gates=["http://p"]) == [
        "rotate_nodes_gates must be a mapping of prometheus, alertmanager, kubernetes, http, got ['http://p']."]


@pytest.mark.parametrize("rotation_id", ["My_Rotation", "pool.2026", "-pool", "pool-", "a" * 55])
def test_rotate_nodes_refuses_an_id_that_cannot_name_the_warm_deployment(rotation_id):
    (error,) = rotate_nodes(rotate_nodes_id=rotation_id)
    assert error.startswith("rotate_nodes_id %s is not a DNS-1123 label of at most 54 characters" % rotation_id)


def test_the_refusal_of_an_id_suggests_one_that_would_do():
    assert rotate_nodes(rotate_nodes_id="My_Rotation")[0].endswith("; for example my-rotation.")
    assert rotate_nodes(rotate_nodes_id="general-2026-12") == []


def test_rotate_nodes_refuses_a_canary_that_is_no_count_nor_percent():
    assert rotate_nodes(rotate_nodes_canary_size="0", rotate_nodes_canary_soak_seconds=-1) == [
        "rotate_nodes_canary_size must be a count like 1 or a percent like 25%, got 0.",
        "rotate_nodes_canary_soak_seconds must be 0 or more, got -1."]
    assert rotate_nodes(rotate_nodes_canary_size="1") == []


def test_rotate_nodes_refuses_a_maintenance_window_that_makes_no_sense():
    assert rotate_nodes(rotate_nodes_windows=[{"schedule": "0 22 * *", "duration": "6h"}]) == [
        "rotate_nodes_windows: 0 22 * * for 6h UTC: not a cron schedule: 0 22 * * (five fields, as \"0 22 * * *\")."]


@pytest.mark.parametrize("changed, error", [
    ({"rotate_nodes_nodes": []},
     "one of rotate_nodes_nodes, rotate_nodes_node_selector or rotate_nodes_karpenter_drifted is needed: there is no "
     "node to plan for."),
    ({"rotate_nodes_abort_if": {"pdb_blocked_for": "ten minutes"}}, "rotate_nodes_abort_if.pdb_blocked_for: "),
    ({"rotate_nodes_batch_size": "0"}, "rotate_nodes_batch_size "),
    ({"rotate_nodes_template_capacity": {"cpu": "4"}}, "rotate_nodes_template_capacity "),
    ({"rotate_nodes_target_kubelet_version": "latest"},
     "rotate_nodes_target_kubelet_version must be a version like v1.35.0, got latest."),
])
def test_rotate_nodes_refuses_what_its_plan_would_refuse_naming_the_role_variable(changed, error):
    errors = rotate_nodes(**changed)
    assert len(errors) == 1 and errors[0].startswith(error), errors


def test_a_rollback_needs_no_nodes_to_plan():
    assert rotate_nodes(rotate_nodes_nodes=[], rotate_nodes_rollback=True) == []


def test_drain_node_refuses_a_node_selector_that_is_no_label_selector_naming_its_variable():
    assert drain_node(drain_node_nodes=[], drain_node_node_selector="=x") == [
        'drain_node_node_selector "=x" is not a label selector: it needs a label key where "=" is.']
