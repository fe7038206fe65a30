# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Why a role's variables are refused, before the role reads or changes anything (the filter
kubeops.rotation.input_errors).

A role checks first the inputs that only a later module sees, and that it would refuse only after the role had
changed something (a cordoned node, a Lease). The rules are the modules' own (model.inputs, plan.limits); the
messages name the role's variables. A number is read as Jinja's int filter reads it, and shown as it was written.
"""

from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.module_utils.model.inputs import (
    first_empty,
    number_error,
    rotation_id_error,
    selector_error,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.model.times import duration_seconds
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.limits import count_or_percent_error
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.rotation_inputs import rotation_plan_error
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.windows import windows_error

ROTATE_NODES_TIMEOUTS = ("rotate_nodes_warm_timeout", "rotate_nodes_restart_timeout", "rotate_nodes_retire_timeout",
                         "rotate_nodes_evict_timeout")
DRAIN_NODE_LIMITS = ("drain_node_max_in_flight", "drain_node_max_per_node", "drain_node_max_per_namespace")
# The options of rotation_plan that the rotate_nodes role sets from a variable of its own, rotate_nodes_<option>,
# and does not check otherwise.
ROTATE_NODES_PLAN_OPTIONS = ("nodes", "node_selector", "target_kubelet_version", "wanted_labels", "max_node_age",
                             "karpenter_drifted", "karpenter_nodepools", "batch_size", "pool_node_selector",
                             "pool_zones", "template_capacity", "abort_if")
# The kinds of gates, as the gates module's options name them.
GATE_KINDS = ("prometheus", "alertmanager", "kubernetes", "http")


def jinja_int(value):
    """``value | int``: a number, a string of one (a decimal one is cut), or 0 for anything else."""
    try:
        return int(value, 10) if isinstance(value, str) else int(value)
    except (TypeError, ValueError):
        try:
            return int(float(value))
        except (TypeError, ValueError, OverflowError):
            return 0


def at_least_error(variables, name, minimum, optional=False):
    """Why the number ``name`` is refused: below ``minimum``. Null reads as 0, or is left out if ``optional``."""
    value = variables[name]
    if optional and value is None:
        return None
    return number_error(name, jinja_int(value), minimum, shown=str(value))


def duration_error(variables, name, minimum):
    """Why the duration ``name`` is refused: not a duration (model.times.duration_seconds), or below ``minimum``
    seconds."""
    value = variables[name]
    try:
        seconds = duration_seconds(value)
    except ValueError:
        return "%s must be a duration like 90, 90s, 10m or 1h30m, got %s." % (name, value)
    return number_error(name, seconds, minimum, shown=str(value))


def count_or_percent_variable_error(variables, name):
    """Why ``name`` is not a count or a percent, as max_unavailable_per_owner is; null or empty leaves it out."""
    value = variables[name]
    if value is None or str(value) == "":
        return None
    return count_or_percent_error(name, value)


def rotate_nodes_plan_error(variables):
    """rotation_plan's checks of the options the role sets, naming the role's variables. A variable left empty is
    left out, as the role omits it."""
    params = {option: variables["rotate_nodes_" + option] for option in ROTATE_NODES_PLAN_OPTIONS
              if variables.get("rotate_nodes_" + option) not in (None, "", [], {})}
    params["rotation_id"] = variables["rotate_nodes_id"]
    params.setdefault("karpenter_drifted", False)
    return rotation_plan_error(params, lambda option: "rotate_nodes_id" if option == "rotation_id"
                               else "rotate_nodes_" + option)


def rotate_nodes_errors(variables):
    """The rotate_nodes role's checks, in order; None where one passes."""
    no_id = variables["rotate_nodes_id"] is None or not str(variables["rotate_nodes_id"]).strip()
    no_retire_tasks = variables["rotate_nodes_retire"] == "tasks" \
        and not str(variables["rotate_nodes_retire_tasks"]).strip()
    return [
        "rotate_nodes_id is required: a rerun with the same id continues the rotation instead of starting over."
        if no_id else rotation_id_error("rotate_nodes_id", variables["rotate_nodes_id"]),
        duration_error(variables, "rotate_nodes_soak_seconds", 0),
        duration_error(variables, "rotate_nodes_lease_seconds", 5),
        *(duration_error(variables, name, 1) for name in ROTATE_NODES_TIMEOUTS),
        at_least_error(variables, "rotate_nodes_max_in_flight", 1, optional=True),
        count_or_percent_variable_error(variables, "rotate_nodes_max_unavailable_per_owner"),
        "rotate_nodes_retire_tasks is empty: rotate_nodes_retire=tasks needs the task file to run per node."
        if no_retire_tasks else None,
        count_or_percent_variable_error(variables, "rotate_nodes_canary_size"),
        duration_error(variables, "rotate_nodes_canary_soak_seconds", 0),
        duration_error(variables, "rotate_nodes_gate_timeout", 0),
        duration_error(variables, "rotate_nodes_gate_interval", 1),
        gates_error(variables["rotate_nodes_gates"]),
        _named("rotate_nodes_windows", windows_error(variables["rotate_nodes_windows"])),
        duration_error(variables, "rotate_nodes_window_poll_seconds", 1),
        duration_error(variables, "rotate_nodes_window_batch_seconds", 1),
        None if no_id or variables["rotate_nodes_rollback"] else rotate_nodes_plan_error(variables),
    ]


def _named(name, error):
    return "%s: %s." % (name, error) if error else None


def gates_error(gates):
    """Why rotate_nodes_gates is refused: not a mapping of the kinds of gates."""
    if not isinstance(gates, dict):
        return "rotate_nodes_gates must be a mapping of %s, got %r." % (", ".join(GATE_KINDS), gates)
    unknown = sorted(str(kind) for kind in gates if kind not in GATE_KINDS)
    if unknown:
        return "rotate_nodes_gates has no gate kind %s: the kinds are %s." % (", ".join(unknown), ", ".join(GATE_KINDS))
    return None


def drain_node_errors(variables):
    """The drain_node role's checks, in order; None where one passes."""
    no_nodes = not variables["drain_node_nodes"] and not str(variables["drain_node_node_selector"]).strip()
    return [
        "drain_node_nodes and drain_node_node_selector are both empty: name the nodes to drain." if no_nodes else None,
        selector_error("drain_node_node_selector", str(variables["drain_node_node_selector"] or "").strip() or None),
        duration_error(variables, "drain_node_timeout", 1),
        *(at_least_error(variables, name, 1, optional=True) for name in DRAIN_NODE_LIMITS),
        *(at_least_error(variables, name, 0, optional=True)
          for name in ("drain_node_max_evictions", "drain_node_grace_period")),
        count_or_percent_variable_error(variables, "drain_node_max_unavailable_per_owner"),
        *("%s has an empty namespace name." % name if first_empty(variables[name] or ()) else None
          for name in ("drain_node_namespaces", "drain_node_exclude_namespaces")),
    ]


ROLE_CHECKS = {"rotate_nodes": rotate_nodes_errors, "drain_node": drain_node_errors}


def role_input_errors(variables, role):
    """Every reason why ``variables`` (the role's variables by their names) are refused by ``role``'s checks, in
    order; [] when none is."""
    return [error for error in ROLE_CHECKS[role](variables) if error]
