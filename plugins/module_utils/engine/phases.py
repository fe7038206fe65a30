# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Record how far a rotation got on its nodes, and retire them: a node that Karpenter launched by deleting its
NodeClaim, and waiting until Karpenter removed the Node; any other by deleting the Node object."""

from __future__ import annotations

import time

from ansible_collections.kubeops.rotation.plugins.module_utils.api.karpenter import delete_node_claim, node_claims
from ansible_collections.kubeops.rotation.plugins.module_utils.model.errors import TimedOut
from ansible_collections.kubeops.rotation.plugins.module_utils.model.karpenter import claim_name, claims_by_node
from ansible_collections.kubeops.rotation.plugins.module_utils.model.nodes import node_name
from ansible_collections.kubeops.rotation.plugins.module_utils.model.times import utc_now
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.phases import phase_patch


def record_phase(client, names, rotation_id, phase, delete=False, check_mode=False, timeout=600,
                 clock=time.monotonic, sleep=time.sleep):
    """Record the phase on each node (guarded by its resourceVersion) and, when ``delete``, retire the nodes;
    returns per-node results. A node that is gone is reported, not an error. A node with a Karpenter NodeClaim
    is retired by deleting the NodeClaim, then waiting up to ``timeout`` seconds until its Node is gone
    (TimedOut carries the results)."""
    nodes, missing = client.read_nodes(names)
    claims = claims_by_node(node_claims(client)) if delete and nodes else {}
    results = [{"name": name, "changed": False, "action": "gone"} for name in missing]
    now = utc_now()

    def plan(current):
        patch = phase_patch(current, rotation_id, phase, now)
        return patch, patch

    for node in nodes:
        patch = client.update_node(node, plan, apply=not check_mode)
        entry = {"name": node_name(node), "changed": bool(patch),
                 "action": "recorded %s" % phase if patch else "unchanged"}
        if delete:
            claim = claims.get(node_name(node))
            if claim:
                entry.update(changed=True, action="deleted NodeClaim %s" % claim_name(claim),
                             node_claim=claim_name(claim))
                if not check_mode:
                    delete_node_claim(client, claim_name(claim))
            else:
                entry.update(changed=True, action="deleted")
                if not check_mode:
                    client.delete_if_present(client.core.delete_node, node_name(node))
        results.append(entry)
    results.sort(key=lambda entry: entry["name"])
    waiting = [entry["name"] for entry in results if entry.get("node_claim")]
    if waiting and not check_mode:
        wait_until_gone(client, waiting, timeout, results, clock, sleep)
    return results


def wait_until_gone(client, names, timeout, results, clock=time.monotonic, sleep=time.sleep):
    """Wait until none of the nodes ``names`` exists (Karpenter drains what is left, terminates the instance
    and removes the Node); one read per node left, every second."""
    deadline = clock() + timeout
    left = sorted(names)
    while True:
        left = [name for name in left if client.read_or_none(client.core.read_node, name) is not None]
        if not left:
            return
        if clock() >= deadline:
            raise TimedOut("Timed out after %s s waiting for Karpenter to remove node(s) %s after their NodeClaims "
                           "were deleted; see the NodeClaims' events (kubectl describe nodeclaim)." % (
                               timeout, ", ".join(left)), {"nodes": results})
        sleep(1)
