# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""How a drained node is retired: by deleting what owns its machine, so that the machine goes too.

A node Karpenter launched is retired by deleting its NodeClaim, a Cluster API node by deleting its Machine;
either controller then terminates the instance and removes the Node. Any other node (an Auto Scaling group's,
a managed node group's, a bare machine's) has no owner here to delete: deleting its Node object alone leaves
the instance running, so that is done only when asked for by name, and otherwise the node is left cordoned and
drained for the user's own tasks.
"""

from __future__ import annotations

from collections import namedtuple

from ansible_collections.kubeops.rotation.plugins.module_utils.model.cluster_api import annotated_machine, machine_key
from ansible_collections.kubeops.rotation.plugins.module_utils.model.karpenter import claim_name
from ansible_collections.kubeops.rotation.plugins.module_utils.model.nodes import node_name

NODE_CLAIM, MACHINE, NODE_OBJECT, LEFT = "NodeClaim", "Machine", "Node", "left"
# The rotate_nodes role's rotate_nodes_retire choices, and rotation_plan's retire option.
RETIRE_CHOICES = ("delete", "delete_node", "leave", "tasks")

# by: one of the four above; name: the NodeClaim, "namespace/name" of the Machine, or the node; text: for people.
Retirement = namedtuple("Retirement", "by name text")


def retirement(node, claims_by_node, machines_by_node, delete_node_without_owner=False):
    """How deleting retires ``node``, given the NodeClaims and Machines by node name."""
    name = node_name(node)
    claim = claims_by_node.get(name)
    if claim:
        return Retirement(NODE_CLAIM, claim_name(claim),
                          "delete its NodeClaim %s; Karpenter removes the instance and the Node" % claim_name(claim))
    machine = machines_by_node.get(name)
    if machine:
        return Retirement(MACHINE, machine_key(machine),
                          "delete its Cluster API Machine %s; the provider removes the instance and the Node" %
                          machine_key(machine))
    if delete_node_without_owner:
        return Retirement(NODE_OBJECT, name, "delete the Node object only, as asked (delete_node); whatever runs "
                                             "the instance must remove it")
    elsewhere = annotated_machine(node)
    if elsewhere:
        why = "its Machine %s is not in this cluster (a management cluster's?)" % elsewhere
    else:
        why = "no NodeClaim or Cluster API Machine owns it"
    return Retirement(LEFT, name, "left cordoned and drained: %s; retire its instance with your own tasks "
                                  "(retire: tasks) or delete only the Node object (retire: delete_node)" % why)


def owner_going(node, claims_by_node, machines_by_node):
    """Whether the NodeClaim or Machine that owns ``node`` is being deleted already: its controller is removing
    the node, and deleting it again changes nothing."""
    owner = claims_by_node.get(node_name(node)) or machines_by_node.get(node_name(node))
    return bool(((owner or {}).get("metadata") or {}).get("deletionTimestamp"))


def planned_retirement(node, mode, claims_by_node, machines_by_node):
    """What the rotation will do with ``node`` after draining it, under the role's ``mode`` (RETIRE_CHOICES)."""
    if mode == "leave":
        return "left cordoned and drained (retire: leave)"
    if mode == "tasks":
        return "your retire tasks run for it (retire: tasks)"
    return retirement(node, claims_by_node, machines_by_node, mode == "delete_node").text
