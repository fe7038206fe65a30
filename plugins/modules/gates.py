#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: gates
short_description: Check that the application is well, again until a timeout, before and between the batches
version_added: 0.3.0
description:
  - Checks every gate given, and again every O(interval) seconds until all of them hold or O(timeout) passes;
    then fails with one line naming each gate that did not hold and what it saw.
  - "A Prometheus or Alertmanager gate: no alert firing that matches given labels (an alert still pending, its
    C(for) not over, does not count), and instant queries that must return no series, or values within bounds."
  - A Kubernetes gate is a JMESPath condition over the objects of a kind (in a namespace, matching a label
    selector), which holds when the condition is true (a non-empty list, a true, a non-zero number).
  - An HTTP gate holds when its URL answers 2xx (or one of the statuses given).
  - The rotation role C(kubeops.rotation.rotate_nodes) runs it before its first batch and after each batch
    (C(rotate_nodes_gates)).
  - Never changes anything. With O(lease), the run's Lease is renewed while the gates are checked again, and the
    line of what they wait for is on it.
extends_documentation_fragment:
  - kubeops.rotation.connection
  - kubeops.rotation.lease
seealso:
  - module: kubeops.rotation.rotation_plan
    description: The plan of a rotation that the gates hold back between its batches.
  - name: kubeops.rotation.rotate_nodes role
    description: Checks these gates before its first batch and after each one (C(rotate_nodes_gates)).
    link: roles/rotate_nodes/meta/argument_specs.yml
options:
  prometheus:
    description:
      - A Prometheus server to read alerts (C(/api/v1/alerts)) and instant queries (C(/api/v1/query)) from.
    type: dict
    suboptions:
      url:
        description: Its base URL, for example V(http://prometheus.monitoring:9090).
        type: str
        required: true
      alerts:
        description:
          - Label matchers (each a dict of labels); the gate does not hold while an alert is firing whose labels
            include every label of one of them. V([]) (an empty list) - any firing alert. Unset - no alert gate.
        type: list
        elements: dict
      queries:
        description:
          - Instant queries. Without O(prometheus.queries[].min) and O(prometheus.queries[].max), a query must
            return no series (as an alerting rule's expression); with either, it must return series, each value
            within them.
        type: list
        elements: dict
        suboptions:
          query:
            description: The PromQL expression.
            type: str
            required: true
          min:
            description: The smallest value each series may have.
            type: float
          max:
            description: The largest value each series may have.
            type: float
          name:
            description: The gate's name in messages, instead of the query.
            type: str
      headers:
        description: Headers for each request, for example an C(Authorization) header.
        type: dict
      validate_certs:
        description: Whether to check the server's TLS certificate.
        type: bool
        default: true
      ca_cert:
        description: A file of CA certificates to check it with.
        type: path
  alertmanager:
    description:
      - An Alertmanager to read active alerts from (C(/api/v2/alerts), silenced and inhibited ones left out); the
        same options as O(prometheus).
    type: dict
    suboptions:
      url:
        description: Its base URL, for example V(http://alertmanager.monitoring:9093).
        type: str
        required: true
      alerts:
        description: Label matchers, as O(prometheus.alerts).
        type: list
        elements: dict
      headers:
        description: Headers for each request.
        type: dict
      validate_certs:
        description: Whether to check the server's TLS certificate.
        type: bool
        default: true
      ca_cert:
        description: A file of CA certificates to check it with.
        type: path
  kubernetes:
    description: Conditions over Kubernetes objects.
    type: list
    elements: dict
    suboptions:
      kind:
        description: The kind, for example V(Deployment) or V(Pod).
        type: str
        required: true
      api_version:
        description: Its apiVersion, for example V(apps/v1).
        type: str
        default: v1
      namespace:
        description: The namespace to read; every namespace when unset (and for a kind that has none).
        type: str
      label_selector:
        description: A label selector the objects must match.
        type: str
      condition:
        description:
          - A JMESPath expression over the list of the objects (the API's JSON); the gate holds when it is true.
          - For example V(length([?status.readyReplicas != spec.replicas]\) == `0`) for Deployments.
        type: str
        required: true
      name:
        description: The gate's name in messages.
        type: str
  http:
    description: URLs that must answer.
    type: list
    elements: dict
    suboptions:
      url:
        description: The URL to GET.
        type: str
        required: true
      status:
        description: The statuses that hold; any 2xx when unset.
        type: list
        elements: int
      headers:
        description: Headers for the request.
        type: dict
      validate_certs:
        description: Whether to check the server's TLS certificate.
        type: bool
        default: true
      ca_cert:
        description: A file of CA certificates to check it with.
        type: path
      timeout:
        description: Seconds to wait for the answer.
        type: int
        default: 10
  timeout:
    description: Seconds to check the gates again until they hold; V(0) checks once.
    type: int
    default: 0
  interval:
    description: Seconds between two checks, at least 1.
    type: int
    default: 10
  stage:
    description: When the gates are checked, for messages, for example V(after batch 2).
    type: str
    default: now
attributes:
  check_mode:
    support: full
    description: The module reads only; in check mode it checks the gates all the same.
  diff_mode:
    support: none
    description: Nothing changes.
author:
  - kubeops.rotation developers (@kubeops)
"""

EXAMPLES = r"""
- name: Hold until no critical alert of the shop fires, its Deployments are whole and its front page answers
  kubeops.rotation.gates:
    prometheus:
      url: http://prometheus.monitoring:9090
      alerts:
        - {severity: critical, namespace: shop}
      queries:
        - query: sum(rate(http_requests_total{namespace="shop",code=~"5.."}[5m])) / sum(rate(http_requests_total{namespace="shop"}[5m]))
          max: 0.01
          name: shop error ratio
    kubernetes:
      - kind: Deployment
        api_version: apps/v1
        namespace: shop
        condition: length([?status.readyReplicas != spec.replicas]) == `0`
      - kind: Pod
        namespace: shop
        condition: >-
          length([].status.containerStatuses[] | [?state.waiting.reason == 'CrashLoopBackOff']) == `0`
    http:
      - url: https://shop.example.com/healthz
    timeout: 300
    interval: 15
    stage: after batch 1
"""

RETURN = r"""
held:
  description: Whether every gate held at the last check.
  returned: always
  type: bool
  sample: true
gates:
  description: Each gate at the last check.
  returned: always
  type: list
  elements: dict
  contains:
    gate:
      description: Its name.
      type: str
      sample: prometheus alerts {severity=critical}
    held:
      description: Whether it held.
      type: bool
      sample: false
    saw:
      description: What it saw, in words.
      type: str
      sample: "firing: ShopErrors{severity=critical}"
checks:
  description: How many times the gates were checked.
  returned: always
  type: int
  sample: 3
seconds:
  description: Seconds from the first check to the last.
  returned: always
  type: float
  sample: 20.1
api_requests:
  description: Number of HTTP requests made to the API server, retries included.
  returned: always
  type: int
  sample: 4
api_retries:
  description: Requests to the API server sent again after a transient fault, and writes whose answer was lost.
  returned: always
  type: dict
  sample: {"requests": 0, "lost_answers": 0}
"""

from ansible_collections.kubeops.rotation.plugins.module_utils.ansible_module import kubernetes_module, run_module
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.gates import Gates, wait_for_gates

SERVER_OPTIONS = dict(
    url=dict(type="str", required=True),
    alerts=dict(type="list", elements="dict"),
    queries=dict(type="list", elements="dict", options=dict(
        query=dict(type="str", required=True), min=dict(type="float"), max=dict(type="float"),
        name=dict(type="str"))),
    headers=dict(type="dict"),
    validate_certs=dict(type="bool", default=True),
    ca_cert=dict(type="path"),
)

ARGUMENT_SPEC = dict(
    prometheus=dict(type="dict", options=SERVER_OPTIONS),
    # An Alertmanager answers no queries.
    alertmanager=dict(type="dict", options={name: spec for name, spec in SERVER_OPTIONS.items() if name != "queries"}),
    kubernetes=dict(type="list", elements="dict", options=dict(
        kind=dict(type="str", required=True), api_version=dict(type="str", default="v1"),
        namespace=dict(type="str"), label_selector=dict(type="str"), condition=dict(type="str", required=True),
        name=dict(type="str"))),
    http=dict(type="list", elements="dict", options=dict(
        url=dict(type="str", required=True), status=dict(type="list", elements="int"), headers=dict(type="dict"),
        validate_certs=dict(type="bool", default=True), ca_cert=dict(type="path"),
        timeout=dict(type="int", default=10))),
    timeout=dict(type="int", default=0),
    interval=dict(type="int", default=10),
    stage=dict(type="str", default="now"),
)


def main():
    module = kubernetes_module(ARGUMENT_SPEC, lease=True)
    # The run waits on the gates: its Lease is renewed from the start, though the module writes nothing.
    run_module(module, lambda client, gates, _check_mode: wait_for_gates(client, gates), Gates.from_params,
               lease_at_once=True)


if __name__ == "__main__":
    main()
