"""A rotation planned from Karpenter's own verdicts: the nodes whose NodeClaims drifted, in batches no larger than
their NodePools' disruption budgets allow now."""

from __future__ import annotations

import datetime

from ansible_collections.kubeops.rotation.plugins.module_utils.plan.rotation import (
    DriftRules,
    RotationFacts,
    RotationSettings,
    plan_rotation,
)
from builders import node

NOW = datetime.datetime(2026, 12, 3, 12, 0, tzinfo=datetime.timezone.utc)  # a Thursday
NODEPOOL = "karpenter.sh/nodepool"
DRIFTED = DriftRules(karpenter_drifted=True)


def pool_node(name, pool="general", **options):
    return node(name, labels={NODEPOOL: pool}, **options)


def claim(node_name, pool="general", drifted=True, reason="NodePoolDrifted"):
    """The NodeClaim of ``node_name``, named after it (claim-<node>)."""
    condition = {"type": "Drifted", "status": "True" if drifted else "False"}
    if drifted:
        condition["reason"] = reason
    return {"metadata": {"name": "claim-" + node_name, "labels": {NODEPOOL: pool}},
            "status": {"nodeName": node_name, "conditions": [condition]}}


def node_pool(name="general", budgets=None):
    disruption = {} if budgets is None else {"budgets": list(budgets)}
    return {"metadata": {"name": name}, "spec": {"disruption": disruption}}


def plan(nodes, claims, rules=DRIFTED, node_pools=(), batch_size="1", budgets=False, candidates=None, now=NOW):
    """The plan of rotating ``candidates`` (every node by default) under ``rules``, without pods."""
    settings = RotationSettings(
        candidates=frozenset(candidates if candidates is not None else (n["metadata"]["name"] for n in nodes)),
        rules=rules, rotation_id="r1", batch_size=batch_size, karpenter_budgets=budgets)
    facts = RotationFacts(nodes, [], [], {}, {}, node_claims=claims, node_pools=node_pools)
    return plan_rotation(facts, settings, now)


def batch_nodes(result):
    return [batch["nodes"] for batch in result["batches"]]


def drifted_pool(count, pool="general", drifted=None):
    """``count`` nodes of ``pool`` (<pool>-0, <pool>-1, ...) and their claims; the first ``drifted`` (all by
    default) drifted."""
    nodes = [pool_node("%s-%d" % (pool, index), pool) for index in range(count)]
    claims = [claim(n["metadata"]["name"], pool, drifted=index < (count if drifted is None else drifted))
              for index, n in enumerate(nodes)]
    return nodes, claims


# Drift


def test_only_nodes_whose_nodeclaim_drifted_rotate_and_say_why():
    nodes = [pool_node("old-1"), pool_node("old-2"), pool_node("old-3"), pool_node("old-4")]
    claims = [claim("old-1"), claim("old-2", drifted=False), claim("old-4", reason="NodeClassDrifted")]
    result = plan(nodes, claims)
    assert result["nodes"] == [
        {"name": "old-1", "zone": None, "reasons": ["NodeClaim claim-old-1 drifted: NodePool template changed"]},
        {"name": "old-4", "zone": None, "reasons": ["NodeClaim claim-old-4 drifted: NodeClass changed"]}]
    # old-3 has no NodeClaim: Karpenter has no verdict on it.
    assert result["left_out"] == [{"name": "old-2", "reason": "no drift"}, {"name": "old-3", "reason": "no drift"}]
    assert batch_nodes(result) == [["old-1"], ["old-4"]]
    assert result["summary"][0] == "Rotation r1: 2 node(s) in 2 batch(es); 2 left out."


def test_a_claim_that_is_not_the_nodes_own_does_not_make_it_drift():
    nodes = [pool_node("old-1"), pool_node("old-2")]
    result = plan(nodes, [claim("elsewhere")])
    assert result["nodes"] == [] and [entry["name"] for entry in result["left_out"]] == ["old-1", "old-2"]


def test_nodes_of_other_nodepools_are_left_out_when_nodepools_are_given():
    nodes = [pool_node("g-1", "general"), pool_node("gpu-1", "gpu"), pool_node("b-1", "batch")]
    claims = [claim("g-1", "general"), claim("gpu-1", "gpu"), claim("b-1", "batch")]
    result = plan(nodes, claims, rules=DriftRules(karpenter_drifted=True, nodepools=("general", "batch")))
    assert [entry["name"] for entry in result["nodes"]] == ["b-1", "g-1"]
    assert result["left_out"] == [{"name": "gpu-1", "reason": "no drift"}]
    everything = plan(nodes, claims)
    assert [entry["name"] for entry in everything["nodes"]] == ["b-1", "g-1", "gpu-1"]


def test_the_nodepool_is_the_nodeclaims_not_the_nodes_label():
    nodes = [pool_node("n-1", "general")]
    result = plan(nodes, [claim("n-1", "gpu")], rules=DriftRules(karpenter_drifted=True, nodepools=("general",)))
    assert result["nodes"] == []


def test_karpenter_drift_adds_to_the_other_drift_rules():
    nodes = [pool_node("old-1", kubelet="v1.34.0"), pool_node("old-2", kubelet="v1.34.0"), pool_node("new-1")]
    rules = DriftRules(karpenter_drifted=True, target_kubelet_version="v1.35.0")
    result = plan(nodes, [claim("old-1"), claim("new-1")], rules=rules)
    reasons = {entry["name"]: entry["reasons"] for entry in result["nodes"]}
    assert reasons == {"old-1": ["kubelet v1.34.0 is older than v1.35.0",
                                 "NodeClaim claim-old-1 drifted: NodePool template changed"],
                       "old-2": ["kubelet v1.34.0 is older than v1.35.0"],
                       "new-1": ["NodeClaim claim-new-1 drifted: NodePool template changed"]}


def test_without_the_karpenter_rule_a_drifted_claim_changes_nothing():
    nodes = [pool_node("old-1", kubelet="v1.34.0"), pool_node("new-1")]
    result = plan(nodes, [claim("old-1"), claim("new-1")], rules=DriftRules(target_kubelet_version="v1.35.0"))
    assert result["nodes"] == [{"name": "old-1", "zone": None, "reasons": ["kubelet v1.34.0 is older than v1.35.0"]}]


# Budgets


def test_a_budget_of_one_node_cuts_batches_of_three_to_one():
    nodes, claims = drifted_pool(3)
    result = plan(nodes, claims, node_pools=[node_pool(budgets=[{"nodes": "1"}])], batch_size="3", budgets=True)
    assert batch_nodes(result) == [["general-0"], ["general-1"], ["general-2"]]
    note = "NodePool general allows 1 Drifted disruption(s) at once now (budget nodes 1 of 3)"
    assert result["budgets"] == [note]
    assert "budget: " + note in result["summary"]
    assert result["abort_reasons"] == []


def test_a_percent_budget_counts_the_pools_nodes():
    nodes, claims = drifted_pool(4)
    result = plan(nodes, claims, node_pools=[node_pool(budgets=[{"nodes": "50%"}])], batch_size="4", budgets=True)
    assert batch_nodes(result) == [["general-0", "general-1"], ["general-2", "general-3"]]
    assert result["budgets"] == ["NodePool general allows 2 Drifted disruption(s) at once now (budget nodes 50% of 4)"]


def test_a_percent_budget_counts_every_node_of_the_pool_not_only_the_drifted_ones():
    # 25% of 8 is 2; of the 3 drifted nodes alone it would be 1.
    nodes, claims = drifted_pool(8, drifted=3)
    result = plan(nodes, claims, node_pools=[node_pool(budgets=[{"nodes": "25%"}])], batch_size="3", budgets=True)
    assert batch_nodes(result) == [["general-0", "general-1"], ["general-2"]]
    assert result["budgets"][0].endswith("(budget nodes 25% of 8)")


def test_a_pool_without_budgets_allows_its_default_ten_percent():
    nodes, claims = drifted_pool(20, drifted=5)
    result = plan(nodes, claims, node_pools=[node_pool()], batch_size="5", budgets=True)
    assert [len(batch) for batch in batch_nodes(result)] == [2, 2, 1]
    assert result["budgets"] == ["NodePool general allows 2 Drifted disruption(s) at once now (budget nodes 10% of 20)"]


def test_a_budget_never_makes_batches_larger():
    nodes, claims = drifted_pool(3)
    result = plan(nodes, claims, node_pools=[node_pool(budgets=[{"nodes": "5"}])], batch_size="1", budgets=True)
    assert batch_nodes(result) == [["general-0"], ["general-1"], ["general-2"]]


def test_budgets_are_ignored_unless_asked_for():
    nodes, claims = drifted_pool(3)
    result = plan(nodes, claims, node_pools=[node_pool(budgets=[{"nodes": "0"}])], batch_size="3")
    assert batch_nodes(result) == [["general-0", "general-1", "general-2"]]
    assert result["budgets"] == [] and result["abort_reasons"] == []
    assert not any(line.startswith("budget: ") for line in result["summary"])


def test_a_budget_of_zero_stops_the_rotation_and_still_shows_one_node_a_batch():
    nodes, claims = drifted_pool(2)
    result = plan(nodes, claims, node_pools=[node_pool(budgets=[{"nodes": "0"}])], batch_size="2", budgets=True)
    note = "NodePool general allows 0 Drifted disruption(s) at once now (budget nodes 0 of 2)"
    assert result["abort_reasons"] == [note] and result["budgets"] == [note]
    assert batch_nodes(result) == [["general-0"], ["general-1"]]
    assert result["summary"][-1] == "budget: " + note


def test_a_scheduled_budget_limits_batches_only_in_its_window():
    nodes, claims = drifted_pool(4)
    freeze = {"nodes": "0", "schedule": "0 9 * * mon-fri", "duration": "8h"}
    pools = [node_pool(budgets=[freeze, {"nodes": "2"}])]
    in_window = plan(nodes, claims, node_pools=pools, batch_size="4", budgets=True)
    assert in_window["abort_reasons"] == [
        "NodePool general allows 0 Drifted disruption(s) at once now "
        "(budget nodes 0 of 4, schedule 0 9 * * mon-fri for 8h)"]
    evening = plan(nodes, claims, node_pools=pools, batch_size="4", budgets=True, now=NOW.replace(hour=17))
    assert evening["abort_reasons"] == [] and batch_nodes(evening) == [["general-0", "general-1"],
                                                                       ["general-2", "general-3"]]


def test_when_no_budget_applies_the_batches_keep_their_size_with_a_note():
    nodes, claims = drifted_pool(3)
    consolidation_only = {"nodes": "0", "reasons": ["Underutilized"]}
    result = plan(nodes, claims, node_pools=[node_pool(budgets=[consolidation_only])], batch_size="3", budgets=True)
    assert batch_nodes(result) == [["general-0", "general-1", "general-2"]]
    assert result["budgets"] == ["NodePool general: no budget limits Drifted disruption now"]
    assert result["abort_reasons"] == []


def test_the_most_restrictive_pool_of_the_chosen_nodes_sets_the_batch_size():
    general, general_claims = drifted_pool(4, "general")
    gpu, gpu_claims = drifted_pool(2, "gpu")
    pools = [node_pool("general", [{"nodes": "2"}]), node_pool("gpu", [{"nodes": "1"}])]
    result = plan(general + gpu, general_claims + gpu_claims, node_pools=pools, batch_size="3", budgets=True)
    assert all(len(batch) == 1 for batch in batch_nodes(result)) and len(result["batches"]) == 6
    assert result["budgets"] == [
        "NodePool general allows 2 Drifted disruption(s) at once now (budget nodes 2 of 4)",
        "NodePool gpu allows 1 Drifted disruption(s) at once now (budget nodes 1 of 2)"]


def test_only_the_pools_of_chosen_nodes_count():
    general, general_claims = drifted_pool(3, "general")
    gpu, gpu_claims = drifted_pool(2, "gpu", drifted=0)
    pools = [node_pool("general", [{"nodes": "3"}]), node_pool("gpu", [{"nodes": "0"}])]
    result = plan(general + gpu, general_claims + gpu_claims, node_pools=pools, batch_size="3", budgets=True)
    assert batch_nodes(result) == [["general-0", "general-1", "general-2"]]
    assert result["budgets"] == ["NodePool general allows 3 Drifted disruption(s) at once now (budget nodes 3 of 3)"]
    assert result["abort_reasons"] == []


def test_nodes_without_a_known_nodepool_are_not_limited():
    nodes = [node("plain-1"), node("plain-2"), pool_node("other-1", "other"), pool_node("other-2", "other")]
    result = plan(nodes, [], rules=DriftRules(), node_pools=[node_pool("general", [{"nodes": "0"}])],
                  batch_size="4", budgets=True)
    assert batch_nodes(result) == [["other-1", "other-2", "plain-1", "plain-2"]]
    assert result["budgets"] == [] and result["abort_reasons"] == []
