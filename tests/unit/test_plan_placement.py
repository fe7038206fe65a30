from __future__ import annotations

import pytest

from ansible_collections.kubeops.rotation.plugins.module_utils.plan.placement import (
    PlacementSimulator,
    bound_volume,
    domain_counts,
    fit,
    in_zones,
    matches_node_affinity,
    node_accepts,
    tolerates,
)
from builders import ZONE, anti_affinity, node, pod, zone_spread

GPU = {"key": "gpu", "value": "true", "effect": "NoSchedule"}
ANTI_DB = anti_affinity("db")
ZONE_SPREAD = [zone_spread()]


def tolerating(*tolerations):
    return pod(tolerations=list(tolerations))


def required(*expressions):
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": list(expressions)}]}}}


@pytest.mark.parametrize("toleration, tolerated", [
    ({"key": "gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}, True),
    ({"key": "gpu", "operator": "Equal", "value": "false", "effect": "NoSchedule"}, False),
    ({"key": "gpu", "operator": "Exists"}, True),
    ({"key": "gpu", "operator": "Exists", "effect": "NoExecute"}, False),
    ({"key": "ssd", "operator": "Exists"}, False),
    ({"operator": "Exists"}, True),
    ({"operator": "Exists", "effect": "NoSchedule"}, True),
    ({"operator": "Exists", "effect": "NoExecute"}, False),
])
def test_tolerations_match_key_value_and_effect_like_the_scheduler(toleration, tolerated):
    assert tolerates(tolerating(toleration), GPU) is tolerated


def test_a_pod_without_tolerations_tolerates_nothing():
    assert not tolerates(pod(), GPU)


def test_node_selector_and_required_node_affinity_select_nodes():
    ssd = node(labels={"disk": "ssd"}, zone="a")
    assert matches_node_affinity(pod(), ssd)
    assert matches_node_affinity(pod(nodeSelector={"disk": "ssd"}), ssd)
    assert not matches_node_affinity(pod(nodeSelector={"disk": "hdd"}), ssd)
    assert matches_node_affinity(pod(affinity=required({"key": "disk", "operator": "In", "values": ["ssd"]})), ssd)
    assert not matches_node_affinity(pod(affinity=required({"key": "gpu", "operator": "Exists"})), ssd)


def test_any_node_selector_term_may_match_but_every_expression_of_a_term_must():
    terms = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]},
                              {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["b"]}]},
        {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}]}}}
    assert not matches_node_affinity(pod(affinity=terms), node(labels={"disk": "ssd"}, zone="a"))
    assert matches_node_affinity(pod(affinity=terms), node(labels={"disk": "ssd"}, zone="b"))
    assert matches_node_affinity(pod(affinity=terms), node(labels={"gpu": "a100"}, zone="a"))


def test_node_accepts_needs_tolerations_for_hard_taints_only():
    assert not node_accepts(pod(), node(taints=[GPU]))
    assert node_accepts(tolerating({"key": "gpu", "operator": "Exists"}), node(taints=[GPU]))
    assert node_accepts(pod(), node(taints=[{"key": "spot", "effect": "PreferNoSchedule"}]))
    assert not node_accepts(pod(), node(taints=[{"key": "spot", "effect": "NoExecute"}]))
    assert not node_accepts(pod(nodeSelector={"disk": "ssd"}, tolerations=[{"key": "gpu", "operator": "Exists"}]),
                            node(taints=[GPU], labels={"disk": "hdd"}))
    assert not node_accepts(pod(nodeSelector={"disk": "ssd"}), node())


def test_bound_volume_is_the_first_claim_bound_to_zones():
    subject = pod(volumes=[{"name": "tmp", "emptyDir": {}},
                           {"name": "cache", "persistentVolumeClaim": {"claimName": "cache"}},
                           {"name": "data", "persistentVolumeClaim": {"claimName": "data"}}])
    assert bound_volume(subject, {"ns/data": "a,b", "other/cache": "c"}) == ("data", "a,b")
    assert bound_volume(subject, {"ns/cache": None}) is None
    assert bound_volume(pod(), {"ns/data": "a"}) is None


def test_in_zones_takes_one_zone_or_a_comma_list():
    assert in_zones(node(zone="b"), "a,b") and in_zones(node(zone="a"), "a")
    assert not in_zones(node(zone="c"), "a,b")
    assert not in_zones(node(), "a")


def test_domain_counts_count_matching_pods_of_the_namespace_on_nodes_the_pod_may_use():
    nodes = [node("a-0", zone="a"), node("b-0", zone="b"), node("c-0", zone="c", labels={"pool": "other"}),
             node("nowhere")]
    subject = pod(topologySpreadConstraints=ZONE_SPREAD, affinity=required(
        {"key": "pool", "operator": "DoesNotExist"}))
    pods_by_node = {"a-0": [pod("w1"), pod("w2"), pod("db", app="db"), pod("x", namespace="other")],
                    "b-0": [], "c-0": [pod("w3")], "nowhere": [pod("w4")]}
    assert domain_counts(subject, ZONE_SPREAD[0], nodes, pods_by_node) == {"a": 2, "b": 0}


def test_room_takes_requests_off_allocatable_as_pods_come_and_go():
    room = PlacementSimulator([node("n1", cpu="2")], [pod("resident", cpu="500m"), pod("elsewhere", "n9", cpu="1")])
    assert room.free["n1"]["cpu"] == pytest.approx(1.5) and room.free["n1"]["pods"] == 109
    assert [p["metadata"]["name"] for p in room.pods_by_node["n1"]] == ["resident"]
    mover = pod("mover", cpu="1")
    room.add(mover, "n1")
    assert room.free["n1"]["cpu"] == pytest.approx(0.5)
    room.remove(mover, "n1")
    assert room.free["n1"]["cpu"] == pytest.approx(1.5)
    assert [p["metadata"]["name"] for p in room.pods_by_node["n1"]] == ["resident"]


def test_room_says_why_a_pod_may_not_go_to_a_node():
    room = PlacementSimulator([node("n1", cpu="2", zone="a"), node("n2", zone="b", taints=[GPU]), node("n3", zone="a")],
                              [pod("db-0", app="db"), pod("big", "n3", cpu="3")])
    assert room.why_not(pod("web"), "n1") is None
    assert room.why_not(pod("web"), "n2") == "no node matches its node selector, affinity or tolerations"
    assert room.why_not(pod("db-1", app="db", affinity=ANTI_DB), "n1") == "its pod anti-affinity on kubernetes.io/hostname leaves no node"
    assert room.why_not(pod("db-1", app="db", affinity=ANTI_DB), "n3") is None
    assert room.why_not(pod("huge", cpu="2", memory="1Gi"), "n3") == \
        "no node has room for its requests (2 CPU, 1 GiB)"


def test_room_keeps_a_pods_own_zone_spread_constraint():
    nodes = [node("a-0", zone="a"), node("b-0", zone="b"), node("plain")]
    room = PlacementSimulator(nodes, [pod("w1", "a-0"), pod("w2", "b-0"), pod("w3", "a-0")])
    spreading = pod("w4", topologySpreadConstraints=ZONE_SPREAD)
    assert room.why_not(spreading, "a-0") == \
        "its topology spread constraint on topology.kubernetes.io/zone would be broken"
    assert room.why_not(spreading, "b-0") is None
    assert room.why_not(spreading, "plain") == \
        "its topology spread constraint on topology.kubernetes.io/zone would be broken", "a node outside every zone"
    soft = [zone_spread(when="ScheduleAnyway")]
    assert room.why_not(pod("w5", topologySpreadConstraints=soft), "a-0") is None


def test_fit_respects_requests_selectors_taints_and_hostname_anti_affinity():
    nodes = [node("small", cpu="2"), node("ssd", cpu="8", labels={"disk": "ssd"}),
             node("tainted", cpu="8", taints=[{"key": "gpu", "effect": "NoSchedule"}])]
    pods = [pod("big", "old", cpu="3"), pod("needs-ssd", "old", cpu="1", nodeSelector={"disk": "ssd"}),
            pod("db-0", "old", app="db", cpu="1", affinity=ANTI_DB),
            pod("db-1", "old", app="db", cpu="1", affinity=ANTI_DB),
            pod("db-2", "old", app="db", cpu="1", affinity=ANTI_DB)]
    residents = [pod("resident", "small", cpu="1")]
    placement, unplaced = fit(pods, nodes, residents)
    assert placement["ns/big"] == "ssd" and placement["ns/needs-ssd"] == "ssd"
    assert {placement["ns/db-0"], placement["ns/db-1"]} == {"small", "ssd"}
    assert unplaced == [{"pod": "ns/db-2", "reason": "its pod anti-affinity on kubernetes.io/hostname leaves no node"}]
    assert [p["metadata"]["name"] for p in residents] == ["resident"], "fit leaves its inputs alone"


def test_fit_reports_the_most_telling_reason():
    placement, unplaced = fit([pod("gpu-job", nodeSelector={"gpu": "yes"}), pod("huge", cpu="64")],
                              [node("n1")], [])
    assert placement == {}
    assert unplaced == [{"pod": "ns/huge", "reason": "no node has room for its requests (64 CPU, 64 MiB)"},
                        {"pod": "ns/gpu-job", "reason": "no node matches its node selector, affinity or tolerations"}]


def test_fit_tries_the_nodes_in_the_order_a_preference_gives_each_pod():
    nodes = [node("b-0", zone="b"), node("a-0", zone="a", cpu="1"), node("a-1", zone="a")]
    pods = [pod("from-a", cpu="1", labels={"zone": "a"}), pod("from-a-too", cpu="1", labels={"zone": "a"}),
            pod("from-b", cpu="500m", labels={"zone": "b"})]

    def own_zone_first(subject, candidate):
        return subject["metadata"]["labels"]["zone"] != candidate["metadata"]["labels"][ZONE]

    placement, unplaced = fit(pods, nodes, [], own_zone_first)
    assert placement == {"ns/from-a": "a-0", "ns/from-a-too": "a-1", "ns/from-b": "b-0"} and unplaced == []
    assert fit(pods, nodes, [])[0] == {"ns/from-a": "b-0", "ns/from-a-too": "b-0", "ns/from-b": "b-0"}, \
        "without a preference the first node with room wins"


def test_anti_affinity_counts_the_pods_own_namespace_unless_the_term_names_others_as_the_scheduler_does():
    from ansible_collections.kubeops.rotation.plugins.module_utils.plan.placement import (
        anti_affinity_hit,
        hostname_anti_affinity_terms,
    )

    def subject(**term):
        return pod("new", None, namespace="ns", affinity={"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [dict(
                {"topologyKey": "kubernetes.io/hostname"}, **term)]}})

    cache_elsewhere = pod("cache", "n1", app="cache", namespace="other")
    by_label = {"labelSelector": {"matchLabels": {"app": "cache"}}}
    assert not anti_affinity_hit(hostname_anti_affinity_terms(subject(**by_label)), [cache_elsewhere])
    assert anti_affinity_hit(hostname_anti_affinity_terms(subject(namespaces=["other"], **by_label)),
                             [cache_elsewhere])
    assert anti_affinity_hit(hostname_anti_affinity_terms(subject(namespaceSelector={}, **by_label)),
                             [cache_elsewhere])
    assert not anti_affinity_hit(hostname_anti_affinity_terms(subject()), [cache_elsewhere, pod("x", "n1")]), \
        "a term without a label selector selects no pod"


def test_a_pod_adds_to_its_spread_count_only_when_its_constraint_selects_it():
    from ansible_collections.kubeops.rotation.plugins.module_utils.plan.placement import PlacementSimulator

    nodes = [node("a1", zone="a"), node("b1", zone="b")]
    residents = [pod("web-1", "a1", app="web")]
    counted_elsewhere = pod("x", None, app="other", topologySpreadConstraints=[{
        "maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "web"}}}])
    # a has 1 web pod, b 0: a pod the constraint does not select leaves the skew at 1 on a, so a is allowed.
    assert PlacementSimulator(nodes, residents).why_not(counted_elsewhere, "a1") is None
    selected = pod("web-2", None, app="web", topologySpreadConstraints=counted_elsewhere["spec"][
        "topologySpreadConstraints"])
    broken = "its topology spread constraint on %s would be broken" % ZONE
    assert PlacementSimulator(nodes, residents).why_not(selected, "a1") == broken


def test_a_domain_whose_nodes_lack_the_key_of_another_constraint_holds_none_of_the_first():
    rack_spread = {"maxSkew": 1, "topologyKey": "rack", "whenUnsatisfiable": "DoNotSchedule",
                   "labelSelector": {"matchLabels": {"app": "web"}}}
    nodes = [node("a1", zone="a", labels={"rack": "r1"}), node("b1", zone="b", labels={"rack": "r2"}),
             node("c1", zone="c")]
    residents = [pod("web-1", "a1"), pod("web-2", "b1")]
    spreading = pod("web-3", None, topologySpreadConstraints=[zone_spread(), rack_spread])
    # c1 has no rack label, so zone c has no node the zone constraint counts: the zone constraint lets c1
    # be (0 pods there, as the scheduler counts a domain it never saw), the rack constraint refuses it.
    assert PlacementSimulator(nodes, residents).why_not(spreading, "c1") == "its topology spread constraint on rack would be broken"
    assert fit([spreading], nodes, residents) == ({"ns/web-3": "a1"}, [])


def fits_on(room, new_pod):
    return [name for name in sorted(room.nodes) if room.why_not(new_pod, name) is None]


def test_min_domains_measures_the_skew_from_zero_while_fewer_zones_have_a_node():
    nodes = [node("a-0", zone="a"), node("b-0", zone="b")]
    room = PlacementSimulator(nodes, [pod("w1", "a-0"), pod("w2", "b-0")])
    assert fits_on(room, pod("w3", topologySpreadConstraints=[zone_spread()])) == ["a-0", "b-0"]
    three = dict(zone_spread(), minDomains=3)
    assert fits_on(room, pod("w3", topologySpreadConstraints=[three])) == [], "1 + 1 is 2 more than none"
    assert domain_counts(pod("w3", topologySpreadConstraints=[three]), three, nodes,
                         {"a-0": room.pods_by_node["a-0"], "b-0": room.pods_by_node["b-0"]}) == {"a": 1, "b": 1}


def test_match_label_keys_count_only_the_pods_of_the_same_revision():
    nodes = [node("a-0", zone="a"), node("b-0", zone="b")]
    old = [pod("w%d" % index, "a-0", labels={"pod-template-hash": "old"}) for index in range(3)]
    room = PlacementSimulator(nodes, old + [pod("w3", "b-0", labels={"pod-template-hash": "new"})])
    by_revision = dict(zone_spread(), matchLabelKeys=["pod-template-hash"])
    new = pod("w4", labels={"pod-template-hash": "new"}, topologySpreadConstraints=[by_revision])
    assert fits_on(room, new) == ["a-0"], "the new revision has one pod, in b: a is where it spreads"
    assert fits_on(room, pod("w4", labels={"pod-template-hash": "new"}, topologySpreadConstraints=[zone_spread()])) \
        == ["b-0"]


def test_the_node_policies_say_which_nodes_a_spread_counts():
    gpu = [{"key": "gpu", "value": "yes", "effect": "NoSchedule"}]
    nodes = [node("a-0", zone="a"), node("b-0", zone="b"), node("c-0", zone="c", taints=gpu),
             node("d-0", zone="d", labels={"disk": "hdd"})]
    room = PlacementSimulator(nodes, [pod("w1", "a-0"), pod("w2", "b-0")])
    on_ssd_or_not = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "disk", "operator": "DoesNotExist"}]}]}}}
    # Honor node affinity (d is not counted), Ignore taints (c counts, with none): a and b have one more than c.
    assert fits_on(room, pod("w3", topologySpreadConstraints=[zone_spread()], affinity=on_ssd_or_not)) == []
    honoring_taints = dict(zone_spread(), nodeTaintsPolicy="Honor")
    assert fits_on(room, pod("w3", topologySpreadConstraints=[honoring_taints], affinity=on_ssd_or_not)) == [
        "a-0", "b-0"], "c is not counted: the pod does not tolerate its taint"
    ignoring_affinity = dict(honoring_taints, nodeAffinityPolicy="Ignore")
    assert fits_on(room, pod("w3", topologySpreadConstraints=[ignoring_affinity], affinity=on_ssd_or_not)) == [], \
        "d is counted, with none"
