# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Objects of any kind the API server serves, found by apiVersion and kind through its discovery: what a gate's
condition is evaluated over."""

from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.module_utils.model.errors import KubeopsError

try:
    from kubernetes.dynamic import DynamicClient
    from kubernetes.dynamic.exceptions import DynamicApiError, ResourceNotFoundError
except ImportError:  # reported by the module through missing_required_lib
    DynamicClient = None


def list_objects(client, api_version, kind, namespace=None, label_selector=None):
    """Every object of ``kind`` in ``api_version`` (in ``namespace``, or all of them; matching ``label_selector``),
    as the API's JSON. KubeopsError when the API server serves no such kind or refuses the list."""
    try:
        resource = DynamicClient(client.api_client).resources.get(api_version=api_version, kind=kind)
    except ResourceNotFoundError:
        raise KubeopsError("The API server serves no %s in %s." % (kind, api_version))
    try:
        listed = resource.get(namespace=namespace if resource.namespaced else None, label_selector=label_selector)
    except DynamicApiError as exc:
        raise KubeopsError("Cannot list %s in %s: %s" % (kind, api_version, exc.summary()))
    return listed.to_dict().get("items") or []
