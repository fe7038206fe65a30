# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Record how far a rotation got on its nodes, and retire them through what owns their machines (plan.retirement):
a Karpenter NodeClaim or a Cluster API Machine, deleted, and waited for until the Node is gone."""

from __future__ import annotations

import time
from dataclasses import dataclass

from ansible_collections.kubeops.rotation.plugins.module_utils.api.client import each_concurrently
from ansible_collections.kubeops.rotation.plugins.module_utils.api.cluster_api import delete_machine, machines
from ansible_collections.kubeops.rotation.plugins.module_utils.api.karpenter import delete_node_claim, node_claims
from ansible_collections.kubeops.rotation.plugins.module_utils.api.nodes import delete_node
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.lease import LeaseKeeper, LeaseSettings
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.progress import tell_progress
from ansible_collections.kubeops.rotation.plugins.module_utils.model.cluster_api import machines_by_node
from ansible_collections.kubeops.rotation.plugins.module_utils.model.errors import InvalidInput, TimedOut
from ansible_collections.kubeops.rotation.plugins.module_utils.model.inputs import (
    first_error,
    names_error,
    number_error,
    text_error,
)
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
    owner_going,
    retirement,
)

DELETERS = {
    NODE_CLAIM: delete_node_claim,
    MACHINE: delete_machine,
    NODE_OBJECT: delete_node,
}


@dataclass(frozen=True)
class PhaseRequest:
    """What rotation_state is asked: the ``phase`` of the rotation ``rotation_id`` to record on the nodes
    ``names``; with ``delete``, to retire them too, waiting up to ``timeout`` seconds (with ``wait``), and a node
    that nothing owns only with ``delete_node_without_owner``; ``keep`` marks the nodes kept for the way back (or,
    false, takes that off). The nodes it retires are noted on the Lease ``lease`` (engine.lease.LeaseSettings)
    when the run holds one, so that a rerun that names them knows them gone."""

    names: tuple
    rotation_id: str
    phase: str
    delete: bool = False
    timeout: int = 600
    delete_node_without_owner: bool = False
    keep: bool | None = None
    lease: object = None
    wait: bool = True

    @classmethod
    def from_params(cls, params, prefix=""):
        """The request of the rotation_state module's parameters, or InvalidInput naming the first that makes no
        sense (``prefix`` before its name), before anything is read."""
        error = first_error(names_error(prefix + "nodes", params["nodes"], "node", optional=False),
                            number_error(prefix + "timeout", params["timeout"], 1),
                            text_error(prefix + "rotation_id", params["rotation_id"], optional=False))
        if error:
            raise InvalidInput(error)
        if params["phase"] == ROLLED_BACK and (params["delete"] or params["keep"] is not None):
            raise InvalidInput("%sphase rolled-back takes neither delete nor keep: it gives the nodes back as they "
                               "were." % prefix)
        lease = LeaseSettings.from_params(params["lease"], prefix + "lease.") if params.get("lease") else None
        return cls(tuple(params["nodes"]), params["rotation_id"], params["phase"], params["delete"],
                   params["timeout"], params["delete_node_without_owner"], params["keep"], lease, params["wait"])


def record_phase(client, request, check_mode=False, clock=time.monotonic, sleep=time.sleep):
    """Record the phase of ``request`` (a PhaseRequest) on each node (guarded by its resourceVersion) and, when
    ``request.delete``, retire the nodes, a few at once, each recorded before it is retired; returns per-node
    results and the diff (each node's phase, before and after). A node that is gone is reported, not an error. A
    node with a NodeClaim or a Machine is retired by deleting it, then waiting up to ``request.timeout`` seconds
    until its Node is gone (TimedOut carries the results); a node with neither only with
    ``request.delete_node_without_owner``, by deleting its Node object. A node whose NodeClaim or Machine is being
    deleted already is waited for, not deleted again. Without ``request.wait`` nothing is waited for: the nodes
    with a ``node_claim`` or ``machine`` are their owners' to remove. A node left is recorded as drained, not
    retired. ``request.keep`` is applied by plan.phases.phase_patch; the phase ROLLED_BACK ends the rotation on
    the nodes (plan.phases.rolled_back_patch)."""
    rotation_id, phase, delete, keep = request.rotation_id, request.phase, request.delete, request.keep
    nodes, missing = client.read_nodes(request.names)
    claims = claims_by_node(node_claims(client)) if delete and nodes else {}
    owned_by_machines = machines_by_node(machines(client)) if delete and nodes else {}
    results = [{"name": name, "changed": False, "action": "gone"} for name in missing]
    diff = {"before": {}, "after": {}}
    now = utc_now()

    def record(node):
        how = retirement(node, claims, owned_by_machines, request.delete_node_without_owner) if delete else None
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
            _retire(client, how, owner_going(node, claims, owned_by_machines), (entry, after), check_mode)
        return entry, before, after

    for entry, before, after in each_concurrently(record, nodes):
        if after != before:
            diff["before"][entry["name"]], diff["after"][entry["name"]] = before, after
        results.append(entry)
    results.sort(key=lambda entry: entry["name"])
    retired = [entry["name"] for entry in results
               if entry["action"] == "gone" or entry["action"].startswith(("deleted", "removing"))]
    if delete and retired and request.lease and not check_mode:
        LeaseKeeper(client, request.lease).record_retired(request.rotation_id, retired)
    waiting = left_to_owners(results)
    if waiting and not check_mode and request.wait:
        wait_until_gone(client, waiting, request.timeout, results, clock, sleep)
    return results, diff


def left_to_owners(results):
    """The names of record_phase's ``results`` whose NodeClaim or Machine is deleted (now or before): their owners
    remove the nodes."""
    return [entry["name"] for entry in results if entry.get("node_claim") or entry.get("machine")]


def _retire(client, how, going, outcome, check_mode):
    """Retire a node as ``how`` (plan.retirement.Retirement) says, noting it in its result entry and its diff's
    after (``outcome``); an owner ``going`` already (being deleted) is not deleted again."""
    entry, after = outcome
    entry["retire"] = how.text
    owner = {NODE_CLAIM: "node_claim", MACHINE: "machine"}.get(how.by)
    if how.by == LEFT:
        entry["action"] = "left"
        return
    if owner:
        entry[owner] = how.name
    if owner and going:
        entry["action"] = "removing: %s %s is being deleted" % (how.by, how.name)
        return
    entry.update(changed=True, action="deleted" if how.by == NODE_OBJECT else "deleted %s %s" % (how.by, how.name))
    after["deleted"] = "%s %s" % (how.by, how.name)
    if not check_mode:
        DELETERS[how.by](client, how.name)


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
