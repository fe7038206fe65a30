#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: k8s_drain
short_description: Drain, cordon or uncordon a node with kubernetes.core.k8s_drain's options, by guarded eviction
version_added: 0.3.0
description:
  - Takes the tasks written for C(kubernetes.core.k8s_drain) with only the module's name changed to
    C(kubeops.rotation.k8s_drain) - the same options and defaults, the same RV(result) line, the same refusals -
    and carries them out with this collection's engine.
  - O(state=cordon) makes the node unschedulable; O(state=uncordon) makes it schedulable again, whoever cordoned
    it. Either changes nothing when the node already is so, but that uncordon removes the C(kubeops.io/) cordon
    annotations that a cordon of this collection may have left on a node uncordoned by other means.
  - O(state=drain) makes the node unschedulable, then takes its pods off through the Eviction API, so that the
    API server holds every PodDisruptionBudget. Mirror (static) pods stay, as the API server cannot remove them;
    finished pods are deleted.
  - Every pod on the node is judged before anything is evicted. DaemonSet pods, pods that no controller would
    recreate, and pods with emptyDir volumes refuse the whole drain, each group named in kubectl drain's words
    (C(cannot delete DaemonSet-managed Pods), C(cannot delete Pods not managed by ReplicationController,
    ReplicaSet, Job, DaemonSet or StatefulSet), C(cannot delete Pods with local storage)), unless
    O(delete_options.ignore_daemonsets), O(delete_options.force) or O(delete_options.delete_emptydir_data) lets
    them through. A refused drain evicts nothing, and the node is made schedulable again if this task cordoned
    it.
  - "Where this module differs from C(kubernetes.core.k8s_drain), it does so on purpose, and never so that a
    task that passes there fails here, given the permissions and the Kubernetes version of the notes below:"
  - An eviction that a PodDisruptionBudget refuses (HTTP 429) is asked again as soon as the budget allows it,
    until O(delete_options.wait_timeout) (300 seconds when it is not set), where C(kubernetes.core.k8s_drain)
    fails at the first refusal. At that deadline the task fails naming the pods left and the PDBs that hold
    them, and the node stays unschedulable.
  - With O(delete_options.wait_timeout), the pods are watched until they are gone, not read again every
    O(delete_options.wait_sleep) seconds. As in C(kubernetes.core.k8s_drain), a wait that runs out while the
    evicted pods are still terminating is a warning, not a failure.
  - O(delete_options.terminate_grace_period=0) is sent as 0, so the pods go at once, as its description says;
    C(kubernetes.core.k8s_drain) sends no grace period for 0 and the pods take their own.
  - A bare pod with an emptyDir volume is refused as a pod that no controller recreates; once
    O(delete_options.force) lets it through, as a pod with local storage.
  - Warnings are kubectl drain's, for what a drain loses for good (bare pods, emptyDir data); the DaemonSet and
    mirror pods left in place are in RV(pods) with their reason, not in warnings.
  - The cordon is recorded on the node as M(kubeops.rotation.cordon) records it (the annotations
    C(kubeops.io/cordoned-by), C(kubeops.io/cordon-reason) and C(kubeops.io/cordoned-at)), and Events are
    recorded on the evicted pods (C(Evicted)) and the node (C(Draining), C(Drained)).
  - Added to C(kubernetes.core.k8s_drain)'s return value RV(result), a drain returns every pod with what was
    decided and done (RV(pods), RV(summary)); and the O(lease) option takes the cluster's Lease as the other
    modules of the collection do.
extends_documentation_fragment:
  - kubeops.rotation.connection
  - kubeops.rotation.lease
seealso:
  - module: kubernetes.core.k8s_drain
    description: The module whose tasks this one takes with only the name changed.
  - module: kubeops.rotation.cordon
    description: Cordons and uncordons many nodes, leaving alone the cordons that someone else made.
  - module: kubeops.rotation.evict
    description: >-
      The guarded eviction behind this module, with limits, a pod selection of its own and a wait for the
      replacements.
  - name: kubeops.rotation.drain_node role
    description: >-
      Cordon, guarded eviction and a check of what is left, for many nodes
      (C(ansible-doc -t role kubeops.rotation.drain_node)).
    link: roles/drain_node/meta/argument_specs.yml
  - name: Coming from kubernetes.core's k8s_drain or kubectl drain
    description: Each of their options, and what stands for it in this collection.
    link: docs/coming-from-kubernetes-core.md
options:
  state:
    description:
      - V(cordon) makes the node unschedulable, V(uncordon) schedulable, V(drain) unschedulable and then without
        its pods.
    type: str
    choices: [cordon, drain, uncordon]
    default: drain
  name:
    description:
      - Name of the node. A node that does not exist fails the task, and nothing is changed.
    type: str
    required: true
  pod_selectors:
    description:
      - Label selectors of the pods to take off the node, all of which a pod must match (they are joined with
        commas into one selector); the other pods on the node are neither judged nor evicted.
      - A list that is not a label selector once joined is refused before anything is changed.
      - Only with O(state=drain).
    type: list
    elements: str
    aliases: [label_selectors]
  delete_options:
    description:
      - How the pods are taken off the node. Only with O(state=drain).
    type: dict
    default: {}
    suboptions:
      terminate_grace_period:
        description:
          - Seconds the pods have to stop, instead of their own C(terminationGracePeriodSeconds).
          - V(0) makes them go at once. A negative value, like leaving it out, gives each pod its own.
        type: int
      force:
        description:
          - Also evict pods that no controller would recreate (no controller C(ownerReference)). They are gone
            for good, and the task warns naming them.
        type: bool
        default: false
      ignore_daemonsets:
        description:
          - Leave DaemonSet pods in place instead of refusing the drain. Their DaemonSet would put them back anyway.
        type: bool
        default: false
      delete_emptydir_data:
        description:
          - Also evict pods with emptyDir volumes. Their emptyDir data is lost, and the task warns naming them.
        type: bool
        default: false
      disable_eviction:
        description:
          - Delete the pods instead of evicting them. This B(bypasses their PodDisruptionBudgets).
        type: bool
        default: false
      wait_timeout:
        description:
          - Seconds to wait for the pods to be gone, PDB refusals included; V(0) waits as long as it takes.
          - Not set, the task returns once every eviction is accepted, without waiting for the pods to be gone,
            and still waits up to 300 seconds for the evictions that PodDisruptionBudgets refuse. A negative value
            is the same as not set.
          - Pods still terminating when it runs out make a warning. Pods that PodDisruptionBudgets still hold
            then fail the task, naming them and the PDBs.
        type: int
      wait_sleep:
        description:
          - Accepted for C(kubernetes.core.k8s_drain)'s tasks, and not used. The pods are watched, which tells
            at once when each is gone.
        type: int
        default: 5
notes:
  - Beyond the requests of C(kubernetes.core.k8s_drain) (read and patch the node, list the pods, evict or delete
    them), the module lists and watches pods and PodDisruptionBudgets, reads the PersistentVolumeClaims of the pods
    that have some, asks who it is (a SelfSubjectReview, allowed to every user by default) and records Events
    (which need not be allowed). docs/rbac.yaml holds these rules.
  - The SelfSubjectReview that records who cordoned the node needs Kubernetes 1.28 or newer, as
    M(kubeops.rotation.cordon) does.
attributes:
  check_mode:
    support: full
    description:
      - Changes nothing. RV(result) and C(changed) say what a real run would do, RV(pods) has every pod's plan,
        and a drain that pods refuse fails as it would.
  diff_mode:
    support: none
    description: Returns no diff; RV(pods) says where each pod was and what became of it.
author:
  - kubeops.rotation developers (@kubeops)
"""

EXAMPLES = r"""
- name: Drain a node, leaving its DaemonSet pods, and wait up to 10 minutes for its pods to be gone
  kubeops.rotation.k8s_drain:
    name: ip-10-0-1-5.ec2.internal
    delete_options:
      ignore_daemonsets: true
      delete_emptydir_data: true
      wait_timeout: 600

- name: Drain a node, its pods that no controller recreates too, giving every pod 15 minutes to stop
  kubeops.rotation.k8s_drain:
    state: drain
    name: ip-10-0-1-5.ec2.internal
    delete_options:
      force: true
      ignore_daemonsets: true
      terminate_grace_period: 900

- name: Take only some pods off the node
  kubeops.rotation.k8s_drain:
    name: ip-10-0-1-5.ec2.internal
    pod_selectors:
      - app!=csi-attacher
      - app!=csi-provisioner
    delete_options:
      ignore_daemonsets: true

- name: See what a drain would evict, without changing anything
  kubeops.rotation.k8s_drain:
    name: ip-10-0-1-5.ec2.internal
    delete_options:
      ignore_daemonsets: true
  check_mode: true
  register: drain_plan

- name: Show the pods it would take off the node
  ansible.builtin.debug:
    msg: "{{ drain_plan.pods | selectattr('outcome', 'equalto', 'planned') | map(attribute='name') | list }}"

- name: Mark the node unschedulable
  kubeops.rotation.k8s_drain:
    state: cordon
    name: ip-10-0-1-5.ec2.internal

- name: Mark the node schedulable again
  kubeops.rotation.k8s_drain:
    state: uncordon
    name: ip-10-0-1-5.ec2.internal
"""

RETURN = r"""
result:
  description:
    - What happened to the node, in C(kubernetes.core.k8s_drain)'s words - C(node NAME marked unschedulable.),
      C(node NAME already marked unschedulable.), C(node NAME marked schedulable.), C(node NAME already marked
      schedulable.) - and for a drain that took pods off the node, C(N Pod(s) deleted from node.) after it.
    - In check mode, what a real run would do.
  returned: success
  type: str
  sample: node ip-10-0-1-5.ec2.internal marked unschedulable. 4 Pod(s) deleted from node.
pods:
  description:
    - Added to C(kubernetes.core.k8s_drain)'s return values. Every pod on the node (that O(pod_selectors)
      matches) with what was decided and what happened, as M(kubeops.rotation.evict) returns them.
  returned: with O(state=drain), also when pods refuse it or its deadline passes
  type: list
  elements: dict
  contains:
    name:
      description: Pod name.
      type: str
      sample: web-7f9c4d8b6-x2kqp
    namespace:
      description: Pod namespace.
      type: str
      sample: shop
    node:
      description: The node.
      type: str
      sample: ip-10-0-1-5.ec2.internal
    owner:
      description: C(Kind/name) of the pod's controller, or null for a pod that no controller recreates.
      type: str
      sample: ReplicaSet/web-7f9c4d8b6
    action:
      description: >-
        V(evict), V(delete) (finished pods), V(wait) (already being deleted), V(skip) (mirror pods, and DaemonSet
        pods with O(delete_options.ignore_daemonsets)) or V(refuse).
      type: str
      sample: evict
    reason:
      description: >-
        The filter that decided: V(evictable), V(daemonset), V(mirror), V(terminal), V(terminating),
        V(unreplicated), V(local-storage).
      type: str
      sample: evictable
    outcome:
      description: >-
        V(evicted), V(deleted), V(skipped), V(refused), V(blocked) (by a PDB at the deadline), V(terminating)
        (evicted, not yet gone when the wait ended), V(gone), V(failed), V(pending), V(planned) in check mode, or
        V(not attempted) when refused pods stopped the drain.
      type: str
      sample: evicted
    detail:
      description: The reason in words, or the API server's message.
      type: str
      sample: ""
    notes:
      description: Facts that do not change the decision, such as the PVCs used or the emptyDir data lost.
      type: list
      elements: str
      sample: ["emptyDir scratch: its data is lost with the pod"]
    attempts:
      description: Eviction requests made for the pod (retries after a PDB refusal included).
      type: int
      sample: 1
    pdbs:
      description: The PDBs that held the pod back, with their status, when one did.
      type: list
      elements: str
      sample: []
summary:
  description: Added to C(kubernetes.core.k8s_drain)'s return values. Number of pods per outcome.
  returned: with O(state=drain), also when pods refuse it or its deadline passes
  type: dict
  sample: {evicted: 4, skipped: 2}
remaining:
  description:
    - Added to C(kubernetes.core.k8s_drain)'s return values. Pods still on the node that a drain removes, all but
      DaemonSet, mirror and finished pods (C(namespace/name)), also those that O(pod_selectors) did not match.
  returned: with O(state=drain) and O(delete_options.wait_timeout), not in check mode
  type: list
  elements: str
  sample: []
elapsed_seconds:
  description: Added to C(kubernetes.core.k8s_drain)'s return values. Seconds the eviction took.
  returned: with O(state=drain)
  type: float
  sample: 12.4
api_requests:
  description: Added to C(kubernetes.core.k8s_drain)'s return values. Number of HTTP requests made to the API server.
  returned: always
  type: int
  sample: 14
api_retries:
  description:
    - Added to C(kubernetes.core.k8s_drain)'s return values. Requests sent again after a transient fault
      (C(requests)), and the writes among all requests whose answer was lost on the way back (C(lost_answers)).
  returned: always
  type: dict
  sample: {"requests": 0, "lost_answers": 0}
"""

from ansible_collections.kubeops.rotation.plugins.module_utils.ansible_module import kubernetes_module, run_module
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.k8s_drain import drain_node, set_schedulable
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.k8s_drain import DrainRequest

# kubernetes.core.k8s_drain's own options, with its types, aliases and defaults.
K8S_DRAIN_ARGUMENT_SPEC = dict(
    state=dict(type="str", choices=["cordon", "drain", "uncordon"], default="drain"),
    name=dict(type="str", required=True),
    pod_selectors=dict(type="list", elements="str", aliases=["label_selectors"]),
    delete_options=dict(type="dict", default={}, options=dict(
        terminate_grace_period=dict(type="int"),
        force=dict(type="bool", default=False),
        ignore_daemonsets=dict(type="bool", default=False),
        delete_emptydir_data=dict(type="bool", default=False),
        disable_eviction=dict(type="bool", default=False),
        wait_timeout=dict(type="int"),
        wait_sleep=dict(type="int", default=5),
    )),
)


def act(client, request, check_mode):
    """A drain, or a cordon or uncordon alone (state cordon, uncordon)."""
    return (drain_node if request.state == "drain" else set_schedulable)(client, request, check_mode)


def main():
    run_module(kubernetes_module(K8S_DRAIN_ARGUMENT_SPEC, lease=True), act, DrainRequest.from_params)


if __name__ == "__main__":
    main()
