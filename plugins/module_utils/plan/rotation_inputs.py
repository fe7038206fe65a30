# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Why the inputs of a rotation plan are refused, before anything is read: the rotation_plan module's checks, and
the rotate_nodes role's of the same inputs, each naming what its user set (a module option, a role variable)."""

from __future__ import annotations

import re

from ansible_collections.kubeops.rotation.plugins.module_utils.model.inputs import (
    first_error,
    labels_error,
    names_error,
    pod_keys_error,
    quantities_error,
    selector_error,
    text_error,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.model.owners import workload_from_key
from ansible_collections.kubeops.rotation.plugins.module_utils.model.quantities import RESOURCES
from ansible_collections.kubeops.rotation.plugins.module_utils.model.times import parse_duration
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.limits import count_or_percent_error


def option_name(option):
    """The module's own name of an option."""
    return option


def kubelet_version_error(name, text):
    """Why ``text`` is not a kubelet version to compare with (v1.35.0, 1.35), or None."""
    if text and text.strip() and not re.match(r"^v?\d+(\.\d+){0,2}([-+].*)?$", text.strip()):
        return "%s must be a version like v1.35.0, got %s." % (name, text)
    return None


def rotation_plan_error(params, named=option_name):
    """The first reason why the rotation_plan options ``params`` are refused, each named by ``named(option)``;
    None when they are accepted. Options left out count as not given. Pure."""
    given = dict.fromkeys(("nodes", "node_selector", "rotation_id", "target_kubelet_version", "max_node_age",
                           "canary_size", "pool_zones", "template_capacity", "template_node"))
    given.update(wanted_labels={}, with_annotations=[], with_taints=[], karpenter_nodepools=[], batch_size="1",
                 pool_node_selector={}, planned_evictions=[], abort_if={}, zone_counts_of=[], karpenter_drifted=False)
    given.update(params)
    if not given["nodes"] and given["node_selector"] is None and not given["karpenter_drifted"] \
            and not (given["nodes"] == [] and (given["zone_counts_of"] or given["rotation_id"])):
        return "one of %s, %s or %s is needed: there is no node to plan for." % (
            named("nodes"), named("node_selector"), named("karpenter_drifted"))
    abort_if = given["abort_if"] or {}
    error = first_error(
        names_error(named("nodes"), given["nodes"] or None, "node"),
        selector_error(named("node_selector"), given["node_selector"]),
        text_error(named("rotation_id"), given["rotation_id"]),
        text_error(named("target_kubelet_version"), given["target_kubelet_version"]),
        kubelet_version_error(named("target_kubelet_version"), given["target_kubelet_version"]),
        text_error(named("max_node_age"), given["max_node_age"]),
        labels_error(named("wanted_labels"), given["wanted_labels"]),
        names_error(named("with_annotations"), given["with_annotations"] or None, "annotation"),
        names_error(named("with_taints"), given["with_taints"] or None, "taint key"),
        names_error(named("karpenter_nodepools"), given["karpenter_nodepools"] or None, "NodePool"),
        count_or_percent_error(named("batch_size"), given["batch_size"]),
        count_or_percent_error(named("canary_size"), given["canary_size"]) if given["canary_size"] is not None
        else None,
        labels_error(named("pool_node_selector"), given["pool_node_selector"]),
        names_error(named("pool_zones"), given["pool_zones"], "zone"),
        quantities_error(named("template_capacity"), given["template_capacity"], required=RESOURCES,
                         above_zero=True),
        text_error(named("template_node"), given["template_node"]),
        pod_keys_error(named("planned_evictions"), given["planned_evictions"]),
        *(text_error("%s.%s" % (named("abort_if"), name), value) for name, value in sorted(abort_if.items())))
    if error:
        return error
    bad_keys = [key for key in given["zone_counts_of"] if workload_from_key(key) is None]
    if bad_keys:
        return "%s takes namespace/Kind/name, got %s." % (named("zone_counts_of"), ", ".join(bad_keys))
    durations = [(named("max_node_age"), given["max_node_age"])] + [
        ("%s.%s" % (named("abort_if"), name), abort_if.get(name)) for name in ("pending_pods_for", "pdb_blocked_for")]
    for name, value in durations:
        try:
            if value:
                parse_duration(value)
        except ValueError as exc:
            return "%s: %s" % (name, exc)
    return None
