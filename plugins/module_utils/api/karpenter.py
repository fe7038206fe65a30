# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Karpenter's objects (karpenter.sh/v1): NodeClaims and NodePools, read through the one client."""

from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.module_utils.model.errors import NotFound

GROUP, VERSION = "karpenter.sh", "v1"


def served_node_claims(client, **kwargs):
    """Every NodeClaim, listed once, page by page (``kwargs`` as for Client.list_custom: label_selector,
    _request_timeout); None on a cluster without Karpenter (the API server serves no NodeClaims)."""
    return client.list_custom(GROUP, VERSION, "nodeclaims", **kwargs)


def node_claims(client, required=False):
    """Every NodeClaim, listed once, page by page; [] (or NotFound when ``required``) on a cluster without
    Karpenter."""
    claims = served_node_claims(client)
    if claims is None and required:
        raise NotFound("This cluster serves no Karpenter NodeClaims (karpenter.sh/v1): karpenter_drifted and "
                       "karpenter_budgets need Karpenter v1; nothing was changed.")
    return claims or []


def node_pools(client):
    """Every NodePool, listed once; [] on a cluster without Karpenter."""
    return client.list_custom(GROUP, VERSION, "nodepools") or []


def delete_node_claim(client, name):
    """Delete a NodeClaim (Karpenter then drains what is left, terminates the instance and removes the Node);
    False when it was gone already."""
    return client.delete_if_present(client.custom.delete_cluster_custom_object, GROUP, VERSION, "nodeclaims", name)
