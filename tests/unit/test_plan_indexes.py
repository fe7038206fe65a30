"""The indexes and counts the planners build once per plan and keep up to date say what a recount would say,
and the fits that use them place every pod where a fit asking each node in turn would."""

from __future__ import annotations

import random

import pytest

from ansible_collections.kubeops.rotation.plugins.module_utils.model.owners import OwnerCache, owner_of
from ansible_collections.kubeops.rotation.plugins.module_utils.model.pdbs import PdbIndex, pdbs_for
from ansible_collections.kubeops.rotation.plugins.module_utils.model.pods import pod_key
from ansible_collections.kubeops.rotation.plugins.module_utils.model.quantities import pod_requests
from ansible_collections.kubeops.rotation.plugins.module_utils.model.selectors import index_label, selector_matches
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.placement import (
    NO_MATCH,
    DomainCounts,
    PlacementSimulator,
    domain_counts,
    fit,
    hard_spread_constraints,
    counts_itself,
    host_ports,
    inter_pod_refusal,
    node_accepts,
    ports_clash,
    ports_reason,
    room_reason,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.rebalance.duplicates import DuplicateTargets
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.rebalance.planner import (
    STRATEGY_NAMES,
    Planner,
    RebalanceSettings,
    plan_rebalance,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.rebalance.spread import in_scope, spread
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.rebalance.topology_spread import SpreadTargets
from builders import HOSTNAME, ZONE, anti_affinity, node, pdb, pod, zone_spread

GPU = {"key": "gpu", "value": "true", "effect": "NoSchedule"}
APPS = ("web", "api", "db")


def hostname_spread(app):
    return {"maxSkew": 1, "topologyKey": HOSTNAME, "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": app}}}


def ssd_only():
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}]}}}


def some_node(rng, name):
    made = node(name, zone=rng.choice(("a", "b", "c", None)), cpu=str(rng.choice((1, 2, 4))), pods="6",
                labels={"disk": "ssd"} if rng.random() < 0.5 else {}, taints=[GPU] if rng.random() < 0.15 else [])
    if rng.random() < 0.3:
        made["status"]["allocatable"]["example.com/gpu"] = str(rng.choice((1, 2)))
    return made


def pod_term(rng, kind):
    """A required pod affinity or anti-affinity term against one of APPS, by zone or hostname, at random in the
    pod's namespace or in every one."""
    term = {"topologyKey": rng.choice((ZONE, HOSTNAME)), "labelSelector": {"matchLabels": {"app": rng.choice(APPS)}}}
    if rng.random() < 0.2:
        term["namespaceSelector"] = {}
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def with_extras(rng, made):
    """``made`` (a pod) with, at random, pod (anti-)affinity on any key, a GPU and a host port."""
    spec = made["spec"]
    if rng.random() < 0.25:
        spec["affinity"] = dict(spec.get("affinity") or {}, **pod_term(rng, "podAntiAffinity"))
    if rng.random() < 0.15:
        spec["affinity"] = dict(spec.get("affinity") or {}, **pod_term(rng, "podAffinity"))
    if rng.random() < 0.15:
        spec["containers"][0]["resources"]["requests"]["example.com/gpu"] = "1"
    if rng.random() < 0.1:
        spec["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": rng.choice((8080, 9090))}]
    return made


def some_pod(rng, name, node_name):
    """A pod of one of APPS with, at random, a zone or hostname spread constraint, hostname anti-affinity,
    a node selector or affinity, a GPU toleration, in one of two namespaces."""
    app = rng.choice(APPS)
    spec = {}
    choice = rng.random()
    if choice < 0.3:
        spec["topologySpreadConstraints"] = [zone_spread(app)]
    elif choice < 0.4:
        spec["topologySpreadConstraints"] = [hostname_spread(app)]
    elif choice < 0.5:
        spec["affinity"] = anti_affinity(app)
    if rng.random() < 0.2:
        spec["affinity"] = dict(spec.get("affinity") or {}, **ssd_only())
    elif rng.random() < 0.1:
        spec["nodeSelector"] = {"disk": "ssd"}
    if rng.random() < 0.2:
        spec["tolerations"] = [{"key": "gpu", "operator": "Exists"}]
    return with_extras(rng, pod(name, node_name, app=app, namespace=rng.choice(("ns", "other")),
                                cpu=rng.choice(("100m", "500m", "1")), **spec))


def why_not_by_recount(room, subject, name):
    """PlacementSimulator.why_not as it was before the PlacementSimulator kept counts: every check from the pods on the nodes."""
    candidate = room.nodes[name]
    if not node_accepts(subject, candidate):
        return NO_MATCH
    refusal = inter_pod_refusal(subject, candidate, room.nodes, room.pods_by_node)
    if refusal is not None:
        return refusal
    wanted = host_ports(subject)
    if wanted and any(ports_clash(wanted, host_ports(other)) for other in room.pods_by_node[name]):
        return ports_reason(wanted)
    requests = pod_requests(subject)
    if any(room.free[name].get(resource, 0) + 1e-9 < value for resource, value in requests.items()):
        return room_reason(requests)
    for constraint in hard_spread_constraints(subject):
        counts = domain_counts(subject, constraint, room.nodes.values(), room.pods_by_node)
        domain = candidate["metadata"]["labels"].get(constraint.get("topologyKey"))
        itself = 1 if counts_itself(subject, constraint) else 0
        if domain is None or (counts and counts[domain] + itself - min(counts.values()) > constraint.get("maxSkew", 1)):
            return "its topology spread constraint on %s would be broken" % constraint.get("topologyKey")
    return None


def fit_asking_every_node(pods, nodes, residents, preference=None, bystanders=()):
    """fit as it was before PlacementSimulator.place: every node of the order asked in turn, with why_not_by_recount."""
    room = PlacementSimulator(list(nodes) + list(bystanders), residents)
    placement, unplaced = {}, []
    for subject in sorted(pods, key=lambda p: (-pod_requests(p)["cpu"], -pod_requests(p)["memory"], pod_key(p))):
        reason = NO_MATCH
        for candidate in sorted(nodes, key=lambda n: preference(subject, n)) if preference else nodes:
            why = why_not_by_recount(room, subject, candidate["metadata"]["name"])
            if why is None:
                room.add(subject, candidate["metadata"]["name"])
                placement[pod_key(subject)] = candidate["metadata"]["name"]
                break
            if why != NO_MATCH:
                reason = why
        else:
            unplaced.append({"pod": pod_key(subject), "reason": reason})
    return placement, unplaced


def test_domain_counts_keep_the_smallest_count_as_pods_and_domains_come_and_go():
    counts = DomainCounts(["a", "b"])
    assert (counts.counts, counts.min) == ({"a": 0, "b": 0}, 0)
    counts.step("a", 1)
    counts.step("b", 1)
    counts.step("a", 1)
    assert (counts.counts, counts.min) == ({"a": 2, "b": 1}, 1)
    counts.open("c")
    assert counts.min == 0
    counts.step("c", 1)
    counts.step("c", 1)
    counts.step("b", -1)
    assert (counts.counts, counts.min) == ({"a": 2, "b": 0, "c": 2}, 0)
    counts.close("b")
    assert (counts.counts, counts.min) == ({"a": 2, "c": 2}, 2)
    counts.close("a")
    counts.close("c")
    assert (counts.counts, counts.min) == ({}, 0)


def test_domain_counts_started_with_their_pods_equal_those_stepped_one_pod_at_a_time():
    started = DomainCounts(["a", "b", "c"], ["a", None, "c", "a"])
    stepped = DomainCounts(["a", "b", "c"])
    for domain in ("a", "c", "a"):
        stepped.step(domain, 1)
    assert (started.counts, started.min) == (stepped.counts, stepped.min) == ({"a": 2, "b": 0, "c": 1}, 0)
    for counts in (started, stepped):
        counts.close("b")
    assert started.min == stepped.min == 1


@pytest.mark.parametrize("seed", range(8))
def test_a_rooms_counts_and_indexes_equal_a_recount_after_pods_and_nodes_come_and_go(seed):
    rng = random.Random(seed)
    nodes = [some_node(rng, "n%d" % index) for index in range(8)]
    residents = [some_pod(rng, "r%d" % index, rng.choice(nodes)["metadata"]["name"]) for index in range(20)]
    room = PlacementSimulator(nodes, residents)
    probes = [(pod("probe-%s-%d" % (app, index), "nowhere", app=app, namespace=namespace, cpu="10m",
                   topologySpreadConstraints=[constraint], **spec), constraint)
              for index, (app, namespace) in enumerate([("web", "ns"), ("api", "other"), ("db", "ns")])
              for spec, constraint in (({}, zone_spread(app)), ({"affinity": ssd_only()}, zone_spread(app)),
                                       ({}, hostname_spread(app)))]
    selectors = [(namespace, {"matchLabels": {"app": app}}) for app in APPS for namespace in ("ns", "other")] + [
        ("ns", {}), ("other", {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "db"]}]})]
    keys = [{"ns/r%d" % index, "other/r%d" % index} for index in range(0, 20, 3)]

    def check():
        for probe, constraint in probes:
            recount = domain_counts(probe, constraint, room.nodes.values(), room.pods_by_node)
            assert room.domain_counts(probe, constraint) == recount
            # why_not reads the smallest count that the PlacementSimulator keeps.
            assert [room.why_not(probe, name) for name in room.nodes] == \
                [why_not_by_recount(room, probe, name) for name in room.nodes]
        for namespace, selector in selectors:
            found = sorted((pod_key(other), name) for other, name in room.pods_matching(namespace, selector))
            assert found == sorted((pod_key(other), name) for name, pods in room.pods_by_node.items()
                                   for other in pods if other["metadata"]["namespace"] == namespace
                                   and selector_matches(selector, other["metadata"]["labels"]))
        for wanted in keys:
            located = {}
            for name, pods in room.pods_by_node.items():
                for other in pods:
                    if pod_key(other) in wanted:
                        located[name] = located.get(name, 0) + 1
            assert room.located(wanted) == located
        assert list(room.by_free_cpu()) == sorted(room.nodes, key=lambda name: (-room.free[name]["cpu"], name))

    check()
    added = 0
    for step in range(60):
        action = rng.random()
        if action < 0.45 and room.nodes:
            name = rng.choice(sorted(room.nodes))
            room.add(some_pod(rng, "m%d" % step, name), name)
        elif action < 0.8:
            placed = [(other, name) for name, pods in room.pods_by_node.items() for other in pods]
            if placed:
                other, name = rng.choice(placed)
                room.remove(other, name)
        elif action < 0.9 and len(room.nodes) > 1:
            room.remove_node(rng.choice(sorted(room.nodes)))
        else:
            added += 1
            room.add_node(some_node(rng, "new%d" % added))
        check()


@pytest.mark.parametrize("seed", range(25))
def test_fit_places_every_pod_where_asking_each_node_in_turn_would_and_gives_the_same_reasons(seed):
    rng = random.Random(seed)
    nodes = [some_node(rng, "n%d" % index) for index in range(7)]
    bystanders = [some_node(rng, "later%d" % index) for index in range(2)]
    everywhere = nodes + bystanders
    residents = [some_pod(rng, "r%d" % index, rng.choice(everywhere)["metadata"]["name"]) for index in range(14)]
    movers = [some_pod(rng, "m%d" % index, "leaving") for index in range(16)]

    def zone_b_last(subject, candidate):
        return candidate["metadata"]["labels"].get(ZONE) == "b"

    for preference in (None, zone_b_last):
        expected = fit_asking_every_node(movers, nodes, residents, preference, bystanders)
        assert fit(movers, nodes, residents, preference, bystanders) == expected
        room = PlacementSimulator(nodes + bystanders, residents)
        assert room.place(movers, nodes, preference, (lambda subject: None) if preference else None) == expected


@pytest.mark.parametrize("seed", range(10))
def test_fit_passes_over_a_run_of_nodes_of_a_zone_the_spread_refuses_as_asking_each_node_would(seed):
    rng = random.Random(seed)
    # Zones in runs (a then b, no zone, c), as an order by zone has them; some nodes full or tainted.
    zones = ["a"] * 8 + ["b"] * 8 + [None] * 2 + ["c"] * 8
    nodes = [node("n%02d" % index, zone=zone, cpu=rng.choice(("1", "2", "4")), pods="8",
                  taints=[GPU] if rng.random() < 0.1 else []) for index, zone in enumerate(zones)]
    residents = [pod("r%d" % index, rng.choice(nodes)["metadata"]["name"], app=rng.choice(APPS))
                 for index in range(20)]
    movers = []
    for index in range(50):
        app = rng.choice(APPS)
        spread_on = zone_spread(app) if rng.random() < 0.8 else hostname_spread(app)
        movers.append(pod("m%d" % index, "leaving", app=app, cpu=rng.choice(("100m", "500m")),
                          topologySpreadConstraints=[spread_on]))

    def zone_c_first(subject, candidate):
        return candidate["metadata"]["labels"].get(ZONE) != "c"

    for preference in (None, zone_c_first):
        assert fit(movers, nodes, residents, preference) == fit_asking_every_node(movers, nodes, residents, preference)


def test_a_node_skipped_as_full_still_gives_the_reason_a_pod_fits_nowhere():
    placement, unplaced = fit([pod("first", cpu="1"), pod("second", cpu="1")],
                              [node("small", cpu="1"), node("gpu", taints=[GPU])], [])
    assert placement == {"ns/first": "small"}
    assert unplaced == [{"pod": "ns/second", "reason": "no node has room for its requests (1 CPU, 64 MiB)"}]


def planner_of(seed):
    rng = random.Random(seed)
    nodes = [some_node(rng, "n%d" % index) for index in range(12)]
    for candidate in nodes:
        candidate["spec"]["taints"] = []
    pods = [pod("%s-%d" % (app, index), rng.choice(nodes)["metadata"]["name"], app=app, cpu=rng.choice(("100m", "1")),
                topologySpreadConstraints=[zone_spread(app)])
            for app in APPS for index in range(8)]
    owners = {("ns", app + "-rs"): app for app in APPS}
    return rng, Planner(nodes, pods, owners, RebalanceSettings())


@pytest.mark.parametrize("seed", range(6))
def test_the_spread_before_a_rebalance_is_what_spread_counts_on_the_snapshot(seed):
    rng = random.Random(seed)
    nodes = [some_node(rng, "n%d" % index) for index in range(10)]
    nodes[0]["spec"]["unschedulable"] = True
    pods = [some_pod(rng, "p%d" % index, rng.choice(nodes)["metadata"]["name"]) for index in range(40)]
    owners = {("ns", app + "-rs"): app for app in APPS}
    plan = plan_rebalance(nodes, pods, owners, RebalanceSettings(strategies=STRATEGY_NAMES))
    assert plan["before"] == spread(in_scope(nodes)[0], pods, owners)


@pytest.mark.parametrize("seed", range(6))
def test_duplicate_targets_come_in_the_order_of_a_full_sort(seed):
    rng, planner = planner_of(seed)
    feasible = planner.room.accepting(planner.pods[0])
    counts = {name: rng.randint(1, 3) for name in rng.sample(sorted(planner.room.nodes), 5)}
    for most in (0, 1, 2):
        expected = sorted((name for name in feasible if counts.get(name, 0) <= most),
                          key=lambda name: (counts.get(name, 0), -planner.room.free[name]["cpu"], name))
        assert list(DuplicateTargets(planner, feasible, counts, most)) == expected


@pytest.mark.parametrize("seed", range(6))
def test_spread_targets_come_in_the_order_of_a_full_sort(seed):
    rng, planner = planner_of(seed)
    sample = planner.pods[0]
    counts = planner.room.domain_counts(sample, zone_spread("web"))
    here = {}
    for _pod, name in planner.room.pods_matching("ns", {"matchLabels": {"app": "web"}}):
        here[name] = here.get(name, 0) + 1
    for most in range(0, max(counts.values()) + 1):
        expected = [name for _count, _here, name in sorted(
            (counts[planner.domain(name, ZONE)], here.get(name, 0), name) for name in planner.room.nodes
            if planner.domain(name, ZONE) in counts and counts[planner.domain(name, ZONE)] <= most)]
        assert list(SpreadTargets(planner, counts, here, ZONE, most)) == expected


def test_index_label_is_the_first_of_the_match_labels():
    assert index_label({"matchLabels": {"tier": "web", "app": "shop"}}) == ("app", "shop")
    assert index_label({"matchExpressions": [{"key": "app", "operator": "Exists"}]}) is None
    assert index_label({}) is None and index_label(None) is None


def test_pdb_index_finds_the_pdbs_a_pod_has_in_their_order():
    pdbs = [pdb("web"), pdb("all", selector={}), pdb("web", namespace="other"),
            pdb("tiers", selector={"matchExpressions": [{"key": "tier", "operator": "In", "values": ["front"]}]}),
            pdb("web-front", selector={"matchLabels": {"app": "web", "tier": "front"}}), pdb("db")]
    index = PdbIndex(pdbs)
    for subject in (pod("w"), pod("f", labels={"tier": "front"}), pod("d", app="db"), pod("o", namespace="other"),
                    pod("x", namespace="elsewhere")):
        assert pdbs_for(subject, index.candidates(subject)) == pdbs_for(subject, pdbs)
    assert [entry["metadata"]["name"] for entry in pdbs_for(pod("f", labels={"tier": "front"}), pdbs)] == \
        ["web", "all", "tiers", "web-front"]


def test_owner_cache_gives_what_owner_of_gives():
    owners = {("ns", "web-rs"): "web"}
    pods = [pod("w1"), pod("w2"), pod("lone", app="lone"), pod("agent", kind="DaemonSet", owner="agent"),
            pod("bare", kind=None), pod("w3", namespace="other")]
    cache = OwnerCache(owners)
    assert [cache.owner_of(subject) for subject in pods] == [owner_of(subject, owners) for subject in pods]
