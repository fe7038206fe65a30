# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Cluster API's Machines, read and deleted through the one client."""

from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.module_utils.model.cluster_api import GROUP, VERSION


def machines(client):
    """Every Machine of every namespace; [] on a cluster that does not serve Cluster API."""
    return client.list_custom(GROUP, VERSION, "machines") or []


def delete_machine(client, key):
    """Delete the Machine "namespace/name" (Cluster API then drains what is left, removes the instance and the
    Node); False when it was gone already."""
    namespace, name = key.split("/", 1)
    return client.delete_if_present(client.custom.delete_namespaced_custom_object, GROUP, VERSION, namespace,
                                    "machines", name)
