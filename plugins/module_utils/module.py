# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""What every module of the collection does the same way: its AnsibleModule, its client, its errors."""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule, missing_required_lib
from ansible_collections.kubeops.rotation.plugins.module_utils.client import (
    CONNECTION_ARGUMENT_SPEC,
    CONNECTION_REQUIRED_BY,
    CONNECTION_REQUIRED_TOGETHER,
    KUBERNETES_IMPORT_ERROR,
    ApiException,
    KubernetesClientError,
    api_error_message,
    new_client,
)


def kubernetes_module(argument_spec, **kwargs):
    """An AnsibleModule with the shared connection options added; fails at once without the kubernetes library."""
    module = AnsibleModule(
        argument_spec=dict(CONNECTION_ARGUMENT_SPEC, **argument_spec),
        required_together=CONNECTION_REQUIRED_TOGETHER + kwargs.pop("required_together", []),
        required_by=dict(CONNECTION_REQUIRED_BY, **kwargs.pop("required_by", {})),
        supports_check_mode=True,
        **kwargs
    )
    if KUBERNETES_IMPORT_ERROR:
        module.fail_json(msg=missing_required_lib("kubernetes"), exception=str(KUBERNETES_IMPORT_ERROR))
    return module


def run_with_client(module, action, expected_errors=()):
    """Build the client from the module's parameters and return ``(client, action(client))``.

    A connection problem, one of ``expected_errors`` (input that names
    something missing), or a refused API request ends the module with one
    clear line.
    """
    try:
        client = new_client(module.params)
        return client, action(client)
    except (KubernetesClientError,) + tuple(expected_errors) as exc:
        module.fail_json(msg=str(exc))
    except ApiException as exc:
        module.fail_json(msg="The API server refused a request: %s" % api_error_message(exc))
