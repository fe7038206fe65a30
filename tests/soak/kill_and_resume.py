"""Kill-and-resume soak of rotate_nodes: seeded, reproducible, bounded in time.

Each run builds a scenario in a namespace of its own (old nodes over two zones, two nodes that stay, and the
workloads that matter: do-not-disrupt Deployments and a StatefulSet, a single replica, PDBs at zero and at one, a
zone spread, plain pods), starts a rotation, SIGKILLs it (its whole process group, as AWX cancels a job) at a
random moment, once or twice, runs it again to the end, and then checks from the cluster:

- every pod of a rotated node moved exactly once (its uid is gone, and no pod created meanwhile went again);
- no pod of a staying node moved;
- no workload below its PDB at any sample (a watcher of every pod), none restarted (restartedAt);
- nothing left behind: surge marks, steering and rotating taints and labels, warm placeholders, a held Lease;
- every rotated node retired.

It prints a table of the kill points (the phases the cluster showed, and seconds into the run), the
invariants, and how many kills fell in each phase. The long form (the issue's: at least 30 runs, some killed
twice):

    .venv/bin/python tests/soak/kill_and_resume.py --runs 30 --seed 1 [--aim] [--silent 0.03]

starts a local control plane with the test provisioner (or uses --kubeconfig with KUBEOPS_TEST_PROVISIONER=1's
provisioner running), first times one rotation without a kill, and kills each run within that time. With
--aim, each run's first kill waits, after its random moment, for a phase, in turn: warm nodes, a surge, a
StatefulSet's pod going, an eviction, steering taints, a node just retired, the Lease just renewed, cordoned
nodes. With --silent, the rotations reach the API server through tests/cluster/flaky_proxy.py, where that share
of requests meets a connection that goes silent for good and as many a trickled answer. The test
suite runs a small seeded form (tests/integration/test_soak.py). Needs `make venv cluster-bin collection`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import sys
import tempfile
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
sys.path.insert(0, os.path.join(REPO, "tests", "cluster"))

from ansible_run import run_collection_playbook  # noqa: E402
from conftest import Cluster, delete_pool_nodes, local_control_plane, wait_until  # noqa: E402
from kube import DisruptionWatcher, deployment, pdb, stateful_set, surge_leftovers  # noqa: E402
from test_rotation_moves_once import DO_NOT_DISRUPT, ZONE, RestartWatcher, Scenario, events_about  # noqa: E402

from fakenodes import fake_node  # noqa: E402
from flaky_proxy import FlakyProxy, kubeconfig_through  # noqa: E402

LEASE = ("kube-system", "kubeops-rotation")
LEFT_KEYS = ("kubeops.io/rebalancing", "kubeops.io/rotating")
WARM_SET_LABEL = "kubeops.io/warm-set"
STEERING_TAINT = "kubeops.io/rebalancing"
PHASE_ORDER = ("before the first cordon", "cordoned", "warm nodes", "surge", "StatefulSet one at a time", "evicting",
               "steering taints", "between batches")
# What an aimed kill waits for, in turn: every phase of a batch, a node just retired, a Lease just renewed.
AIMS = ("warm nodes", "surge", "StatefulSet one at a time", "evicting", "steering taints", "retire",
        "Lease renewal", "cordoned")
INVARIANTS = ("moved_once", "staying_stayed", "within_pdbs", "no_restart", "nothing_left", "all_retired", "last_run")


class SoakScenario(Scenario):
    """The protected workloads over old nodes in two zones and two nodes of a pool that stays."""

    def __init__(self, cluster, run_id, scale):
        super().__init__(cluster, run_id, {"zone-a": 2 * scale, "zone-b": 2 * scale}, batch_size="2")
        self.staying = ["%s-stay-%d" % (run_id, index) for index in range(2)]
        # the staying pool too, so that some pods start on nodes that stay
        self.pod_pools.append(run_id + "-stay")
        self.scale = scale
        self.pdb_floor = {}

    def create_nodes(self):
        for index, name in enumerate(self.staying):
            self.cluster.core.create_node(fake_node(name, {"kubeops.io/pool": self.namespace + "-stay",
                                                           ZONE: ("zone-a", "zone-b")[index % 2]},
                                                    {"cpu": "4", "memory": "16Gi", "pods": "110"}))
        super().create_nodes()

    def build(self):
        scale = self.scale
        self.create_nodes()
        guard = deployment("guard", 4 * scale, {}, annotations={DO_NOT_DISRUPT: "true"})
        db = stateful_set("db", 2, {})
        db["spec"]["template"]["metadata"]["annotations"][DO_NOT_DISRUPT] = "true"
        zonal = deployment("zonal", 4 * scale, {})
        zonal["spec"]["template"]["spec"]["topologySpreadConstraints"] = [{
            "maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "zonal"}}}]
        for kind, manifest, ready in (
                ("Deployment", guard, 4 * scale), ("StatefulSet", db, 2),
                ("Deployment", deployment("solo", 1, {}), 1),
                ("Deployment", deployment("frozen", 2, {}), 2),
                ("Deployment", zonal, 4 * scale),
                ("Deployment", deployment("web", 8 * scale, {}), 8 * scale),
                ("Deployment", deployment("bulk", 40 * scale, {}), 40 * scale)):
            self.add(kind, manifest, ready)
        for name, selector, spec, floor in (("solo", "solo", {"min_available": 1}, 1),
                                            ("frozen", "frozen", {"max_unavailable": 0}, 2),
                                            ("web", "web", {"max_unavailable": 1}, 8 * scale - 1)):
            self.cluster.policy.create_namespaced_pod_disruption_budget(
                self.namespace, pdb(name, {"app": selector}, **spec))
            self.pdb_floor[name] = floor
        wait_until(lambda: (self.cluster.policy.read_namespaced_pod_disruption_budget("web", self.namespace)
                            .status.disruptions_allowed or 0) == 1, 60, "the web PDB to allow one disruption")

    def cleanup(self):
        super().cleanup()
        for name in self.staying:
            try:
                self.cluster.core.delete_node(name)
            except Exception:  # pylint: disable=broad-except  # gone already
                pass


def observe(cluster, scenario):
    """What the cluster shows of the rotation now: the phases under way (several can be at once), the old nodes
    retired and cordoned, and the Lease's last renewal."""
    nodes = cluster.core.list_node().items
    old = {node.metadata.name: node for node in nodes if node.metadata.name in scenario.old_nodes}
    retired = len(scenario.old_nodes) - len(old)
    cordoned = sum(1 for node in old.values() if node.spec.unschedulable)
    terminating = [pod.metadata.name for pod in cluster.pods(scenario.namespace) if pod.metadata.deletion_timestamp]
    phases = set()
    if cluster.apps.list_namespaced_deployment(scenario.namespace, label_selector="kubeops.io/surging").items:
        phases.add("surge")
    if any(name.startswith("db-") for name in terminating):
        phases.add("StatefulSet one at a time")
    if terminating:
        phases.add("evicting")
    if any(scenario.rotation["rotate_nodes_id"] in item.metadata.name and item.spec.replicas
           for item in cluster.apps.list_deployment_for_all_namespaces(label_selector=WARM_SET_LABEL).items):
        phases.add("warm nodes")
    if any(taint.key == STEERING_TAINT for node in nodes for taint in node.spec.taints or []):
        phases.add("steering taints")
    if cordoned:
        phases.add("cordoned")
    if not phases:
        phases.add("between batches" if retired else "before the first cordon")
    try:
        lease = cluster.coordination.read_namespaced_lease(LEASE[1], LEASE[0]).spec
        renewed = lease.renew_time if lease.holder_identity else None
    except Exception:  # pylint: disable=broad-except  # no Lease yet
        renewed = None
    return {"phases": phases, "retired": retired, "cordoned": cordoned, "renewed": renewed}


def aim_reached(aim, seen, before):
    """Whether the cluster just showed the phase a kill is aimed at: a retire or a renewal is a change since the
    last look, the others a phase under way."""
    if aim == "retire":
        return seen["retired"] > before["retired"]
    if aim == "Lease renewal":
        return before["renewed"] is not None and seen["renewed"] not in (None, before["renewed"])
    return aim in seen["phases"]


def kill_point(seen, started, aim=None, hit=False):
    """The kill point in words: the aim (hit or missed), the phases under way, and the seconds into the run."""
    return "%s%s (retired %d, cordoned %d) @%ds" % (
        "" if aim is None else "%s%s: " % (aim, "" if hit else " missed"),
        ", ".join(sorted(seen["phases"], key=PHASE_ORDER.index)), seen["retired"], seen["cordoned"],
        time.monotonic() - started)


def leftovers(cluster, scenario):
    """What a finished rotation must not leave behind, in words."""
    found = list(surge_leftovers(cluster, scenario.namespace))
    for node in cluster.core.list_node().items:
        if node.metadata.name not in scenario.staying and node.metadata.name in scenario.old_nodes:
            continue
        for taint in node.spec.taints or []:
            if taint.key in LEFT_KEYS:
                found.append("node %s keeps taint %s" % (node.metadata.name, taint.key))
        for key in LEFT_KEYS:
            if key in (node.metadata.labels or {}):
                found.append("node %s keeps label %s" % (node.metadata.name, key))
    found.extend("placeholder Deployment %s/%s" % (item.metadata.namespace, item.metadata.name)
                 for item in cluster.apps.list_deployment_for_all_namespaces(label_selector=WARM_SET_LABEL).items
                 if item.spec.replicas and scenario.rotation["rotate_nodes_id"] in item.metadata.name)
    try:
        lease = cluster.coordination.read_namespaced_lease(LEASE[1], LEASE[0])
        if lease.spec.holder_identity:
            found.append("the Lease is still held by %s" % lease.spec.holder_identity)
    except Exception:  # pylint: disable=broad-except  # no Lease: nothing held
        pass
    return found


def kill_and_see(cluster, scenario, work_dir, rng, expected_seconds, aim=None):
    """Start the rotation and SIGKILL it (its whole process group, as AWX cancels a job) at a random moment
    within a rotation's length, or with ``aim``, at the first moment the cluster shows it after a random moment
    within the first 70 % (so that aimed kills fall in every batch, not only the first), giving up at 1.5 times
    the length. Returns the kill point."""
    after = rng.uniform(0.03, 0.7 if aim else 0.97) * expected_seconds
    started = time.monotonic()
    process = run_collection_playbook("kubeops.rotation.rotate_nodes", scenario.rotation, work_dir, background=True)
    while process.poll() is None and time.monotonic() - started < after:
        time.sleep(0.2)
    seen = observe(cluster, scenario) if aim else None
    hit = False
    while aim and process.poll() is None and time.monotonic() - started < 1.5 * expected_seconds and not hit:
        time.sleep(0.1)
        before, seen = seen, observe(cluster, scenario)
        hit = aim_reached(aim, seen, before)
    if process.poll() is not None:
        return "finished before its kill @%ds" % (time.monotonic() - started)
    point = kill_point(seen if aim else observe(cluster, scenario), started, aim, hit)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    return point


def one_run(cluster, index, rng, expected_seconds, scale, work_dir, aimed=False, kubeconfig=None):
    """Build, rotate with kills, finish, check. Returns the run's record. ``aimed``: the first kill waits for a
    phase of AIMS, in turn by the run's index. ``kubeconfig``: the rotations' own (through a flaky network)."""
    run_id = "s%02d%s" % (index, uuid.uuid4().hex[:4])
    scenario = SoakScenario(cluster, run_id, scale)
    if kubeconfig:
        scenario.rotation["kubeops_kubeconfig"] = kubeconfig
    record = {"run": index, "kills": [], "violations": {}}
    try:
        scenario.build()
        first = {pod.metadata.uid: pod.spec.node_name for pod in cluster.pods(scenario.namespace)}
        kills = 2 if rng.random() < 0.3 else 1
        with DisruptionWatcher(cluster, scenario.namespace) as watcher, RestartWatcher(scenario) as restarts:
            for kill in range(kills):
                aim = AIMS[(index - 1) % len(AIMS)] if aimed and kill == 0 else None
                record["kills"].append(kill_and_see(cluster, scenario, work_dir, rng, expected_seconds, aim))
            completed = scenario.rotate(work_dir)
        record["rerun_rc"] = completed.returncode
        record["violations"].update(violations(cluster, scenario, first, watcher, restarts.restarts()))
        if completed.returncode != 0:
            record["violations"]["last_run"] = "failed: %s" % " ".join(
                line for line in completed.stdout.splitlines() if "FAILED" in line or "fatal" in line)[-600:]
    finally:
        scenario.cleanup()
        delete_pool_nodes(cluster)
    return record


def violations(cluster, scenario, first, watcher, restarts):
    """Invariant -> what broke it, for those that broke."""
    found = {}
    now = {pod.metadata.uid: pod.spec.node_name for pod in cluster.pods(scenario.namespace)}
    rotated = set(scenario.old_nodes)
    stayed_on_rotated = [uid for uid, node in first.items() if node in rotated and uid in now]
    if stayed_on_rotated or watcher.churned_pods:
        found["moved_once"] = "%d pods still on rotated nodes; went again: %s (%s)" % (
            len(stayed_on_rotated), ", ".join(watcher.churned_pods) or "none", events_about(
                cluster, scenario.namespace, {entry.split(" on ")[0] for entry in watcher.churned_pods}))
    moved_from_staying = [uid for uid, node in first.items() if node in scenario.staying and uid not in now]
    if moved_from_staying:
        found["staying_stayed"] = "%d pods of staying nodes moved" % len(moved_from_staying)
    below = {app: watcher.min_ready.get(app) for app, floor in scenario.pdb_floor.items()
             if watcher.min_ready.get(app, 0) < floor}
    if below:
        found["within_pdbs"] = "fewest Ready %s, floors %s" % (below, scenario.pdb_floor)
    restarted = {key: count for key, count in restarts.items() if count}
    if restarted:
        found["no_restart"] = "restarted: %s" % restarted
    left = leftovers(cluster, scenario)
    if left:
        found["nothing_left"] = "; ".join(left)
    remaining = scenario.remaining_old_nodes()
    if remaining:
        found["all_retired"] = "not retired: %s" % ", ".join(remaining)
    return found


def table(records):
    lines = ["%-4s %-6s %-90s %s" % ("run", "rerun", "kill points", " ".join(INVARIANTS))]
    for record in records:
        marks = " ".join(("ok" if name not in record["violations"] else "FAIL").ljust(len(name))
                         for name in INVARIANTS)
        lines.append("%-4d %-6s %-90s %s" % (
            record["run"], "rc=%s" % record.get("rerun_rc"), " | ".join(record["kills"])[:90], marks))
        lines.extend("       %s: %s" % (name, text[:300]) for name, text in sorted(record["violations"].items()))
    total = sum(len(record["violations"]) for record in records)
    kills = sum(len(record["kills"]) for record in records)
    lines.append("%d runs, %d kills (%d runs killed twice), %d invariant violations" % (
        len(records), kills, sum(1 for record in records if len(record["kills"]) == 2), total))
    during = [point.split(" (retired")[0] for record in records for point in record["kills"]]
    lines.append("kills during each phase: " + ", ".join(
        "%s %d" % (phase, sum(1 for text in during if phase in text))
        for phase in PHASE_ORDER + ("retire:", "Lease renewal:", "finished before")))
    return "\n".join(lines)


def calibrate(cluster, scale, work_dir):
    """Seconds of one rotation of the scenario without a kill."""
    scenario = SoakScenario(cluster, "s--%s" % uuid.uuid4().hex[:4], scale)
    try:
        scenario.build()
        started = time.monotonic()
        completed = scenario.rotate(work_dir)
        if completed.returncode != 0:
            raise RuntimeError("the rotation without a kill failed: %s" % completed.stdout[-2000:])
        return time.monotonic() - started
    finally:
        scenario.cleanup()
        delete_pool_nodes(cluster)


@contextlib.contextmanager
def rotations_network(cluster, seed, silent, work_dir):
    """The kubeconfig the rotations use: the cluster's own (None), or with ``silent`` above 0 one through
    tests/cluster/flaky_proxy.py, where that share of the requests meets a connection that goes silent for good and
    as many a trickled answer."""
    if not silent:
        yield None
        return
    with open(cluster.kubeconfig) as handle:
        host, port = json.load(handle)["clusters"][0]["cluster"]["server"].split("//")[1].rsplit(":", 1)
    with FlakyProxy(host, int(port), seed=seed, silent=silent, slow=silent) as proxy:
        yield kubeconfig_through(proxy, cluster.kubeconfig, os.path.join(work_dir, "flaky-kubeconfig"))


def soak(cluster, seed, runs, scale=1, expected_seconds=None, work_dir=None, minutes=None, report=print,
         aimed=False, silent=0.0):
    """The runs' records; stops starting runs after ``minutes``. ``aimed``: see one_run; ``silent``:
    rotations_network."""
    work_dir = work_dir or tempfile.mkdtemp(prefix="kubeops-soak-")
    with rotations_network(cluster, seed, silent, work_dir) as kubeconfig:
        return _soak(cluster, seed, runs, scale, expected_seconds, work_dir, minutes, report, aimed, kubeconfig)


def _soak(cluster, seed, runs, scale, expected_seconds, work_dir, minutes, report, aimed, kubeconfig):
    expected_seconds = expected_seconds or calibrate(cluster, scale, work_dir)
    report("one rotation without a kill: %.0f s; kills fall within it" % expected_seconds)
    rng = random.Random(seed)
    records = []
    deadline = time.monotonic() + minutes * 60 if minutes else None
    for index in range(1, runs + 1):
        if deadline and time.monotonic() > deadline:
            report("stopped after %d runs: the %d minutes are up" % (len(records), minutes))
            break
        records.append(one_run(cluster, index, rng, expected_seconds, scale, work_dir, aimed, kubeconfig))
        report("run %d: kills %s, %s" % (index, records[-1]["kills"], records[-1]["violations"] or "all invariants hold"))
    return records


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--scale", type=int, default=2, help="workload and node counts (1: 4 old nodes, ~60 pods)")
    parser.add_argument("--minutes", type=float, default=120, help="start no run after this (default 120)")
    parser.add_argument("--expected-seconds", type=float, help="skip the timing run: kills fall within this")
    parser.add_argument("--kubeconfig", help="a cluster of your own with the test provisioner running")
    parser.add_argument("--aim", action="store_true",
                        help="each run's first kill waits for a phase (%s), in turn" % ", ".join(AIMS))
    parser.add_argument("--silent", type=float, default=0.0,
                        help="share of requests whose connection goes silent for good (and of answers trickled)")
    parser.add_argument("--json", help="write the records here")
    args = parser.parse_args(argv)
    options = dict(minutes=args.minutes, aimed=args.aim, silent=args.silent)
    if args.kubeconfig:
        records = soak(Cluster(args.kubeconfig, "kubectl", True), args.seed, args.runs, args.scale,
                       args.expected_seconds, **options)
    else:
        with local_control_plane(tempfile.mkdtemp(prefix="kubeops-soak-cluster-")) as (cluster, _state):
            records = soak(cluster, args.seed, args.runs, args.scale, args.expected_seconds, **options)
    print(table(records))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(records, handle, indent=2)
    return 1 if any(record["violations"] for record in records) else 0


if __name__ == "__main__":
    sys.exit(main())
