from __future__ import annotations

import random

import pytest

from ansible_collections.kubeops.rotation.plugins.module_utils.eviction import backoff, plan, refusal_message
from ansible_collections.kubeops.rotation.plugins.module_utils.pods import (
    FilterOptions,
    describe_pdb,
    judge,
    pdbs_for,
    selector_matches,
    unavailable_limit,
)


def pod(name="p", namespace="ns", owner_kind="ReplicaSet", annotations=None, phase="Running", volumes=None,
        priority_class=None, labels=None, deleting=False):
    metadata = {"name": name, "namespace": namespace, "annotations": annotations or {}, "labels": labels or {}}
    if owner_kind:
        metadata["ownerReferences"] = [{"kind": owner_kind, "name": "owner", "controller": True}]
    if deleting:
        metadata["deletionTimestamp"] = "2026-12-03T06:00:00Z"
    spec = {"nodeName": "n1", "volumes": volumes or []}
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {"metadata": metadata, "spec": spec, "status": {"phase": phase}}


DEFAULTS = FilterOptions()


@pytest.mark.parametrize("subject, action, reason", [
    (pod(), "evict", "evictable"),
    (pod(owner_kind="DaemonSet"), "skip", "daemonset"),
    (pod(annotations={"kubernetes.io/config.mirror": "x"}, owner_kind="Node"), "skip", "mirror"),
    (pod(phase="Succeeded", owner_kind=None), "delete", "terminal"),
    (pod(deleting=True), "skip", "terminating"),
    (pod(owner_kind=None), "refuse", "unreplicated"),
    (pod(volumes=[{"name": "tmp", "emptyDir": {}}]), "refuse", "local-storage"),
    (pod(annotations={"karpenter.sh/do-not-disrupt": "true"}), "refuse", "do-not-disrupt"),
    (pod(annotations={"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}), "refuse", "do-not-disrupt"),
    (pod(annotations={"karpenter.sh/do-not-disrupt": "false"}), "evict", "evictable"),
    (pod(priority_class="system-node-critical"), "refuse", "system-critical"),
])
def test_each_filter_gives_its_verdict_with_a_reason(subject, action, reason):
    verdict = judge(subject, DEFAULTS).verdict
    assert (verdict.action, verdict.reason) == (action, reason)
    assert verdict.detail or action == "evict"


def test_options_lift_the_refusals():
    lifted = FilterOptions(force=True, delete_emptydir_data=True, respect_do_not_disrupt=False,
                           evict_system_critical=True)
    for subject in (pod(owner_kind=None), pod(volumes=[{"name": "tmp", "emptyDir": {}}]),
                    pod(annotations={"karpenter.sh/do-not-disrupt": "true"}), pod(priority_class="system-cluster-critical")):
        assert judge(subject, lifted).verdict.action == "evict"


def test_daemonset_pods_are_skipped_before_local_storage_is_considered():
    assert judge(pod(owner_kind="DaemonSet", volumes=[{"name": "t", "emptyDir": {}}]), DEFAULTS).verdict.reason == "daemonset"


def test_namespace_include_and_exclude_lists_skip_with_reason():
    assert judge(pod(namespace="a"), FilterOptions(namespaces=("b",))).verdict.reason == "namespace"
    assert judge(pod(namespace="a"), FilterOptions(exclude_namespaces=("a",))).verdict.action == "skip"
    assert judge(pod(namespace="b"), FilterOptions(namespaces=("b",))).verdict.action == "evict"


def test_pvc_pods_are_evictable_and_noted_with_their_volume_zone():
    subject = pod(volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "data-db-0"}}])
    judged = judge(subject, DEFAULTS, {"ns/data-db-0": "zone-a"})
    assert judged.verdict.action == "evict"
    assert judged.notes == ("uses PVC data-db-0 (volume bound to zone zone-a)",)


def test_a_caller_can_supply_its_own_filter_chain():
    def no_friday(candidate, options):
        from ansible_collections.kubeops.rotation.plugins.module_utils.pods import Verdict
        return Verdict("refuse", "friday", "not on a Friday")

    assert plan([pod()], DEFAULTS, filters=[no_friday])[0].verdict.reason == "friday"


def test_refusal_message_lists_every_refused_pod_with_its_reason():
    message = refusal_message(plan([pod("a", owner_kind=None), pod("b"), pod("c", priority_class="system-node-critical")],
                                   DEFAULTS))
    assert message.startswith("Refusing to evict anything: 2 pod(s)")
    assert "ns/a (unreplicated:" in message and "ns/c (system-critical:" in message and "ns/b" not in message


def test_label_selectors_match_like_the_api_server():
    labels = {"app": "web", "tier": "front"}
    assert selector_matches({}, labels)
    assert selector_matches({"matchLabels": {"app": "web"}}, labels)
    assert not selector_matches({"matchLabels": {"app": "db"}}, labels)
    assert selector_matches({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["front", "x"]},
                                                  {"key": "gpu", "operator": "DoesNotExist"}]}, labels)
    assert not selector_matches({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["front"]}]},
                                labels)


def test_pdbs_for_picks_the_pdbs_of_the_pods_namespace_that_select_it():
    pdbs = [
        {"metadata": {"name": "web", "namespace": "ns"}, "spec": {"selector": {"matchLabels": {"app": "web"}}},
         "status": {"currentHealthy": 3, "desiredHealthy": 3, "disruptionsAllowed": 0}},
        {"metadata": {"name": "other-ns", "namespace": "x"}, "spec": {"selector": {}}},
        {"metadata": {"name": "db", "namespace": "ns"}, "spec": {"selector": {"matchLabels": {"app": "db"}}}},
    ]
    found = pdbs_for(pod(labels={"app": "web"}), pdbs)
    assert [pdb["metadata"]["name"] for pdb in found] == ["web"]
    assert describe_pdb(found[0]) == "PDB ns/web (currentHealthy 3, desiredHealthy 3, disruptionsAllowed 0)"


def test_unavailable_limit_takes_counts_and_percents_never_below_one():
    assert unavailable_limit("2", 10) == 2
    assert unavailable_limit("25%", 10) == 2
    assert unavailable_limit("10%", 3) == 1
    assert unavailable_limit(None, 3) is None


def test_backoff_grows_is_capped_and_jittered():
    rng = random.Random(7).random
    delays = [backoff(attempt, rng) for attempt in range(1, 8)]
    assert 0.5 <= delays[0] <= 1.5
    assert all(delay <= 7.5 for delay in delays)
    assert backoff(3, lambda: 0.5) == 4.0
    assert backoff(10, lambda: 0.5) == 5.0
