from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.module_utils.rollout import (
    RESTART_ID,
    RESTARTED_AT,
    owners_on_nodes,
    restart_patch,
    restart_plan,
    rollout_status,
)


def deployment(generation=2, observed=2, replicas=3, updated=3, total=3, available=3, paused=False, conditions=()):
    return {"metadata": {"name": "web", "namespace": "ns", "generation": generation},
            "spec": {"replicas": replicas, "paused": paused},
            "status": {"observedGeneration": observed, "updatedReplicas": updated, "replicas": total,
                       "availableReplicas": available, "conditions": list(conditions)}}


def test_deployment_status_follows_kubectl_rollout_status():
    assert rollout_status("Deployment", deployment()).state == "done"
    assert "spec update" in rollout_status("Deployment", deployment(generation=3)).message
    assert "1 out of 3 new replicas" in rollout_status("Deployment", deployment(updated=1)).message
    assert "1 old replicas are pending" in rollout_status("Deployment", deployment(total=4)).message
    assert "2 of 3 updated replicas are available" in rollout_status("Deployment", deployment(available=2)).message


def test_paused_or_deadline_exceeded_deployments_are_stuck_not_waited_on():
    assert rollout_status("Deployment", deployment(paused=True)).state == "stuck"
    exceeded = deployment(updated=1, conditions=[{"type": "Progressing", "status": "False",
                                                 "reason": "ProgressDeadlineExceeded", "message": "too slow"}])
    status = rollout_status("Deployment", exceeded)
    assert status.state == "stuck" and "exceeded its progress deadline: too slow" in status.message


def statefulset(ready=3, current="a", update="a", strategy="RollingUpdate", partition=None, updated=3):
    update_strategy = {"type": strategy}
    if partition is not None:
        update_strategy["rollingUpdate"] = {"partition": partition}
    return {"metadata": {"name": "db", "namespace": "ns", "generation": 1},
            "spec": {"replicas": 3, "updateStrategy": update_strategy},
            "status": {"observedGeneration": 1, "readyReplicas": ready, "currentRevision": current,
                       "updateRevision": update, "updatedReplicas": updated}}


def test_statefulset_waits_for_ready_pods_and_the_update_revision():
    assert rollout_status("StatefulSet", statefulset()).state == "done"
    assert rollout_status("StatefulSet", statefulset(ready=2)).state == "progressing"
    assert "revision b" in rollout_status("StatefulSet", statefulset(update="b", updated=1)).message
    assert rollout_status("StatefulSet", statefulset(update="b", partition=2, updated=1)).state == "done"
    assert rollout_status("StatefulSet", statefulset(strategy="OnDelete")).state == "stuck"


def test_daemonset_waits_for_updated_and_available_pods():
    daemonset = {"metadata": {"name": "agent", "namespace": "ns", "generation": 1},
                 "spec": {}, "status": {"observedGeneration": 1, "desiredNumberScheduled": 3,
                                        "updatedNumberScheduled": 3, "numberAvailable": 2}}
    assert rollout_status("DaemonSet", daemonset).state == "progressing"
    daemonset["status"]["numberAvailable"] = 3
    assert rollout_status("DaemonSet", daemonset).state == "done"


def test_restart_id_and_restarted_after_make_a_rerun_restart_nothing():
    fresh = {"metadata": {"annotations": {}}, "spec": {"template": {"metadata": {}}}}
    assert restart_plan(fresh, "r1") == (True, "restarted")
    done = {"metadata": {"annotations": {RESTART_ID: "r1"}},
            "spec": {"template": {"metadata": {"annotations": {RESTARTED_AT: "2026-12-03T06:10:00Z"}}}}}
    assert restart_plan(done, "r1")[0] is False
    assert restart_plan(done, "r2")[0] is True
    assert restart_plan(done, None, "2026-12-03T06:00:00Z")[0] is False
    assert restart_plan(done, None, "2026-12-03T07:00:00Z")[0] is True


def test_restart_patch_is_kubectls_annotation_plus_our_id():
    assert restart_patch("T", "r1") == {"spec": {"template": {"metadata": {"annotations": {RESTARTED_AT: "T"}}}},
                                        "metadata": {"annotations": {RESTART_ID: "r1"}}}
    assert "metadata" not in restart_patch("T")


def test_owners_on_nodes_resolves_replicasets_and_leaves_out_bare_pods_and_daemonsets():
    def pod(name, kind=None, owner=None):
        metadata = {"name": name, "namespace": "ns"}
        if kind:
            metadata["ownerReferences"] = [{"kind": kind, "name": owner, "controller": True}]
        return {"metadata": metadata, "spec": {"nodeName": "n1"}}

    pods = [pod("web-1", "ReplicaSet", "web-abc"), pod("web-2", "ReplicaSet", "web-def"), pod("db-0", "StatefulSet", "db"),
            pod("agent-x", "DaemonSet", "agent"), pod("bare"), pod("lonely", "ReplicaSet", "lonely-rs")]
    owners = owners_on_nodes(pods, {("ns", "web-abc"): "web", ("ns", "web-def"): "web", ("ns", "lonely-rs"): None})
    assert owners == {("Deployment", "ns", "web"): ["ns/web-1 on n1", "ns/web-2 on n1"],
                      ("StatefulSet", "ns", "db"): ["ns/db-0 on n1"]}
    assert ("DaemonSet", "ns", "agent") in owners_on_nodes(pods, {}, include_daemonsets=True)
