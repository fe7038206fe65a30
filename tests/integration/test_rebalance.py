"""Rebalancing on the real control plane: the rebalance module, and the role through its playbook."""

from __future__ import annotations

import json

from conftest import TEST_LABEL, deployment_under_pdb, wait_until
from kube import DisruptionWatcher, deployment, eviction_requests, evictions_since, pdb, running_pods

ZONE = "topology.kubernetes.io/zone"
APPS = ("web", "api", "worker")
STEERING_TAINT = "kubeops.io/rebalancing"


def zoned_nodes(make_nodes, zones, prefix, capacity=None):
    return [name for zone in zones for name in make_nodes(1, labels={ZONE: zone}, capacity=capacity, prefix=prefix)]


def pods_per_node(cluster, namespace, app, nodes):
    counts = {name: 0 for name in nodes}
    for pod in cluster.pods(namespace, "app=%s" % app):
        if pod.metadata.deletion_timestamp is None and pod.spec.node_name:
            counts[pod.spec.node_name] = counts.get(pod.spec.node_name, 0) + 1
    return counts


def uids(cluster, namespace):
    return {pod.metadata.uid for pod in cluster.pods(namespace)}


def steering_taints(cluster, nodes):
    return [name for name in nodes for taint in cluster.core.read_node(name).spec.taints or []
            if taint.key == STEERING_TAINT]


def piled_up(cluster, namespace, make_nodes, test_id, annotations=None):
    """Three Deployments of 6 on three nodes, then three empty nodes: the Descheduler article's case."""
    old = zoned_nodes(make_nodes, "abc", "old")
    for app in APPS:
        cluster.apps.create_namespaced_deployment(namespace, deployment(
            app, 6, {TEST_LABEL: test_id}, annotations=annotations if app == "worker" else None))
    for app in APPS:
        wait_until(lambda app=app: running_pods(cluster, namespace, "app=" + app, 6), 90, "6 %s pods" % app)
    return old


def test_one_pass_evens_out_added_nodes_within_the_pdb_and_a_second_pass_changes_nothing(
        cluster, namespace, make_nodes, run_play, run_playbook, test_id, tmp_path):
    old = piled_up(cluster, namespace, make_nodes, test_id)
    cluster.policy.create_namespaced_pod_disruption_budget(namespace, pdb("web", {"app": "web"}, min_available=5))
    new = zoned_nodes(make_nodes, "abc", "new")
    before = uids(cluster, namespace)
    # Six pods on six nodes end one per node: the fewest moves are the pods above one per node.
    fewest = sum(max(0, count - 1) for app in APPS for count in pods_per_node(cluster, namespace, app, old).values())

    checked = run_play([{"kubeops.rotation.rebalance": {"namespaces": [namespace]}}], check=True)
    plan = checked.steps[0]
    assert checked.rc == 0, checked
    assert plan["changed"] is False and uids(cluster, namespace) == before, "check mode changes nothing"
    assert plan["skew_before"]["max_skew"] >= 2 and plan["skew_predicted"]["max_skew"] <= 1
    assert len(plan["moves"]) == fewest and {move["to"] for move in plan["moves"]} == set(new)

    report_file = tmp_path / "rebalance.json"
    with DisruptionWatcher(cluster, namespace) as watcher:
        completed = run_playbook("kubeops.rotation.rebalance", {
            "rebalance_namespaces": [namespace], "rebalance_max_unavailable_per_owner": "100%",
            "rebalance_timeout": 180, "rebalance_fail_above_skew": 1, "rebalance_report_file": str(report_file)})
    assert completed.returncode == 0, completed.stdout[-4000:]
    report = json.loads(report_file.read_text())
    assert report["evictions"] == {"evicted": fewest}
    assert watcher.min_ready["web"] >= 5, "the PDB (minAvailable 5) held throughout"
    assert watcher.max_terminating["web"] >= 1
    for app in APPS:
        counts = pods_per_node(cluster, namespace, app, old + new)
        assert max(counts.values()) - min(counts.values()) <= 1, (app, counts)
        assert report["skew_after"]["owners"]["%s/Deployment/%s" % (namespace, app)]["nodes"] == counts
    assert report["back_on_source"] == [], "no replacement went back to a node it was moved from"
    assert all(move["landed_on"] in new for move in report["moves"]), report["moves"]
    assert steering_taints(cluster, old + new) == [], "the steering taints are gone"

    again = run_playbook("kubeops.rotation.rebalance", {"rebalance_namespaces": [namespace]})
    assert again.returncode == 0, again.stdout[-3000:]
    assert "changed=0" in again.stdout.split("PLAY RECAP")[1]
    assert "0 move(s)" in again.stdout


def test_nodes_that_cannot_take_the_pods_get_no_move(cluster, namespace, make_nodes, run_play, test_id):
    old = piled_up(cluster, namespace, make_nodes, test_id)
    for app in APPS:
        counts = pods_per_node(cluster, namespace, app, old)
        assert max(counts.values()) - min(counts.values()) <= 1, "precondition: even on the first nodes %s" % counts
    too_small = zoned_nodes(make_nodes, "abc", "small", capacity={"cpu": "50m"})
    before = uids(cluster, namespace)

    result = run_play([{"kubeops.rotation.rebalance": {"namespaces": [namespace]}}])
    step = result.steps[0]
    assert result.rc == 0, result
    assert step["changed"] is False and step["moves"] == []
    assert {entry["target"] for entry in step["stuck"]} == {"%s/Deployment/%s" % (namespace, app) for app in APPS}
    assert "no node has room for its requests" in step["stuck"][0]["reason"]
    assert uids(cluster, namespace) == before
    assert steering_taints(cluster, too_small) == []


def test_zone_spread_is_repaired(cluster, namespace, make_nodes, run_play, test_id):
    zoned_nodes(make_nodes, "ab", "zone")
    spec = deployment("web", 6, {TEST_LABEL: test_id})
    spec["spec"]["template"]["spec"]["topologySpreadConstraints"] = [{
        "maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "web"}}}]
    cluster.apps.create_namespaced_deployment(namespace, spec)
    wait_until(lambda: running_pods(cluster, namespace, "app=web", 6), 90, "6 web pods in two zones")
    (zone_c,) = zoned_nodes(make_nodes, "c", "zone")

    result = run_play([{"kubeops.rotation.rebalance": {"namespaces": [namespace], "strategies": ["topology_spread"],
                                                       "timeout": 120}}])
    step = result.steps[0]
    assert result.rc == 0, result
    assert len(step["moves"]) == 2 and {move["to"] for move in step["moves"]} == {zone_c}
    constraint_after = step["skew_after"]["constraints"][0]["domains"]
    assert constraint_after == {"a": 2, "b": 2, "c": 2}
    zones = {}
    for pod in cluster.pods(namespace, "app=web"):
        if pod.metadata.deletion_timestamp is None:
            zone = cluster.core.read_node(pod.spec.node_name).metadata.labels[ZONE]
            zones[zone] = zones.get(zone, 0) + 1
    assert zones == {"a": 2, "b": 2, "c": 2}


def test_do_not_disrupt_pods_stay_where_they_are(cluster, namespace, make_nodes, run_play, test_id):
    piled_up(cluster, namespace, make_nodes, test_id, annotations={"karpenter.sh/do-not-disrupt": "true"})
    zoned_nodes(make_nodes, "abc", "new")
    workers = {pod.metadata.uid for pod in cluster.pods(namespace, "app=worker")}

    result = run_play([{"kubeops.rotation.rebalance": {"namespaces": [namespace], "timeout": 180,
                                                       "max_unavailable_per_owner": "3"}}])
    step = result.steps[0]
    assert result.rc == 0, result
    assert {move["owner"] for move in step["moves"]} == {"%s/Deployment/%s" % (namespace, app) for app in
                                                         ("web", "api")}
    assert {pod.metadata.uid for pod in cluster.pods(namespace, "app=worker")} == workers
    stuck = [entry for entry in step["stuck"] if entry["target"].endswith("/worker")]
    assert stuck and "do-not-disrupt" in stuck[0]["reason"]


def test_a_pass_blocked_by_a_pdb_fails_naming_it_and_leaves_no_taint(
        cluster, namespace, make_nodes, run_play, test_id):
    (first,) = zoned_nodes(make_nodes, "a", "old")
    deployment_under_pdb(cluster, namespace, test_id, "db", 4, timeout=90, max_unavailable=0)
    added = zoned_nodes(make_nodes, "b", "new")

    result = run_play([{"kubeops.rotation.rebalance": {"namespaces": [namespace], "timeout": 6,
                                                       "steering": "NoSchedule"}}])
    step = result.steps[0]
    assert result.rc != 0
    assert "blocked by PDB %s/db" % namespace in step["msg"]
    assert {move["outcome"] for move in step["moves"]} <= {"blocked", "pending"}
    assert steering_taints(cluster, [first] + added) == [], "the taints go, also when the pass fails"
    assert pods_per_node(cluster, namespace, "db", [first]) == {first: 4}


def test_utilization_relieves_a_hot_node(cluster, namespace, make_nodes, run_play, test_id):
    (hot,) = zoned_nodes(make_nodes, "a", "hot")
    spec = deployment("big", 3, {TEST_LABEL: test_id})
    spec["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1"
    cluster.apps.create_namespaced_deployment(namespace, spec)
    wait_until(lambda: running_pods(cluster, namespace, "app=big", 3), 90, "3 big pods on one node")
    cold = zoned_nodes(make_nodes, "bc", "cold")

    result = run_play([{"kubeops.rotation.rebalance": {"namespaces": [namespace], "strategies": ["utilization"],
                                                       "timeout": 120}}])
    step = result.steps[0]
    assert result.rc == 0, result
    assert step["skew_before"]["utilization"][hot] == 75.0
    assert [move["from"] for move in step["moves"]] == [hot, hot]
    assert sorted(move["landed_on"] for move in step["moves"]) == sorted(cold)
    assert pods_per_node(cluster, namespace, "big", [hot] + cold) == dict.fromkeys([hot] + cold, 1)


def test_bad_input_fails_before_anything_is_read(run_play):
    result = run_play([{"kubeops.rotation.rebalance": {"max_unavailable_per_owner": "0"}}])
    assert result.rc != 0
    assert "max_unavailable_per_owner must be a count" in result.steps[0]["msg"]


def test_a_new_taint_and_a_changed_label_move_exactly_the_pods_that_break_them(
        cluster, namespace, make_nodes, run_play, test_id):
    pinned = {TEST_LABEL: test_id}
    first = make_nodes(2, labels={"tier": "web"}, prefix="first")
    cluster.apps.create_namespaced_deployment(namespace, deployment("web", 4, dict(pinned, tier="web")))
    cluster.apps.create_namespaced_deployment(namespace, deployment("plain", 4, pinned))
    for app in ("web", "plain"):
        wait_until(lambda app=app: running_pods(cluster, namespace, "app=" + app, 4), 90, "4 %s pods" % app)
    spare = make_nodes(1, labels={"tier": "web"}, prefix="spare") + make_nodes(1, prefix="untiered")
    relabelled, tainted = first
    cluster.core.patch_node(relabelled, {"metadata": {"labels": {"tier": "batch"}}})
    cluster.core.patch_node(tainted, {"spec": {"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}})
    pods = cluster.pods(namespace)
    breaking = {pod.metadata.uid for pod in pods if pod.spec.node_name == tainted or
                (pod.metadata.labels["app"] == "web" and pod.spec.node_name == relabelled)}
    strategies = {"namespaces": [namespace], "strategies": ["node_taints", "node_affinity"], "timeout": 180}

    checked = run_play([{"kubeops.rotation.rebalance": strategies}], check=True).steps[0]
    before = checked["violations_before"]
    assert len(before["node_taints"]) + len(before["node_affinity"]) == len(breaking) >= 1, before
    assert checked["violations_predicted"] == {"node_taints": {}, "node_affinity": {}}

    evictions_before = eviction_requests(cluster)
    with DisruptionWatcher(cluster, namespace) as watcher:
        play = run_play([{"kubeops.rotation.rebalance": strategies}])
    assert play.rc == 0, play
    step = play.steps[0]
    moved = {pod.metadata.uid for pod in pods} - uids(cluster, namespace)
    assert moved == breaking, "exactly the pods that break a rule moved"
    assert evictions_since(cluster, evictions_before) == len(breaking), "each evicted once"
    assert step["violations_after"] == {"node_taints": {}, "node_affinity": {}}, step["violations_after"]
    assert step["back_on_source"] == [] and watcher.max_terminating["web"] <= 1
    web_nodes = {pod.spec.node_name for pod in cluster.pods(namespace, "app=web")}
    assert web_nodes == set(spare[:1]), "the only node left with tier=web and no taint: %s" % web_nodes
    assert steering_taints(cluster, first + spare) == [], "the steering taints are gone"


def test_pods_whose_anti_affinity_a_relabelled_neighbour_breaks_move_and_not_back(
        cluster, namespace, make_nodes, run_play, test_id):
    pinned = {TEST_LABEL: test_id}
    first = make_nodes(2, prefix="first")
    shy = deployment("shy", 2, pinned, spread=True)
    shy["spec"]["template"]["spec"]["affinity"] = {"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"role": "noisy"}}}]}}
    cluster.apps.create_namespaced_deployment(namespace, shy)
    cluster.apps.create_namespaced_deployment(namespace, deployment("batch", 2, pinned, spread=True))
    for app in ("shy", "batch"):
        wait_until(lambda app=app: running_pods(cluster, namespace, "app=" + app, 2), 90, "2 %s pods" % app)
    spare = make_nodes(2, prefix="spare")
    # A label added after the pods landed: the shy pods' anti-affinity now excludes their neighbours.
    for pod in cluster.pods(namespace, "app=batch"):
        cluster.core.patch_namespaced_pod(pod.metadata.name, namespace, {"metadata": {"labels": {"role": "noisy"}}})
    shy_before = {pod.metadata.uid for pod in cluster.pods(namespace, "app=shy")}
    others_before = uids(cluster, namespace) - shy_before
    evictions_before = eviction_requests(cluster)
    play = run_play([{"kubeops.rotation.rebalance": {
        "namespaces": [namespace], "strategies": ["pod_anti_affinity"], "timeout": 180}}])
    assert play.rc == 0, play
    step = play.steps[0]
    assert len(step["violations_before"]["pod_anti_affinity"]) == 2, step["violations_before"]
    assert step["violations_after"] == {"pod_anti_affinity": {}}, step["violations_after"]
    now = uids(cluster, namespace)
    assert not shy_before & now and others_before <= now, "the two shy pods moved, nothing else"
    assert evictions_since(cluster, evictions_before) == 2
    assert {pod.spec.node_name for pod in cluster.pods(namespace, "app=shy")} == set(spare)
    assert steering_taints(cluster, first + spare) == []


def test_compaction_empties_the_little_used_nodes_onto_the_full_ones_and_leaves_no_mark(
        cluster, namespace, make_nodes, run_play, test_id):
    pinned = {TEST_LABEL: test_id}
    low = make_nodes(2, prefix="low")
    cluster.apps.create_namespaced_deployment(namespace, deployment("small", 2, pinned, spread=True))
    wait_until(lambda: running_pods(cluster, namespace, "app=small", 2), 90, "2 small pods")
    full = make_nodes(2, labels={"pool": "full"}, prefix="full")
    big = deployment("big", 4, dict(pinned, pool="full"))
    big["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1"
    cluster.apps.create_namespaced_deployment(namespace, big)
    wait_until(lambda: running_pods(cluster, namespace, "app=big", 4), 90, "4 big pods")
    small_before = {pod.metadata.uid for pod in cluster.pods(namespace, "app=small")}
    big_before = {pod.metadata.uid for pod in cluster.pods(namespace, "app=big")}
    # No steering asked: the nodes it empties are tainted all the same, or the pods would come straight back.
    compaction = {"namespaces": [namespace], "node_selector": "%s=%s" % (TEST_LABEL, test_id),
                  "strategies": ["compaction"], "steering": "none", "timeout": 180}

    checked = run_play([{"kubeops.rotation.rebalance": compaction}], check=True).steps[0]
    assert sorted(checked["compaction"]["emptied"]) == sorted(low), checked["summary"]
    assert {move["to"] for move in checked["moves"]} == set(full)

    evictions_before = eviction_requests(cluster)
    play = run_play([{"kubeops.rotation.rebalance": compaction}])
    assert play.rc == 0, play
    step = play.steps[0]
    assert sorted(step["compaction"]["emptied"]) == sorted(low) and set(low) <= set(step["compaction"]["empty_after"])
    assert not [pod for pod in cluster.pods(namespace) if pod.spec.node_name in low], "the low nodes are empty"
    now = uids(cluster, namespace)
    assert not small_before & now and big_before <= now, "the small pods moved, the big ones stayed"
    assert evictions_since(cluster, evictions_before) == 2, "each moved once"
    for name in full:
        annotations = cluster.core.read_node(name).metadata.annotations or {}
        assert not {"kubeops.io/filled-by-rebalance", "karpenter.sh/do-not-disrupt"} & set(annotations), annotations
    assert steering_taints(cluster, low + full) == []
