# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""GET requests to what is not the API server: Prometheus, Alertmanager, a service's health check (the gates)."""

from __future__ import annotations

import json
import urllib.error

from ansible.module_utils.urls import ConnectionError as NoConnection, open_url
from ansible_collections.kubeops.rotation.plugins.module_utils.model.errors import KubeopsError

# Seconds a gate's request waits for an answer, unless it names its own.
HTTP_TIMEOUT = 10


def http_get(url, headers=None, validate_certs=True, ca_cert=None, timeout=HTTP_TIMEOUT):
    """(status, body) of a GET of ``url``; status None and the error's text as body when no answer came."""
    try:
        with open_url(url, headers=dict(headers or {}), validate_certs=validate_certs, ca_path=ca_cert,
                      timeout=timeout) as answer:
            return answer.status, answer.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8", "replace")
    except (urllib.error.URLError, NoConnection, OSError, ValueError) as exc:
        return None, str(getattr(exc, "reason", exc))


def get_json(url, headers=None, validate_certs=True, ca_cert=None, timeout=HTTP_TIMEOUT):
    """The JSON a GET of ``url`` answers with 2xx; KubeopsError naming the URL otherwise."""
    status, body = http_get(url, headers, validate_certs, ca_cert, timeout)
    if status is None or not 200 <= status < 300:
        raise KubeopsError("GET %s: %s" % (url, "no answer: %s" % body if status is None
                                           else "answered %d: %s" % (status, body[:200])))
    try:
        return json.loads(body)
    except ValueError:
        raise KubeopsError("GET %s answered what is not JSON: %s" % (url, body[:200]))
