"""Small random scheduling scenarios, and what the planner's fit check says of them (issue 12).

A scenario is plain dicts in the API's JSON shape: 2 to 4 kwok Nodes, 0 to 4
resident Pods and one new Pod. Besides requests, taints, node affinity and
topology spread, they use an extended resource (``GPU``), ephemeral-storage,
host ports, the new pod's required pod affinity and anti-affinity by hostname
and by zone, and pinned residents whose required anti-affinity shuts the new
pod out of their node or zone. tests/integration/test_placement_vs_scheduler.py
creates many at once on the cluster and compares what kube-scheduler does
with each new Pod against ``verdict`` (plan/placement.py's PlacementSimulator.why_not and fit).

Each scenario comes from ``random.Random("<seed>/<index>")`` alone: the same
seed and index give the same scenario whatever the run (names carry the
run's id, the choices do not) and however many scenarios the run makes.

Scenarios share a namespace (and, for the odd resident of "another
namespace", a second one) yet cannot see each other: every pod selects its
scenario's nodes (a nodeSelector on ``SCENARIO_LABEL``), so the scheduler
places it on no other node and its hostname anti-affinity meets no other
scenario's pod; and the app labels, which the topology spread selectors
select, carry the scenario's index, so no selector counts another
scenario's pods, whichever nodes the scheduler counts over. Zones are shared
by every scenario, so the pod affinity terms by zone also select the
scenario's label; and the residents' anti-affinity selects the new pod only,
never a resident left to the scheduler, which must fit anywhere.
"""

from __future__ import annotations

import collections
import json
import random

from ansible_collections.kubeops.rotation.plugins.module_utils.plan.placement import NO_MATCH, PlacementSimulator, fit
from fakenodes import fake_node

DEFAULT_SEED = 12
DEFAULT_COUNT = 200

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
SCENARIO_LABEL = "kubeops.io/scenario"
ROLE_LABEL = "kubeops.io/placement-role"
DISK_LABEL = "kubeops.io/disk"
DEDICATED_KEY = "kubeops.io/dedicated"
MAINTENANCE_KEY = "kubeops.io/maintenance"
SOFT_KEY = "kubeops.io/soft"
GPU = "example.com/gpu"
EPHEMERAL = "ephemeral-storage"
HOST_PORT = 8080
PAUSE = "registry.k8s.io/pause:3.10"
NEW_POD = "new"

ZONES = ("zone-a", "zone-b", "zone-c")
APPS = ("web", "db", "cache")
TIERS = ("front", "back")
REVISIONS = ("r1", "r2")
DISKS = ("ssd", "hdd")
DEDICATED = ("gpu", "batch")
NODE_CPU_M = (500, 1000, 1500, 2000)
NODE_MEMORY_MI = (512, 1024, 1536, 2048)
NODE_PODS = (2, 3, 4, 110)
PINNED_CPU_M = (0, 100, 200, 250, 300, 500)
PINNED_MEMORY_MI = (0, 64, 128, 256, 512)
# Residents left to the scheduler fit on any node of their scenario, whatever the pinned ones take: room
# for all of them is kept on every node, and together they fit on the smallest node.
SCHEDULED_MAX = 2
SCHEDULED_CPU_M = (0, 100, 200)
SCHEDULED_MEMORY_MI = (0, 64, 128)

# What a scenario may have; every one of them appears in the default run (see the unit test).
FEATURES = (
    "taint", "taint-without-value", "prefer-no-schedule-taint", "zone-less-node", "few-pods-node",
    "pinned-resident", "scheduled-resident", "other-namespace-resident",
    "node-selector", "node-affinity", "match-fields", "toleration",
    "anti-affinity", "spread-zone", "spread-hostname", "spread-two-keys", "spread-not-self", "spread-max-skew-2",
    "spread-soft", "init-container", "no-requests", "requests-at-the-edge", "requests-too-big",
    "gpu-node", "gpu-resident", "gpu-request", "ephemeral-storage", "host-port", "resident-host-port",
    "zone-anti-affinity", "pod-affinity-hostname", "pod-affinity-zone", "resident-anti-affinity",
    "resident-zone-anti-affinity", "spread-min-domains", "spread-match-label-keys", "spread-taints-honored",
)


def generate(seed, index, run_id, namespace, other_namespace, run_labels=None):
    """Scenario ``index`` of ``seed``: {"index", "seed", "id", "namespace", "nodes", "residents", "pod",
    "features"}. Its pods are in ``namespace`` but for the odd resident in ``other_namespace``; residents
    pinned by the scenario have spec.nodeName, the others are left to the scheduler. ``run_labels`` go on
    every node and pod, for finding and cleaning up."""
    return _Generator(random.Random("%d/%d" % (seed, index)), index, "%s-%03d" % (run_id, index), namespace,
                      other_namespace, dict(run_labels or {})).scenario(seed)


class _Generator:
    def __init__(self, rng, index, sid, namespace, other, run_labels):
        self.rng = rng
        self.index = index
        self.sid = sid
        self.namespace = namespace
        self.other = other
        self.run_labels = run_labels
        # The apps of this scenario only.
        self.apps = tuple("%s-%03d" % (app, index) for app in APPS)
        self.features = set()
        self.nodes = []
        # name -> [allocatable cpu m, memory Mi, pods]; name -> [cpu m, memory Mi, pods] that pinned pods take.
        self.allocatable = {}
        self.used = {}
        # [cpu m, memory Mi, pods] kept free on every node for the residents left to the scheduler.
        self.reserved = [0, 0, 0]
        # name -> [GPUs advertised, GPUs the pinned pods take]
        self.gpus = {}
        self.resident_names = ("%s-r%d" % (sid, number) for number in range(100))

    def scenario(self, seed):
        rng = self.rng
        zones = rng.sample(ZONES, rng.randint(1, 3))
        for number in range(rng.randint(2, 4)):
            self._node("%s-n%d" % (self.sid, number), zones)
        app = rng.choice(self.apps)
        residents = self._residents(app)
        labels = {"app": app, "rev": rng.choice(REVISIONS)}
        if rng.random() < 0.25:
            labels["tier"] = rng.choice(TIERS)
        spec = {"nodeSelector": {SCENARIO_LABEL: self.sid}}
        if rng.random() < 0.2:
            self.features.add("node-selector")
            spec["nodeSelector"][DISK_LABEL] = rng.choice(DISKS)
        affinity = {}
        if rng.random() < 0.35:
            self.features.add("node-affinity")
            affinity["nodeAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [self._node_selector_term(zones) for _index in range(rng.choice((1, 1, 1, 2)))]}}
        anti_affinity_app, anti_terms = None, []
        if rng.random() < 0.3:
            self.features.add("anti-affinity")
            anti_affinity_app, term = self._anti_affinity(residents)
            anti_terms.append(term)
        if rng.random() < 0.1:
            self.features.add("zone-anti-affinity")
            anti_terms.append(self._zone_term(residents))
        if anti_terms:
            affinity["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": anti_terms}
        if rng.random() < 0.12:
            key = rng.choice((HOSTNAME, ZONE))
            self.features.add("pod-affinity-zone" if key == ZONE else "pod-affinity-hostname")
            term = self._zone_term(residents, own_app=app)
            affinity["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [
                dict(term, topologyKey=key)]}
        if affinity:
            spec["affinity"] = affinity
        if rng.random() < 0.45:
            self.features.add("toleration")
            spec["tolerations"] = [self._toleration() for _index in range(rng.choice((1, 1, 2)))]
        spread_apps = []
        if rng.random() < 0.5:
            spec["topologySpreadConstraints"], spread_apps = self._spread(app)
        if rng.random() < (0.5 if anti_affinity_app else 0.12):
            decoy = self._other_namespace_resident(anti_affinity_app or (
                rng.choice(spread_apps) if spread_apps else rng.choice(self.apps)))
            if decoy:
                residents.append(decoy)
        cpu, memory = self._new_pod_requests()
        extra = {}
        if rng.random() < 0.12:
            self.features.add("gpu-request")
            extra[GPU] = rng.choice((1, 1, 1, 2))
        if rng.random() < 0.08:
            self.features.add("ephemeral-storage")
            extra[EPHEMERAL] = rng.choice(("1Gi", "5Gi", "5Gi", "20Gi"))
        ports = None
        if rng.random() < (0.6 if "resident-host-port" in self.features else 0.08):
            self.features.add("host-port")
            ports = [{"containerPort": HOST_PORT, "hostPort": HOST_PORT, "protocol": "TCP"}]
        pod = self._pod("%s-%s" % (self.sid, NEW_POD), self.namespace, dict(labels, **{ROLE_LABEL: "new"}), cpu,
                        memory, spec, extra, ports)
        if rng.random() < 0.12:
            # The larger of it and the containers counts.
            self.features.add("init-container")
            self.features.discard("no-requests")
            pod["spec"]["initContainers"] = [{"name": "init", "image": PAUSE, "resources": {"requests": {
                "cpu": "%dm" % max(cpu + rng.choice((-50, 50, 100, 300)), 0),
                "memory": "%dMi" % max(memory - 32, 0)}}}]
        return {"index": self.index, "seed": seed, "id": self.sid, "namespace": self.namespace, "nodes": self.nodes,
                "residents": residents, "pod": pod, "features": sorted(self.features)}

    # -- nodes ------------------------------------------------------------------

    def _node(self, name, zones):
        rng = self.rng
        labels = dict(self.run_labels, **{SCENARIO_LABEL: self.sid})
        if rng.random() < 0.07:
            self.features.add("zone-less-node")
        else:
            labels[ZONE] = rng.choice(zones)
        disk = rng.choice(DISKS + (None,))
        if disk:
            labels[DISK_LABEL] = disk
        cpu, memory, pods = rng.choice(NODE_CPU_M), rng.choice(NODE_MEMORY_MI), rng.choice(NODE_PODS)
        if pods < 110:
            self.features.add("few-pods-node")
        taints = []
        draw = rng.random()
        if draw < 0.25:
            self.features.add("taint")
            taints.append({"key": DEDICATED_KEY, "value": rng.choice(DEDICATED), "effect": "NoSchedule"})
        elif draw < 0.33:
            self.features.update(("taint", "taint-without-value"))
            taints.append({"key": MAINTENANCE_KEY, "effect": "NoSchedule"})
        if rng.random() < 0.1:
            self.features.add("prefer-no-schedule-taint")
            taints.append({"key": SOFT_KEY, "value": "yes", "effect": "PreferNoSchedule"})
        capacity = {"cpu": "%dm" % cpu, "memory": "%dMi" % memory, "pods": str(pods)}
        gpus = 0
        if rng.random() < 0.5:
            self.features.add("gpu-node")
            gpus = rng.choice((1, 2))
            capacity[GPU] = str(gpus)
        if rng.random() < 0.7:
            capacity[EPHEMERAL] = "10Gi"
        self.gpus[name] = [gpus, 0]
        self.nodes.append(fake_node(name, labels, capacity, taints=taints))
        self.allocatable[name] = [cpu, memory, pods]
        self.used[name] = [0, 0, 0]

    # -- residents --------------------------------------------------------------

    def _residents(self, app):
        rng = self.rng
        count = rng.choice((0, 1, 2, 2, 3, 3, 4, 4))
        scheduled = []
        for _index in range(count):
            if len(scheduled) < SCHEDULED_MAX and rng.random() < 0.35:
                scheduled.append((rng.choice(SCHEDULED_CPU_M), rng.choice(SCHEDULED_MEMORY_MI)))
        self.reserved = [sum(cpu for cpu, _memory in scheduled), sum(memory for _cpu, memory in scheduled), len(scheduled)]
        residents = []
        for _index in range(count - len(scheduled)):
            cpu, memory = rng.choice(PINNED_CPU_M), rng.choice(PINNED_MEMORY_MI)
            name = self._room_for(cpu, memory)
            if name is None:
                continue
            self.features.add("pinned-resident")
            residents.append(self._pinned(name, self._resident_labels(app), cpu, memory))
        for cpu, memory in scheduled:
            self.features.add("scheduled-resident")
            residents.append(self._pod(next(self.resident_names), self.namespace, self._resident_labels(app), cpu,
                                       memory, {"nodeSelector": {SCENARIO_LABEL: self.sid},
                                                "tolerations": [{"operator": "Exists"}]}))
        return residents

    def _pinned(self, name, labels, cpu, memory):
        """A resident bound to node ``name``, maybe taking one of its GPUs, its host port, or with a required
        anti-affinity against the new pod (by hostname or zone)."""
        rng = self.rng
        spec, extra, ports = {"nodeName": name}, {}, None
        gpus, taken = self.gpus[name]
        if taken < gpus and rng.random() < 0.5:
            self.features.add("gpu-resident")
            extra[GPU] = 1
            self.gpus[name][1] += 1
        if rng.random() < 0.4:
            self.features.add("resident-host-port")
            ports = [{"containerPort": HOST_PORT, "hostPort": HOST_PORT,
                      "protocol": rng.choice(("TCP", "TCP", "UDP"))}]
        if rng.random() < 0.12:
            key = rng.choice((HOSTNAME, HOSTNAME, ZONE))
            self.features.add("resident-zone-anti-affinity" if key == ZONE else "resident-anti-affinity")
            # The new pod only (by its role), maybe only when it is of one app.
            selected = {SCENARIO_LABEL: self.sid, ROLE_LABEL: "new"}
            if rng.random() < 0.5:
                selected["app"] = rng.choice(self.apps)
            spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": key, "labelSelector": {"matchLabels": selected}}]}}
        return self._pod(next(self.resident_names), self.namespace, labels, cpu, memory, spec, extra, ports)

    def _resident_labels(self, app):
        rng = self.rng
        labels = {"app": app if rng.random() < 0.6 else rng.choice(self.apps), ROLE_LABEL: "resident"}
        if rng.random() < 0.3:
            labels["tier"] = rng.choice(TIERS)
        if rng.random() < 0.7:
            labels["rev"] = rng.choice(REVISIONS)
        return labels

    def _room_for(self, cpu, memory):
        """A node (chosen at random) where a pinned pod of ``cpu`` and ``memory`` fits besides the pinned pods
        so far and the room kept for the scheduled ones; it is taken there. None when none has room."""
        wanted = (cpu, memory, 1)
        names = [name for name in self.allocatable if all(
            self.used[name][i] + self.reserved[i] + wanted[i] <= self.allocatable[name][i] for i in range(3))]
        if not names:
            return None
        name = self.rng.choice(names)
        self.used[name] = [self.used[name][i] + wanted[i] for i in range(3)]
        return name

    def _other_namespace_resident(self, app):
        """A pinned resident of the shared other namespace, labelled like what the new pod's anti-affinity or
        spread selects: neither counts it, as both only see pods of the pod's own namespace."""
        rng = self.rng
        cpu, memory = rng.choice((0, 50)), rng.choice((0, 32))
        name = self._room_for(cpu, memory)
        if name is None:
            return None
        self.features.add("other-namespace-resident")
        labels = {"app": app, ROLE_LABEL: "resident"}
        if rng.random() < 0.3:
            labels["tier"] = rng.choice(TIERS)
        return self._pod(next(self.resident_names), self.other, labels, cpu, memory, {"nodeName": name})

    # -- the new pod ------------------------------------------------------------

    def _node_selector_term(self, zones):
        rng = self.rng
        term = {}
        if rng.random() < 0.12:
            self.features.add("match-fields")
            names = [node["metadata"]["name"] for node in self.nodes]
            # The API takes exactly one value here.
            term["matchFields"] = [{"key": "metadata.name", "operator": rng.choice(("In", "NotIn")),
                                    "values": [rng.choice(names)]}]
            if rng.random() < 0.5:
                return term
        expressions = []
        for _index in range(rng.choice((1, 1, 2))):
            kind = rng.choice(("zone-in", "zone-not-in", "zone-exists", "disk-in", "disk-not-in", "disk-exists",
                               "disk-does-not-exist"))
            if kind == "zone-in":
                expressions.append({"key": ZONE, "operator": "In",
                                    "values": sorted(rng.sample(zones, rng.randint(1, len(zones))))})
            elif kind == "zone-not-in":
                expressions.append({"key": ZONE, "operator": "NotIn", "values": [rng.choice(ZONES)]})
            elif kind == "zone-exists":
                expressions.append({"key": ZONE, "operator": "Exists"})
            elif kind == "disk-in":
                expressions.append({"key": DISK_LABEL, "operator": "In", "values": [rng.choice(DISKS)]})
            elif kind == "disk-not-in":
                expressions.append({"key": DISK_LABEL, "operator": "NotIn", "values": [rng.choice(DISKS)]})
            elif kind == "disk-exists":
                expressions.append({"key": DISK_LABEL, "operator": "Exists"})
            else:
                expressions.append({"key": DISK_LABEL, "operator": "DoesNotExist"})
        term["matchExpressions"] = expressions
        return term

    def _anti_affinity(self, residents):
        """(the app it is against, a required hostname anti-affinity term), mostly against a resident's app."""
        rng = self.rng
        apps = [resident["metadata"]["labels"]["app"] for resident in residents]
        app = rng.choice(apps) if apps and rng.random() < 0.75 else rng.choice(self.apps)
        selector = rng.choice((
            {"matchLabels": {"app": app}},
            {"matchLabels": {"app": app}},
            {"matchExpressions": [{"key": "app", "operator": "In", "values": sorted({app, rng.choice(self.apps)})}]},
            {"matchExpressions": [{"key": "tier", "operator": "Exists"}]},
            {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": [rng.choice(self.apps)]}]},
        ))
        return app, {"topologyKey": HOSTNAME, "labelSelector": selector}

    def _zone_term(self, residents, own_app=None):
        """A required pod (anti-)affinity term by zone over this scenario's pods only (its label is in the selector:
        zones are shared with every other scenario), mostly selecting a resident's app, or ``own_app``."""
        rng = self.rng
        apps = [resident["metadata"]["labels"]["app"] for resident in residents
                if resident["metadata"]["namespace"] == self.namespace]
        choices = apps * 3 + [rng.choice(self.apps)] + ([own_app] if own_app else [])
        selector = {"matchLabels": {SCENARIO_LABEL: self.sid, "app": rng.choice(choices)}}
        if rng.random() < 0.25:
            selector = {"matchLabels": {SCENARIO_LABEL: self.sid},
                        "matchExpressions": [{"key": "tier", "operator": "Exists"}]}
        return {"topologyKey": ZONE, "labelSelector": selector}

    def _toleration(self):
        rng = self.rng
        return rng.choice((
            {"key": DEDICATED_KEY, "operator": "Equal", "value": rng.choice(DEDICATED), "effect": "NoSchedule"},
            {"key": DEDICATED_KEY, "value": rng.choice(DEDICATED)},
            {"key": DEDICATED_KEY, "operator": "Exists"},
            {"key": DEDICATED_KEY, "operator": "Exists", "effect": "NoExecute"},
            {"key": MAINTENANCE_KEY, "operator": "Exists", "effect": "NoSchedule"},
            {"key": MAINTENANCE_KEY, "operator": "Equal", "effect": "NoSchedule"},
            {"operator": "Exists"},
            {"operator": "Exists", "effect": "PreferNoSchedule"},
        ))

    def _spread(self, app):
        """(DoNotSchedule constraints on the zone, the hostname or both, their selectors' apps)."""
        rng = self.rng
        keys = rng.choice(([ZONE], [ZONE], [ZONE], [HOSTNAME], [HOSTNAME], [HOSTNAME], [ZONE, HOSTNAME]))
        if len(keys) == 2:
            self.features.add("spread-two-keys")
        constraints, apps = [], []
        for key in keys:
            self.features.add("spread-zone" if key == ZONE else "spread-hostname")
            selected = app
            if rng.random() < 0.2:
                self.features.add("spread-not-self")
                selected = rng.choice([other for other in self.apps if other != app])
            apps.append(selected)
            max_skew = 1
            if rng.random() < 0.2:
                self.features.add("spread-max-skew-2")
                max_skew = 2
            selector = rng.choice(({"matchLabels": {"app": selected}},
                                   {"matchExpressions": [{"key": "app", "operator": "In", "values": [selected]}]}))
            constraint = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule",
                          "labelSelector": selector}
            if rng.random() < 0.15:
                self.features.add("spread-min-domains")
                constraint["minDomains"] = rng.choice((2, 3, 4))
            if rng.random() < 0.15:
                self.features.add("spread-match-label-keys")
                constraint["matchLabelKeys"] = ["rev"]
            if rng.random() < 0.15:
                # Node affinity is always honoured here: ignoring it would count every node of the cluster.
                self.features.add("spread-taints-honored")
                constraint["nodeTaintsPolicy"] = "Honor"
            constraints.append(constraint)
        if rng.random() < 0.15:
            self.features.add("spread-soft")
            constraints.append({"maxSkew": 1, "topologyKey": rng.choice((ZONE, HOSTNAME)),
                                "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {"matchLabels": {"app": app}}})
        return constraints, apps

    def _new_pod_requests(self):
        """(cpu m, memory Mi): small, at the edge of what one node has left (before the scheduled residents),
        a whole node's, or more than any node has."""
        rng = self.rng
        draw = rng.random()
        if draw < 0.35:
            cpu, memory = rng.choice((0, 50, 100, 200)), rng.choice((0, 32, 64, 128))
            if rng.random() < 0.15:
                cpu = memory = 0
        elif draw < 0.77:
            self.features.add("requests-at-the-edge")
            name = rng.choice(sorted(self.allocatable))
            free = [self.allocatable[name][i] - self.used[name][i] for i in range(2)]
            cpu = max(0, free[0] + rng.choice((-50, 0, 0, 50)))
            memory = max(0, free[1] + rng.choice((-64, 0, 64))) if rng.random() < 0.5 else rng.choice((0, 64))
        elif draw < 0.92:
            cpu, memory = rng.choice(NODE_CPU_M), rng.choice((0, 64, 256))
        else:
            self.features.add("requests-too-big")
            cpu = max(allocatable[0] for allocatable in self.allocatable.values()) + rng.choice((50, 500))
            memory = rng.choice((0, 64))
        if not cpu and not memory:
            self.features.add("no-requests")
        return cpu, memory

    def _pod(self, name, namespace, labels, cpu, memory, spec, extra=None, ports=None):
        """``extra``: further requests (an extended resource's are also its limits, as the API wants)."""
        requests = {}
        if cpu:
            requests["cpu"] = "%dm" % cpu
        if memory:
            requests["memory"] = "%dMi" % memory
        requests.update((resource, str(amount)) for resource, amount in (extra or {}).items())
        container = {"name": "app", "image": PAUSE}
        if requests:
            container["resources"] = {"requests": requests}
            if GPU in requests:
                container["resources"]["limits"] = {GPU: requests[GPU]}
        if ports:
            container["ports"] = ports
        labels = dict(self.run_labels, **labels)
        labels[SCENARIO_LABEL] = self.sid
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": namespace, "labels": labels},
                "spec": dict({"terminationGracePeriodSeconds": 0, "automountServiceAccountToken": False,
                              "containers": [container]}, **spec)}


# -- what placement says, and whether the scheduler agreed ------------------------

# Placement's reasons to refuse a node, by how PlacementSimulator.why_not starts them.
REASONS = {"node selector, affinity or tolerations": NO_MATCH, "room": "no node has room",
           "anti-affinity": "its pod anti-affinity", "a resident's anti-affinity": "the pod anti-affinity of",
           "pod affinity": "its pod affinity", "host port": "its host port",
           "topology spread": "its topology spread constraint"}


def resident_on(resident, node):
    """A copy of ``resident`` bound to ``node``."""
    return dict(resident, spec=dict(resident["spec"], nodeName=node))


def verdict(scenario, residents):
    """What plan/placement.py says of the scenario's new pod with ``residents`` (all bound) on its nodes:
    {"fits": nodes where PlacementSimulator.why_not is None, "why_not": node -> reason or None, "fit": the node fit()
    chose or None, "fit_reason": why fit() left it out}."""
    nodes, pod = scenario["nodes"], scenario["pod"]
    room = PlacementSimulator(nodes, residents)
    why_not = {node["metadata"]["name"]: room.why_not(pod, node["metadata"]["name"]) for node in nodes}
    placement, unplaced = fit([pod], nodes, residents)
    return {"fits": sorted(name for name, reason in why_not.items() if reason is None), "why_not": why_not,
            "fit": placement.get("%s/%s" % (pod["metadata"]["namespace"], pod["metadata"]["name"])),
            "fit_reason": unplaced[0]["reason"] if unplaced else None}


def scheduling_outcome(pod):
    """What kube-scheduler did with ``pod`` (the API's JSON): {"node": name} when bound, {"unschedulable":
    message} when its PodScheduled condition is False for Unschedulable, None while it has not decided."""
    node = (pod.get("spec") or {}).get("nodeName")
    if node:
        return {"node": node}
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False" and \
                condition.get("reason") == "Unschedulable":
            return {"unschedulable": condition.get("message", "")}
    return None


def disagreements(said, outcome):
    """What is wrong with placement's ``said`` (a verdict) given the scheduler's ``outcome`` (a
    scheduling_outcome): [] when they agree. Bound to node n: n must be one that fits. Unschedulable: none
    may fit. And fit() must agree with PlacementSimulator.why_not."""
    if not outcome:
        return ["the scheduler has neither bound it nor found it Unschedulable"]
    problems = []
    fits = said["fits"]
    if said["fit"] is None and fits:
        problems.append("fit() left the pod out (%s) but PlacementSimulator.why_not lets it on %s" % (said["fit_reason"], fits))
    elif said["fit"] is not None and said["fit"] not in fits:
        problems.append("fit() put the pod on %s, where PlacementSimulator.why_not says: %s"
                        % (said["fit"], said["why_not"].get(said["fit"])))
    if "node" in outcome:
        node = outcome["node"]
        if node not in said["why_not"]:
            problems.append("the scheduler bound it to %s, not a node of its scenario (the test is broken)" % node)
        elif node not in fits:
            problems.append("the scheduler bound it to %s, where placement says: %s" % (node, said["why_not"][node]))
    elif fits:
        problems.append("the scheduler found no node (%s) but placement says it fits on %s"
                        % (outcome["unschedulable"], fits))
    return problems


def compact(scenario, residents=None):
    """The scenario in short, for a failure message: node names without the scenario's prefix, only the
    labels, taints and fields that the fit checks read."""
    prefix = scenario["id"] + "-"

    def short(name):
        return name[len(prefix):] if name and name.startswith(prefix) else name

    def own_labels(labels):
        return {key: value for key, value in (labels or {}).items()
                if key in ("app", "tier", "rev", ZONE, DISK_LABEL)}

    def requests(pod):
        return {container["name"]: (container.get("resources") or {}).get("requests") or {}
                for container in pod["spec"].get("initContainers", []) + pod["spec"]["containers"]}

    nodes = [{"name": short(node["metadata"]["name"]), "labels": own_labels(node["metadata"]["labels"]),
              "taints": node["spec"]["taints"], "allocatable": node["status"]["allocatable"]}
             for node in scenario["nodes"]]
    pinned = {resident["metadata"]["name"] for resident in scenario["residents"] if resident["spec"].get("nodeName")}
    shown = []
    for resident in residents if residents is not None else scenario["residents"]:
        entry = {"name": short(resident["metadata"]["name"]), "node": short(resident["spec"].get("nodeName")),
                 "pinned": resident["metadata"]["name"] in pinned, "labels": own_labels(resident["metadata"]["labels"]),
                 "requests": requests(resident)}
        if resident["metadata"]["namespace"] != scenario["namespace"]:
            entry["namespace"] = "other"
        entry.update(_scheduling_fields(resident))
        shown.append(entry)
    spec = dict(scenario["pod"]["spec"])
    pod = {"labels": own_labels(scenario["pod"]["metadata"]["labels"]), "requests": requests(scenario["pod"]),
           **_scheduling_fields(scenario["pod"], ("ports",))}
    selector = {key: value for key, value in spec.get("nodeSelector", {}).items() if key != SCENARIO_LABEL}
    if selector:
        pod["nodeSelector"] = selector
    for field in ("affinity", "tolerations", "topologySpreadConstraints"):
        if field in spec:
            pod[field] = spec[field]
    text = json.dumps({"seed": scenario["seed"], "index": scenario["index"], "nodes": nodes, "residents": shown,
                       "pod": pod}, sort_keys=True, separators=(",", ":"))
    # Node names in the pod's matchFields too, and the scenario's label in the affinity terms' selectors.
    return text.replace('"%s' % prefix, '"').replace('"%s"' % scenario["id"], '"S"')


def _scheduling_fields(pod, fields=("affinity", "ports")):
    """The host ports and (unless left out of ``fields``) the pod affinity terms of ``pod``, as far as it has any."""
    found = {}
    ports = [port for container in pod["spec"]["containers"] for port in container.get("ports", [])]
    if ports and "ports" in fields:
        found["ports"] = ports
    if pod["spec"].get("affinity") and "affinity" in fields:
        found["affinity"] = pod["spec"]["affinity"]
    return found


def summarize(made, said, outcomes):
    """Counts that show what a run compared: scenarios bound and Unschedulable, bound with placement
    refusing some but not all of their nodes (the comparison told nodes apart), the nodes placement
    refused for each of its reasons, and how often each feature appeared. ``said`` is scenario id ->
    verdict, ``outcomes`` is new pod key -> scheduling_outcome."""
    bound = unschedulable = narrowed = 0
    refusals = collections.Counter()
    for scenario in made:
        said_here = said[scenario["id"]]
        outcome = outcomes["%s/%s" % (scenario["namespace"], scenario["pod"]["metadata"]["name"])] or {}
        bound += "node" in outcome
        unschedulable += "unschedulable" in outcome
        narrowed += "node" in outcome and 0 < len(said_here["fits"]) < len(said_here["why_not"])
        for reason in said_here["why_not"].values():
            if reason is not None:
                refusals[next((name for name, start in REASONS.items() if reason.startswith(start)), reason)] += 1
    return {"scenarios": len(made), "bound": bound, "unschedulable": unschedulable,
            "bound_to_some_of_its_nodes": narrowed, "nodes_refused_by_placement_for": dict(refusals),
            "features": dict(collections.Counter(feature for scenario in made for feature in scenario["features"]))}


def too_little_compared(summary):
    """Why a run compared too little to mean anything, or []: at least a fifth of the scenarios bound and a
    fifth Unschedulable, a tenth bound with placement refusing some of their nodes, and (in a run of 100 or
    more) every one of placement's reasons refusing some node."""
    count = summary["scenarios"]
    wanted = {"bound": count // 5, "unschedulable": count // 5, "bound_to_some_of_its_nodes": count // 10}
    problems = ["only %d scenarios were %s (at least %d wanted)" % (summary[name], name.replace("_", " "), least)
                for name, least in wanted.items() if summary[name] < least]
    if count >= 100:
        problems.extend("placement refused no node for %s" % reason for reason in REASONS
                        if not summary["nodes_refused_by_placement_for"].get(reason))
        problems.extend("no scenario had %s" % feature for feature in FEATURES if not summary["features"].get(feature))
    return ["the run compared too little: " + problem for problem in problems]
