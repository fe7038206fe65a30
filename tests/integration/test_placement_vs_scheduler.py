"""The planner's fit check agrees with the real scheduler (issue 12): a differential test.

KUBEOPS_PLACEMENT_SCENARIOS (200) small random scenarios from
KUBEOPS_PLACEMENT_SEED (12), made by tests/cluster/placement_scenarios.py,
all created at once: their nodes, then their resident pods (pinned with
spec.nodeName, or left to the scheduler and read back where it put them),
then one new pod each. For each, plan/placement.py says on which of the
scenario's nodes the new pod fits (PlacementSimulator.why_not is None there, and fit()
agrees); kube-scheduler either binds it, to a node that must be one of
those, or marks it Unschedulable, when there must be none.

Every disagreement is listed with its scenario as compact JSON, and all of
them with the full objects in .cache/placement-vs-scheduler.json, whose
scenarios placement_scenarios.verdict replays without a cluster. The run
must also have bound and left Unschedulable enough pods, and placement must
have refused nodes for each of its reasons, so that a comparison that
compared nothing cannot pass.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import time

from kube import unless_missing
from kubernetes.client.rest import ApiException

from checkout import expose_checkout_as_collection
from conftest import REPO, TEST_LABEL, wait_until

expose_checkout_as_collection()

import placement_scenarios as scenarios  # noqa: E402
from ansible_collections.kubeops.rotation.plugins.module_utils.model.quantities import (  # noqa: E402
    resource_amounts,
)

SEED = int(os.environ.get("KUBEOPS_PLACEMENT_SEED", scenarios.DEFAULT_SEED))
COUNT = int(os.environ.get("KUBEOPS_PLACEMENT_SCENARIOS", scenarios.DEFAULT_COUNT))
REPORT_FILE = os.path.join(REPO, ".cache", "placement-vs-scheduler.json")
WORKERS = 8
# Disagreements quoted in the failure message; the report file has them all.
QUOTED = 25
# Generous for the default run (about 600 nodes, 520 residents and 200 new pods), and growing with the count.
NODES_TIMEOUT = max(150, 0.75 * COUNT)
PODS_TIMEOUT = max(90, 0.45 * COUNT)
# After the residents are bound, before the new pods: the scheduler's cache follows the API a moment later.
SETTLE = 1.0
# After every new pod is decided: a pod found Unschedulable on a stale cache would be bound by now.
RECHECK = 2.0
NOT_READY_TAINTS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")


def test_placement_agrees_with_the_scheduler(cluster, namespace, test_id):
    other = "%s-other" % test_id
    made = [scenarios.generate(SEED, index, test_id, namespace, other, {TEST_LABEL: test_id})
            for index in range(COUNT)]
    run = _run_on_cluster(cluster, test_id, namespace, other, made)

    found = []
    for scenario in made:
        residents = run["residents"][scenario["id"]]
        outcome = run["outcomes"]["%s/%s" % (namespace, scenario["pod"]["metadata"]["name"])]
        problems = scenarios.disagreements(run["said"][scenario["id"]], outcome)
        if problems:
            found.append({"index": scenario["index"], "problems": problems, "outcome": outcome,
                          "compact": scenarios.compact(scenario, residents),
                          "scenario": dict(scenario, residents=residents)})
    summary = dict(scenarios.summarize(made, run["said"], run["outcomes"]), seconds=run["seconds"],
                   scheduler_changed_its_mind=run["changed"])
    os.makedirs(os.path.dirname(REPORT_FILE), exist_ok=True)
    with open(REPORT_FILE, "w") as handle:
        json.dump({"seed": SEED, "scenarios": COUNT, "summary": summary, "disagreements": found}, handle, indent=1)
    print("placement vs kube-scheduler: %s" % json.dumps(summary, sort_keys=True))

    failures = []
    if run["foreign"]:
        failures.append("pods of no scenario ran on the scenarios' nodes, so the comparison is void: %s"
                        % run["foreign"][:10])
    failures.extend(scenarios.too_little_compared(summary))
    if found:
        failures.append("%d of %d scenarios (seed %d) disagree; all in %s:\n%s" % (
            len(found), COUNT, SEED, REPORT_FILE, "\n".join(
                "scenario %d: %s\n  %s" % (entry["index"], "; ".join(entry["problems"]), entry["compact"])
                for entry in found[:QUOTED])))
    assert not failures, "\n".join(failures)


def _run_on_cluster(cluster, test_id, namespace, other, made):
    """Creates the scenarios' nodes, then their residents, then their new pods, and deletes all but the test's
    namespace (the namespace fixture's) at the end. Returns {"residents": scenario id -> its residents bound
    where they are, "said": scenario id -> placement's verdict, "outcomes": new pod key -> what the scheduler
    did, "changed": the new pods that were bound only after RECHECK, "foreign": pods on the scenarios'
    nodes that no scenario put there, "seconds": when each step was done}."""
    seconds = {}
    started = time.monotonic()
    try:
        _create_namespace(cluster, other, {TEST_LABEL: test_id})
        live_nodes = _create_nodes(cluster, test_id, [node for scenario in made for node in scenario["nodes"]])
        seconds["nodes"] = round(time.monotonic() - started, 1)
        drift = [problem for scenario in made for node in scenario["nodes"]
                 for problem in _drift(node, live_nodes[node["metadata"]["name"]])]
        assert not drift, "the nodes on the cluster are not the scenarios' nodes:\n" + "\n".join(drift[:20])
        wait_until(lambda: unless_missing(_api, cluster.core.read_namespaced_service_account, "default", other), 30,
                   "the default ServiceAccount of " + other, interval=0.5)

        residents = [pod for scenario in made for pod in scenario["residents"]]
        _parallel(lambda pod: _api(cluster.core.create_namespaced_pod, pod["metadata"]["namespace"], pod),
                  residents)
        where = wait_until(lambda: _all_bound(cluster, test_id, len(residents)), PODS_TIMEOUT,
                           "the %d resident pods to be bound" % len(residents), 0.5,
                           lambda: _undecided(cluster, test_id, "resident"))
        moved = ["%s on %s, not %s" % (_key(pod), where[_key(pod)], pod["spec"]["nodeName"])
                 for pod in residents if pod["spec"].get("nodeName") not in (None, where[_key(pod)])]
        assert not moved, "pinned residents are not where they were put: %s" % moved
        bound = {scenario["id"]: [scenarios.resident_on(pod, where[_key(pod)]) for pod in scenario["residents"]]
                 for scenario in made}
        said = {scenario["id"]: scenarios.verdict(scenario, bound[scenario["id"]]) for scenario in made}
        seconds["residents"] = round(time.monotonic() - started, 1)

        time.sleep(SETTLE)
        _parallel(lambda scenario: _api(cluster.core.create_namespaced_pod, namespace, scenario["pod"]), made)
        wait_until(lambda: _all_decided(cluster, test_id, len(made)), PODS_TIMEOUT,
                   "kube-scheduler to bind each of the %d new pods or find it Unschedulable" % len(made), 0.5,
                   lambda: _undecided(cluster, test_id, "new"))
        first = _outcomes(cluster, test_id)
        time.sleep(RECHECK)
        outcomes = _outcomes(cluster, test_id)
        seconds["new pods"] = round(time.monotonic() - started, 1)
        foreign = _foreign_pods(cluster, made)
    finally:
        _clean_up(cluster, test_id, other)
    seconds["total"] = round(time.monotonic() - started, 1)
    changed = sorted(key for key, outcome in outcomes.items()
                     if (outcome or {}).get("node") != (first.get(key) or {}).get("node"))
    return {"residents": bound, "said": said, "outcomes": outcomes, "changed": changed, "foreign": foreign,
            "seconds": seconds}


# -- the cluster ------------------------------------------------------------------


def _parallel(call, items):
    with concurrent.futures.ThreadPoolExecutor(WORKERS) as pool:
        return list(pool.map(call, items))


def _api(method, *args, **kwargs):
    """What ``method`` of the kubernetes client answers, as the API's JSON (plain dicts): without the client's
    models, which would cost more time than the requests here, and with the answer read, which gives its
    connection back to the client's pool."""
    return json.loads(method(*args, _preload_content=False, **kwargs).data or b"null")


def _key(pod):
    return "%s/%s" % (pod["metadata"]["namespace"], pod["metadata"]["name"])


def _create_namespace(cluster, name, labels):
    _api(cluster.core.create_namespace, {"metadata": {"name": name, "labels": labels}})


def _create_nodes(cluster, test_id, nodes):
    """Creates ``nodes`` and waits until kwok has them Ready and they have their own taints only; returns the
    nodes as the API has them then, by name.

    The API server gives every new node the not-ready taint and the node lifecycle controller takes it off
    once the node is Ready, at its 20 requests a second: a minute for this many nodes. Taking it off here,
    once kwok has the node Ready, is what the controller would do, sooner.
    """
    _parallel(lambda node: _api(cluster.core.create_node, node), nodes)
    wanted = {node["metadata"]["name"]: node["spec"]["taints"] for node in nodes}
    selector = "%s=%s" % (TEST_LABEL, test_id)

    def ready():
        live = {node["metadata"]["name"]: node
                for node in _api(cluster.core.list_node, label_selector=selector)["items"]}
        untaint = [name for name, node in live.items() if _is_ready(node) and _not_ready_taints(node)]
        _parallel(lambda name: _untaint(cluster, name, wanted[name]), untaint)
        done = {name: node for name, node in live.items() if _is_ready(node) and not _not_ready_taints(node)}
        return live if len(done) == len(wanted) and not untaint else None

    def describe():
        live = _api(cluster.core.list_node, label_selector=selector)["items"]
        late = [node["metadata"]["name"] for node in live if not _is_ready(node) or _not_ready_taints(node)]
        return "(%d of %d nodes exist; not yet Ready or still tainted: %s)" % (len(live), len(wanted), late[:10])

    return wait_until(ready, NODES_TIMEOUT, "%d kwok nodes to be Ready" % len(wanted), 0.5, describe)


def _is_ready(node):
    return any(condition.get("type") == "Ready" and condition.get("status") == "True"
               for condition in (node.get("status") or {}).get("conditions") or [])


def _not_ready_taints(node):
    return [taint for taint in (node.get("spec") or {}).get("taints") or [] if taint["key"] in NOT_READY_TAINTS]


def _untaint(cluster, name, taints):
    try:
        _api(cluster.core.patch_node, name, [{"op": "add", "path": "/spec/taints", "value": taints}])
    except ApiException as exc:
        if exc.status not in (409, 422):
            raise


def _drift(node, live):
    """How the node on the cluster differs from the scenario's node in what the fit checks read."""
    name = node["metadata"]["name"]
    problems = []
    labels = live["metadata"].get("labels") or {}
    problems.extend("%s: label %s is %r, not %r" % (name, key, labels.get(key), value)
                    for key, value in node["metadata"]["labels"].items() if labels.get(key) != value)

    def taints(of):
        return sorted((taint["key"], taint.get("value", ""), taint["effect"])
                      for taint in of["spec"].get("taints") or [])

    if taints(live) != taints(node):
        problems.append("%s: taints %s, not %s" % (name, taints(live), taints(node)))
    allocatable = resource_amounts(live["status"].get("allocatable"))
    if allocatable != resource_amounts(node["status"]["allocatable"]):
        problems.append("%s: allocatable %s, not %s" % (name, live["status"].get("allocatable"),
                                                        node["status"]["allocatable"]))
    return problems


def _pods(cluster, test_id, role):
    selector = "%s=%s,%s=%s" % (TEST_LABEL, test_id, scenarios.ROLE_LABEL, role)
    return _api(cluster.core.list_pod_for_all_namespaces, label_selector=selector)["items"]


def _all_bound(cluster, test_id, count):
    """Pod key -> node of every resident once all ``count`` are bound, else None."""
    pods = _pods(cluster, test_id, "resident")
    where = {_key(pod): pod["spec"].get("nodeName") for pod in pods}
    return where if len(where) == count and all(where.values()) else None


def _outcomes(cluster, test_id):
    return {_key(pod): scenarios.scheduling_outcome(pod) for pod in _pods(cluster, test_id, "new")}


def _all_decided(cluster, test_id, count):
    outcomes = _outcomes(cluster, test_id)
    return len(outcomes) == count and all(outcomes.values())


def _undecided(cluster, test_id, role):
    """Which pods of ``role`` the scheduler has neither bound nor (new pods) found Unschedulable, in short."""
    pods = [pod for pod in _pods(cluster, test_id, role)
            if not (pod["spec"].get("nodeName") or (role == "new" and scenarios.scheduling_outcome(pod)))]
    examples = [(_key(pod), (pod.get("status") or {}).get("conditions")) for pod in pods[:3]]
    return "(%d undecided, e.g. %s)" % (len(pods), examples)


def _foreign_pods(cluster, made):
    """Pods on a scenario's nodes that are not that scenario's."""
    owner = {node["metadata"]["name"]: scenario["id"] for scenario in made for node in scenario["nodes"]}
    return ["%s on %s" % (_key(pod), pod["spec"]["nodeName"])
            for pod in _api(cluster.core.list_pod_for_all_namespaces)["items"]
            if pod["spec"].get("nodeName") in owner
            and (pod["metadata"].get("labels") or {}).get(scenarios.SCENARIO_LABEL) != owner[pod["spec"]["nodeName"]]]


def _clean_up(cluster, test_id, other):
    """The nodes and the other namespace; the namespace fixture deletes the test's namespace."""
    unless_missing(_api, cluster.core.delete_namespace, other)
    _api(cluster.core.delete_collection_node, label_selector="%s=%s" % (TEST_LABEL, test_id))
