from __future__ import annotations

import pytest

from ansible_collections.kubeops.rotation.plugins.module_utils.plan.filters import (
    FilterOptions,
    Verdict,
    judge,
    judge_all,
    left_behind,
    loses_emptydir_data,
    refusal_message,
    refused,
)
from builders import pod

DEFAULTS = FilterOptions()


@pytest.mark.parametrize("subject, action, reason", [
    (pod(), "evict", "evictable"),
    (pod(kind="DaemonSet"), "skip", "daemonset"),
    (pod(annotations={"kubernetes.io/config.mirror": "x"}, kind="Node"), "skip", "mirror"),
    (pod(phase="Succeeded", kind=None), "delete", "terminal"),
    (pod(phase="Failed"), "delete", "terminal"),
    (pod(deleting=True), "wait", "terminating"),
    (pod(kind=None), "refuse", "unreplicated"),
    (pod(volumes=[{"name": "tmp", "emptyDir": {}}]), "refuse", "local-storage"),
    (pod(annotations={"karpenter.sh/do-not-disrupt": "true"}), "refuse", "do-not-disrupt"),
    (pod(annotations={"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}), "refuse", "do-not-disrupt"),
    (pod(annotations={"karpenter.sh/do-not-disrupt": "false"}), "evict", "evictable"),
    (pod(annotations={"karpenter.sh/do-not-disrupt": "30m"}), "refuse", "do-not-disrupt"),
    (pod(annotations={"karpenter.sh/do-not-disrupt": "abc"}), "evict", "evictable"),
    (pod(priorityClassName="system-node-critical"), "refuse", "system-critical"),
])
def test_each_filter_gives_its_verdict_with_a_reason(subject, action, reason):
    verdict = judge(subject, DEFAULTS).verdict
    assert (verdict.action, verdict.reason) == (action, reason)
    assert verdict.detail or action == "evict"


def test_options_lift_the_refusals():
    lifted = FilterOptions(force=True, delete_emptydir_data=True, respect_do_not_disrupt=False,
                           evict_system_critical=True)
    for subject in (pod(kind=None), pod(volumes=[{"name": "tmp", "emptyDir": {}}]),
                    pod(annotations={"karpenter.sh/do-not-disrupt": "true"}),
                    pod(priorityClassName="system-cluster-critical")):
        assert judge(subject, lifted).verdict.action == "evict"


def test_daemonset_pods_are_skipped_before_local_storage_is_considered():
    subject = pod(kind="DaemonSet", volumes=[{"name": "t", "emptyDir": {}}])
    assert judge(subject, DEFAULTS).verdict.reason == "daemonset"


def test_daemonset_pods_refuse_the_drain_unless_ignored_and_are_never_left_behind():
    agent = pod("agent", kind="DaemonSet", volumes=[{"name": "t", "emptyDir": {}}])
    strict = judge(agent, FilterOptions(ignore_daemonsets=False)).verdict
    assert (strict.action, strict.reason) == ("refuse", "daemonset")
    assert "ignore_daemonsets: true" in strict.detail
    assert judge(agent, DEFAULTS).verdict.action == "skip"
    assert left_behind(judge_all([agent], FilterOptions(ignore_daemonsets=False))) == []


def test_pods_removed_with_emptydir_volumes_note_the_data_lost_and_refused_ones_do_not():
    scratch = [{"name": "scratch", "emptyDir": {}}, {"name": "config", "configMap": {"name": "c"}}]
    removed = judge(pod(volumes=scratch), FilterOptions(delete_emptydir_data=True))
    assert removed.notes == ("emptyDir scratch: its data is lost with the pod",)
    assert loses_emptydir_data(removed.summary())
    refused_pod = judge(pod(volumes=scratch), DEFAULTS)
    assert refused_pod.verdict.reason == "local-storage" and refused_pod.notes == ()
    assert not loses_emptydir_data(judge(pod(volumes=[{"name": "data", "persistentVolumeClaim": {
        "claimName": "data"}}]), DEFAULTS).summary())


def test_namespace_include_and_exclude_lists_skip_with_reason():
    assert judge(pod(namespace="a"), FilterOptions(namespaces=("b",))).verdict.reason == "namespace"
    assert judge(pod(namespace="a"), FilterOptions(exclude_namespaces=("a",))).verdict.action == "skip"
    assert judge(pod(namespace="b"), FilterOptions(namespaces=("b",))).verdict.action == "evict"


def test_pvc_pods_are_evictable_and_noted_with_their_volume_zone():
    subject = pod(volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "data-db-0"}},
                           {"name": "logs", "persistentVolumeClaim": {"claimName": "logs"}}])
    judged = judge(subject, DEFAULTS, {"ns/data-db-0": "zone-a"})
    assert judged.verdict.action == "evict"
    assert judged.notes == ("uses PVC data-db-0 (volume bound to zone zone-a)", "uses PVC logs")


def test_a_caller_can_supply_its_own_filter_chain():
    def no_friday(candidate, options):
        return Verdict("refuse", "friday", "not on a Friday")

    assert judge_all([pod()], DEFAULTS, filters=[no_friday])[0].verdict.reason == "friday"


def test_judge_all_keeps_the_order_of_the_pods():
    plans = judge_all([pod("b"), pod("a", kind=None), pod("c")], DEFAULTS)
    assert [pod_plan.key for pod_plan in plans] == ["ns/b", "ns/a", "ns/c"]
    assert [pod_plan.key for pod_plan in refused(plans)] == ["ns/a"]


def test_pod_plan_summarizes_the_pod_and_says_whether_it_removes_it():
    evicted, deleted, skipped = judge_all([pod("web-1"), pod("done", phase="Succeeded"),
                                           pod("agent", kind="DaemonSet")], DEFAULTS)
    assert evicted.summary() == {"name": "web-1", "namespace": "ns", "node": "n1", "owner": "ReplicaSet/web-rs",
                                 "action": "evict", "reason": "evictable", "detail": "", "notes": []}
    assert judge(pod(kind=None), DEFAULTS).summary()["owner"] is None
    assert (evicted.removes, deleted.removes, skipped.removes) == (True, True, False)


def test_refusal_message_lists_every_refused_pod_with_its_reason():
    message = refusal_message(judge_all([pod("a", kind=None), pod("b"),
                                         pod("c", priorityClassName="system-node-critical")], DEFAULTS))
    assert message.startswith("Refusing to evict anything: 2 pod(s)")
    assert "ns/a (unreplicated:" in message and "ns/c (system-critical:" in message and "ns/b" not in message


def test_left_behind_names_what_a_drain_should_have_removed():
    static = pod("static", kind="Node", annotations={"kubernetes.io/config.mirror": "x"})
    plans = judge_all([pod("web"), pod("agent", kind="DaemonSet"), static, pod("done", phase="Succeeded"),
                       pod("elsewhere", namespace="other"), pod("bare", kind=None), pod("going", deleting=True)],
                      FilterOptions(exclude_namespaces=("other",)))
    assert left_behind(plans) == ["ns/web", "ns/bare", "ns/going"]
