# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Nodes listed and deleted through the one client (read by Client.read_nodes, patched by Client.update_node)."""

from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.module_utils.api.watch import Informer


def list_nodes(client, label_selector=None):
    """Every node matching ``label_selector`` (None: every node), as dicts."""
    return client.list_all(client.core.list_node, label_selector=label_selector)


def nodes_informer(client):
    """An Informer of every node."""
    return Informer(client, client.core.list_node)


def delete_node(client, name):
    """Delete the Node object ``name`` (its machine stays); False when it was gone already."""
    return client.delete_if_present(client.core.delete_node, name)
