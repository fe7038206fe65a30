#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: cluster_info
short_description: Check the connection to a cluster and report who we are and its nodes
version_added: 0.1.0
description:
  - Connects with the shared connection options and reports the API server's
    version, the identity the API server sees (after impersonation), and the
    nodes with their readiness and schedulability.
  - A pre-flight for playbooks, and the quickest way to check that the
    connection options and O(impersonate_user) do what you mean.
  - Never changes anything.
extends_documentation_fragment:
  - kubeops.rotation.connection
seealso:
  - module: kubeops.rotation.rotation_plan
    description: Plans a rotation of the nodes, also without changing anything.
  - module: kubeops.rotation.cordon
    description: Cordons nodes, recording the identity this module reports.
options:
  node_selector:
    description:
      - Label selector of the nodes to report, for example
        V(node.kubernetes.io/instance-type=m5.large). All nodes when unset.
      - An empty or blank selector, or one that the API server would not
        parse, is refused before any request.
    type: str
attributes:
  check_mode:
    support: full
    description: The module never changes anything, in check mode or not.
  diff_mode:
    support: none
    description: Nothing changes, so there is nothing to show.
author:
  - kubeops.rotation developers (@kubeops)
"""

EXAMPLES = r"""
- name: Check the connection and list the nodes of a pool
  kubeops.rotation.cluster_info:
    kubeconfig: ~/.kube/config
    context: prod-eu-west-1
    node_selector: karpenter.sh/nodepool=general
  register: cluster

- name: Fail early when fewer than three nodes are schedulable
  ansible.builtin.assert:
    that: cluster.summary.schedulable >= 3
    fail_msg: "Only {{ cluster.summary.schedulable }} schedulable nodes."

- name: Check what an impersonated identity is
  kubeops.rotation.cluster_info:
    impersonate_user: system:serviceaccount:ops:rotator
    impersonate_groups: [system:serviceaccounts]
  register: who

- name: Show it
  ansible.builtin.debug:
    msg: "{{ who.user.username }} in {{ who.user.groups }}"
"""

RETURN = r"""
server_version:
  description: The API server's version.
  returned: always
  type: str
  sample: v1.35.4
user:
  description: The identity the API server sees, from a SelfSubjectReview.
  returned: always
  type: dict
  contains:
    username:
      description: User name.
      type: str
      sample: kubernetes-admin
    groups:
      description: Groups of the user.
      type: list
      elements: str
      sample: [system:masters, system:authenticated]
nodes:
  description: The selected nodes, sorted by name.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Node name.
      type: str
      sample: ip-10-0-1-5.ec2.internal
    ready:
      description: Whether the Ready condition is True.
      type: bool
      sample: true
    unschedulable:
      description: Whether the node is cordoned (C(spec.unschedulable)).
      type: bool
      sample: false
    schedulable:
      description: Ready, not cordoned, and without a NoSchedule or NoExecute taint.
      type: bool
      sample: true
    taints:
      description: The node's taints.
      type: list
      elements: dict
      sample: [{key: kubeops.io/rotating, value: ami-2026-12, effect: PreferNoSchedule}]
    zone:
      description: The C(topology.kubernetes.io/zone) label, or null.
      type: str
      sample: eu-west-1a
    kubelet_version:
      description: The kubelet version the node reports.
      type: str
      sample: v1.35.4
    created:
      description: Creation time, RFC 3339.
      type: str
      sample: "2026-11-20T08:12:45Z"
    labels:
      description: The node's labels.
      type: dict
      sample: {kubernetes.io/hostname: ip-10-0-1-5.ec2.internal, topology.kubernetes.io/zone: eu-west-1a}
summary:
  description: Counts of the selected nodes.
  returned: always
  type: dict
  sample: {nodes: 5, ready: 5, schedulable: 4}
api_requests:
  description: Number of HTTP requests made to the API server, retries included.
  returned: always
  type: int
  sample: 3
api_retries:
  description:
    - Requests sent again after a transient fault (C(requests)), and the writes among all requests whose answer
      was lost on the way back (C(lost_answers)) - each either sent again when a repeat finds it done (a patch,
      a delete, a create), or read first (an eviction), so that nothing is done twice.
  returned: always
  type: dict
  sample: {"requests": 3, "lost_answers": 1}
  version_added: 0.3.0
"""

from ansible_collections.kubeops.rotation.plugins.module_utils.ansible_module import kubernetes_module, run_module
from ansible_collections.kubeops.rotation.plugins.module_utils.model.errors import InvalidInput
from ansible_collections.kubeops.rotation.plugins.module_utils.model.inputs import selector_error
from ansible_collections.kubeops.rotation.plugins.module_utils.model.nodes import nodes_report


def validated(params):
    error = selector_error("node_selector", params["node_selector"])
    if error:
        raise InvalidInput(error)
    return params


def look(client, params, _check_mode):
    """The server's version, who we are to it, and the nodes; reads only."""
    nodes = client.list_all(client.core.list_node, label_selector=params["node_selector"])
    summaries, counts = nodes_report(nodes)
    return dict(changed=False, server_version=client.version.get_code().git_version, user=client.whoami(),
                nodes=summaries, summary=counts)


def main():
    run_module(kubernetes_module(dict(node_selector=dict(type="str"))), look, validated)


if __name__ == "__main__":
    main()
