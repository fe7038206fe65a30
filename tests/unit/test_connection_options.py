"""kubernetes.core's habits carry over: its K8S_AUTH_ environment variables and option aliases reach the shared
connection options, no_proxy reaches the REST client, and k8s_drain's option names are aliases where the meaning
is the same. The argument specs are validated with ansible-core's ArgumentSpecValidator, as AnsibleModule does,
without running a module."""

from __future__ import annotations

import re

import pytest
import urllib3
import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.kubeops.rotation.plugins.doc_fragments.connection import ModuleDocFragment
from ansible_collections.kubeops.rotation.plugins.module_utils.ansible_module import (
    CONNECTION_ARGUMENT_SPEC,
    CONNECTION_REQUIRED_BY,
    LEASE_ARGUMENT_SPEC,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.api.client import build_configuration, new_client
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.rollout import RestartSettings
from ansible_collections.kubeops.rotation.plugins.module_utils.model.errors import InvalidInput
from ansible_collections.kubeops.rotation.plugins.modules import evict, rollout_restart

# What kubernetes.core 6.6.0 reads (module_utils/k8s/client.py: K8S_AUTH_<option>, then K8S_AUTH_<its alias>;
# impersonate_user and impersonate_groups by their own names), for the options this collection has.
KUBERNETES_CORE_ENVIRONMENT = {
    "kubeconfig": ["K8S_AUTH_KUBECONFIG"],
    "context": ["K8S_AUTH_CONTEXT"],
    "host": ["K8S_AUTH_HOST"],
    "api_key": ["K8S_AUTH_API_KEY"],
    "validate_certs": ["K8S_AUTH_VALIDATE_CERTS", "K8S_AUTH_VERIFY_SSL"],
    "ca_cert": ["K8S_AUTH_CA_CERT", "K8S_AUTH_SSL_CA_CERT"],
    "client_cert": ["K8S_AUTH_CLIENT_CERT", "K8S_AUTH_CERT_FILE"],
    "client_key": ["K8S_AUTH_CLIENT_KEY", "K8S_AUTH_KEY_FILE"],
    "proxy": ["K8S_AUTH_PROXY"],
    "no_proxy": ["K8S_AUTH_NO_PROXY"],
    "impersonate_user": ["K8S_AUTH_IMPERSONATE_USER"],
    "impersonate_groups": ["K8S_AUTH_IMPERSONATE_GROUPS"],
}
# kubernetes.core's aliases (args_common.AUTH_ARG_SPEC).
KUBERNETES_CORE_ALIASES = {"validate_certs": "verify_ssl", "ca_cert": "ssl_ca_cert", "client_cert": "cert_file",
                           "client_key": "key_file"}


@pytest.fixture(autouse=True)
def no_k8s_auth_environment(monkeypatch):
    """Each test sees only the K8S_AUTH_ variables it sets."""
    for names in KUBERNETES_CORE_ENVIRONMENT.values():
        for name in names:
            monkeypatch.delenv(name, raising=False)


def validated(parameters, spec=None, **kwargs):
    """The parameters as AnsibleModule would see them, or AssertionError with ansible-core's messages."""
    result = ArgumentSpecValidator(spec or CONNECTION_ARGUMENT_SPEC, **kwargs).validate(dict(parameters))
    assert not result.error_messages, result.error_messages
    return result.validated_parameters


def validation_errors(parameters, spec=None, **kwargs):
    return ArgumentSpecValidator(spec or CONNECTION_ARGUMENT_SPEC, **kwargs).validate(dict(parameters)).error_messages


def test_every_kubernetes_core_environment_variable_of_an_option_we_have_is_read():
    assert {option: list(spec["fallback"][1]) for option, spec in CONNECTION_ARGUMENT_SPEC.items()
            if "fallback" in spec} == KUBERNETES_CORE_ENVIRONMENT


@pytest.mark.parametrize("option, variable, value, expected", [
    ("kubeconfig", "K8S_AUTH_KUBECONFIG", "/etc/kube/config", "/etc/kube/config"),
    ("context", "K8S_AUTH_CONTEXT", "prod", "prod"),
    ("host", "K8S_AUTH_HOST", "https://10.0.0.1:6443", "https://10.0.0.1:6443"),
    ("api_key", "K8S_AUTH_API_KEY", "token", "token"),
    ("validate_certs", "K8S_AUTH_VALIDATE_CERTS", "false", False),
    ("validate_certs", "K8S_AUTH_VERIFY_SSL", "no", False),
    ("validate_certs", "K8S_AUTH_VERIFY_SSL", "True", True),
    ("ca_cert", "K8S_AUTH_CA_CERT", "/pki/ca.crt", "/pki/ca.crt"),
    ("ca_cert", "K8S_AUTH_SSL_CA_CERT", "/pki/ca.crt", "/pki/ca.crt"),
    ("client_cert", "K8S_AUTH_CLIENT_CERT", "/pki/user.crt", "/pki/user.crt"),
    ("client_cert", "K8S_AUTH_CERT_FILE", "/pki/user.crt", "/pki/user.crt"),
    ("client_key", "K8S_AUTH_CLIENT_KEY", "/pki/user.key", "/pki/user.key"),
    ("client_key", "K8S_AUTH_KEY_FILE", "/pki/user.key", "/pki/user.key"),
    ("proxy", "K8S_AUTH_PROXY", "http://proxy:3128", "http://proxy:3128"),
    ("no_proxy", "K8S_AUTH_NO_PROXY", "localhost,10.0.0.0/8", "localhost,10.0.0.0/8"),
    ("impersonate_user", "K8S_AUTH_IMPERSONATE_USER", "ops", "ops"),
])
def test_a_kubernetes_core_environment_variable_sets_its_option(monkeypatch, option, variable, value, expected):
    monkeypatch.setenv(variable, value)
    assert validated({})[option] == expected


def test_impersonate_groups_from_the_environment_are_comma_separated(monkeypatch):
    monkeypatch.setenv("K8S_AUTH_IMPERSONATE_USER", "ops")
    monkeypatch.setenv("K8S_AUTH_IMPERSONATE_GROUPS", "system:authenticated,ops-team")
    assert validated({}, required_by=CONNECTION_REQUIRED_BY)["impersonate_groups"] == [
        "system:authenticated", "ops-team"]


def test_impersonate_groups_from_the_environment_still_need_a_user(monkeypatch):
    monkeypatch.setenv("K8S_AUTH_IMPERSONATE_GROUPS", "ops-team")
    assert any("impersonate_user" in message
               for message in validation_errors({}, required_by=CONNECTION_REQUIRED_BY))


def test_empty_groups_in_the_list_send_no_header(monkeypatch):
    monkeypatch.setenv("K8S_AUTH_IMPERSONATE_USER", "ops")
    monkeypatch.setenv("K8S_AUTH_IMPERSONATE_GROUPS", "a,,b,")
    client = new_client(validated({"host": "https://10.0.0.1:6443"}, required_by=CONNECTION_REQUIRED_BY))
    assert client.api_client._impersonation == [
        ("Impersonate-User", "ops"), ("Impersonate-Group", "a"), ("Impersonate-Group", "b")]


def test_the_options_own_name_is_read_before_its_alias_as_kubernetes_core_does(monkeypatch):
    monkeypatch.setenv("K8S_AUTH_VALIDATE_CERTS", "true")
    monkeypatch.setenv("K8S_AUTH_VERIFY_SSL", "false")
    monkeypatch.setenv("K8S_AUTH_CA_CERT", "/pki/first.crt")
    monkeypatch.setenv("K8S_AUTH_SSL_CA_CERT", "/pki/second.crt")
    params = validated({})
    assert params["validate_certs"] is True and params["ca_cert"] == "/pki/first.crt"


def test_an_empty_variable_counts_as_unset(monkeypatch):
    monkeypatch.setenv("K8S_AUTH_CA_CERT", "")
    monkeypatch.setenv("K8S_AUTH_SSL_CA_CERT", "/pki/ca.crt")
    monkeypatch.setenv("K8S_AUTH_VALIDATE_CERTS", "")
    monkeypatch.setenv("K8S_AUTH_IMPERSONATE_GROUPS", "")
    params = validated({}, required_by=CONNECTION_REQUIRED_BY)
    assert params["ca_cert"] == "/pki/ca.crt"
    assert params["validate_certs"] is None and params["impersonate_groups"] is None


def test_an_option_given_in_the_task_wins_over_the_environment(monkeypatch):
    monkeypatch.setenv("K8S_AUTH_HOST", "https://from-environment:6443")
    monkeypatch.setenv("K8S_AUTH_VERIFY_SSL", "false")
    params = validated({"host": "https://from-task:6443", "validate_certs": True})
    assert params["host"] == "https://from-task:6443" and params["validate_certs"] is True


@pytest.mark.parametrize("option, alias", sorted(KUBERNETES_CORE_ALIASES.items()))
def test_kubernetes_core_aliases_name_the_same_options(option, alias):
    value = False if option == "validate_certs" else "/pki/file"
    assert validated({alias: value})[option] == value


def test_the_doc_fragment_names_the_variables_and_aliases_the_spec_has():
    documented = yaml.safe_load(ModuleDocFragment.DOCUMENTATION)["options"]
    assert set(documented) == set(CONNECTION_ARGUMENT_SPEC)
    for option, doc in documented.items():
        spec = CONNECTION_ARGUMENT_SPEC[option]
        named = re.findall(r"E\((K8S_AUTH_\w+)\)", " ".join(doc["description"]))
        assert named == list(spec["fallback"][1]), option
        assert doc.get("aliases", []) == spec.get("aliases", []), option
        assert (doc["type"], doc.get("elements")) == (spec["type"], spec.get("elements")), option


def rest_pool(**options):
    """The connection pool of the REST client that new_client builds for the options."""
    parameters = {name: None for name in CONNECTION_ARGUMENT_SPEC}
    parameters.update(options)
    return new_client(parameters).api_client.rest_client.pool_manager


@pytest.mark.parametrize("host, no_proxy, through_proxy", [
    ("https://10.0.0.1:6443", "localhost,10.0.0.0/8", False),
    ("https://api.internal.example.com:6443", ".internal.example.com", False),
    ("https://api.example.org:6443", "localhost,10.0.0.0/8,.internal.example.com", True),
    ("https://api.example.org:6443", None, True),
])
def test_no_proxy_sends_a_matching_api_server_around_the_proxy(monkeypatch, host, no_proxy, through_proxy):
    for variable in ("NO_PROXY", "no_proxy", "HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"):
        monkeypatch.delenv(variable, raising=False)  # read by some kubernetes versions (and requests)
    pool = rest_pool(host=host, proxy="http://proxy.example.com:3128", no_proxy=no_proxy)
    assert isinstance(pool, urllib3.ProxyManager) is through_proxy


def test_no_proxy_is_kept_over_the_kubeconfig():
    kubeconfig = {"apiVersion": "v1", "kind": "Config", "current-context": "c",
                  "clusters": [{"name": "c", "cluster": {"server": "https://10.0.0.1:6443"}}],
                  "users": [{"name": "u", "user": {"token": "t"}}],
                  "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}
    parameters = {name: None for name in CONNECTION_ARGUMENT_SPEC}
    parameters.update(kubeconfig=kubeconfig, proxy="http://proxy:3128", no_proxy="10.0.0.0/8")
    assert build_configuration(parameters).no_proxy == "10.0.0.0/8"


class SpecCaptured(Exception):
    pass


def module_spec(monkeypatch, module):
    """The argument spec (shared connection options included) and the other AnsibleModule arguments that the
    module's main() builds, taken where it asks for its AnsibleModule."""
    captured = {}

    def capture(argument_spec, lease=False, **kwargs):
        captured.update(spec=dict(CONNECTION_ARGUMENT_SPEC, **(LEASE_ARGUMENT_SPEC if lease else {}), **argument_spec),
                        kwargs=kwargs)
        raise SpecCaptured

    monkeypatch.setattr(module, "kubernetes_module", capture)
    with pytest.raises(SpecCaptured):
        module.main()
    return captured["spec"], captured["kwargs"]


def test_evict_takes_k8s_drains_names_for_the_timeout_and_the_grace_period(monkeypatch):
    spec, kwargs = module_spec(monkeypatch, evict)
    params = validated({"nodes": ["n1"], "wait_timeout": 120, "terminate_grace_period": 30}, spec, **kwargs)
    assert (params["timeout"], params["grace_period"]) == (120, 30)
    job, warming, replacing = evict.validated(params)
    assert (job.settings.timeout, job.settings.grace_period, warming, replacing) == (120, 30, None, None)


def test_evict_takes_the_pods_to_replace_first_with_replace_pods_defaults(monkeypatch):
    spec, kwargs = module_spec(monkeypatch, evict)
    params = validated({"nodes": ["n1"], "replace_first": {"pods": ["shop/db-0"], "run_id": " r1 "}}, spec, **kwargs)
    replacing = evict.validated(params)[2]
    assert (replacing.pods, replacing.run_id, replacing.timeout, replacing.max_concurrent) == (("shop/db-0",), "r1",
                                                                                               900, 4)


def test_evict_refuses_a_pod_to_replace_first_that_is_no_pod_key_by_its_option(monkeypatch):
    spec, kwargs = module_spec(monkeypatch, evict)
    params = validated({"nodes": ["n1"], "replace_first": {"pods": ["db-0"], "run_id": "r1"}}, spec, **kwargs)
    with pytest.raises(InvalidInput, match="replace_first.pods"):
        evict.validated(params)


def test_evict_takes_the_nodes_to_warm_first_with_warm_nodes_defaults(monkeypatch):
    spec, kwargs = module_spec(monkeypatch, evict)
    params = validated({"nodes": ["n1"], "warm_first": {"name": "rotation-r1", "zones": [{"zone": "a", "count": 2}],
                                                        "exclude_nodes": ["n1"], "timeout": "300"}}, spec, **kwargs)
    warming = evict.validated(params)[1]
    assert (warming.name, warming.namespace, warming.zones, warming.exclude_nodes, warming.timeout) == (
        "rotation-r1", "kubeops-warm", ({"zone": "a", "count": 2},), ("n1",), 300)
    assert (warming.present, warming.wait, warming.priority, warming.requests) == (True, True, -10, None)


@pytest.mark.parametrize("warm_first, refused", [
    ({"zones": []}, "warm_first.zones is empty"),
    ({"zones": [{"zone": "a", "count": 1}, {"zone": "a", "count": 2}]}, "warm_first.zones names the zone a twice"),
    ({"count": -1}, "warm_first.count must be 0 or more"),
    ({"count": 1, "timeout": 0}, "warm_first.timeout must be 1 or more"),
    ({"count": 1, "exclude_nodes": [""]}, "warm_first.exclude_nodes"),
])
def test_evict_refuses_what_warm_nodes_refuses_to_warm_first_by_its_option(monkeypatch, warm_first, refused):
    spec, kwargs = module_spec(monkeypatch, evict)
    params = validated({"nodes": ["n1"], "warm_first": warm_first}, spec, **kwargs)
    with pytest.raises(InvalidInput, match=refused):
        evict.validated(params)


def test_evict_wants_a_count_or_zones_to_warm_first_not_both(monkeypatch):
    spec, kwargs = module_spec(monkeypatch, evict)
    for warm_first in ({"name": "r1"}, {"count": 1, "zones": [{"zone": "a", "count": 1}]}):
        assert validation_errors({"nodes": ["n1"], "warm_first": warm_first}, spec, **kwargs), warm_first


def test_evict_refuses_k8s_drains_zero_timeout_by_the_options_name(monkeypatch):
    spec, kwargs = module_spec(monkeypatch, evict)
    params = validated({"nodes": ["n1"], "wait_timeout": 0}, spec, **kwargs)
    with pytest.raises(InvalidInput, match="timeout"):
        evict.validated(params)


def test_rollout_restart_selects_workloads_by_workload_selector_or_its_old_name(monkeypatch):
    spec, kwargs = module_spec(monkeypatch, rollout_restart)
    for name in ("workload_selector", "label_selector"):
        params = validated({name: "app=web", "wait_timeout": 60}, spec, **kwargs)
        settings = RestartSettings.from_params(params)
        assert (settings.label_selector, settings.timeout) == ("app=web", 60), name


def test_rollout_restart_names_a_malformed_workload_selector_as_the_task_does(monkeypatch):
    spec, kwargs = module_spec(monkeypatch, rollout_restart)
    params = validated({"workload_selector": "app in (a"}, spec, **kwargs)
    with pytest.raises(InvalidInput, match='workload_selector "app in \\(a" is not a label selector'):
        RestartSettings.from_params(params)
    params = validated({"label_selector": "app in (a"}, spec, **kwargs)
    with pytest.raises(InvalidInput, match='label_selector "app in \\(a" is not a label selector'):
        RestartSettings.from_params(params)


def test_an_alias_given_in_the_task_wins_over_the_environment(monkeypatch):
    # ansible-core sets fallbacks before it resolves aliases, so it also warns that both names were set.
    monkeypatch.setenv("K8S_AUTH_VERIFY_SSL", "false")
    assert validated({"verify_ssl": True})["validate_certs"] is True
