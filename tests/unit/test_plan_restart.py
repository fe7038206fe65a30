from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.module_utils.model.keys import RESTART_ID, RESTARTED_AT
from ansible_collections.kubeops.rotation.plugins.module_utils.model.owners import Workload
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.restart import (
    owners_on_nodes,
    paced_strategy,
    restart_patch,
    restart_plan,
    rollout_status,
    strategy_put_back,
)
from builders import daemonset, deployment, pdb, pod, statefulset


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


def test_statefulset_waits_for_ready_pods_and_the_update_revision():
    assert rollout_status("StatefulSet", statefulset()).state == "done"
    assert rollout_status("StatefulSet", statefulset(ready=2)).state == "progressing"
    assert "revision b" in rollout_status("StatefulSet", statefulset(update="b", updated=1)).message
    assert rollout_status("StatefulSet", statefulset(update="b", partition=2, updated=1)).state == "done"
    assert rollout_status("StatefulSet", statefulset(strategy="OnDelete")).state == "stuck"


def test_partitioned_statefulset_waits_for_the_pods_above_the_partition():
    status = rollout_status("StatefulSet", statefulset(update="b", partition=1, updated=1))
    assert status.state == "progressing" and "1 out of 2 new pods" in status.message


def test_statefulset_not_yet_observed_is_progressing():
    assert "spec update" in rollout_status("StatefulSet", statefulset(generation=2)).message


def test_daemonset_waits_for_updated_and_available_pods():
    assert rollout_status("DaemonSet", daemonset(available=2)).state == "progressing"
    assert "1 out of 3 new pods" in rollout_status("DaemonSet", daemonset(updated=1)).message
    assert rollout_status("DaemonSet", daemonset()).state == "done"
    assert rollout_status("DaemonSet", daemonset(strategy="OnDelete")).state == "stuck"


def test_restart_id_and_restarted_after_make_a_rerun_restart_nothing():
    assert restart_plan(deployment(), "r1") == (True, "restarted")
    done = deployment(annotations={RESTART_ID: "r1"}, template_annotations={RESTARTED_AT: "2026-12-03T06:10:00Z"})
    assert restart_plan(done, "r1") == (False, "already restarted under restart_id r1 at 2026-12-03T06:10:00Z")
    assert restart_plan(done, "r2")[0] is True
    assert restart_plan(done, None, "2026-12-03T06:00:00Z")[0] is False
    assert restart_plan(done, None, "2026-12-03T07:00:00Z")[0] is True


def test_restart_patch_is_kubectls_annotation_plus_our_id():
    assert restart_patch("T", "r1") == {"spec": {"template": {"metadata": {"annotations": {RESTARTED_AT: "T"}}}},
                                        "metadata": {"annotations": {RESTART_ID: "r1"}}}
    assert "metadata" not in restart_patch("T")


def test_owners_on_nodes_resolves_replicasets_and_leaves_out_bare_pods_and_daemonsets():
    pods = [pod("web-1", owner="web-abc"), pod("web-2", owner="web-def"), pod("db-0", kind="StatefulSet", owner="db"),
            pod("agent-x", kind="DaemonSet", owner="agent"), pod("bare", kind=None),
            pod("lonely", owner="lonely-rs")]
    owners = owners_on_nodes(pods, {("ns", "web-abc"): "web", ("ns", "web-def"): "web", ("ns", "lonely-rs"): None})
    assert owners == {Workload("Deployment", "ns", "web"): ["ns/web-1 on n1", "ns/web-2 on n1"],
                      Workload("StatefulSet", "ns", "db"): ["ns/db-0 on n1"]}
    assert Workload("DaemonSet", "ns", "agent") in owners_on_nodes(pods, {}, include_daemonsets=True)


def rolling_deployment(replicas, max_unavailable="25%", max_surge="25%", kind="RollingUpdate"):
    strategy = {"type": kind}
    if kind == "RollingUpdate":
        strategy["rollingUpdate"] = {"maxUnavailable": max_unavailable, "maxSurge": max_surge}
    return {"metadata": {"name": "web", "namespace": "ns"},
            "spec": {"replicas": replicas, "strategy": strategy,
                     "template": {"metadata": {"labels": {"app": "web"}}}}}


def test_a_restart_is_paced_to_what_the_pdbs_allow_with_every_pod_ready_and_put_back_after():
    budget = pdb("web", max_unavailable=1)
    patch, original = paced_strategy(rolling_deployment(12), [budget])
    assert patch["spec"] == {"strategy": {"rollingUpdate": {"maxUnavailable": 1, "maxSurge": "25%"}}}
    assert original == {"maxUnavailable": "25%", "maxSurge": "25%"}
    recorded = {"metadata": dict(patch["metadata"])}
    assert strategy_put_back(recorded) == {
        "spec": {"strategy": {"rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}},
        "metadata": {"annotations": {"kubeops.io/restart-strategy": None}}}
    # 4 replicas take 1 down at a time already; a PDB of another app does not count; Recreate is left alone.
    assert paced_strategy(rolling_deployment(4), [budget]) == (None, None)
    assert paced_strategy(rolling_deployment(12), [pdb("db", max_unavailable=1)]) == (None, None)
    assert paced_strategy(rolling_deployment(12, kind="Recreate"), [budget]) == (None, None)
    assert strategy_put_back({"metadata": {}}) is None


def test_a_pdb_that_allows_nothing_makes_the_restart_surge_one_at_a_time():
    patch, _original = paced_strategy(rolling_deployment(3, max_unavailable=1, max_surge=0),
                                      [pdb("web", min_available="100%")])
    assert patch["spec"]["strategy"]["rollingUpdate"] == {"maxUnavailable": 0, "maxSurge": 1}
