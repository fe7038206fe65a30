# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Events: recorded on the pods and nodes the collection acts on (engine.events), and read to tell why a
placeholder waits for a node."""

from __future__ import annotations


def create_event(client, namespace, body):
    """Record the Event ``body`` in ``namespace``."""
    client.call_json(client.core.create_namespaced_event, namespace, body)


def pod_events(client, namespace):
    """Every Event of ``namespace`` about a pod, as dicts."""
    return client.list_all(client.core.list_namespaced_event, namespace=namespace,
                           field_selector="involvedObject.kind=Pod")


def event_messages(client, namespace, name):
    """The messages of the Events of ``namespace`` about the object ``name``, in the order the API server lists
    them (one request)."""
    return [event.message for event in client.core.list_namespaced_event(
        namespace, field_selector="involvedObject.name=%s" % name).items]
