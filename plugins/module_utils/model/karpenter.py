# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Pure facts about Karpenter's NodeClaims (karpenter.sh/v1), given as the API's JSON (plain dicts)."""

from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.module_utils.model.keys import NODEPOOL_LABEL, ZONE_LABEL

# Karpenter's reasons for Drifted, in words.
DRIFT_REASONS = {
    "NodePoolDrifted": "NodePool template changed",
    "RequirementsDrifted": "NodePool requirements changed",
    "NodeClassDrifted": "NodeClass changed",
    "CloudProviderDrifted": "the cloud provider's image or settings changed",
}


def claim_name(claim):
    return claim["metadata"]["name"]


def claim_node(claim):
    """The name of the Node the NodeClaim launched, or None before it registered."""
    return (claim.get("status") or {}).get("nodeName")


def claim_pool(claim):
    return ((claim.get("metadata") or {}).get("labels") or {}).get(NODEPOOL_LABEL)


def _condition(claim, condition_type):
    for condition in (claim.get("status") or {}).get("conditions") or []:
        if condition.get("type") == condition_type:
            return condition
    return None


def is_drifted(claim):
    return (_condition(claim, "Drifted") or {}).get("status") == "True"


def is_initialized(claim):
    """Whether Karpenter counts the NodeClaim's node initialized (its Initialized condition is True): a claim
    not yet so is capacity still on its way."""
    return (_condition(claim, "Initialized") or {}).get("status") == "True"


def drift_reason(claim):
    """Why the NodeClaim drifted, in one line naming it ("NodeClaim general-x7k drifted: NodePool template
    changed"), or None when it did not."""
    condition = _condition(claim, "Drifted")
    if not condition or condition.get("status") != "True":
        return None
    reason = condition.get("reason") or ""
    words = DRIFT_REASONS.get(reason) or condition.get("message") or reason or "Drifted"
    return "NodeClaim %s drifted: %s" % (claim_name(claim), words)


def claims_by_node(claims):
    """Node name -> its NodeClaim, for the NodeClaims whose node registered."""
    return {claim_node(claim): claim for claim in claims or () if claim_node(claim)}


def nodepool_zones(pool):
    """The zones a NodePool may launch nodes in, from its template's requirements on the zone label (In); None
    when they do not name zones (any zone its instance types offer)."""
    zones = None
    requirements = ((((pool.get("spec") or {}).get("template") or {}).get("spec") or {}).get("requirements")) or []
    for requirement in requirements:
        if requirement.get("key") == ZONE_LABEL and requirement.get("operator") == "In":
            values = set(requirement.get("values") or [])
            zones = values if zones is None else zones & values
    return None if zones is None else tuple(sorted(zones))
