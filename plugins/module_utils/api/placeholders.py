# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""What a placeholder set (plan.placeholders) is made of, written through the one client: its namespace, its
PriorityClass and its Deployments."""

from __future__ import annotations


def read_namespace(client, name):
    """The namespace ``name`` as a dict, or None when it does not exist."""
    return client.read_or_none(client.core.read_namespace, name)


def create_namespace(client, body):
    """Create the namespace ``body``; False when it existed."""
    return client.create_if_absent(client.core.create_namespace, body)


def read_priority_class(client, name):
    """The PriorityClass ``name`` as a dict, or None when it does not exist."""
    return client.read_or_none(client.scheduling.read_priority_class, name)


def create_priority_class(client, body):
    """Create the PriorityClass ``body``; False when it existed."""
    return client.create_if_absent(client.scheduling.create_priority_class, body)


def delete_priority_class(client, name):
    """Delete the PriorityClass ``name``; False when it was gone already."""
    return client.delete_if_present(client.scheduling.delete_priority_class, name)


def create_deployment(client, namespace, body):
    """Create the Deployment ``body`` in ``namespace``; False when it existed (or a create whose answer was lost
    had made it)."""
    return client.create_if_absent(client.apps.create_namespaced_deployment, namespace, body)


def replace_deployment(client, namespace, name, body):
    """Replace the Deployment with ``body``, which carries the resourceVersion it was read at (409 when it changed
    since)."""
    client.apps.replace_namespaced_deployment(name, namespace, body)


def delete_deployment(client, namespace, name, delete_options):
    """Delete the Deployment with ``delete_options``; False when it was gone already."""
    return client.delete_if_present(client.apps.delete_namespaced_deployment, name, namespace, body=delete_options)
