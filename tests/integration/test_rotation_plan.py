"""rotation_plan against a real cluster: it reads everything once and changes nothing."""

from __future__ import annotations

from conftest import TEST_LABEL, wait_until
from kube import bare_pod, daemon_set, deployment, running_pods


def test_plan_batches_by_zone_moves_each_pod_the_safe_way_and_checks_the_fit(
        cluster, namespace, make_nodes, run_play, test_id):
    old_a = make_nodes(2, labels={"version": "v1", "topology.kubernetes.io/zone": "zone-a"}, prefix="old-a")
    old_b = make_nodes(1, labels={"version": "v1", "topology.kubernetes.io/zone": "zone-b"}, prefix="old-b")
    pinned = {TEST_LABEL: test_id}
    web = deployment("web", 4, pinned)
    web["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "1", "memory": "1Gi"}
    cluster.apps.create_namespaced_deployment(namespace, web)
    cluster.apps.create_namespaced_deployment(namespace, deployment("solo", 1, pinned))
    cluster.apps.create_namespaced_daemon_set(namespace, daemon_set("agent", pinned))
    cluster.core.create_namespaced_pod(namespace, bare_pod("debug", old_b[0]))
    wait_until(lambda: running_pods(cluster, namespace, None, 9), 60, "9 pods on the old nodes")
    (keep,) = make_nodes(1, labels={"version": "v2", "topology.kubernetes.io/zone": "zone-a"},
                         capacity={"cpu": "1"}, prefix="keep")
    # 9, and the DaemonSet's pod on the new node.
    before = {pod.metadata.uid for pod in wait_until(
        lambda: running_pods(cluster, namespace, None, 10), 60, "10 running pods")}

    plan_options = {"node_selector": "%s=%s" % (TEST_LABEL, test_id), "wanted_labels": {"version": "v2"},
                    "rotation_id": test_id, "batch_size": "1",
                    "pool_node_selector": {TEST_LABEL: test_id, "version": "v2"}}
    roomy = {"cpu": "4", "memory": "16Gi", "pods": "110"}
    play = run_play([
        {"kubeops.rotation.rotation_plan": dict(plan_options, template_capacity=roomy)},
        {"kubeops.rotation.rotation_plan": dict(plan_options, template_capacity=dict(roomy, cpu="500m"))},
    ])
    assert play.rc == 0, play
    plan, tight = play.steps
    assert plan["changed"] is False
    assert sorted(node["name"] for node in plan["nodes"]) == sorted(old_a + old_b)
    assert plan["left_out"] == [{"name": keep, "reason": "no drift"}]
    assert [(batch["zone"], len(batch["nodes"])) for batch in plan["batches"]] == [
        ("zone-a", 1), ("zone-a", 1), ("zone-b", 1)]
    replaced = [(w["name"], w["reason"], w["method"], len(w["pods"])) for batch in plan["batches"]
                for w in batch["replace"]]
    assert replaced == [("solo", "single replica", "surge", 1)]
    evicted = [pod for batch in plan["batches"] for pod in batch["evict"]]
    assert len(evicted) == 4 and all(pod.startswith(namespace + "/web-") for pod in evicted)
    blocked = [entry for batch in plan["batches"] for entry in batch["blocked"]]
    assert [entry["pod"] for entry in blocked] == ["%s/debug" % namespace]
    assert plan["safe"] is False and plan["fits"] is True
    assert sum(batch["warm_nodes"] for batch in plan["batches"]) >= 2
    assert tight["fits"] is False
    assert any("DOES NOT FIT" in line for line in tight["summary"])
    for name in old_a + old_b + [keep]:
        node = cluster.core.read_node(name)
        assert not node.spec.unschedulable
        assert not [key for key in node.metadata.annotations or {} if key.startswith("kubeops.io/")]
    assert {pod.metadata.uid for pod in running_pods(cluster, namespace, None, 10)} == before
