"""kubeops.rotation.k8s_drain takes kubernetes.core.k8s_drain's tasks as they are written: its options, aliases,
defaults and connection option names, validated with ansible-core's ArgumentSpecValidator as AnsibleModule does,
and refuses before any request only what would fail there too."""

from __future__ import annotations

import math

import pytest
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.kubeops.rotation.plugins.module_utils.ansible_module import CONNECTION_ARGUMENT_SPEC
from ansible_collections.kubeops.rotation.plugins.module_utils.model.errors import InvalidInput
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.k8s_drain import DrainRequest
from ansible_collections.kubeops.rotation.plugins.modules import k8s_drain

SPEC = dict(CONNECTION_ARGUMENT_SPEC, **k8s_drain.K8S_DRAIN_ARGUMENT_SPEC)

# The arguments of kubernetes.core's own k8s_drain tasks (its integration target and its examples).
KUBERNETES_CORE_TASKS = [
    {"state": "cordon", "name": "node-1"},
    {"state": "uncordon", "name": "node-1"},
    {"state": "drain", "name": "node-1"},
    {"state": "drain", "name": "node-1",
     "delete_options": {"force": True, "ignore_daemonsets": True, "delete_emptydir_data": True, "wait_timeout": 0}},
    {"state": "drain", "name": "node-1",
     "delete_options": {"force": True, "disable_eviction": "yes", "terminate_grace_period": 0,
                        "ignore_daemonsets": "yes", "wait_timeout": 0, "delete_emptydir_data": True}},
    {"state": "drain", "name": "node-1", "pod_selectors": ["drain=no_match_selector"],
     "delete_options": {"terminate_grace_period": 0, "delete_emptydir_data": True, "force": True,
                        "ignore_daemonsets": True}},
    {"state": "drain", "name": "node-1", "pod_selectors": ["app!=ansible-drain"]},
    {"name": "node-1", "label_selectors": ["app!=csi-attacher", "app!=csi-provisioner"]},
    {"name": "node-1", "delete_options": {"terminate_grace_period": 900, "wait_sleep": 10}},
    {"name": "node-1", "verify_ssl": False, "ssl_ca_cert": "/ca.pem", "cert_file": "/c.pem", "key_file": "/k.pem"},
]


def validated(arguments):
    result = ArgumentSpecValidator(SPEC, required_together=[["client_cert", "client_key"]]).validate(
        dict(arguments))
    assert not result.error_messages, result.error_messages
    return result.validated_parameters


@pytest.mark.parametrize("arguments", KUBERNETES_CORE_TASKS)
def test_every_kubernetes_core_task_is_taken_as_written(arguments):
    request = DrainRequest.from_params(validated(arguments))
    assert request.name == "node-1"


def test_the_defaults_are_kubernetes_cores():
    request = DrainRequest.from_params(validated({"name": "node-1"}))
    assert request.state == "drain" and request.pod_selector is None
    assert (request.options.force, request.options.ignore_daemonsets, request.options.delete_emptydir_data) == (
        False, False, False)
    assert (request.settings.wait, request.settings.grace_period, request.settings.disable_eviction) == (
        False, None, False)


def test_the_options_of_a_drain_reach_the_engine():
    request = DrainRequest.from_params(validated(KUBERNETES_CORE_TASKS[4]))
    assert (request.options.force, request.options.ignore_daemonsets, request.options.delete_emptydir_data) == (
        True, True, True)
    assert (request.settings.wait, request.settings.timeout, request.settings.grace_period) == (True, math.inf, 0)
    assert request.settings.disable_eviction is True
    assert DrainRequest.from_params(validated(KUBERNETES_CORE_TASKS[7])).pod_selector == \
        "app!=csi-attacher,app!=csi-provisioner"


def test_an_empty_node_name_is_refused_before_any_request():
    with pytest.raises(InvalidInput, match="name is empty"):
        DrainRequest.from_params(validated({"name": " "}))


def test_pod_selectors_that_are_no_selector_are_refused_for_a_drain_only():
    with pytest.raises(InvalidInput, match='pod_selectors "app in \\(a" is not a label selector'):
        DrainRequest.from_params(validated({"name": "node-1", "pod_selectors": ["app in (a"]}))
    assert DrainRequest.from_params(validated({"name": "node-1", "state": "cordon", "pod_selectors": ["app in (a"]}))


def test_options_kubernetes_core_does_not_have_are_refused():
    result = ArgumentSpecValidator(SPEC).validate({"name": "node-1", "delete_options": {"grace": 1}})
    assert result.error_messages
