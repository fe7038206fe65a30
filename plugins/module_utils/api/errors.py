# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""What the API server's refusals mean: one line for a message, and whether it says "not found"."""

from __future__ import annotations

import json

from ansible_collections.kubeops.rotation.plugins.module_utils.model.errors import KubeopsError

try:
    from kubernetes.client.rest import ApiException  # pylint: disable=unused-import  # the one import of it
except ImportError:  # reported by the module through missing_required_lib
    ApiException = None


class ConnectionFailed(KubeopsError):
    """A connection option or the cluster itself made the client unusable."""


def is_not_found(exc):
    return getattr(exc, "status", None) == 404


def api_message(exc):
    """The API's own message in an ApiException's body, or its HTTP reason."""
    try:
        return json.loads(exc.body).get("message") or str(exc.reason)
    except (TypeError, ValueError, AttributeError):
        return str(exc.reason)


def is_pdb_refusal(exc):
    """Whether a 429 is an eviction refused by a PodDisruptionBudget (not the API server's rate limits)."""
    try:
        causes = (json.loads(exc.body).get("details") or {}).get("causes") or []
    except (TypeError, ValueError, AttributeError):
        return False
    return any(cause.get("reason") == "DisruptionBudget" for cause in causes)


def api_error_message(exc):
    """One line from an ApiException: its message and status."""
    return "%s (HTTP %s)" % (api_message(exc), exc.status)
