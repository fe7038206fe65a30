"""Facts about Karpenter's NodeClaims: which node and NodePool they belong to, and whether and why they drifted."""

from __future__ import annotations

import pytest

from ansible_collections.kubeops.rotation.plugins.module_utils.model.karpenter import (
    claim_node,
    claim_pool,
    claims_by_node,
    drift_reason,
    is_drifted,
    is_initialized,
    nodepool_zones,
)

NODEPOOL = "karpenter.sh/nodepool"
ZONE = "topology.kubernetes.io/zone"


def claim(name="general-x7k", node_name="ip-10-0-1-5", pool="general", drifted="True", reason="NodePoolDrifted",
          message=None):
    """A NodeClaim of NodePool ``pool`` that launched ``node_name``; ``drifted=None`` leaves out the Drifted
    condition, ``node_name=None`` makes it one whose node has not registered."""
    conditions = [{"type": "Launched", "status": "True"}, {"type": "Registered", "status": "True"}]
    if drifted is not None:
        condition = {"type": "Drifted", "status": drifted}
        if reason is not None:
            condition["reason"] = reason
        if message is not None:
            condition["message"] = message
        conditions.append(condition)
    status = {"conditions": conditions}
    if node_name:
        status["nodeName"] = node_name
    return {"metadata": {"name": name, "labels": {NODEPOOL: pool}}, "status": status}


def test_a_drifted_claim_says_why_in_words_naming_itself():
    assert drift_reason(claim()) == "NodeClaim general-x7k drifted: NodePool template changed"


@pytest.mark.parametrize("reason, words", [
    ("RequirementsDrifted", "NodePool requirements changed"),
    ("NodeClassDrifted", "NodeClass changed"),
    ("CloudProviderDrifted", "the cloud provider's image or settings changed"),
])
def test_each_known_drift_reason_has_its_words(reason, words):
    assert drift_reason(claim("c1", reason=reason, message="ignored")) == "NodeClaim c1 drifted: " + words


def test_an_unknown_drift_reason_is_told_by_its_message_or_else_by_itself():
    assert drift_reason(claim(reason="AMIDrifted", message="AMI ami-0abc is no longer selected")) == \
        "NodeClaim general-x7k drifted: AMI ami-0abc is no longer selected"
    assert drift_reason(claim(reason="AMIDrifted")) == "NodeClaim general-x7k drifted: AMIDrifted"
    assert drift_reason(claim(reason=None)) == "NodeClaim general-x7k drifted: Drifted"
    assert drift_reason(claim(reason="", message="")) == "NodeClaim general-x7k drifted: Drifted"


@pytest.mark.parametrize("drifted", ["False", "Unknown", None])
def test_a_claim_that_did_not_drift_has_no_drift_reason(drifted):
    assert drift_reason(claim(drifted=drifted)) is None
    assert is_drifted(claim(drifted=drifted)) is False


def test_a_claim_without_status_has_not_drifted():
    bare = {"metadata": {"name": "new"}}
    assert drift_reason(bare) is None and is_drifted(bare) is False
    assert drift_reason(dict(bare, status={"conditions": None})) is None


def test_is_drifted_reads_the_drifted_condition_only():
    assert is_drifted(claim()) is True
    not_drifted = claim(drifted=None)
    not_drifted["status"]["conditions"].append({"type": "Expired", "status": "True"})
    assert is_drifted(not_drifted) is False


def test_a_claim_is_initialized_only_once_its_initialized_condition_is_true():
    assert is_initialized(claim()) is False and is_initialized({"metadata": {"name": "new"}}) is False
    initialized = claim()
    initialized["status"]["conditions"].append({"type": "Initialized", "status": "True"})
    assert is_initialized(initialized) is True


def test_a_claim_names_its_pool_from_its_label():
    assert claim_pool(claim(pool="gpu")) == "gpu"
    assert claim_pool({"metadata": {"name": "c", "labels": {"other": "x"}}}) is None
    assert claim_pool({"metadata": {"name": "c"}}) is None
    assert claim_pool({}) is None


def test_a_claim_names_its_node_once_registered():
    assert claim_node(claim(node_name="ip-10-0-1-5")) == "ip-10-0-1-5"
    assert claim_node(claim(node_name=None)) is None
    assert claim_node({"metadata": {"name": "c"}}) is None


def test_claims_by_node_maps_registered_nodes_to_their_claims_only():
    first, second, launching = claim("a", "n1"), claim("b", "n2"), claim("c", None)
    assert claims_by_node([first, launching, second]) == {"n1": first, "n2": second}
    assert claims_by_node([]) == {} and claims_by_node(None) == {}


def nodepool(*requirements):
    return {"metadata": {"name": "general"}, "spec": {"template": {"spec": {"requirements": list(requirements)}}}}


def test_a_nodepool_serves_the_zones_its_requirements_name_and_any_zone_otherwise():
    assert nodepool_zones(nodepool({"key": ZONE, "operator": "In", "values": ["b", "a"]})) == ("a", "b")
    assert nodepool_zones(nodepool({"key": ZONE, "operator": "In", "values": ["a", "b"]},
                                   {"key": ZONE, "operator": "In", "values": ["b", "c"]})) == ("b",)
    assert nodepool_zones(nodepool({"key": ZONE, "operator": "NotIn", "values": ["a"]},
                                   {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]})) is None
    assert nodepool_zones(nodepool()) is None and nodepool_zones({"metadata": {"name": "bare"}}) is None
