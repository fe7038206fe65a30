# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Record how far a rotation got on its nodes, and retire them through what owns their machines (plan.retirement):
a Karpenter NodeClaim or a Cluster API Machine, deleted, and waited for until the Node is gone."""

from __future__ import annotations

import time

from ansible_collections.kubeops.rotation.plugins.module_utils.api.client import each_at_once
from ansible_collections.kubeops.rotation.plugins.module_utils.api.cluster_api import delete_machine, machines
from ansible_collections.kubeops.rotation.plugins.module_utils.api.karpenter import delete_node_claim, node_claims
from ansible_collections.kubeops.rotation.plugins.module_utils.api.nodes import delete_node
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.progress import tell_progress
from ansible_collections.kubeops.rotation.plugins.module_utils.model.cluster_api import machines_by_node
from ansible_collections.kubeops.rotation.plugins.module_utils.model.errors import TimedOut
from ansible_collections.kubeops.rotation.plugins.module_utils.model.karpenter import claims_by_node
from ansible_collections.kubeops.rotation.plugins.module_utils.model.nodes import node_name
from ansible_collections.kubeops.rotation.plugins.module_utils.model.times import utc_now
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.phases import (
    ROLLED_BACK,
    phase_patch,
    recorded_phase,
    rolled_back_patch,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.retirement import (
    LEFT,
    MACHINE,
    NODE_CLAIM,
    NODE_OBJECT,
    retirement,
)

DELETERS = {
    NODE_CLAIM: delete_node_claim,
    MACHINE: delete_machine,
    NODE_OBJECT: delete_node,
}


def record_phase(client, names, rotation_id, phase, delete=False, check_mode=False, timeout=600,
                 delete_node_without_owner=False, clock=time.monotonic, sleep=time.sleep, keep=None):
    """Record the phase on each node (guarded by its resourceVersion) and, when ``delete``, retire the nodes, a
    few at once, each recorded before it is retired; returns per-node results and the diff (each node's phase,
    before and after). A node that is gone is reported, not an error. A node with a NodeClaim or a Machine is
    retired by deleting it, then waiting up to ``timeout`` seconds until its Node is gone (TimedOut carries the
    results); a node with neither only with ``delete_node_without_owner``, by deleting its Node object. A node
    left is recorded as drained, not retired. ``keep`` marks the nodes kept for the way back (or, false, takes that
    off: plan.phases.phase_patch); the phase ROLLED_BACK ends the rotation on them (plan.phases.rolled_back_patch)."""
    nodes, missing = client.read_nodes(names)
    claims = claims_by_node(node_claims(client)) if delete and nodes else {}
    owned_by_machines = machines_by_node(machines(client)) if delete and nodes else {}
    results = [{"name": name, "changed": False, "action": "gone"} for name in missing]
    diff = {"before": {}, "after": {}}
    now = utc_now()

    def record(node):
        how = retirement(node, claims, owned_by_machines, delete_node_without_owner) if delete else None
        recorded = "drained" if how and how.by == LEFT and phase == "retired" else phase

        def plan(current):
            patch = rolled_back_patch(current, rotation_id, now) if recorded == ROLLED_BACK else \
                phase_patch(current, rotation_id, recorded, now, keep)
            return patch, patch

        patch = client.update_node(node, plan, apply=not check_mode)
        entry = {"name": node_name(node), "changed": bool(patch),
                 "action": "recorded %s" % recorded if patch else "unchanged"}
        before = {"rotation_id": rotation_id, "phase": recorded_phase(node, rotation_id)}
        after = dict(before, phase=recorded) if patch else dict(before)
        if how:
            entry["retire"] = how.text
            if how.by == LEFT:
                entry["action"] = "left"
            else:
                entry.update(changed=True, action="deleted" if how.by == NODE_OBJECT else "deleted %s %s" % (
                    how.by, how.name))
                owner = {NODE_CLAIM: "node_claim", MACHINE: "machine"}.get(how.by)
                if owner:
                    entry[owner] = how.name
                after["deleted"] = "%s %s" % (how.by, how.name)
                if not check_mode:
                    DELETERS[how.by](client, how.name)
        return entry, before, after

    for entry, before, after in each_at_once(record, nodes):
        if after != before:
            diff["before"][entry["name"]], diff["after"][entry["name"]] = before, after
        results.append(entry)
    results.sort(key=lambda entry: entry["name"])
    waiting = [entry["name"] for entry in results if entry.get("node_claim") or entry.get("machine")]
    if waiting and not check_mode:
        wait_until_gone(client, waiting, timeout, results, clock, sleep)
    return results, diff


def wait_until_gone(client, names, timeout, results, clock=time.monotonic, sleep=time.sleep):
    """Wait until none of the nodes ``names`` exists (Karpenter or Cluster API drains what is left, terminates
    the instance and removes the Node); the nodes left read again every second."""
    started = clock()
    deadline = started + timeout
    left = sorted(names)
    while True:
        left = sorted(node_name(node) for node in client.read_nodes(left)[0])
        if not left:
            return
        if clock() >= deadline:
            raise TimedOut("Timed out after %s s waiting for node(s) %s to be removed after their NodeClaims or "
                           "Machines were deleted; see their events (kubectl describe nodeclaim / machine)." % (
                               timeout, ", ".join(left)), {"nodes": results})
        tell_progress("retiring: waiting for %d node(s) to be removed by their owners (%s), %d s so far" % (
            len(left), ", ".join(left[:5]) + (" and %d more" % (len(left) - 5) if len(left) > 5 else ""),
            int(clock() - started)))
        sleep(1)
