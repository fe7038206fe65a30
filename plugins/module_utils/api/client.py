# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The one way the collection talks to the Kubernetes API.

``new_client(params)`` turns the shared connection options (documented in the
``kubeops.rotation.connection`` doc fragment, given as a dict) into a
``Client``. Every request goes through ``RetryingApiClient.request``, which
counts requests, retries transient failures of reads, and sends
impersonation headers.
"""

from __future__ import annotations

import os
import threading
import time

from ansible_collections.kubeops.rotation.plugins.module_utils.api.errors import (
    ApiException,
    ConnectionFailed,
    is_not_found,
)

try:
    import urllib3
    from kubernetes import client as k8s_client
    from kubernetes import config as k8s_config
    from kubernetes.config.config_exception import ConfigException
except ImportError as exc:  # reported by the module through missing_required_lib
    KUBERNETES_IMPORT_ERROR = exc
    ConfigException = None
    k8s_client = None
else:
    KUBERNETES_IMPORT_ERROR = None

TRANSIENT_STATUSES = frozenset([429, 500, 502, 503, 504])
READ_METHODS = frozenset(["GET", "HEAD"])
MAX_RETRY_DELAY = 5.0
# How long one request is repeated through transient faults: an API server restart (about 10 s) fits.
RETRY_BUDGET_SECONDS = 45.0
# Before the API server has answered once (a wrong host, or a task started during an outage), less.
FIRST_CONTACT_BUDGET_SECONDS = 15.0


def retry_delay(method, attempt, status=None, retry_after=None, waited=0.0, sent=True,
                budget=RETRY_BUDGET_SECONDS):
    """Seconds to wait before repeating a request that failed, or None to give up.

    Reads are repeated on a transient status or a connection fault; a write
    only when it never reached the server (``sent`` false: the connection was
    refused), since a write that failed on the way back may have been applied
    and its caller decides. ``status`` is None for a connection fault. Backoff
    is 0.5 s, 1 s, 2 s, ... up to 5 s (a server's longer Retry-After wins),
    while the delays so far, ``waited``, stay within ``budget``.
    """
    if method.upper() not in READ_METHODS and (status is not None or sent):
        return None
    if status is not None and status not in TRANSIENT_STATUSES:
        return None
    if waited >= budget:
        return None
    delay = 0.5 * 2 ** min(attempt - 1, 4)
    if retry_after:
        try:
            delay = max(delay, float(retry_after))
        except ValueError:
            pass
    return min(delay, MAX_RETRY_DELAY)


def never_sent(exc):
    """Whether a urllib3 fault happened before the request reached the server (refused, connect timeout)."""
    reason = getattr(exc, "reason", None)
    return isinstance(exc, urllib3.exceptions.NewConnectionError) or \
        isinstance(reason, (urllib3.exceptions.NewConnectionError, urllib3.exceptions.ConnectTimeoutError)) or \
        isinstance(exc, urllib3.exceptions.ConnectTimeoutError)


def default_kubeconfig_path(environ=None):
    """The kubeconfig kubectl would read: the first file of $KUBECONFIG, or ~/.kube/config."""
    environ = os.environ if environ is None else environ
    paths = [p for p in environ.get("KUBECONFIG", "").split(os.pathsep) if p]
    return paths[0] if paths else os.path.expanduser("~/.kube/config")


if k8s_client is not None:

    class RetryingApiClient(k8s_client.ApiClient):
        """ApiClient whose every request is counted, retried when transient, and impersonated."""

        def __init__(self, configuration, impersonate_user=None, impersonate_groups=None, sleep=time.sleep):
            super().__init__(configuration)
            self.request_count = 0
            self._count_lock = threading.Lock()
            # Called once, just before the first write: the Lease is taken there (engine.lease).
            self.before_first_write = None
            # Whether the API server has answered once: until then a refused connection is not retried long.
            self.answered = False
            self._sleep = sleep
            self._impersonation = []
            if impersonate_user:
                self._impersonation.append(("Impersonate-User", impersonate_user))
                self._impersonation.extend(("Impersonate-Group", group) for group in impersonate_groups or [])

        def _headers(self, headers):
            if not self._impersonation:
                return headers
            # Several groups need several Impersonate-Group headers; a plain
            # dict can hold only one, urllib3's HTTPHeaderDict holds all.
            merged = urllib3.HTTPHeaderDict(headers or {})
            for name, value in self._impersonation:
                merged.add(name, value)
            return merged

        def request(self, method, url, query_params=None, headers=None, **kwargs):
            headers = self._headers(headers)
            if method.upper() not in READ_METHODS and self.before_first_write:
                first_write, self.before_first_write = self.before_first_write, None
                first_write()
            attempt, waited = 0, 0.0
            while True:
                attempt += 1
                with self._count_lock:  # rollout restarts make requests from several threads
                    self.request_count += 1
                try:
                    response = super().request(method, url, query_params=query_params, headers=headers, **kwargs)
                    self.answered = True
                    return response
                except ApiException as exc:
                    self.answered = True
                    retry_after = (exc.headers or {}).get("Retry-After")
                    delay = retry_delay(method, attempt, exc.status, retry_after, waited)
                    if delay is None:
                        raise
                except urllib3.exceptions.HTTPError as exc:
                    budget = RETRY_BUDGET_SECONDS if self.answered else FIRST_CONTACT_BUDGET_SECONDS
                    delay = retry_delay(method, attempt, waited=waited, sent=not never_sent(exc), budget=budget)
                    if delay is None:
                        raise ConnectionFailed(
                            "Cannot reach the API server at %s: %s" % (self.configuration.host, exc))
                self._sleep(delay)
                waited += delay


def build_configuration(params):
    """A kubernetes Configuration from the connection options, or ConnectionFailed."""
    configuration = k8s_client.Configuration()
    kubeconfig = params.get("kubeconfig")
    context = params.get("context")
    try:
        if isinstance(kubeconfig, dict):
            k8s_config.load_kube_config_from_dict(
                kubeconfig, context=context, client_configuration=configuration, persist_config=False)
        elif kubeconfig:
            path = os.path.expanduser(str(kubeconfig))
            if not os.path.exists(path):
                raise ConnectionFailed("kubeconfig %s does not exist." % path)
            k8s_config.load_kube_config(
                config_file=path, context=context, client_configuration=configuration, persist_config=False)
        elif not params.get("host"):
            path = default_kubeconfig_path()
            if os.path.exists(path):
                k8s_config.load_kube_config(
                    config_file=path, context=context, client_configuration=configuration, persist_config=False)
            else:
                k8s_config.load_incluster_config(client_configuration=configuration)
    except ConfigException as exc:
        raise ConnectionFailed("Cannot load the Kubernetes configuration: %s" % exc)

    if params.get("api_key"):
        configuration.api_key = {"authorization": "Bearer %s" % params["api_key"]}
        configuration.refresh_api_key_hook = None
    apply_overrides(configuration, params)
    kubeconfig_refresh = configuration.refresh_api_key_hook
    if kubeconfig_refresh:
        # The kubeconfig loader's token refresh, run before every request,
        # also copies the kubeconfig's server and TLS settings back.
        def refresh_keeping_overrides(refreshed):
            kubeconfig_refresh(refreshed)
            apply_overrides(refreshed, params)

        configuration.refresh_api_key_hook = refresh_keeping_overrides
    if not configuration.host or configuration.host == "http://localhost":
        raise ConnectionFailed(
            "No Kubernetes API server to talk to: give host or kubeconfig, or run where a kubeconfig or an "
            "in-cluster service account exists.")
    for option in ("ca_cert", "client_cert", "client_key"):
        if params.get(option) and not os.path.exists(params[option]):
            raise ConnectionFailed("%s %s does not exist." % (option, params[option]))
    return configuration


def apply_overrides(configuration, params):
    """Put the explicit connection options over what the kubeconfig said."""
    if params.get("host"):
        configuration.host = params["host"]
    if params.get("ca_cert"):
        configuration.ssl_ca_cert = params["ca_cert"]
    if params.get("client_cert"):
        configuration.cert_file = params["client_cert"]
        configuration.key_file = params["client_key"]
    if params.get("validate_certs") is not None:
        configuration.verify_ssl = params["validate_certs"]
    if params.get("proxy"):
        configuration.proxy = params["proxy"]


class Client:
    """The typed API groups the collection uses, on one counted, retrying ApiClient."""

    def __init__(self, api_client):
        self.api_client = api_client
        self.core = k8s_client.CoreV1Api(api_client)
        self.apps = k8s_client.AppsV1Api(api_client)
        self.policy = k8s_client.PolicyV1Api(api_client)
        self.version = k8s_client.VersionApi(api_client)
        self.authentication = k8s_client.AuthenticationV1Api(api_client)
        self.scheduling = k8s_client.SchedulingV1Api(api_client)
        self.coordination = k8s_client.CoordinationV1Api(api_client)

    @property
    def request_count(self):
        return self.api_client.request_count

    def to_dict(self, obj):
        """The API's own JSON shape (camelCase keys) of a client model object."""
        return self.api_client.sanitize_for_serialization(obj)

    def whoami(self):
        """The identity the API server sees, after impersonation: {"username", "groups"}."""
        review = self.authentication.create_self_subject_review(
            {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
        return {"username": review.status.user_info.username, "groups": review.status.user_info.groups or []}

    def read_or_none(self, read, *args, **kwargs):
        """``read(*args)`` as a dict, or None when the object does not exist."""
        try:
            return self.to_dict(read(*args, **kwargs))
        except ApiException as exc:
            if is_not_found(exc):
                return None
            raise

    def delete_if_present(self, delete, *args, **kwargs):
        """``delete(*args)``; True when something was deleted, False when it was gone already."""
        try:
            delete(*args, **kwargs)
            return True
        except ApiException as exc:
            if is_not_found(exc):
                return False
            raise

    def read_nodes(self, names=None, selector=None):
        """Nodes named in ``names`` plus those matching ``selector``, as dicts, and the names that do not exist."""
        nodes = {}
        missing = []
        for name in names or []:
            node = self.read_or_none(self.core.read_node, name)
            if node is None:
                missing.append(name)
            else:
                nodes[name] = node
        if selector:
            for node in self.list_all(self.core.list_node, label_selector=selector):
                nodes[node["metadata"]["name"]] = node
        return [nodes[name] for name in sorted(nodes)], missing

    def update_node(self, node, plan, apply=True, attempts=3):
        """Patch a node with what ``plan(node)`` returns, ``(result, patch)``, and return that result.

        The patch is expected to be guarded by the node's resourceVersion
        (model.patches.guarded): when the node changed in between (409, 422), it is read
        again and planned again, up to ``attempts`` times. Nothing is patched
        when the patch is empty or ``apply`` is false.
        """
        attempt = 1
        while True:
            result, patch = plan(node)
            if not apply or not patch:
                return result
            try:
                self.core.patch_node(node["metadata"]["name"], patch)
                return result
            except ApiException as exc:
                if exc.status not in (409, 422) or attempt >= attempts:
                    raise
            attempt += 1
            node = self.to_dict(self.core.read_node(node["metadata"]["name"]))

    def list_all(self, list_method, page_size=500, **kwargs):
        """Every item of a list call as plain dicts, fetched page by page."""
        items = []
        token = None
        while True:
            page = list_method(limit=page_size, _continue=token, **kwargs)
            items.extend(self.to_dict(item) for item in page.items)
            token = page.metadata._continue
            if not token:
                return items


def new_client(params, sleep=time.sleep):
    """The client factory: connection options in, a ready Client out."""
    configuration = build_configuration(params)
    api_client = RetryingApiClient(
        configuration,
        impersonate_user=params.get("impersonate_user"),
        impersonate_groups=params.get("impersonate_groups"),
        sleep=sleep,
    )
    return Client(api_client)
