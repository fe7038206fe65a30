from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.module_utils.model.pdbs import (
    allowed_now,
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


def test_allowed_now_gives_each_allowed_disruption_to_one_refused_pod_in_order():
    web = [pod("web-%d" % i, app="web") for i in range(3)]
    db = pod("db-0", app="db")
    pdbs = [pdb("web", allowed=2), pdb("db", allowed=0)]
    assert [p["metadata"]["name"] for p in allowed_now(web + [db], pdbs)] == ["web-0", "web-1"]


def test_a_pod_under_two_pdbs_needs_a_disruption_from_both_and_takes_one_from_each():
    both = pdb("both", selector={"matchLabels": {"tier": "front"}}, allowed=1)
    first = pod("web-0", app="web", labels={"tier": "front"})
    second = pod("web-1", app="web")
    assert allowed_now([first, second], [pdb("web", allowed=1), both]) == [first]
    assert allowed_now([first], [pdb("web", allowed=1), pdb("both", selector={}, allowed=0)]) == []


def test_a_pod_no_pdb_selects_any_more_is_allowed():
    assert allowed_now([pod(app="gone")], [pdb("web", allowed=0)]) == [pod(app="gone")]


def test_a_pdb_whose_status_is_older_than_its_spec_allows_nothing_yet():
    stale = pdb("web", allowed=3)
    stale["metadata"]["generation"] = 2
    stale["status"]["observedGeneration"] = 1
    assert allowed_now([pod(app="web")], [stale]) == []
    stale["status"]["observedGeneration"] = 2
    assert allowed_now([pod(app="web")], [stale]) == [pod(app="web")]
