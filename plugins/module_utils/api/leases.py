# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The Lease that lets one run at a time change a cluster (engine.lease), read and written through the one
client."""

from __future__ import annotations


def read_lease(client, name, namespace):
    """The Lease as a dict, or None when it does not exist."""
    return client.read_or_none(client.coordination.read_namespaced_lease, name, namespace)


def create_lease(client, namespace, body):
    """Create the Lease ``body``; the Lease as written (409 when another run created it first)."""
    return client.call_json(client.coordination.create_namespaced_lease, namespace, body)


def replace_lease(client, name, namespace, body):
    """Replace the Lease with ``body``, which carries the resourceVersion it was read at (409 when it changed
    since); the Lease as written."""
    return client.call_json(client.coordination.replace_namespaced_lease, name, namespace, body)
