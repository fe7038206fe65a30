from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.module_utils.model.pdbs import (
    describe_pdb,
    disruptions_allowed,
    pdbs_for,
)
from builders import pdb, pod


def test_pdbs_for_picks_the_pdbs_of_the_pods_namespace_that_select_it():
    pdbs = [pdb("web", healthy=(3, 3)), pdb("other-ns", namespace="x", selector={}), pdb("db")]
    found = pdbs_for(pod(labels={"app": "web"}), pdbs)
    assert [budget["metadata"]["name"] for budget in found] == ["web"]
    assert describe_pdb(found[0]) == "PDB ns/web (currentHealthy 3, desiredHealthy 3, disruptionsAllowed 0)"


def test_an_empty_selector_selects_every_pod_of_its_namespace():
    everything = pdb("all", selector={})
    assert pdbs_for(pod(app="db"), [everything]) == [everything]
    assert pdbs_for(pod(app="db", namespace="other"), [everything]) == []


def test_a_pdb_without_status_allows_no_disruption_and_is_described_with_question_marks():
    fresh = {"metadata": {"name": "new", "namespace": "ns"}, "spec": {}}
    assert disruptions_allowed(fresh) == 0
    assert disruptions_allowed(pdb(allowed=2)) == 2
    assert describe_pdb(fresh) == "PDB ns/new (currentHealthy ?, desiredHealthy ?, disruptionsAllowed ?)"
