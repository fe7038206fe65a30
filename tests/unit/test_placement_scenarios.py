"""The scenario generator of the placement-vs-scheduler test (tests/cluster/placement_scenarios.py): its
scenarios are what the integration test counts on, and the default run exercises what it should."""

from __future__ import annotations

import json
import random

import pytest

import placement_scenarios as scenarios
from ansible_collections.kubeops.rotation.plugins.module_utils.model.quantities import (
    pod_requests,
    resource_amounts,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.model.selectors import (
    label_key_error,
    label_value_error,
)


def make(index, run_id="t1a2b3c", seed=scenarios.DEFAULT_SEED):
    return scenarios.generate(seed, index, run_id, run_id, run_id + "-other", {"kubeops.io/test": run_id})


@pytest.fixture(scope="module")
def default_run():
    return [make(index) for index in range(scenarios.DEFAULT_COUNT)]


def pods_of(scenario):
    return scenario["residents"] + [scenario["pod"]]


def with_scheduled_placed(scenario):
    """The residents, those left to the scheduler on a node of the scenario picked at random (the cluster
    picks one; any will do, as they fit anywhere)."""
    rng = random.Random(scenario["index"])
    return [pod if pod["spec"].get("nodeName") else
            scenarios.resident_on(pod, rng.choice(scenario["nodes"])["metadata"]["name"])
            for pod in scenario["residents"]]


def test_a_scenario_depends_on_its_seed_and_index_only():
    first, again, other_run = make(7), make(7), make(7, run_id="t9z8y7x")
    assert first == again
    assert json.dumps(first).replace("t1a2b3c", "RUN") == json.dumps(other_run).replace("t9z8y7x", "RUN")
    assert make(8) != first
    assert make(7, seed=13) != first


def test_every_pod_sees_its_scenario_nodes_only_and_selects_its_scenario_apps_only(default_run):
    for scenario in default_run:
        names = {node["metadata"]["name"] for node in scenario["nodes"]}
        assert 2 <= len(names) <= 4
        assert all(node["metadata"]["labels"][scenarios.SCENARIO_LABEL] == scenario["id"]
                   for node in scenario["nodes"])
        for pod in pods_of(scenario):
            spec = pod["spec"]
            assert spec.get("nodeName") in names or \
                spec["nodeSelector"][scenarios.SCENARIO_LABEL] == scenario["id"], pod["metadata"]["name"]
            assert pod["metadata"]["labels"]["app"].endswith("-%03d" % scenario["index"])
            for constraint in spec.get("topologySpreadConstraints", []):
                selected = constraint["labelSelector"].get("matchLabels", {}).get("app") or \
                    constraint["labelSelector"]["matchExpressions"][0]["values"][0]
                assert selected.endswith("-%03d" % scenario["index"])


def test_residents_fit_where_they_are_put_and_those_left_to_the_scheduler_fit_anywhere(default_run):
    for scenario in default_run:
        scheduled = [pod for pod in scenario["residents"] if not pod["spec"].get("nodeName")]
        assert len(scheduled) <= scenarios.SCHEDULED_MAX
        assert all(pod["spec"]["tolerations"] == [{"operator": "Exists"}] for pod in scheduled)
        for node in scenario["nodes"]:
            name = node["metadata"]["name"]
            taken = [pod_requests(pod) for pod in scenario["residents"] if pod["spec"].get("nodeName") == name]
            taken += [pod_requests(pod) for pod in scheduled]
            allocatable = resource_amounts(node["status"]["allocatable"])
            for resource, amount in allocatable.items():
                assert sum(requests.get(resource, 0) for requests in taken) <= amount + 1e-9, (scenario["index"], name)


def test_names_and_labels_are_what_the_api_server_takes(default_run):
    for scenario in default_run:
        for obj in scenario["nodes"] + pods_of(scenario):
            name = obj["metadata"]["name"]
            assert len(name) <= 63 and name.replace("-", "").isalnum() and name == name.lower(), name
            for key, value in obj["metadata"]["labels"].items():
                assert label_key_error(key) is None and label_value_error(value) is None, (key, value)
        for term in ((scenario["pod"]["spec"].get("affinity") or {}).get("nodeAffinity") or {}).get(
                "requiredDuringSchedulingIgnoredDuringExecution", {}).get("nodeSelectorTerms", []):
            assert term.get("matchExpressions") or term.get("matchFields")
            # The API server takes exactly one value in a matchFields requirement.
            assert all(len(requirement["values"]) == 1 for requirement in term.get("matchFields", []))


def test_the_default_run_has_every_feature(default_run):
    counts = {feature: sum(feature in scenario["features"] for scenario in default_run)
              for feature in scenarios.FEATURES}
    assert {feature: count for feature, count in counts.items() if count < 5} == {}
    assert {feature for scenario in default_run for feature in scenario["features"]} <= set(scenarios.FEATURES)


def test_the_default_run_compares_enough_if_the_scheduler_agreed_with_placement(default_run):
    """What the integration test's self-check asks of a run, with placement's own answers as the scheduler's:
    the generator makes both outcomes often, tells nodes apart, and gets each of placement's reasons used."""
    said, outcomes = {}, {}
    for scenario in default_run:
        said[scenario["id"]] = scenarios.verdict(scenario, with_scheduled_placed(scenario))
        fits = said[scenario["id"]]["fits"]
        outcomes["%s/%s" % (scenario["namespace"], scenario["pod"]["metadata"]["name"])] = \
            {"node": fits[0]} if fits else {"unschedulable": "0/3 nodes are available"}
    summary = scenarios.summarize(default_run, said, outcomes)
    assert scenarios.too_little_compared(summary) == []
    assert min(summary["bound"], summary["unschedulable"]) >= scenarios.DEFAULT_COUNT // 3
    assert min(summary["nodes_refused_by_placement_for"].values()) >= 5


NODES = {"n0": None, "n1": "no node has room for its requests (cpu 1, memory 0)"}


def said(why_not=None, fit="n0", fit_reason=None):
    why_not = dict(NODES if why_not is None else why_not)
    return {"fits": sorted(name for name, reason in why_not.items() if reason is None), "why_not": why_not,
            "fit": fit, "fit_reason": fit_reason}


@pytest.mark.parametrize("verdict, outcome, problems", [
    (said(), {"node": "n0"}, []),
    (said({"n0": "x", "n1": "y"}, fit=None, fit_reason="y"), {"unschedulable": "0/2 nodes"}, []),
    (said(), {"node": "n1"}, ["the scheduler bound it to n1, where placement says: no node has room for its "
                              "requests (cpu 1, memory 0)"]),
    (said(), {"unschedulable": "0/2 nodes"}, ["the scheduler found no node (0/2 nodes) but placement says it "
                                              "fits on ['n0']"]),
    (said(), {"node": "elsewhere"}, ["the scheduler bound it to elsewhere, not a node of its scenario "
                                     "(the test is broken)"]),
    (said(fit=None, fit_reason="?"), {"node": "n0"}, ["fit() left the pod out (?) but PlacementSimulator.why_not lets it on "
                                                      "['n0']"]),
    (said(fit="n1"), {"node": "n0"}, ["fit() put the pod on n1, where PlacementSimulator.why_not says: no node has room for its "
                                      "requests (cpu 1, memory 0)"]),
    (said(), None, ["the scheduler has neither bound it nor found it Unschedulable"]),
])
def test_disagreements_name_what_differs(verdict, outcome, problems):
    assert scenarios.disagreements(verdict, outcome) == problems


def test_the_scheduling_outcome_is_the_node_or_the_unschedulable_condition():
    unschedulable = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/9"}
    assert scenarios.scheduling_outcome({"spec": {"nodeName": "n1"}}) == {"node": "n1"}
    assert scenarios.scheduling_outcome({"spec": {}, "status": {"conditions": [unschedulable]}}) == \
        {"unschedulable": "0/9"}
    assert scenarios.scheduling_outcome({"spec": {}, "status": {"conditions": [
        dict(unschedulable, reason="SchedulerError")]}}) is None
    assert scenarios.scheduling_outcome({"spec": {}, "status": {}}) is None


def test_the_compact_form_is_json_without_the_scenario_prefix(default_run):
    scenario = next(s for s in default_run if any(p["spec"].get("nodeName") for p in s["residents"]))
    text = scenarios.compact(scenario, with_scheduled_placed(scenario))
    shown = json.loads(text)
    assert scenario["id"] not in text
    assert [node["name"] for node in shown["nodes"]] == ["n%d" % number for number in range(len(scenario["nodes"]))]
    assert all(resident["node"] in {node["name"] for node in shown["nodes"]} for resident in shown["residents"])
    assert (shown["seed"], shown["index"]) == (scenario["seed"], scenario["index"])
