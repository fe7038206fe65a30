from __future__ import annotations

import pytest

from ansible_collections.kubeops.rotation.plugins.module_utils.ansible_module import CONNECTION_ARGUMENT_SPEC
from ansible_collections.kubeops.rotation.plugins.module_utils.api.client import (
    MAX_RETRY_DELAY,
    RETRY_BUDGET_SECONDS,
    build_configuration,
    default_kubeconfig_path,
    retry_delay,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.api.errors import ConnectionFailed

KUBECONFIG = {
    "apiVersion": "v1",
    "kind": "Config",
    "clusters": [
        {"name": "a", "cluster": {"server": "https://a.example:6443", "insecure-skip-tls-verify": True}},
        {"name": "b", "cluster": {"server": "https://b.example:6443"}},
    ],
    "users": [{"name": "u", "user": {"token": "from-kubeconfig"}}],
    "contexts": [
        {"name": "ctx-a", "context": {"cluster": "a", "user": "u"}},
        {"name": "ctx-b", "context": {"cluster": "b", "user": "u"}},
    ],
    "current-context": "ctx-a",
}


def params(**overrides):
    base = {name: None for name in CONNECTION_ARGUMENT_SPEC}
    base.update(overrides)
    return base


def authorization(configuration):
    """The Authorization header the client sends, as every kubernetes client version (29 to 37) builds it:
    where the library keeps the token (``api_key``'s keys) changed between versions, the auth settings did not."""
    settings = configuration.auth_settings()["BearerToken"]
    assert (settings["in"], settings["key"]) == ("header", "authorization")
    return settings["value"]


def test_reads_are_retried_with_growing_backoff_until_the_budget_is_spent():
    delays = [retry_delay("GET", attempt, 503) for attempt in range(1, 8)]
    assert delays == [0.5, 1.0, 2.0, 4.0, 5.0, 5.0, 5.0]
    assert retry_delay("GET", 9, 503, waited=RETRY_BUDGET_SECONDS - 1) == 5.0
    assert retry_delay("GET", 10, 503, waited=RETRY_BUDGET_SECONDS) is None


def test_writes_are_retried_only_when_they_never_reached_the_server():
    assert retry_delay("POST", 1, 503) is None
    assert retry_delay("PATCH", 1) is None
    assert retry_delay("POST", 1, sent=False) == 0.5
    assert retry_delay("POST", 1, 503, sent=False) is None


def test_only_transient_statuses_are_retried():
    assert retry_delay("GET", 1, 404) is None
    assert retry_delay("GET", 1, 409) is None
    assert retry_delay("GET", 1, 500) == 0.5
    assert retry_delay("GET", 1, 429) == 0.5
    assert retry_delay("GET", 1, None) == 0.5


def test_retry_after_wins_when_longer_and_is_capped():
    assert retry_delay("GET", 1, 429, "3") == 3.0
    assert retry_delay("GET", 1, 429, "600") == MAX_RETRY_DELAY
    assert retry_delay("GET", 1, 429, "soon") == 0.5


def test_default_kubeconfig_is_first_of_kubeconfig_variable(tmp_path):
    assert default_kubeconfig_path({"KUBECONFIG": "/a:/b"}) == "/a"
    assert default_kubeconfig_path({}).endswith("/.kube/config")


def test_inline_kubeconfig_uses_current_context():
    configuration = build_configuration(params(kubeconfig=KUBECONFIG))
    assert configuration.host == "https://a.example:6443"
    assert configuration.verify_ssl is False
    assert authorization(configuration) == "Bearer from-kubeconfig"


def test_context_selects_another_cluster_and_options_override_kubeconfig():
    configuration = build_configuration(params(
        kubeconfig=KUBECONFIG, context="ctx-b", api_key="override", proxy="http://proxy:3128",
        validate_certs=False))
    assert configuration.host == "https://b.example:6443"
    assert authorization(configuration) == "Bearer override"
    assert configuration.proxy == "http://proxy:3128"
    assert configuration.verify_ssl is False


def test_options_survive_the_kubeconfig_token_refresh_before_each_request():
    configuration = build_configuration(params(
        kubeconfig=KUBECONFIG, context="ctx-b", host="https://override:6443", validate_certs=False))
    assert authorization(configuration) == "Bearer from-kubeconfig"
    assert configuration.host == "https://override:6443"
    assert configuration.verify_ssl is False


def test_unknown_context_is_a_clear_error():
    with pytest.raises(ConnectionFailed, match="ctx-nope"):
        build_configuration(params(kubeconfig=KUBECONFIG, context="ctx-nope"))


def test_missing_kubeconfig_file_is_named(tmp_path):
    missing = tmp_path / "nope.yaml"
    with pytest.raises(ConnectionFailed, match="kubeconfig %s does not exist" % missing):
        build_configuration(params(kubeconfig=str(missing)))


def test_host_alone_needs_no_kubeconfig(monkeypatch, tmp_path):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "absent"))
    configuration = build_configuration(params(host="https://10.0.0.1:6443", api_key="t"))
    assert configuration.host == "https://10.0.0.1:6443"
    assert authorization(configuration) == "Bearer t"


def test_missing_certificate_file_is_named(tmp_path):
    with pytest.raises(ConnectionFailed, match="ca_cert .*ca.crt does not exist"):
        build_configuration(params(host="https://10.0.0.1:6443", ca_cert=str(tmp_path / "ca.crt")))


def test_nothing_to_connect_to_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "absent"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(ConnectionFailed):
        build_configuration(params())
