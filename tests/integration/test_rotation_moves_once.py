"""A rotation moves every pod of its nodes once and no other pod, keeps the zones and does what its plan says,
measured on the cluster.

Restarts are counted from the workloads (kubectl.kubernetes.io/restartedAt:
a replacement first scales, it never restarts), moved pods from their uids,
evictions from the API server's own apiserver_request_total, disruption by a
watcher, zones from the pods.
Pods become Ready 2 s after they are bound (tests/cluster/cluster.py), so
waiting for replacements and PDB pacing are exercised.

Autoscaler: the test provisioner (tests/cluster/provisioner.py), node-group style: a fixed pool that scales up
from pending pods, as cluster-autoscaler with an ASG does. The rotation and warm nodes on the real Karpenter
are in test_karpenter.py.
"""

from __future__ import annotations

import json
import os
import signal
import threading

import pytest
from ansible_run import run_collection_playbook
from conftest import default_service_account, delete_pool_nodes, wait_until
from kube import (DisruptionWatcher, InBackground, deployment, eviction_requests, evictions_since, is_ready, pdb,
                  stateful_set, surge_leftovers, unless_missing, workload_templates)

from fakenodes import fake_node

DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
ZONE = "topology.kubernetes.io/zone"
CAPACITY = {"cpu": "4", "memory": "16Gi", "pods": "110"}


class Scenario:
    """Old nodes over two zones and the workloads the rotation promises to protect, in a namespace of its own."""

    def __init__(self, cluster, test_id, nodes_per_zone, batch_size="2"):
        self.cluster = cluster
        self.namespace = test_id
        self.pool = test_id + "-old"
        # where its pods may run: the old pool and the new one
        self.pod_pools = [self.pool, "warm"]
        self.old_nodes = {}
        for zone, count in nodes_per_zone.items():
            for index in range(count):
                self.old_nodes["%s-%s-%d" % (test_id, zone, index)] = zone
        self.rotation = {
            "rotate_nodes_id": test_id + "-rotation",
            "rotate_nodes_node_selector": "kubeops.io/pool=" + self.pool,
            "rotate_nodes_batch_size": batch_size,
            # kwok nodes: no instance behind them, and no NodeClaim or Machine to delete.
            "rotate_nodes_retire": "delete_node",
            "rotate_nodes_pool_node_selector": {"kubeops.io/pool": "warm"},
            "rotate_nodes_template_capacity": CAPACITY,
            "kubeops_kubeconfig": cluster.kubeconfig,
        }

    def create_nodes(self):
        for name, zone in self.old_nodes.items():
            self.cluster.core.create_node(fake_node(name, {"kubeops.io/pool": self.pool, ZONE: zone}, CAPACITY))
        self.cluster.core.create_namespace({"metadata": {"name": self.namespace}})
        wait_until(lambda: self._ready_nodes() == len(self.old_nodes), 60, "the old nodes to be Ready")
        wait_until(lambda: default_service_account(self.cluster, self.namespace), 30, "the namespace")

    def _ready_nodes(self):
        return sum(1 for node in self.cluster.core.list_node(label_selector="kubeops.io/pool=" + self.pool).items
                   if any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or [])
                   and not any(t.key == "node.kubernetes.io/not-ready" for t in node.spec.taints or []))

    def add(self, kind, manifest, ready):
        template = (manifest.get("spec") or {}).get("template")
        if template:
            # Only on the old pool or the new one: other tests' nodes must not take this scenario's pods.
            template["spec"]["affinity"] = dict(template["spec"].get("affinity") or {}, nodeAffinity={
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "kubeops.io/pool", "operator": "In", "values": list(self.pod_pools)}]}]}})
        create = {"Deployment": self.cluster.apps.create_namespaced_deployment,
                  "StatefulSet": self.cluster.apps.create_namespaced_stateful_set,
                  "PodDisruptionBudget": self.cluster.policy.create_namespaced_pod_disruption_budget,
                  "ReplicaSet": self.cluster.apps.create_namespaced_replica_set}[kind]
        create(self.namespace, manifest)
        if ready:
            name = manifest["metadata"]["name"]
            wait_until(lambda: self.ready(name) >= ready, 90, "%s to have %d Ready pods" % (name, ready))

    def ready(self, app):
        return sum(1 for pod in self.cluster.pods(self.namespace, "app=" + app) if is_ready(pod))

    def zones(self):
        """app -> {zone: Ready pods}, DaemonSets aside."""
        zone_of = {node.metadata.name: (node.metadata.labels or {}).get(ZONE)
                   for node in self.cluster.core.list_node().items}
        counts = {}
        for pod in self.cluster.pods(self.namespace):
            if is_ready(pod):
                per_zone = counts.setdefault(pod.metadata.labels.get("app"), {})
                zone = zone_of.get(pod.spec.node_name)
                per_zone[zone] = per_zone.get(zone, 0) + 1
        return counts

    def workloads(self):
        """"Kind/name" -> (generation, restartedAt) of every Deployment and StatefulSet of the namespace."""
        return workload_templates(self.cluster, self.namespace)

    def rotate(self, work_dir, extra=None):
        return run_collection_playbook("kubeops.rotation.rotate_nodes", dict(
            self.rotation, rotate_nodes_report_file=os.path.join(work_dir, "report.json"), **(extra or {})),
            work_dir)

    def remaining_old_nodes(self):
        names = {node.metadata.name for node in self.cluster.core.list_node().items}
        return sorted(name for name in self.old_nodes if name in names)

    def cleanup(self):
        self.cluster.core.delete_namespace(self.namespace)
        for name in self.old_nodes:
            unless_missing(self.cluster.core.delete_node, name)
        delete_pool_nodes(self.cluster)


class RestartWatcher(InBackground):
    """Samples every workload's generation and restartedAt while a play runs: what the cluster says restarted."""

    def __init__(self, scenario):
        super().__init__()
        self.scenario = scenario
        self.seen = {}

    def __enter__(self):
        self.first = self.scenario.workloads()
        return super().__enter__()

    def __exit__(self, *exc):
        super().__exit__(*exc)
        self._sample()

    def _run(self):
        while not self._stop.wait(0.5):
            self._sample()

    def _sample(self):
        for key, (_generation, stamp) in self.scenario.workloads().items():
            if stamp:
                self.seen.setdefault(key, set()).add(stamp)

    def restarts(self):
        """"Kind/name" -> how many times it was restarted: the restartedAt values seen that it did not have at the
        start (a scale changes the generation too, so the generation does not tell)."""
        self._sample()
        return {key: len(self.seen.get(key, set()) - {stamp}) for key, (_generation, stamp) in self.first.items()}


def web_scenario(cluster, test_id, nodes_per_zone, solo=False):
    """Old nodes rotated one a batch, web (6 pods under maxUnavailable 1) on them, and with ``solo`` a single replica
    under minAvailable 1; skipped where the cluster runs no test provisioner to warm nodes."""
    cluster.need_provisioner()
    scenario = Scenario(cluster, test_id, nodes_per_zone, batch_size="1")
    scenario.create_nodes()
    scenario.add("Deployment", deployment("web", 6, {}), 6)
    scenario.add("PodDisruptionBudget", pdb("web", {"app": "web"}, max_unavailable=1), 0)
    if solo:
        scenario.add("Deployment", deployment("solo", 1, {}), 1)
        scenario.add("PodDisruptionBudget", pdb("solo", {"app": "solo"}, min_available=1), 0)
    return scenario


def protected_scenario(cluster, test_id):
    """6 old nodes (4 in zone-a, 2 in zone-b) in 3 batches, with every kind of workload the rotation protects."""
    scenario = Scenario(cluster, test_id, {"zone-a": 4, "zone-b": 2})
    scenario.create_nodes()
    guard = deployment("guard", 6, {}, annotations={DO_NOT_DISRUPT: "true"})
    scenario.add("Deployment", guard, 6)
    db = stateful_set("db", 2, {})
    db["spec"]["template"]["metadata"]["annotations"][DO_NOT_DISRUPT] = "true"
    scenario.add("StatefulSet", db, 2)
    scenario.add("Deployment", deployment("solo", 1, {}), 1)
    scenario.add("PodDisruptionBudget", pdb("solo", {"app": "solo"}, min_available=1), 0)
    zonal = deployment("zonal", 4, {})
    zonal["spec"]["template"]["spec"]["topologySpreadConstraints"] = [{
        "maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "zonal"}}}]
    scenario.add("Deployment", zonal, 4)
    scenario.add("Deployment", deployment("web", 8, {}), 8)
    scenario.add("PodDisruptionBudget", pdb("web", {"app": "web"}, max_unavailable=1), 0)
    wait_until(lambda: (cluster.policy.read_namespaced_pod_disruption_budget("web", scenario.namespace).status
                        .disruptions_allowed or 0) == 1, 30, "the web PDB to allow one disruption")
    return scenario


@pytest.fixture
def new_scenario(cluster, test_id):
    """Makes the test's Scenario, its old nodes created (nodes per zone, batch size); removed after the test."""
    made = []

    def make(nodes_per_zone, batch_size="2"):
        cluster.need_provisioner()
        scenario = Scenario(cluster, test_id, nodes_per_zone, batch_size=batch_size)
        made.append(scenario)
        scenario.create_nodes()
        return scenario
    yield make
    for scenario in made:
        scenario.cleanup()


@pytest.fixture
def protected(cluster, test_id):
    cluster.need_provisioner()
    scenario = protected_scenario(cluster, test_id)
    yield scenario
    scenario.cleanup()


def watched_rotation(cluster, scenario, work_dir, extra=None):
    """The scenario's rotation under a DisruptionWatcher and a RestartWatcher: (the finished run, the watcher, the
    restart watcher, the API server's evictions and the scenario's zones before it)."""
    zones_before = scenario.zones()
    evictions_before = eviction_requests(cluster)
    with DisruptionWatcher(cluster, scenario.namespace) as watcher, RestartWatcher(scenario) as restarts:
        completed = scenario.rotate(str(work_dir), extra)
    return completed, watcher, restarts, evictions_before, zones_before


def events_about(cluster, namespace, names):
    """Who said what about these pods, one short line each (the controller that deleted one names itself in its
    Event), kept short so that pytest shows the whole of it."""
    return "; ".join("%s %s by %s: %s" % (event.involved_object.name, event.reason, event.source.component,
                                          event.message)
                     for event in sorted(cluster.core.list_namespaced_event(namespace).items,
                                         key=lambda event: str(event.last_timestamp or event.event_time))
                     if event.involved_object.name in names
                     and event.reason not in ("Scheduled", "Pulled", "Created", "Started"))


def assert_moved_once(cluster, scenario, watcher, restarts, evicted, report, zones_before):
    """What the issue promises, read from the cluster."""
    replaced = {"%(kind)s/%(name)s" % entry: entry["method"] for batch in report["planned_batches"]
                for entry in batch["replace"]}
    assert replaced == {"Deployment/guard": "surge", "StatefulSet/db": "one_at_a_time",
                        "Deployment/solo": "surge"}, report["planned_batches"]
    assert all(count == 0 for count in restarts.values()), "restarted: %s" % restarts
    # Every pod of the rotated nodes moved, once: none of the pods created meanwhile went away again.
    rotated = set(scenario.old_nodes)
    now = {pod.metadata.uid for pod in cluster.pods(scenario.namespace)}
    assert [uid for uid, (_app, node) in watcher.first.items() if node in rotated and uid in now] == []
    assert [uid for uid, (_app, node) in watcher.first.items() if node not in rotated and uid not in now] == []
    assert {app: count for app, count in watcher.churned.items() if app} == {}, "%s went again; %s" % (
        ", ".join(watcher.churned_pods), events_about(cluster, scenario.namespace,
                                                      {entry.split(" on ")[0] for entry in watcher.churned_pods}))
    planned_evictions = sum(len(batch["evict"]) for batch in report["planned_batches"])
    one_at_a_time = sum(len(entry["pods"]) for batch in report["planned_batches"] for entry in batch["replace"]
                        if entry["method"] == "one_at_a_time")
    assert planned_evictions > 0 and evicted == planned_evictions + one_at_a_time, (evicted, report["batches"])
    assert watcher.min_ready["solo"] >= 1, "the single replica was down"
    assert watcher.min_ready["web"] >= 7, "web went below its PDB"
    # A surge takes nothing away before its replacement is Ready; a StatefulSet, which cannot surge, loses one pod.
    assert watcher.min_ready["guard"] >= 6 and watcher.min_ready["db"] >= 1
    after = scenario.zones()
    for app in ("guard", "db", "solo", "zonal", "web"):
        for zone in set(zones_before[app]) | set(after[app]):
            assert abs(after[app].get(zone, 0) - zones_before[app].get(zone, 0)) <= 1, (app, zones_before, after)
    assert scenario.remaining_old_nodes() == []
    assert surge_leftovers(cluster, scenario.namespace) == []


def test_each_pod_moves_once_zones_are_kept_and_the_plan_is_what_happens(cluster, protected, tmp_path):
    completed, watcher, restarts, evictions_before, zones_before = watched_rotation(cluster, protected, tmp_path)
    assert completed.returncode == 0, completed.stdout[-6000:]
    report = json.loads((tmp_path / "report.json").read_text())
    assert len(report["batches"]) == 3
    assert "WARNING: the rotation did not do what its plan said" not in completed.stdout
    assert report["outcome"] == "finished"
    for batch in report["batches"]:
        assert sorted(batch["replacements_done"]) == sorted(batch["replacements_planned"]), batch
        assert sorted(batch["evictions_done"]) == sorted(batch["evictions_planned"]), batch
    assert_moved_once(cluster, protected, watcher, restarts.restarts(), evictions_since(cluster, evictions_before),
                      report, zones_before)


def test_killed_in_batch_two_and_rerun_still_moves_each_pod_once(cluster, protected, tmp_path, run_play):
    plan = run_play([{"kubeops.rotation.rotation_plan": {
        "node_selector": protected.rotation["rotate_nodes_node_selector"],
        "rotation_id": protected.rotation["rotate_nodes_id"], "batch_size": "2",
        "pool_node_selector": {"kubeops.io/pool": "warm"}, "template_capacity": CAPACITY}}]).steps[0]
    second_batch = plan["batches"][1]["nodes"]
    zones_before = protected.zones()
    evictions_before = eviction_requests(cluster)
    with DisruptionWatcher(cluster, protected.namespace) as watcher, RestartWatcher(protected) as restarts:
        first = run_collection_playbook("kubeops.rotation.rotate_nodes", protected.rotation, str(tmp_path),
                                        background=True)
        try:
            wait_until(lambda: first.poll() is not None or all(
                cluster.core.read_node(name).spec.unschedulable for name in second_batch), 300,
                "batch 2 to be cordoned")
            # Into the batch's moves: in the middle of a surge (guard has pods on most nodes), or at least before
            # the batch is retired.
            wait_until(lambda: first.poll() is not None or cluster.apps.list_namespaced_deployment(
                protected.namespace, label_selector="kubeops.io/surging").items or any(
                (cluster.core.read_node(name).metadata.annotations or {}).get("kubeops.io/rotation-phase")
                != "cordoned" for name in second_batch), 120, "a surge in batch 2")
        finally:
            os.killpg(first.pid, signal.SIGKILL)
            first.wait()
        assert protected.remaining_old_nodes(), "the first run was killed before it finished"
        completed = protected.rotate(str(tmp_path))
    assert completed.returncode == 0, completed.stdout[-6000:]
    report = json.loads((tmp_path / "report.json").read_text())
    assert_moved_once(cluster, protected, watcher, restarts.restarts(), evictions_since(cluster, evictions_before),
                      {"planned_batches": plan["batches"]}, zones_before)
    assert report["batches"], "the rerun rotated what was left"


def test_a_do_not_disrupt_duration_moves_by_a_surge_without_an_eviction_or_a_restart(cluster, new_scenario, tmp_path):
    scenario = new_scenario({"zone-a": 2})
    scenario.add("Deployment", deployment("cache", 2, {}, annotations={DO_NOT_DISRUPT: "30m"}), 2)
    before = eviction_requests(cluster)
    with RestartWatcher(scenario) as restarts:
        completed = scenario.rotate(str(tmp_path))
    assert completed.returncode == 0, completed.stdout[-6000:]
    assert sum(eviction_requests(cluster).values()) - sum(before.values()) == 0, "a pod was evicted"
    assert restarts.restarts() == {"Deployment/cache": 0}
    assert scenario.ready("cache") == 2 and scenario.remaining_old_nodes() == []
    assert surge_leftovers(cluster, scenario.namespace) == []


def test_skip_leaves_a_blocked_batch_cordoned_finishes_the_others_and_fails_naming_the_pdb(
        cluster, new_scenario, tmp_path):
    scenario = new_scenario({"zone-a": 3}, batch_size="1")
    # A ReplicaSet of its own (no Deployment to restart) under a PDB that never allows: eviction is the
    # only way, and it waits forever. Its node holds the most pods, so it goes first and two batches follow.
    stuck = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "stuck"},
             "spec": deployment("stuck", 1, {})["spec"]}
    scenario.add("ReplicaSet", stuck, 1)
    scenario.add("PodDisruptionBudget", pdb("stuck", {"app": "stuck"}, min_available=1), 0)
    blocked = scenario.cluster.pods(scenario.namespace, "app=stuck")[0].spec.node_name
    completed = scenario.rotate(str(tmp_path), {"rotate_nodes_on_blocked": "skip", "rotate_nodes_evict_timeout": 8,
                                                "rotate_nodes_most_disruptive": "first"})
    assert completed.returncode != 0
    assert "could not be drained and stay cordoned" in completed.stdout
    assert "PDB %s/stuck" % scenario.namespace in completed.stdout
    assert scenario.remaining_old_nodes() == [blocked]
    assert scenario.cluster.core.read_node(blocked).spec.unschedulable
    report = json.loads((tmp_path / "report.json").read_text())
    assert [entry["batch"]["nodes"] for entry in report["left"]] == [[blocked]]
    assert report["left"][0]["batch"]["index"] == 1
    assert len(report["batches"]) == 2, "the two other batches finished"


def test_a_surge_goes_to_the_warm_room_not_to_the_empty_nodes_of_a_later_batch(cluster, new_scenario, tmp_path):
    # The warm nodes are full of placeholders and the later batch's nodes are empty: a scheduler asked only not
    # to prefer those nodes takes them rather than preempt a placeholder, and the next batch would then find
    # pods of a workload this rotation has already moved.
    scenario = new_scenario({"zone-a": 4})
    full, empty = sorted(scenario.old_nodes)[:2], sorted(scenario.old_nodes)[2:]
    for name in empty:
        cluster.core.patch_node(name, {"spec": {"unschedulable": True}})
    guard = deployment("guard", 4, {}, annotations={DO_NOT_DISRUPT: "true"})
    # 4 x 1 cpu: exactly one warm node of 4 cpu, which its placeholders fill.
    guard["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1"
    scenario.add("Deployment", guard, 4)
    for name in empty:
        cluster.core.patch_node(name, {"spec": {"unschedulable": False}})
    with RestartWatcher(scenario) as restarts:
        completed = scenario.rotate(str(tmp_path), {"rotate_nodes_most_disruptive": "first"})
    assert completed.returncode == 0, completed.stdout[-6000:]
    report = json.loads((tmp_path / "report.json").read_text())
    assert [sorted(batch["nodes"]) for batch in report["batches"]] == [full, empty]
    assert restarts.restarts() == {"Deployment/guard": 0}
    assert scenario.ready("guard") == 4 and scenario.remaining_old_nodes() == []


def test_a_deployment_of_12_under_max_unavailable_1_surges_exactly_its_pods_on_the_rotated_node(
        cluster, new_scenario, tmp_path, make_nodes):
    # The case: 12 do-not-disrupt replicas under a PDB of maxUnavailable 1 and an HPA pinned at 12, a
    # quarter of them on the one node that rotates. A restart fell to 9 Ready and replaced the 9 that stay.
    scenario = new_scenario({"zone-a": 1})
    # Nodes of the new pool that are there from the start and stay.
    make_nodes(3, {"kubeops.io/pool": "warm", ZONE: "zone-a"}, CAPACITY, prefix="stay")
    big = deployment("big", 12, {}, annotations={DO_NOT_DISRUPT: "true"})
    big["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1"
    scenario.add("Deployment", big, 12)
    scenario.add("PodDisruptionBudget", pdb("big", {"app": "big"}, max_unavailable=1), 0)
    hpa = tmp_path / "hpa.json"
    hpa.write_text(json.dumps({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
                               "metadata": {"name": "big", "namespace": scenario.namespace},
                               "spec": {"minReplicas": 12, "maxReplicas": 12, "scaleTargetRef": {
                                   "apiVersion": "apps/v1", "kind": "Deployment", "name": "big"}}}))
    cluster.kubectl("apply", "-f", str(hpa))
    wait_until(lambda: (cluster.policy.read_namespaced_pod_disruption_budget("big", scenario.namespace).status
                        .disruptions_allowed or 0) == 1, 30, "the PDB to allow one disruption")
    old = next(iter(scenario.old_nodes))
    leaving = {pod.metadata.uid for pod in cluster.pods(scenario.namespace, "app=big") if pod.spec.node_name == old}
    assert leaving, "some of big runs on the node that rotates"

    check = run_collection_playbook("kubeops.rotation.rotate_nodes", dict(
        scenario.rotation, rotate_nodes_report_file=str(tmp_path / "check.json")), str(tmp_path), check=True)
    assert check.returncode == 0, check.stdout[-6000:]
    assert "did not do what its plan said" not in check.stdout
    assert "Deployment %s/big: surge by %d pod(s)" % (scenario.namespace, len(leaving)) in check.stdout
    checked = json.loads((tmp_path / "check.json").read_text())
    assert checked["outcome"] == "check" and (tmp_path / "check.md").exists()

    with DisruptionWatcher(cluster, scenario.namespace) as watcher, RestartWatcher(scenario) as restarts:
        completed = scenario.rotate(str(tmp_path))
    assert completed.returncode == 0, completed.stdout[-6000:]
    assert watcher.min_ready["big"] >= 11, "big went below its PDB: %d Ready" % watcher.min_ready["big"]
    assert restarts.restarts() == {"Deployment/big": 0}
    now = {pod.metadata.uid for pod in cluster.pods(scenario.namespace, "app=big")}
    assert leaving.isdisjoint(now), "every pod of the rotated node moved"
    staying = {uid for uid, (app, node) in watcher.first.items() if app == "big" and node != old}
    assert staying <= now, "no pod of the nodes that stay moved"
    assert watcher.churned == {}, "no replacement went away again"
    assert scenario.ready("big") == 12 and scenario.remaining_old_nodes() == []
    assert cluster.apps.read_namespaced_deployment("big", scenario.namespace).spec.replicas == 12
    assert surge_leftovers(cluster, scenario.namespace) == []
    bounds = json.loads(cluster.kubectl("get", "hpa", "big", "-n", scenario.namespace, "-o", "json").stdout)
    assert (bounds["spec"]["minReplicas"], bounds["spec"]["maxReplicas"]) == (12, 12)
    assert not [key for key in bounds["metadata"].get("annotations") or {} if key.startswith("kubeops.io/")]
    report = json.loads((tmp_path / "report.json").read_text())
    assert len(report["batches"][0]["replacements_done"]) == len(leaving)
    print("big: %d of 12 on the rotated node moved, the other %d stayed; fewest Ready %d (PDB wants 11)" % (
        len(leaving), len(staying), watcher.min_ready["big"]))


def test_a_surge_that_something_else_scales_back_is_undone_and_the_batch_stops_naming_it(
        cluster, new_scenario, tmp_path):
    # A GitOps controller that owns spec.replicas sets it back every second: the surge cannot last. It is undone
    # (the pods stay where they are, nothing of the surge is left) and the batch stops, naming who set it.
    scenario = new_scenario({"zone-a": 1})
    stop = threading.Event()
    try:
        scenario.add("Deployment", deployment("synced", 2, {}, annotations={DO_NOT_DISRUPT: "true"}), 2)
        before = {pod.metadata.uid for pod in cluster.pods(scenario.namespace, "app=synced")}

        def sync():
            while not stop.wait(1):
                current = cluster.apps.read_namespaced_deployment("synced", scenario.namespace)
                if current.spec.replicas != 2:
                    cluster.apps.patch_namespaced_deployment("synced", scenario.namespace, {"spec": {"replicas": 2}},
                                                             field_manager="gitops-sync")

        syncer = threading.Thread(target=sync, daemon=True)
        syncer.start()
        with DisruptionWatcher(cluster, scenario.namespace) as watcher:
            completed = scenario.rotate(str(tmp_path), {"rotate_nodes_restart_timeout": 120})
        stop.set()
        syncer.join(5)
        assert completed.returncode != 0
        assert "spec.replicas was set to 2" in completed.stdout and "gitops-sync" in completed.stdout
        assert watcher.min_ready["synced"] >= 2
        assert {pod.metadata.uid for pod in cluster.pods(scenario.namespace, "app=synced")} == before
        assert surge_leftovers(cluster, scenario.namespace) == []
        assert cluster.apps.read_namespaced_deployment("synced", scenario.namespace).spec.replicas == 2
        report = json.loads((tmp_path / "report.json").read_text())
        assert report["outcome"] == "stopped" and "gitops-sync" in report["stopped"]["reason"]
    finally:
        stop.set()


def test_a_rotation_of_named_nodes_resumes_after_a_kill_and_reruns_as_done_once_finished(
        cluster, new_scenario, tmp_path):
    scenario = new_scenario({"zone-a": 2}, batch_size="1")
    scenario.add("Deployment", deployment("web", 4, {}), 4)
    scenario.add("PodDisruptionBudget", pdb("web", {"app": "web"}, max_unavailable=1), 0)
    named = {key: value for key, value in scenario.rotation.items() if key != "rotate_nodes_node_selector"}
    named["rotate_nodes_nodes"] = sorted(scenario.old_nodes)
    first_uids = {pod.metadata.uid for pod in cluster.pods(scenario.namespace)}
    evictions_before = eviction_requests(cluster)
    with DisruptionWatcher(cluster, scenario.namespace) as watcher:
        first = run_collection_playbook("kubeops.rotation.rotate_nodes", named, str(tmp_path), background=True)
        try:
            wait_until(lambda: first.poll() is not None or len(scenario.remaining_old_nodes()) < 2, 240,
                       "batch 1 to retire its node")
        finally:
            os.killpg(first.pid, signal.SIGKILL)
            first.wait()
        assert len(scenario.remaining_old_nodes()) == 1, "killed between the two batches' retirements"
        report_file = str(tmp_path / "report.json")
        again = run_collection_playbook("kubeops.rotation.rotate_nodes", dict(named, rotate_nodes_report_file=report_file),
                                        str(tmp_path))
        assert again.returncode == 0, again.stdout[-6000:]
        assert scenario.remaining_old_nodes() == []
        assert not first_uids & {pod.metadata.uid for pod in cluster.pods(scenario.namespace)}, "a pod did not move"
        assert evictions_since(cluster, evictions_before) == 4, "each of the 4 pods evicted once"
        assert scenario.ready("web") == 4
    assert watcher.min_ready["web"] >= 3, "web went below its PDB (maxUnavailable 1 of 4)"
    done = run_collection_playbook("kubeops.rotation.rotate_nodes", dict(named, rotate_nodes_report_file=report_file),
                                   str(tmp_path))
    assert done.returncode == 0, done.stdout[-6000:]
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["planned_batches"] == [] and report["outcome"] == "finished", report
    assert evictions_since(cluster, evictions_before) == 4
