# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""What every module does the same way: its AnsibleModule with the shared connection options, its
client, and the one place where an error becomes ``fail_json``; and the same module run in the process of the
collection's action plugin (run_in_process)."""

from __future__ import annotations

import os

from ansible.module_utils.basic import AnsibleFallbackNotFound, AnsibleModule, missing_required_lib
from ansible.module_utils.common.arg_spec import ModuleArgumentSpecValidator
from ansible.module_utils.common.parameters import remove_values
from ansible.module_utils.errors import UnsupportedError
from ansible_collections.kubeops.rotation.plugins.module_utils.api.client import KUBERNETES_IMPORT_ERROR, new_client
from ansible_collections.kubeops.rotation.plugins.module_utils.api.errors import ApiException, api_error_message
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.controller import exit_with_controller
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.lease import LeaseKeeper, LeaseSettings
from ansible_collections.kubeops.rotation.plugins.module_utils.model.errors import KubeopsError
from ansible_collections.kubeops.rotation.plugins.module_utils.model.keys import LEASE_NAME, LEASE_NAMESPACE


def k8s_auth_env(*names):
    """The value of the first of the environment variables ``names`` that is set and not empty, as kubernetes.core
    reads its K8S_AUTH_ variables (an argument spec ``fallback``)."""
    for name in names:
        if os.environ.get(name):
            return os.environ[name]
    raise AnsibleFallbackNotFound


# The options, aliases and environment variables of kubernetes.core's connection options (its k8s_auth_options doc
# fragment and module_utils/k8s/client.py), for the options the collection has: kubernetes.core reads
# K8S_AUTH_<option> and then K8S_AUTH_<alias>, so both names are read here, in that order. username, password,
# proxy_headers and persist_config are not among them.
CONNECTION_ARGUMENT_SPEC = dict(
    kubeconfig=dict(type="raw", fallback=(k8s_auth_env, ["K8S_AUTH_KUBECONFIG"])),
    context=dict(type="str", fallback=(k8s_auth_env, ["K8S_AUTH_CONTEXT"])),
    host=dict(type="str", fallback=(k8s_auth_env, ["K8S_AUTH_HOST"])),
    api_key=dict(type="str", no_log=True, fallback=(k8s_auth_env, ["K8S_AUTH_API_KEY"])),
    ca_cert=dict(type="path", aliases=["ssl_ca_cert"],
                 fallback=(k8s_auth_env, ["K8S_AUTH_CA_CERT", "K8S_AUTH_SSL_CA_CERT"])),
    client_cert=dict(type="path", aliases=["cert_file"],
                     fallback=(k8s_auth_env, ["K8S_AUTH_CLIENT_CERT", "K8S_AUTH_CERT_FILE"])),
    client_key=dict(type="path", aliases=["key_file"], no_log=False,
                    fallback=(k8s_auth_env, ["K8S_AUTH_CLIENT_KEY", "K8S_AUTH_KEY_FILE"])),
    validate_certs=dict(type="bool", aliases=["verify_ssl"],
                        fallback=(k8s_auth_env, ["K8S_AUTH_VALIDATE_CERTS", "K8S_AUTH_VERIFY_SSL"])),
    proxy=dict(type="str", fallback=(k8s_auth_env, ["K8S_AUTH_PROXY"])),
    no_proxy=dict(type="str", fallback=(k8s_auth_env, ["K8S_AUTH_NO_PROXY"])),
    impersonate_user=dict(type="str", fallback=(k8s_auth_env, ["K8S_AUTH_IMPERSONATE_USER"])),
    # The list type splits a string at its commas: K8S_AUTH_IMPERSONATE_GROUPS=a,b is the groups a and b.
    impersonate_groups=dict(type="list", elements="str", fallback=(k8s_auth_env, ["K8S_AUTH_IMPERSONATE_GROUPS"])),
)

LEASE_OPTIONS = dict(
    run_id=dict(type="str", required=True),
    holder=dict(type="str"),
    name=dict(type="str", default=LEASE_NAME),
    namespace=dict(type="str", default=LEASE_NAMESPACE),
    duration=dict(type="int", default=300),
)
LEASE_ARGUMENT_SPEC = dict(lease=dict(type="dict", options=LEASE_OPTIONS))

# The options of warm_nodes that evict's warm_first takes too; warm_nodes adds the others.
WARM_OPTIONS = dict(
    name=dict(type="str", default="warm-nodes"),
    namespace=dict(type="str", default="kubeops-warm"),
    count=dict(type="int"),
    zones=dict(type="list", elements="dict", options=dict(
        zone=dict(type="str"),
        count=dict(type="int", required=True),
    )),
    node_selector=dict(type="dict", default={}),
    exclude_nodes=dict(type="list", elements="str", default=[]),
    timeout=dict(type="int", default=600),
)

CONNECTION_REQUIRED_TOGETHER = [["client_cert", "client_key"]]
CONNECTION_REQUIRED_BY = {"impersonate_groups": "impersonate_user"}


class ModuleExit(Exception):
    """How a module run by run_in_process ends: with the result that AnsibleModule would have printed."""

    def __init__(self, result):
        super().__init__(result.get("msg", ""))
        self.result = result


class InProcessCall:
    """The module call that run_in_process makes: the name the task gave the module, its arguments, its modes."""

    def __init__(self, name, args, check_mode, diff):
        self.name, self.args, self.check_mode, self.diff = name, args, check_mode, diff


class ModuleInProcess:
    """What the collection's modules use of AnsibleModule, for a module run in the action plugin's process: the
    same validation of the same argument spec (so the same errors), check and diff mode, warnings, and the
    no_log values kept out of the result; exit_json and fail_json raise ModuleExit instead of printing."""

    def __init__(self, call, argument_spec, **constraints):
        self.check_mode = call.check_mode
        self._diff = call.diff
        self._warnings = []
        self.params = dict(call.args)
        validation = ModuleArgumentSpecValidator(argument_spec, **constraints).validate(self.params)
        self.params.update(validation.validated_parameters)
        self._no_log_values = set(validation._no_log_values)
        if validation.error_messages:
            message = validation.errors.msg
            if isinstance(validation.errors[0], UnsupportedError):
                message = "Unsupported parameters for (%s) module: %s" % (call.name, message)
            self.fail_json(msg=message)

    def warn(self, warning):
        self._warnings.append(warning)

    def exit_json(self, **result):
        raise ModuleExit(self._returned(result))

    def fail_json(self, msg, **result):
        raise ModuleExit(self._returned(dict(result, failed=True, msg=msg)))

    def _returned(self, result):
        result.setdefault("invocation", {"module_args": self.params})
        if self._warnings:
            result["warnings"] = list(self._warnings)
        return remove_values(result, self._no_log_values)


# The call of the module that run_in_process runs now (this process runs one module at a time).
_IN_PROCESS_CALLS = []


def run_in_process(main, call):
    """Run a module's ``main`` in this process for ``call`` (an InProcessCall) and return its result."""
    _IN_PROCESS_CALLS.append(call)
    try:
        main()
    except ModuleExit as ended:
        return ended.result
    finally:
        _IN_PROCESS_CALLS.pop()
    raise RuntimeError("the module %s returned no result" % call.name)


def kubernetes_module(argument_spec, lease=False, **kwargs):
    """An AnsibleModule (a ModuleInProcess under run_in_process) with the shared connection options added, and with
    ``lease`` the lease option (doc fragment kubeops.rotation.lease) that run_module takes the Lease by; fails at once
    without the kubernetes library."""
    argument_spec = dict(CONNECTION_ARGUMENT_SPEC, **(LEASE_ARGUMENT_SPEC if lease else {}), **argument_spec)
    kwargs.update(required_together=CONNECTION_REQUIRED_TOGETHER + kwargs.pop("required_together", []),
                  required_by=dict(CONNECTION_REQUIRED_BY, **kwargs.pop("required_by", {})))
    if _IN_PROCESS_CALLS:
        module = ModuleInProcess(_IN_PROCESS_CALLS[-1], argument_spec, **kwargs)
    else:
        module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True, **kwargs)
    if KUBERNETES_IMPORT_ERROR:
        module.fail_json(msg=missing_required_lib("kubernetes"), exception=str(KUBERNETES_IMPORT_ERROR))
    return module


def run_module(module, action, settings=lambda params: None, lease_at_once=False):
    """Build the typed settings from the parameters (``settings``, the settings class's ``from_params``), then the
    client, run ``action(client, settings, check_mode)`` (an engine's entry point) and exit with its result (plus
    ``api_requests``).

    ``settings`` may raise InvalidInput before anything is read. With a
    ``lease`` option, the cluster's Lease is held (taken before the first
    write, or with ``lease_at_once`` as the action starts, and renewed while
    it runs) unless in check mode. Every error
    of the collection (model.errors), a connection problem, or a refused API
    request ends the module here with one clear line and whatever result the
    error carries. A ``diff`` in the result is kept only under ``--diff``.
    """
    client = None
    exit_with_controller()
    try:
        typed = settings(module.params)
        lease = LeaseSettings.from_params(module.params["lease"], "lease.") if module.params.get("lease") else None
        client = new_client(module.params)
        if lease and not module.check_mode:
            with LeaseKeeper(client, lease).kept(at_once=lease_at_once):
                result = action(client, typed, module.check_mode)
        else:
            result = action(client, typed, module.check_mode)
    except KubeopsError as exc:
        module.fail_json(msg=str(exc), **_finished(module, exc.result, client))
    except ApiException as exc:
        module.fail_json(msg="The API server refused a request: %s" % api_error_message(exc),
                         **_finished(module, {}, client))
    module.exit_json(**_finished(module, result, client))


def _finished(module, result, client):
    result = dict(result)
    if not module._diff:
        result.pop("diff", None)
    for warning in result.pop("warnings", None) or []:
        module.warn(warning)
    if client is not None:
        result["api_requests"] = client.request_count
        result["api_retries"] = client.retries
    return result
