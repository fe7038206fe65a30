"""kubernetes.core's k8s_drain contract as plan.k8s_drain makes it: its options as the engine takes them, and its
result line, refusal and warnings from the engine's per-pod entries (PodPlan.summary with an outcome)."""

from __future__ import annotations

import math

import pytest

from ansible_collections.kubeops.rotation.plugins.module_utils.plan.filters import judge, judge_all
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.k8s_drain import (
    PDB_WAIT_WITHOUT_WAIT_TIMEOUT,
    DrainRequest,
    deadline_warning,
    drain_report,
    drain_text,
    drain_warnings,
    eviction_settings,
    failure_report,
    filter_options,
    held_back,
    pod_selector,
    refusal_message,
    schedulable_text,
    taken_pods,
)
from builders import pod

# delete_options as the module hands them over: kubernetes.core's defaults filled in.
DEFAULTS = {"terminate_grace_period": None, "force": False, "ignore_daemonsets": False,
            "delete_emptydir_data": False, "disable_eviction": False, "wait_timeout": None, "wait_sleep": 5}
SCRATCH = [{"name": "scratch", "emptyDir": {}}]


def options(**given):
    return dict(DEFAULTS, **given)


def entries(pods, outcome, delete_options=None):
    """The engine's entries of ``pods`` judged under ``delete_options``: ``outcome`` for those it removes, skipped
    or refused for the others, as engine.drain reports them."""
    judged = judge_all(pods, filter_options(delete_options or DEFAULTS))
    return [dict(plan.summary(), outcome=outcome if plan.removes else
                 {"skip": "skipped", "refuse": "refused"}.get(plan.verdict.action, outcome)) for plan in judged]


def test_without_options_daemonset_bare_and_emptydir_pods_refuse_and_the_rest_is_evicted():
    judged = judge_all([pod("agent", kind="DaemonSet"), pod("debug", kind=None), pod("cache", volumes=SCRATCH),
                        pod("web"), pod("static", kind="Node", annotations={"kubernetes.io/config.mirror": "x"})],
                       filter_options(DEFAULTS))
    assert [(plan.verdict.action, plan.verdict.reason) for plan in judged] == [
        ("refuse", "daemonset"), ("refuse", "unreplicated"), ("refuse", "local-storage"), ("evict", "evictable"),
        ("skip", "mirror")]


def test_each_option_lifts_its_refusal_and_what_kubernetes_core_does_not_know_refuses_nothing():
    lifted = filter_options(options(force=True, ignore_daemonsets=True, delete_emptydir_data=True))
    assert judge(pod(kind="DaemonSet"), lifted).verdict.action == "skip"
    assert judge(pod(kind=None), lifted).verdict.action == "evict"
    assert judge(pod(volumes=SCRATCH), lifted).verdict.action == "evict"
    for subject in (pod(annotations={"karpenter.sh/do-not-disrupt": "true"}),
                    pod(priorityClassName="system-node-critical")):
        assert judge(subject, filter_options(DEFAULTS)).verdict.action == "evict"


def test_options_given_as_null_are_kubernetes_cores_defaults():
    assert filter_options({}) == filter_options(DEFAULTS)
    assert eviction_settings({}) == eviction_settings(DEFAULTS)


@pytest.mark.parametrize("wait_timeout, wait, timeout", [
    (None, False, PDB_WAIT_WITHOUT_WAIT_TIMEOUT),
    (-1, False, PDB_WAIT_WITHOUT_WAIT_TIMEOUT),
    (0, True, math.inf),
    (45, True, 45),
])
def test_wait_timeout_says_whether_and_how_long_to_wait_for_the_pods(wait_timeout, wait, timeout):
    settings = eviction_settings(options(wait_timeout=wait_timeout))
    assert (settings.wait, settings.timeout) == (wait, timeout)


@pytest.mark.parametrize("given, sent", [(None, None), (-1, None), (0, 0), (900, 900)])
def test_terminate_grace_period_is_sent_as_given_and_negative_means_the_pods_own(given, sent):
    assert eviction_settings(options(terminate_grace_period=given)).grace_period == sent


def test_disable_eviction_deletes():
    assert eviction_settings(options(disable_eviction=True)).disable_eviction is True
    assert eviction_settings(DEFAULTS).disable_eviction is False


def test_pod_selectors_are_one_selector_that_a_pod_matches_all_of():
    assert pod_selector(["app!=csi-attacher", "app!=csi-provisioner"]) == "app!=csi-attacher,app!=csi-provisioner"
    assert pod_selector([]) is None and pod_selector(None) is None


def test_a_request_carries_the_node_the_state_and_what_the_engine_takes():
    request = DrainRequest.from_params({"name": "n1", "state": "drain", "pod_selectors": ["app=web"],
                                        "delete_options": options(force=True, wait_timeout=30)})
    assert (request.name, request.state, request.pod_selector) == ("n1", "drain", "app=web")
    assert request.options.force and (request.settings.wait, request.settings.timeout) == (True, 30)


@pytest.mark.parametrize("was_unschedulable, state, text", [
    (False, "cordon", "node n1 marked unschedulable."),
    (True, "cordon", "node n1 already marked unschedulable."),
    (True, "uncordon", "node n1 marked schedulable."),
    (False, "uncordon", "node n1 already marked schedulable."),
])
def test_the_result_line_of_cordon_and_uncordon(was_unschedulable, state, text):
    assert schedulable_text("n1", was_unschedulable, state) == text


def test_the_result_line_of_a_drain_counts_the_pods_taken_only_when_there_are_some():
    assert drain_text("n1", False, 3) == "node n1 marked unschedulable. 3 Pod(s) deleted from node."
    assert drain_text("n1", True, 0) == "node n1 already marked unschedulable."


def test_a_refusal_names_every_refused_pod_under_kubectls_words_and_the_state_left():
    refused = entries([pod("agent", kind="DaemonSet", namespace="drain"), pod("debug", kind=None, namespace="drain"),
                       pod("cache", volumes=SCRATCH, namespace="drain"), pod("web", namespace="drain")], "planned")
    message = refusal_message("n1", refused, False)
    assert message.startswith("Node n1 not drained: cannot delete DaemonSet-managed Pods (")
    assert "cannot delete DaemonSet-managed Pods" in message and "): drain/agent;" in message
    assert "cannot delete Pods not managed by ReplicationController, ReplicaSet, Job, DaemonSet or StatefulSet (" \
           "delete_options.force: true deletes them for good): drain/debug" in message
    assert "cannot delete Pods with local storage (" in message and "): drain/cache" in message
    assert "drain/web" not in message
    assert message.endswith("Nothing was evicted; the node is left schedulable, as it was.")
    assert refusal_message("n1", refused, True).endswith("the node is left unschedulable, as it was.")


def test_a_refusal_for_a_reason_kubectl_has_no_words_for_gives_the_filters_own():
    refused = [dict(judge(pod("odd"), filter_options(DEFAULTS)).summary(), outcome="refused", reason="other",
                    detail="some reason")]
    assert "cannot delete Pod ns/odd (some reason)" in refusal_message("n1", refused, False)


def test_warnings_are_kubectls_for_bare_pods_and_emptydir_data_taken_and_nothing_else():
    taken = entries([pod("ansible-drain-pod", kind=None, namespace="drain"), pod("cache", volumes=SCRATCH),
                     pod("done", kind=None, phase="Succeeded", volumes=SCRATCH), pod("agent", kind="DaemonSet"),
                     pod("web")], "evicted", options(force=True, ignore_daemonsets=True, delete_emptydir_data=True))
    assert drain_warnings(taken) == [
        "Deleting Pods not managed by ReplicationController, ReplicaSet, Job, DaemonSet or StatefulSet: "
        "drain/ansible-drain-pod.",
        "Deleting Pods with local storage: ns/cache."]
    refused = entries([pod("debug", kind=None), pod("cache", volumes=SCRATCH)], "evicted")
    assert drain_warnings(refused) == []


def test_the_pods_taken_are_those_evicted_deleted_planned_or_still_terminating():
    judged = entries([pod("a"), pod("b"), pod("c"), pod("d"), pod("e")], "evicted")
    for entry, outcome in zip(judged, ("evicted", "planned", "terminating", "gone", "blocked")):
        entry["outcome"] = outcome
    assert taken_pods(judged) == ["ns/a", "ns/b", "ns/c"]
    assert [entry["name"] for entry in held_back(judged)] == ["e"]


def test_the_deadline_warning_names_the_pods_still_terminating():
    judged = entries([pod("a"), pod("b")], "evicted")
    judged[1]["outcome"] = "terminating"
    assert deadline_warning(judged, 30) == "wait_timeout of 30 s ran out while these pods were still terminating: ns/b."


def test_a_drain_changed_when_it_cordoned_or_took_a_pod_and_keeps_the_engines_report():
    drained = {"pods": entries([pod("web")], "evicted"), "summary": {"evicted": 1}, "elapsed_seconds": 1.5,
               "remaining": [], "nodes": ["n1"], "diff": {}, "warnings": ["late"]}
    report = drain_report("n1", True, False, drained)
    assert report == {"changed": True, "result": "node n1 already marked unschedulable. 1 Pod(s) deleted from node.",
                      "pods": drained["pods"], "summary": {"evicted": 1}, "elapsed_seconds": 1.5, "remaining": [],
                      "warnings": ["late"]}
    nothing = {"pods": entries([pod("agent", kind="DaemonSet")], "evicted", options(ignore_daemonsets=True))}
    assert drain_report("n1", True, False, nothing)["changed"] is False
    assert drain_report("n1", False, True, nothing)["changed"] is True


def test_a_failure_report_has_no_result_line():
    report = failure_report(False, {"pods": entries([pod("debug", kind=None)], "refused"), "summary": {}})
    assert "result" not in report and report["changed"] is False
