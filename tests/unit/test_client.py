from __future__ import annotations

import json
import types
from urllib.parse import unquote_plus, urlencode

import pytest
import urllib3

from ansible_collections.kubeops.rotation.plugins.module_utils.ansible_module import CONNECTION_ARGUMENT_SPEC
from ansible_collections.kubeops.rotation.plugins.module_utils.api.client import (
    CONNECT_TIMEOUT,
    LIST_READ_TIMEOUT,
    Client,
    MAX_RETRY_DELAY,
    READ_TIMEOUT,
    RETRY_BUDGET_SECONDS,
    build_configuration,
    default_kubeconfig_path,
    new_client,
    separate_client,
    repeatable_write,
    retry_delay,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.api.errors import ApiException, ConnectionFailed

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


def test_a_write_whose_answer_was_lost_is_repeated_when_a_repeat_finds_it_done():
    assert retry_delay("PATCH", 1, repeatable=True) == 0.5
    assert retry_delay("PATCH", 1, 503, repeatable=True) is None
    assert repeatable_write("PATCH", "https://k/api/v1/nodes/n1")
    assert repeatable_write("DELETE", "https://k/api/v1/nodes/n1")
    assert repeatable_write("POST", "https://k/apis/coordination.k8s.io/v1/namespaces/ns/leases")
    assert not repeatable_write("POST", "https://k/api/v1/namespaces/ns/pods/web-1/eviction")
    assert not repeatable_write("POST", "https://k/api/v1/namespaces/ns/events?dryRun=All")


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


def test_no_configuration_at_all_says_what_was_tried_and_what_to_set(monkeypatch, tmp_path):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "absent"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(ConnectionFailed, match=r"^No Kubernetes configuration found: no kubeconfig option .* no file "
                                               r"%s .* not in a pod of a cluster\. Set kubeconfig" % (tmp_path / "absent")):
        build_configuration(params())


def test_missing_certificate_file_is_named(tmp_path):
    with pytest.raises(ConnectionFailed, match="ca_cert .*ca.crt does not exist"):
        build_configuration(params(host="https://10.0.0.1:6443", ca_cert=str(tmp_path / "ca.crt")))


def test_nothing_to_connect_to_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "absent"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(ConnectionFailed):
        build_configuration(params())


class Silent:
    """An answer that never comes: the read timeout of ``seconds`` passes on the pool's clock, then it is raised."""

    def __init__(self, seconds):
        self.seconds = seconds


class FakePool:
    """In place of the REST layer's urllib3 pool, which every kubernetes client version (29 to 37) calls with
    each request: answers ``statuses`` in turn (an exception is raised, a Silent one after its timeout on ``now``,
    the clock the client reads), records each request's headers and URL (its query included)."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.headers = []
        self.urls = []
        self.timeouts = []
        self.now = 0.0

    def request(self, method, url, **kwargs):
        self.headers.append(kwargs.get("headers"))
        self.timeouts.append(kwargs.get("timeout"))
        self.urls.append(url + ("?" + urlencode(kwargs["fields"]) if kwargs.get("fields") else ""))
        answer = self.answers.pop(0)
        if isinstance(answer, Silent):
            self.now += answer.seconds
            raise urllib3.exceptions.ReadTimeoutError(None, url, "Read timed out.")
        if isinstance(answer, Exception):
            raise answer
        status, body = answer
        return urllib3.HTTPResponse(body=json.dumps(body).encode(), status=status, preload_content=False,
                                    headers={"Content-Type": "application/json", "Retry-After": "1"})


def fake_client(*answers, **options):
    sleeps = []
    client = new_client(params(host="https://k8s.example:6443", api_key="x", **options), sleep=sleeps.append)
    client.api_client.rest_client.pool_manager = pool = FakePool(*answers)
    client.api_client._clock = lambda: pool.now
    return client, pool, sleeps


VERSION = {"major": "1", "minor": "35", "gitVersion": "v1.35.4", "gitCommit": "", "gitTreeState": "",
           "buildDate": "", "goVersion": "", "compiler": "", "platform": ""}


def test_typed_calls_are_counted_impersonated_and_retried_whichever_generator_made_the_client():
    # kubernetes up to 35 sends through ApiClient.request, 37 through ApiClient.call_api: both are hooked.
    client, pool, sleeps = fake_client((503, {"message": "restarting"}), (200, VERSION),
                                       impersonate_user="jane", impersonate_groups=["platform", "sre"])
    assert client.version.get_code().git_version == "v1.35.4"
    assert client.request_count == 2
    assert sleeps == [1.0]
    for headers in pool.headers:
        assert headers.getlist("Impersonate-User") == ["jane"]
        assert headers.getlist("Impersonate-Group") == ["platform", "sre"]
        # The API server's audit log names the collection, not the generated client.
        assert headers.getlist("User-Agent") == ["kubeops.rotation"]


def node(name, hostname=None):
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": hostname or name}}}


def test_named_nodes_are_listed_by_their_hostname_label_and_those_not_found_so_read_by_name():
    listed = {"kind": "NodeList", "apiVersion": "v1", "metadata": {"resourceVersion": "7"},
              "items": [node("a"), node("b"), node("other", "c")]}
    client, pool, _sleeps = fake_client((200, listed), (200, node("c", "c.example")),
                                        (404, {"message": 'nodes "gone" not found'}), (200, node("Not_A_Label_")))
    nodes, missing = client.read_nodes(["c", "b", "a", "gone", "Not_A_Label_"])
    assert [found["metadata"]["name"] for found in nodes] == ["Not_A_Label_", "a", "b", "c"]
    assert missing == ["gone"]
    # kubernetes up to 35 encodes a space as "+", 37 as "%20"
    assert "labelSelector=kubernetes.io/hostname in (a,b,c,gone)" in unquote_plus(pool.urls[0])
    assert [unquote_plus(url).rsplit("/", 1)[1] for url in pool.urls[1:]] == ["c", "gone", "Not_A_Label_"]


def test_a_list_follows_its_continue_tokens_and_gives_the_last_pages_resource_version():
    first = {"kind": "PodList", "apiVersion": "v1", "metadata": {"continue": "t1", "resourceVersion": "7"},
             "items": [{"metadata": {"name": "a"}}]}
    last = {"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "8"},
            "items": [{"metadata": {"name": "b"}}]}
    client, pool, _sleeps = fake_client((200, first), (200, last))
    items, version = client.list_with_version(client.core.list_pod_for_all_namespaces, page_size=1)
    assert ([item["metadata"]["name"] for item in items], version) == (["a", "b"], "8")
    assert "continue=" not in pool.urls[0] and "continue=t1" in pool.urls[1] and "limit=1" in pool.urls[1]


def test_a_custom_resource_not_served_is_none_and_a_page_lost_later_is_raised():
    first = {"metadata": {"continue": "t1"}, "items": [{"metadata": {"name": "a"}}]}
    last = {"metadata": {}, "items": [{"metadata": {"name": "b"}}]}
    client, pool, _sleeps = fake_client((200, first), (200, last))
    assert client.list_custom("karpenter.sh", "v1", "nodeclaims") == [{"metadata": {"name": "a"}},
                                                                      {"metadata": {"name": "b"}}]
    assert "continue=t1" in pool.urls[1]
    client, _pool, _sleeps = fake_client((404, {"message": "the server could not find the requested resource"}))
    assert client.list_custom("karpenter.sh", "v1", "nodeclaims") is None
    client, _pool, _sleeps = fake_client((200, first), (404, {"message": "gone"}))
    with pytest.raises(ApiException):
        client.list_custom("karpenter.sh", "v1", "nodeclaims")


def test_a_single_node_is_read_by_name():
    client, pool, _sleeps = fake_client((200, node("a")))
    assert client.read_nodes(["a"]) == ([node("a")], [])
    assert unquote_plus(pool.urls[0]).endswith("/api/v1/nodes/a")


def test_a_status_that_is_not_transient_is_raised_once_with_its_body():
    client, pool, sleeps = fake_client((404, {"message": "nodes \"x\" not found"}))
    with pytest.raises(ApiException) as raised:
        client.core.read_node("x")
    assert raised.value.status == 404
    assert json.loads(raised.value.body)["message"] == 'nodes "x" not found'
    assert (client.request_count, len(pool.headers), sleeps) == (1, 1, [])


def test_a_write_answered_with_a_transient_status_is_not_repeated():
    client, pool, sleeps = fake_client((429, {"message": "Cannot evict pod"}))
    with pytest.raises(ApiException) as raised:
        client.core.patch_node("x", {"spec": {"unschedulable": True}})
    assert raised.value.status == 429
    assert (client.request_count, len(pool.headers), sleeps) == (1, 1, [])


def test_an_unreachable_server_is_named_after_the_first_contact_budget():
    refused = urllib3.exceptions.NewConnectionError(None, "Failed to establish a new connection: refused")
    client, pool, sleeps = fake_client(*[urllib3.exceptions.MaxRetryError(None, "/version", refused)] * 10)
    with pytest.raises(ConnectionFailed, match="^Cannot reach the API server at https://k8s.example:6443: "):
        client.version.get_code()
    assert sleeps == [0.5, 1.0, 2.0, 4.0, 5.0, 5.0]
    assert client.request_count == len(pool.headers) == 7


LOST = urllib3.exceptions.ProtocolError("Connection aborted.", ConnectionResetError(104, "Connection reset by peer"))


def test_a_patch_whose_answer_was_lost_is_sent_again_and_counted():
    client, pool, sleeps = fake_client(LOST, (200, {"metadata": {"name": "x"}}))
    client.call_json(client.core.patch_node, "x", {"spec": {"unschedulable": True}})
    assert (client.request_count, len(pool.headers), sleeps) == (2, 2, [0.5])
    assert client.retries == {"requests": 1, "lost_answers": 1}


def test_an_eviction_whose_answer_was_lost_is_left_to_its_caller():
    client, pool, _sleeps = fake_client(LOST)
    with pytest.raises(ConnectionFailed):
        client.core.create_namespaced_pod_eviction("web-1", "ns", {"metadata": {"name": "web-1"}})
    assert (client.request_count, client.retries) == (1, {"requests": 0, "lost_answers": 1})


def test_every_request_waits_a_bounded_time_longer_for_a_page_of_a_list_than_for_one_object():
    listed = {"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "7"}, "items": []}
    client, pool, _sleeps = fake_client((200, node("a")), (200, listed), (200, {"metadata": {"name": "a"}}))
    client.call_json(client.core.read_node, "a")
    client.list_all(client.core.list_pod_for_all_namespaces)
    client.call_json(client.core.patch_node, "a", {"spec": {"unschedulable": True}})
    timeouts = [(timeout.connect_timeout, timeout.read_timeout) for timeout in pool.timeouts]
    assert timeouts == [(CONNECT_TIMEOUT, READ_TIMEOUT), (CONNECT_TIMEOUT, LIST_READ_TIMEOUT),
                        (CONNECT_TIMEOUT, READ_TIMEOUT)]


def test_a_read_that_timed_out_is_a_lost_answer_retried_within_the_time_spent_on_it():
    client, _pool, sleeps = fake_client(*[Silent(READ_TIMEOUT)] * 9)
    client.api_client.answered = True
    with pytest.raises(ConnectionFailed, match="Read timed out"):
        client.call_json(client.core.read_node, "a")
    # Attempts begun at 0 s, 20.5 s, 41.5 s and 63.5 s: the last one began past the 45 s budget, where waits
    # alone would have allowed 9 attempts.
    assert sleeps == [0.5, 1.0, 2.0] and client.request_count == 4


def test_a_read_whose_first_attempt_failed_at_once_is_repeated_after_a_second_one_timed_out():
    client, _pool, sleeps = fake_client(LOST, Silent(LIST_READ_TIMEOUT), (200, node("a")))
    client.api_client.answered = True
    assert client.call_json(client.core.read_node, "a")["metadata"]["name"] == "a"
    assert sleeps == [0.5, 1.0] and client.request_count == 3


def test_a_separate_client_has_connections_and_a_timeout_of_its_own_and_repeats_nothing():
    client, pool, _sleeps = fake_client()
    renewals = separate_client(client, (2, 5), 0)
    assert renewals.api_client.rest_client.pool_manager is not pool
    renewals.api_client.rest_client.pool_manager = own = FakePool(LOST)
    with pytest.raises(ConnectionFailed):
        renewals.call_json(renewals.core.read_node, "a")
    assert [(t.connect_timeout, t.read_timeout) for t in own.timeouts] == [(2, 5)] and pool.timeouts == []
    assert renewals.request_count == 1


def test_a_request_refused_before_it_is_sent_is_not_sent():
    client, pool, _sleeps = fake_client((200, VERSION))

    def refuse(_method):
        raise ConnectionFailed("the Lease is lost")

    client.api_client.before_request = refuse
    with pytest.raises(ConnectionFailed, match="the Lease is lost"):
        client.version.get_code()
    assert pool.headers == [] and client.request_count == 0


def test_a_server_whose_certificate_is_not_trusted_is_named_at_once_with_what_to_set():
    untrusted = urllib3.exceptions.SSLError(
        "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: unable to get local issuer certificate")
    client, _pool, sleeps = fake_client(urllib3.exceptions.MaxRetryError(None, "/version", untrusted))
    with pytest.raises(ConnectionFailed, match="its certificate is not trusted .*ca_cert.*validate_certs: false"):
        client.version.get_code()
    assert sleeps == [] and client.request_count == 1


def test_a_request_the_server_took_has_the_whole_budget_even_before_its_first_answer():
    client, _pool, sleeps = fake_client(Silent(READ_TIMEOUT), Silent(READ_TIMEOUT), (200, node("a")))
    assert client.call_json(client.core.read_node, "a")["metadata"]["name"] == "a"
    assert sleeps == [0.5, 1.0], "the second attempt began after the 15 s of a first contact"


def test_lists_keep_objects_lean_unless_asked_for_their_managed_fields():
    page = {"metadata": {"resourceVersion": "7"}, "items": [
        {"metadata": {"name": "p1", "managedFields": [{"manager": "kubelet"}]}, "spec": {}}]}

    def list_method(**_kwargs):
        return types.SimpleNamespace(data=json.dumps(page))

    client = object.__new__(Client)
    items, version = Client.list_with_version(client, list_method)
    assert version == "7" and items == [{"metadata": {"name": "p1"}, "spec": {}}]
    kept, _version = Client.list_with_version(client, list_method, managed_fields=True)
    assert kept[0]["metadata"]["managedFields"] == [{"manager": "kubelet"}]
