# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Pure fit checks: whether a pod may run on a node, as the scheduler's filters would decide.

Requests of every resource against allocatable (cpu, memory, pods, and any a
node advertises: extended resources, hugepages, ephemeral-storage), host
ports, node selectors and required node affinity, taints and tolerations,
required pod anti-affinity and pod affinity on any topology key, both the
pod's own and that of the pods already there, and the pod's own
DoNotSchedule topology spread constraints. Both the rotation plan and the
rebalance plan place pods through ``PlacementSimulator``, so both agree on what fits;
``unmodelled`` names what a pod asks for that these checks do not know.
"""

from __future__ import annotations

import bisect
import collections
import json
import types

from ansible_collections.kubeops.rotation.plugins.module_utils.model.keys import HOSTNAME_LABEL
from ansible_collections.kubeops.rotation.plugins.module_utils.model.nodes import (
    blocking_taints,
    node_labels,
    node_name,
    zone_of,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.model.pods import claim_names, node_of, pod_key
from ansible_collections.kubeops.rotation.plugins.module_utils.model.quantities import (
    RESOURCES,
    amounts_text,
    pod_requests,
    resource_amounts,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.model.selectors import (
    index_label,
    labels_match,
    node_selector_term_matches,
    selector_matches,
)


# json.dumps(value, sort_keys=True), the text by which keys compare selectors and affinities, without making
# an encoder per call.
canonical_json = json.JSONEncoder(sort_keys=True).encode


def tolerates(pod, taint):
    """Whether a toleration of the pod tolerates ``taint``: its effect (when given) is the taint's, and
    its key and value match, or it has no key and the operator Exists."""
    for toleration in (pod.get("spec") or {}).get("tolerations") or []:
        if toleration.get("effect") and toleration.get("effect") != taint.get("effect"):
            continue
        if toleration.get("operator") == "Exists" and not toleration.get("key"):
            return True
        if toleration.get("key") != taint.get("key"):
            continue
        if toleration.get("operator") == "Exists" or toleration.get("value") == taint.get("value"):
            return True
    return False


def matches_node_affinity(pod, node):
    """The pod's node selector and required node affinity (any of its terms, matchExpressions and
    matchFields) select ``node``."""
    labels = node_labels(node)
    spec = pod.get("spec") or {}
    if not labels_match(spec.get("nodeSelector"), labels):
        return False
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution") or {}
    terms = required.get("nodeSelectorTerms") or []
    fields = {"metadata.name": node_name(node)}
    return not terms or any(node_selector_term_matches(term, labels, fields) for term in terms)


def node_accepts(pod, node):
    """Whether the pod's node selector, required node affinity and tolerations let it run on ``node``,
    resources aside."""
    if not matches_node_affinity(pod, node):
        return False
    return all(tolerates(pod, taint) for taint in blocking_taints(node))


def bound_volume(pod, claim_zones):
    """(claim, zones) of the first PersistentVolumeClaim of the pod whose volume is bound to zones
    ("a" or "a,b", from ``claim_zones``, "namespace/claim" -> zones), or None."""
    for claim in claim_names(pod):
        zones = claim_zones.get("%s/%s" % (pod["metadata"]["namespace"], claim))
        if zones:
            return claim, zones
    return None


def in_zones(node, zones):
    """Whether ``node`` is in one of ``zones`` ("a" or "a,b")."""
    return zone_of(node) in zones.split(",")


# One required pod (anti-)affinity term, as the scheduler reads it: its label selector (None selects no pod), the
# namespaces whose pods it selects (None: every one), and its topology key.
PodTerm = collections.namedtuple("PodTerm", "selector namespaces topology_key")


def required_pod_terms(pod, kind):
    """The PodTerms of the pod's required ``kind`` ("podAffinity" or "podAntiAffinity") terms. A term selects pods
    of the pod's own namespace unless it names others; a namespaceSelector (which a plan cannot evaluate without
    the namespaces' labels) is read as every namespace: the careful side for anti-affinity (see ``unmodelled``
    for affinity)."""
    terms = (((pod.get("spec") or {}).get("affinity") or {}).get(kind) or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution") or []
    own = (pod.get("metadata") or {}).get("namespace")
    return [PodTerm(term.get("labelSelector"), None if term.get("namespaceSelector") is not None
                    else frozenset(term.get("namespaces") or [own]), term.get("topologyKey"))
            for term in terms]


def term_selects(term, pod):
    """Whether PodTerm ``term`` selects ``pod``."""
    metadata = pod.get("metadata") or {}
    return term.selector is not None and selector_matches(term.selector, metadata.get("labels")) and \
        (term.namespaces is None or metadata.get("namespace") in term.namespaces)


def hostname_anti_affinity_terms(pod):
    """The pod's required anti-affinity PodTerms on the node itself (kubernetes.io/hostname)."""
    return [term for term in required_pod_terms(pod, "podAntiAffinity") if term.topology_key == HOSTNAME_LABEL]


def anti_affinity_hit(terms, pods):
    """Whether one of ``pods`` matches one of the anti-affinity ``terms`` (PodTerms)."""
    return any(term_selects(term, other) for term in terms for other in pods)


def host_ports(pod):
    """(protocol, port, host IP) of each host port the pod's containers take."""
    return {(port.get("protocol") or "TCP", port["hostPort"], port.get("hostIP") or "0.0.0.0")
            for container in (pod.get("spec") or {}).get("containers") or ()
            for port in container.get("ports") or () if port.get("hostPort")}


def ports_clash(wanted, taken):
    """Whether a host port of ``wanted`` is one of ``taken`` (host_ports): same protocol and port, and the same
    host IP or either on every address."""
    return any(protocol == other_protocol and port == other_port and
               (address == other_address or "0.0.0.0" in (address, other_address))
               for protocol, port, address in wanted for other_protocol, other_port, other_address in taken)


def _domain(node, key):
    return node_labels(node).get(key)


def inter_pod_refusal(pod, node, nodes, pods_by_node):
    """Why the required pod affinity and anti-affinity rules keep ``pod`` off ``node``, or None, counted from every
    pod of ``nodes`` (name -> node; ``pods_by_node``: name -> pods) as the scheduler's InterPodAffinity filter
    counts them: the pod's own anti-affinity (no selected pod in the node's domain of the term's key), the
    anti-affinity of every pod there (the pod is not selected by a term of a pod in the node's domain of that
    term's key), and the pod's own affinity (the node has every term's key, and in each of those domains runs a
    pod that all the terms select; or, when no pod anywhere is selected by all of them, the pod selects itself)."""
    located = [(other, nodes[name]) for name, pods in pods_by_node.items() if name in nodes for other in pods]
    for term in required_pod_terms(pod, "podAntiAffinity"):
        domain = _domain(node, term.topology_key)
        if domain is not None and any(term_selects(term, other) and _domain(where, term.topology_key) == domain
                                      for other, where in located):
            return anti_affinity_reason(term)
    holders = sorted((pod_key(other), resident_anti_affinity_reason(other, term)) for other, where in located
                     for term in required_pod_terms(other, "podAntiAffinity")
                     if _domain(where, term.topology_key) is not None
                     and _domain(node, term.topology_key) == _domain(where, term.topology_key)
                     and term_selects(term, pod))
    if holders:
        return holders[0][1]
    terms = required_pod_terms(pod, "podAffinity")
    if not terms:
        return None
    if any(_domain(node, term.topology_key) is None for term in terms):
        return affinity_reason(terms)
    selected = [(other, where) for other, where in located if all(term_selects(term, other) for term in terms)]
    counted = [(other, where) for other, where in selected
               if any(_domain(where, term.topology_key) is not None for term in terms)]
    if not counted:
        return None if all(term_selects(term, pod) for term in terms) else affinity_reason(terms)
    for term in terms:
        if not any(_domain(where, term.topology_key) == _domain(node, term.topology_key) for _other, where in counted):
            return affinity_reason(terms)
    return None


def anti_affinity_reason(term):
    return "its pod anti-affinity on %s leaves no node" % term.topology_key


def resident_anti_affinity_reason(resident, term):
    return "the pod anti-affinity of %s on %s leaves no node" % (pod_key(resident), term.topology_key)


def affinity_reason(terms):
    return "its pod affinity on %s finds no node" % ", ".join(sorted({term.topology_key for term in terms}))


def unmodelled(pod):
    """The scheduling rules ``pod`` asks for that the fit checks do not model, by name: the plan may believe it
    fits where the scheduler disagrees (or the other way round), so the plan says so for the pods concerned."""
    spec = pod.get("spec") or {}
    affinity = spec.get("affinity") or {}
    found = []
    for kind in ("podAffinity", "podAntiAffinity"):
        for term in (affinity.get(kind) or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or []:
            if term.get("matchLabelKeys") or term.get("mismatchLabelKeys"):
                found.append("%s matchLabelKeys" % kind)
            namespaces = term.get("namespaceSelector") or {}
            if kind == "podAffinity" and (namespaces.get("matchLabels") or namespaces.get("matchExpressions")):
                found.append("podAffinity namespaceSelector")
    if spec.get("resourceClaims"):
        found.append("dynamic resource claims")
    return sorted(set(found))


def counts_itself(pod, constraint):
    """Whether the pod adds to its own spread constraint's count: only when the constraint selects it."""
    return selector_matches(spread_selector(pod, constraint), (pod.get("metadata") or {}).get("labels"))


def hard_spread_constraints(pod):
    return [constraint for constraint in (pod.get("spec") or {}).get("topologySpreadConstraints") or []
            if constraint.get("whenUnsatisfiable", "DoNotSchedule") == "DoNotSchedule"]


def spread_selector(pod, constraint):
    """The constraint's labelSelector with its ``matchLabelKeys`` added (each key the pod has, In its value), as the
    scheduler selects the pods it counts. None selects nothing."""
    selector = constraint.get("labelSelector")
    labels = (pod.get("metadata") or {}).get("labels") or {}
    keys = [key for key in constraint.get("matchLabelKeys") or () if key in labels]
    if selector is None or not keys:
        return selector
    return dict(selector, matchExpressions=list(selector.get("matchExpressions") or []) + [
        {"key": key, "operator": "In", "values": [labels[key]]} for key in keys])


def spread_counts_node(pod, constraint, node, topology_keys):
    """Whether ``constraint`` of ``pod`` counts the pods of ``node``: it has every one of ``topology_keys`` (those
    of all the pod's DoNotSchedule constraints), and by the constraint's node policies its node affinity (unless
    nodeAffinityPolicy is Ignore) and its taints (when nodeTaintsPolicy is Honor) let the pod there."""
    labels = node_labels(node)
    if not all(key in labels for key in topology_keys):
        return False
    if constraint.get("nodeAffinityPolicy", "Honor") != "Ignore" and not matches_node_affinity(pod, node):
        return False
    return constraint.get("nodeTaintsPolicy", "Ignore") != "Honor" or \
        all(tolerates(pod, taint) for taint in blocking_taints(node))


def spread_eligibility(constraint, affinity, tolerations):
    """What decides which nodes a constraint counts, besides topology keys (spread_counts_node), as a key: the pod's
    node affinity (``affinity``, as _PodFitFacts keys it) under the Honor policy, its tolerations under Honor."""
    return (affinity if constraint.get("nodeAffinityPolicy", "Honor") != "Ignore" else "",
            tolerations if constraint.get("nodeTaintsPolicy", "Ignore") == "Honor" else None)


def spread_topology_keys(pod):
    """The topology keys of all the pod's DoNotSchedule constraints: the scheduler counts a node for any of
    them only when it has every one of these labels."""
    return tuple(sorted({constraint.get("topologyKey") for constraint in hard_spread_constraints(pod)}))


def domain_counts(pod, constraint, nodes, pods_by_node):
    """Pods matching ``constraint``'s selector (spread_selector) in the pod's namespace, per value of its topology
    key, over the nodes it counts (spread_counts_node)."""
    namespace = pod["metadata"]["namespace"]
    key = constraint.get("topologyKey")
    required = spread_topology_keys(pod)
    selector = spread_selector(pod, constraint)
    counts = {}
    for node in nodes:
        domain = node_labels(node).get(key)
        if domain is None or not spread_counts_node(pod, constraint, node, required):
            continue
        counts.setdefault(domain, 0)
        counts[domain] += sum(1 for other in pods_by_node.get(node["metadata"]["name"], ())
                              if other["metadata"]["namespace"] == namespace
                              and selector_matches(selector, other["metadata"].get("labels")))
    return counts


NO_MATCH = "no node matches its node selector, affinity or tolerations"


class DomainCounts:
    """Pods per domain of one topology spread constraint, and the smallest count, kept up to date one
    pod and one domain at a time instead of counted again: ``counts`` is what domain_counts would say.
    ``members`` are the domains of the pods counted from the start, one per pod (None: not counted)."""

    def __init__(self, domains=(), members=()):
        self.counts = dict.fromkeys(domains, 0)
        for domain in members:
            if domain is not None:
                self.counts[domain] += 1
        self.min = min(self.counts.values()) if self.counts else 0
        # count -> how many domains have it, so that the smallest count is known without a scan.
        self._domains_at = {}
        for count in self.counts.values():
            self._tally(count, 1)

    def open(self, domain):
        """A domain that had no eligible node has one now."""
        self.counts[domain] = 0
        self._tally(0, 1)
        self.min = 0

    def close(self, domain):
        """A domain has no eligible node left (nor pods, which went with its nodes)."""
        count = self.counts.pop(domain)
        self._tally(count, -1)
        if count == self.min and count not in self._domains_at:
            self.min = min(self._domains_at) if self._domains_at else 0

    def step(self, domain, delta):
        """One pod (``delta`` 1) more or (-1) fewer in ``domain``."""
        count = self.counts[domain]
        self.counts[domain] = count + delta
        self._tally(count, -1)
        self._tally(count + delta, 1)
        if delta < 0:
            self.min = min(self.min, count + delta)
        elif count == self.min and count not in self._domains_at:
            self.min = count + delta

    def _tally(self, count, delta):
        left = self._domains_at.get(count, 0) + delta
        if left:
            self._domains_at[count] = left
        else:
            del self._domains_at[count]


class _Spread:
    """The DomainCounts of one constraint (namespace, selector, topology key) for the pods of one node
    affinity, over the eligible nodes ``domains`` (name -> domain) that it shares with other constraints;
    ``members`` are the nodes of the pods it counts from the start, one name per pod."""

    def __init__(self, selector, eligible, members):
        self.selector = selector
        self.domains = eligible.domains
        self.counts = DomainCounts(eligible.nodes_in, (self.domains.get(name) for name in members))

    def pod_changed(self, labels, name, delta):
        domain = self.domains.get(name)
        if domain is not None and selector_matches(self.selector, labels):
            self.counts.step(domain, delta)


class _Eligible:
    """The nodes (``domains``, name -> domain of ``topology_key``) that ``constraint`` of ``sample`` counts
    (spread_counts_node), how many there are per domain (``nodes_in``), and the _Spreads counted over them."""

    def __init__(self, sample, constraint, topology_key, nodes, topology_keys=()):
        self.sample = sample
        self.constraint = constraint
        self.topology_key = topology_key
        self.topology_keys = topology_keys
        self.domains = {}
        self.nodes_in = {}
        self.spreads = []
        for node in nodes:
            self.node_added(node)

    def node_added(self, node):
        labels = node_labels(node)
        domain = labels.get(self.topology_key)
        if domain is None or not spread_counts_node(self.sample, self.constraint, node, self.topology_keys):
            return
        self.domains[node_name(node)] = domain
        self.nodes_in[domain] = self.nodes_in.get(domain, 0) + 1
        if self.nodes_in[domain] == 1:
            for spread in self.spreads:
                spread.counts.open(domain)

    def node_removed(self, name):
        domain = self.domains.pop(name, None)
        if domain is None:
            return
        self.nodes_in[domain] -= 1
        if not self.nodes_in[domain]:
            del self.nodes_in[domain]
            for spread in self.spreads:
                spread.counts.close(domain)


class _PodFitFacts:
    """What the fit checks read of one pod, worked out once: the keys of its node affinity (alone, and
    with its tolerations), its required pod anti-affinity and affinity terms, its host ports, who it is to the
    anti-affinity of others (namespace and labels), and its DoNotSchedule constraints."""

    def __init__(self, pod):
        spec = pod.get("spec") or {}
        required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution") or {}
        self.affinity = canonical_json([spec.get("nodeSelector") or {}, required.get("nodeSelectorTerms") or []])
        self.acceptance = self.affinity + canonical_json(spec.get("tolerations") or [])
        self.anti_terms = required_pod_terms(pod, "podAntiAffinity")
        self.affinity_terms = required_pod_terms(pod, "podAffinity")
        self.ports = host_ports(pod)
        metadata = pod.get("metadata") or {}
        self.identity = (metadata.get("namespace"), canonical_json(metadata.get("labels") or {}))
        topology_keys = spread_topology_keys(pod)
        tolerations = canonical_json(spec.get("tolerations") or [])
        self.spreads = [_HardSpread(pod, constraint, spread_eligibility(constraint, self.affinity, tolerations),
                                    topology_keys)
                        for constraint in hard_spread_constraints(pod)]


class _HardSpread:
    """One DoNotSchedule constraint of a pod and what checking it reads: the key of its counts, its
    topology key and maxSkew, and whether the pod adds to its own count (counts_itself)."""

    def __init__(self, pod, constraint, eligibility, topology_keys):
        self.constraint = constraint
        self.key = _spread_key(pod, constraint, eligibility, topology_keys)
        self.topology_key = constraint.get("topologyKey")
        self.max_skew = constraint.get("maxSkew", 1)
        self.min_domains = constraint.get("minDomains") or 0
        self.itself = 1 if counts_itself(pod, constraint) else 0


def _spread_key(pod, constraint, eligibility, topology_keys):
    """What a constraint's counts depend on: the pod's namespace, the constraint's topology key and
    selector (spread_selector), which nodes it counts (``eligibility``: spread_eligibility) and the topology keys
    every counted node must have (``topology_keys``, those of all the pod's DoNotSchedule constraints)."""
    return (pod["metadata"]["namespace"], constraint.get("topologyKey"),
            canonical_json(spread_selector(pod, constraint) or {}), eligibility, topology_keys)


class PlacementIndex:
    """What runs where, kept current as pods and nodes come and go: its own unit because it records and never judges.

    What the checks need is indexed as it is first asked for and then kept up
    to date: requests per pod, pods by key, nodes by free cpu, pods by label
    and the counts of each topology spread constraint (``by_label``), and
    the anti-affinity terms of the pods (``holders``).
    """

    def __init__(self, nodes, resident_pods):
        self.nodes = {node["metadata"]["name"]: node for node in nodes}
        self.allocatable = {}
        self.pods_by_node = {name: [] for name in self.nodes}
        for name, node in self.nodes.items():
            self.allocatable[name] = resource_amounts((node.get("status") or {}).get("allocatable"))
        self.free = {name: dict(allocatable) for name, allocatable in self.allocatable.items()}
        # Caches by id(pod) hold the pod too, so that an id is never reused while it is a key.
        self._requests = {}
        self._facts = {}
        self._located = None
        self._by_free_cpu = None
        self._by_domain = {}
        self.by_label = PodsByLabel(self)
        self.holders = AntiAffinityHolders(self)
        # add() without indexes to keep up to date yet, nor caching requests that most pods never need again.
        for pod in resident_pods:
            name = node_of(pod)
            if name in self.nodes:
                free = self.free[name]
                for resource, value in pod_requests(pod).items():
                    free[resource] = free.get(resource, 0.0) - value
                self.pods_by_node[name].append(pod)

    # -- pods and nodes coming and going ------------------------------------

    def add(self, pod, name):
        self._free_changes(name, pod, -1)
        self.pods_by_node[name].append(pod)
        self._file(pod, name, 1)

    def remove(self, pod, name):
        self._free_changes(name, pod, 1)
        key = pod_key(pod)
        kept, gone = [], []
        for other in self.pods_by_node[name]:
            (gone if pod_key(other) == key else kept).append(other)
        self.pods_by_node[name] = kept
        for other in gone:
            self._file(other, name, -1)

    def add_node(self, node):
        """A node that was not in the index, empty."""
        name = node["metadata"]["name"]
        self.nodes[name] = node
        self.allocatable[name] = resource_amounts((node.get("status") or {}).get("allocatable"))
        self.free[name] = dict(self.allocatable[name])
        self.pods_by_node[name] = []
        self._by_domain.clear()
        if self._by_free_cpu is not None:
            bisect.insort(self._by_free_cpu, (-self.free[name]["cpu"], name))
        self.by_label.node_added(node)

    def remove_node(self, name):
        """Takes node ``name`` and its pods out of the index."""
        for pod in self.pods_by_node[name]:
            self._file(pod, name, -1)
        self.by_label.node_removed(name)
        if self._by_free_cpu is not None:
            del self._by_free_cpu[bisect.bisect_left(self._by_free_cpu, (-self.free[name]["cpu"], name))]
        for table in (self.nodes, self.allocatable, self.free, self.pods_by_node):
            del table[name]
        self._by_domain.clear()

    def _free_changes(self, name, pod, sign):
        free = self.free[name]
        if self._by_free_cpu is not None:
            del self._by_free_cpu[bisect.bisect_left(self._by_free_cpu, (-free["cpu"], name))]
        for resource, value in self.requests(pod).items():
            free[resource] = free.get(resource, 0.0) + sign * value
        if self._by_free_cpu is not None:
            bisect.insort(self._by_free_cpu, (-free["cpu"], name))

    def _file(self, pod, name, delta):
        """Keeps the indexes that exist up to date with one pod more (``delta`` 1) or fewer (-1) on node
        ``name``."""
        if self._located is not None:
            self._file_key(pod, name, delta)
        self.by_label.file(pod, name, delta)
        self.holders.file(pod, name, delta)

    def _file_key(self, pod, name, delta):
        places = self._located.setdefault(pod_key(pod), {})
        places[name] = places.get(name, 0) + delta
        if not places[name]:
            del places[name]

    # -- what is where --------------------------------------------------------

    def requests(self, pod):
        """pod_requests(pod), parsed once per pod."""
        known = self._requests.get(id(pod))
        if known is None:
            known = self._requests[id(pod)] = (pod, pod_requests(pod))
        return known[1]

    def facts_of(self, pod):
        """_PodFitFacts(pod), worked out once per pod."""
        known = self._facts.get(id(pod))
        if known is None:
            known = self._facts[id(pod)] = (pod, _PodFitFacts(pod))
        return known[1]

    def located(self, keys):
        """Node name -> how many pods with one of ``keys`` (pod keys) it holds, for the nodes that hold any."""
        if self._located is None:
            self._located = {}
            for name, pods in self.pods_by_node.items():
                for pod in pods:
                    self._file_key(pod, name, 1)
        found = {}
        for key in keys:
            for name, count in self._located.get(key, {}).items():
                found[name] = found.get(name, 0) + count
        return found

    def by_free_cpu(self):
        """The names of the nodes, the most free cpu first, then by name, as the index is when the iteration
        starts; the index must not change while it goes on."""
        if self._by_free_cpu is None:
            self._by_free_cpu = sorted((-free["cpu"], name) for name, free in self.free.items())
        return (name for _cpu, name in self._by_free_cpu)

    def nodes_by_domain(self, topology_key):
        """Domain (value of the label ``topology_key``) -> the names of its nodes, sorted."""
        if topology_key not in self._by_domain:
            by_domain = self._by_domain[topology_key] = {}
            for name in sorted(self.nodes):
                domain = node_labels(self.nodes[name]).get(topology_key)
                if domain is not None:
                    by_domain.setdefault(domain, []).append(name)
        return self._by_domain[topology_key]


class PodsByLabel:
    """The pods of a PlacementIndex by label and the spread counts watching them: built a label at a time, as asked."""

    def __init__(self, index):
        self.index = index
        # Label key (None: any) -> (namespace, value) -> (pods, their node names), two lists rather than a
        # container per pod; a key is indexed once asked for.
        self._labelled = {}
        self._eligible = {}
        self._spreads = {}
        self._watching = {}

    def file(self, pod, name, delta):
        """One pod more (``delta`` 1) or fewer (-1) on node ``name``, under every label indexed so far."""
        for label in self._labelled:
            self._file_label(label, pod, name, delta)

    def _file_label(self, label, pod, name, delta):
        """Pods by namespace and value of ``label`` (None: by namespace only), and the spread counts that
        watch them."""
        metadata = pod["metadata"]
        labels = metadata.get("labels") or {}
        value = labels.get(label) if label is not None else None
        if label is not None and value is None:
            return
        bucket = (metadata["namespace"], value)
        if delta > 0:
            pods, names = self._labelled[label].setdefault(bucket, ([], []))
            pods.append(pod)
            names.append(name)
        else:
            pods, names = self._labelled[label][bucket]
            position = next(position for position, other in enumerate(pods)
                            if other is pod and names[position] == name)
            del pods[position], names[position]
        for spread in self._watching.get((label, bucket), ()):
            spread.pod_changed(labels, name, delta)

    def node_added(self, node):
        for eligible in self._eligible.values():
            eligible.node_added(node)

    def node_removed(self, name):
        for eligible in self._eligible.values():
            eligible.node_removed(name)

    def pods_matching(self, namespace, selector):
        """(pod, node name) of the pods of ``namespace`` that ``selector`` selects."""
        label, bucket = self._bucket_of(namespace, selector)
        if label not in self._labelled:
            # What _file_label does for each pod, at once (nothing watches this label yet).
            index = self._labelled[label] = {}
            for name, pods in self.index.pods_by_node.items():
                for pod in pods:
                    metadata = pod["metadata"]
                    value = (metadata.get("labels") or {}).get(label) if label is not None else None
                    if label is None or value is not None:
                        pods_here, names = index.setdefault((metadata["namespace"], value), ([], []))
                        pods_here.append(pod)
                        names.append(name)
        pods, names = self._labelled[label].get(bucket, ((), ()))
        return [(pod, name) for pod, name in zip(pods, names)
                if selector_matches(selector, pod["metadata"].get("labels"))]

    @staticmethod
    def _bucket_of(namespace, selector):
        """(label key, (namespace, value)) of the index entry that holds every pod ``selector`` may select."""
        label = index_label(selector)
        return (label[0], (namespace, label[1])) if label else (None, (namespace, None))

    def term_pods(self, term):
        """(pod, node name) of the pods PodTerm ``term`` selects."""
        if term.selector is None:
            return []
        if term.namespaces is not None:
            return [found for namespace in sorted(term.namespaces)
                    for found in self.pods_matching(namespace, term.selector)]
        self.pods_matching(None, term.selector)  # indexes the label the selector is looked up by
        label, (_namespace, value) = self._bucket_of(None, term.selector)
        return [(pod, name) for (_namespace, bucket_value), (pods, names) in self._labelled[label].items()
                if bucket_value == value for pod, name in zip(pods, names)
                if selector_matches(term.selector, pod["metadata"].get("labels"))]

    def domain_counts(self, pod, constraint):
        """domain_counts(pod, constraint, nodes, pods_by_node) over the index, from counts kept up to date."""
        spec = pod.get("spec") or {}
        eligibility = spread_eligibility(constraint, self.index.facts_of(pod).affinity,
                                         canonical_json(spec.get("tolerations") or []))
        key = _spread_key(pod, constraint, eligibility, spread_topology_keys(pod))
        return dict(self.spread_counts(pod, constraint, key).counts)

    def spread_counts(self, pod, constraint, key):
        """The DomainCounts of ``constraint`` of ``pod`` (``key``: _spread_key), counted once and then kept."""
        spread = self._spreads.get(key)
        if spread is not None:
            return spread.counts
        namespace, topology_key, _selector, eligibility, topology_keys = key
        eligible = self._eligible.get((eligibility, topology_key, topology_keys))
        if eligible is None:
            eligible = self._eligible[(eligibility, topology_key, topology_keys)] = _Eligible(
                pod, constraint, topology_key, self.index.nodes.values(), topology_keys)
        selector = spread_selector(pod, constraint)
        spread = self._spreads[key] = _Spread(selector, eligible,
                                              [name for _other, name in self.pods_matching(namespace, selector)])
        eligible.spreads.append(spread)
        self._watching.setdefault(self._bucket_of(namespace, selector), []).append(spread)
        return spread.counts


class AntiAffinityHolders:
    """The required anti-affinity terms of a PlacementIndex's pods and where they run: built once a pod is checked."""

    def __init__(self, index):
        self.index = index
        # The required anti-affinity terms of the pods in the PlacementSimulator, by what they select (selector, namespaces,
        # topology key) -> [PodTerm, {node name: [pods holding it there]}]; built when first asked for.
        self._holders = None
        # (namespace, labels) of a pod -> the keys of _holders whose terms select it.
        self._held_by = {}

    def file(self, pod, name, delta):
        """One pod more (``delta`` 1) or fewer (-1) on node ``name``, once the terms are indexed."""
        if self._holders is None:
            return
        if not ((pod.get("spec") or {}).get("affinity") or {}).get("podAntiAffinity"):
            return  # most pods: no need to work out all their facts to find they hold nothing
        for term in self.index.facts_of(pod).anti_terms:
            key = (canonical_json(term.selector), term.namespaces, term.topology_key)
            if key not in self._holders:
                self._holders[key] = [term, {}]
                self._held_by.clear()
            places = self._holders[key][1]
            if delta > 0:
                places.setdefault(name, []).append(pod)
            else:
                places[name] = [other for other in places.get(name, ()) if other is not pod]
                if not places[name]:
                    del places[name]

    def holding(self, pod, facts):
        """The [PodTerm, {node: pods}] of the pods in the PlacementSimulator whose required anti-affinity selects ``pod``."""
        if self._holders is None:
            self._holders = {}
            for name, pods in self.index.pods_by_node.items():
                for other in pods:
                    self.file(other, name, 1)
        if not self._holders:
            return []
        keys = self._held_by.get(facts.identity)
        if keys is None:
            keys = self._held_by[facts.identity] = [key for key, (term, _places) in self._holders.items()
                                                    if term_selects(term, pod)]
        return [self._holders[key] for key in keys if self._holders[key][1]]


class FitRules:
    """Whether a pod may go to a node, as the scheduler's filters decide: it judges the index and never changes it.

    The nodes whose labels and taints accept a pod are cached per node as
    they are first asked for; the PlacementSimulator tells the rules of nodes that come
    and go (``node_added``, ``node_removed``).
    """

    def __init__(self, index):
        self.index = index
        self.limits = AffinityAndSpreadLimits(index)
        self._accepts = {name: {} for name in index.nodes}
        self._accepting = {}

    def node_added(self, name):
        self._accepts[name] = {}
        self._accepting.clear()

    def node_removed(self, name):
        del self._accepts[name]
        self._accepting.clear()

    def accepting(self, pod):
        """The names of the nodes whose labels and taints let ``pod`` run there (node_accepts), in the
        PlacementSimulator's order, as a read-only mapping (name -> None)."""
        facts = self.index.facts_of(pod)
        names = self._accepting.get(facts.acceptance)
        if names is None:
            names = self._accepting[facts.acceptance] = types.MappingProxyType(dict.fromkeys(
                name for name in self.index.nodes if self.accepts_on(pod, facts, name)))
        return names

    def accepts_on(self, pod, facts, name):
        """Whether the labels and taints of node ``name`` let the pod (``facts``) run there."""
        known = self._accepts[name]
        if facts.acceptance not in known:
            known[facts.acceptance] = node_accepts(pod, self.index.nodes[name])
        return known[facts.acceptance]

    def why_not(self, pod, name):
        """None when ``pod`` may go to node ``name`` now; otherwise the reason it may not."""
        facts = self.index.facts_of(pod)
        if not self.accepts_on(pod, facts, name):
            return NO_MATCH
        refusal = self.limits.inter_pod_refusal(self.limits.inter_pod_limits(pod, facts), name)
        if refusal is not None:
            return refusal
        if self.ports_taken(facts, name):
            return ports_reason(facts.ports)
        requests = self.index.requests(pod)
        if not self.has_room(requests, name):
            return room_reason(requests)
        broken = self.limits.broken_spread(self.limits.spread_limits(pod, facts), name)
        if broken is not None:
            return "its topology spread constraint on %s would be broken" % broken.get("topologyKey")
        return None

    def has_room(self, requests, name):
        """Whether node ``name`` has ``requests`` (a pod's, of every resource) free."""
        free = self.index.free[name]
        for resource, value in requests.items():
            if free.get(resource, 0.0) + 1e-9 < value:
                return False
        return True

    def ports_taken(self, facts, name):
        """Whether a pod on node ``name`` takes a host port the pod (``facts``) wants."""
        return bool(facts.ports) and any(ports_clash(facts.ports, self.index.facts_of(other).ports)
                                         for other in self.index.pods_by_node[name])

    def last_refusal(self, pod, order):
        """Why a pod that fits nowhere in ``order`` is left out: what the last node whose labels and taints
        accept it says, as the scheduler reports the most telling reason."""
        facts = self.index.facts_of(pod)
        for node in reversed(order):
            if self.accepts_on(pod, facts, node["metadata"]["name"]):
                return self.why_not(pod, node["metadata"]["name"])
        return NO_MATCH


class AffinityAndSpreadLimits:
    """What other pods allow a pod by pod (anti-)affinity and spread: worked out once per fit, then asked per node."""

    def __init__(self, index):
        self.index = index

    # -- pod affinity and anti-affinity -------------------------------------------

    def _domains_of(self, names, key):
        return {domain for domain in (node_labels(self.index.nodes[name]).get(key) for name in names)
                if domain is not None}

    def inter_pod_limits(self, pod, facts):
        """(refusals, held, requirements) of the required pod (anti-)affinity rules for ``pod`` as the PlacementSimulator is
        now. refusals: (key, domains, reason) of its own anti-affinity, a node whose value of the key is among
        the domains is refused; held: key -> domain -> (pod key, reason) of the pods whose anti-affinity keeps it
        out of that domain; requirements: (key, domains, reason) of its affinity, a node must have the key, with
        a value among the domains (None: any)."""
        index = self.index
        refusals, held, requirements = [], {}, []
        for term in facts.anti_terms:
            domains = self._domains_of({name for _other, name in index.by_label.term_pods(term)}, term.topology_key)
            if domains:
                refusals.append((term.topology_key, domains, anti_affinity_reason(term)))
        for term, places in index.holders.holding(pod, facts):
            for name, holders in places.items():
                domain = node_labels(index.nodes[name]).get(term.topology_key)
                if domain is None:
                    continue
                holder = min(holders, key=pod_key)
                known = held.setdefault(term.topology_key, {}).get(domain)
                if known is None or pod_key(holder) < known[0]:
                    held[term.topology_key][domain] = (pod_key(holder), resident_anti_affinity_reason(holder, term))
        terms = facts.affinity_terms
        if terms:
            reason = affinity_reason(terms)
            selected = [name for other, name in index.by_label.term_pods(terms[0])
                        if all(term_selects(term, other) for term in terms[1:])]
            allowed = [self._domains_of(selected, term.topology_key) for term in terms]
            if any(allowed):
                requirements.extend((term.topology_key, domains, reason) for term, domains in zip(terms, allowed))
            elif all(term_selects(term, pod) for term in terms):
                requirements.extend((term.topology_key, None, reason) for term in terms)
            else:
                requirements.append((None, (), reason))
        return refusals, held, requirements

    def inter_pod_refusal(self, limits, name):
        """The reason of the first of ``limits`` (inter_pod_limits) that keeps the pod off node ``name``, or None:
        its own anti-affinity, then that of the pod with the first key among those that keep it out, then its
        affinity."""
        refusals, held, requirements = limits
        if not refusals and not held and not requirements:
            return None
        labels = node_labels(self.index.nodes[name])
        for key, domains, reason in refusals:
            if labels.get(key) in domains:
                return reason
        holders = [by_domain[labels[key]] for key, by_domain in held.items() if labels.get(key) in by_domain]
        if holders:
            return min(holders)[1]
        for key, domains, reason in requirements:
            domain = labels.get(key) if key is not None else None
            if domain is None or (domains is not None and domain not in domains):
                return reason
        return None

    # -- topology spread -----------------------------------------------------------

    def spread_limits(self, pod, facts):
        """(constraint, topology key, pods per domain, the most a domain may hold for the pod to join it without
        breaking maxSkew) of each DoNotSchedule constraint of the pod. They hold until the PlacementSimulator changes, so
        that a fit works them out once for all the nodes it tries."""
        limits = []
        for hard in facts.spreads:
            counts = self.index.by_label.spread_counts(pod, hard.constraint, hard.key)
            floor = 0 if len(counts.counts) < hard.min_domains else counts.min
            limits.append((hard.constraint, hard.topology_key, counts.counts, floor + hard.max_skew - hard.itself))
        return limits

    def broken_spread(self, limits, name):
        """The first constraint of ``limits`` (spread_limits) that placing the pod on ``name`` would break,
        or None."""
        labels = node_labels(self.index.nodes[name])
        for constraint, topology_key, counts, most in limits:
            domain = labels.get(topology_key)
            # A domain no counted node is in (its nodes lack the key of another constraint, which that one
            # refuses) holds none, as the scheduler counts it.
            if domain is None or (counts and counts.get(domain, 0) > most):
                return constraint
        return None


class PlacementSimulator:
    """What the nodes have free and who runs there, as pods are placed on them or taken off. Pure.

    ``nodes`` are the nodes pods may be placed on; ``resident_pods`` are the
    pods already on them. Nodes may come and go too (``add_node``,
    ``remove_node``), so that one PlacementSimulator serves a whole plan. What runs where
    is its PlacementIndex (``index``), what may go where its FitRules
    (``rules``); the PlacementSimulator places pods by both and answers for both.
    """

    def __init__(self, nodes, resident_pods):
        self.index = PlacementIndex(nodes, resident_pods)
        self.rules = FitRules(self.index)

    # -- the index and the rules, as the planners read them ------------------------

    @property
    def nodes(self):
        return self.index.nodes

    @property
    def allocatable(self):
        return self.index.allocatable

    @property
    def free(self):
        return self.index.free

    @property
    def pods_by_node(self):
        return self.index.pods_by_node

    def add(self, pod, name):
        self.index.add(pod, name)

    def remove(self, pod, name):
        self.index.remove(pod, name)

    def add_node(self, node):
        """A node that was not in the PlacementSimulator, empty."""
        self.index.add_node(node)
        self.rules.node_added(node["metadata"]["name"])

    def remove_node(self, name):
        """Takes node ``name`` and its pods out of the PlacementSimulator."""
        self.index.remove_node(name)
        self.rules.node_removed(name)

    def requests(self, pod):
        return self.index.requests(pod)

    def located(self, keys):
        return self.index.located(keys)

    def by_free_cpu(self):
        return self.index.by_free_cpu()

    def nodes_by_domain(self, topology_key):
        return self.index.nodes_by_domain(topology_key)

    def pods_matching(self, namespace, selector):
        return self.index.by_label.pods_matching(namespace, selector)

    def domain_counts(self, pod, constraint):
        return self.index.by_label.domain_counts(pod, constraint)

    def accepting(self, pod):
        return self.rules.accepting(pod)

    def why_not(self, pod, name):
        return self.rules.why_not(pod, name)

    # -- placing ----------------------------------------------------------------

    def place(self, pods, nodes, preference=None, order_group=None):
        """Places ``pods`` on ``nodes`` (of this PlacementSimulator) as ``fit`` does, and keeps them there.

        ``order_group(pod)``, when given with ``preference``, names the pods
        for which ``preference`` orders the nodes alike, so that the order is
        worked out once per group rather than once per pod.
        """
        requests = self.index.requests
        ordered = sorted(pods, key=lambda p: (-requests(p)["cpu"], -requests(p)["memory"], pod_key(p)))
        # The smallest request of the pods from each one on: a node with less free than that takes none of
        # them, and nodes only fill up here, so an order of nodes can skip its leading such nodes for good.
        smallest, running = [], {resource: float("inf") for resource in RESOURCES}
        for pod in reversed(ordered):
            running = {resource: min(running[resource], requests(pod)[resource]) for resource in RESOURCES}
            smallest.append(running)
        smallest.reverse()
        # One order of the nodes for all pods, one per order group, or one per pod.
        everyone = _NodeOrder(list(nodes))
        node_orders = {}
        placement, unplaced = {}, []
        for index, pod in enumerate(ordered):
            if preference is None:
                node_order = everyone
            elif order_group is None:
                node_order = _NodeOrder(sorted(everyone.order, key=lambda n: preference(pod, n)))
            else:
                group = order_group(pod)
                if group not in node_orders:
                    node_orders[group] = _NodeOrder(sorted(everyone.order, key=lambda n: preference(pod, n)))
                node_order = node_orders[group]
            order = node_order.order
            while node_order.start < len(order) and \
                    self._takes_none(order[node_order.start]["metadata"]["name"], smallest[index]):
                node_order.start += 1
            name = self._first_fit(pod, node_order)
            if name is not None:
                self.index.add(pod, name)
                placement[pod_key(pod)] = name
            else:
                unplaced.append({"pod": pod_key(pod), "reason": self.rules.last_refusal(pod, order)})
        return placement, unplaced

    def _takes_none(self, name, smallest):
        free = self.index.free[name]
        return any(free[resource] + 1e-9 < smallest[resource] for resource in RESOURCES)

    def _first_fit(self, pod, node_order):
        """The name of the first node of ``node_order`` from its start on where ``pod`` may go, or None."""
        rules, limits = self.rules, self.rules.limits
        facts, requests = self.index.facts_of(pod), self.index.requests(pod)
        spread = inter_pod = None
        order, position = node_order.order, node_order.start
        while position < len(order):
            name = order[position]["metadata"]["name"]
            if not rules.accepts_on(pod, facts, name):
                position += 1
                continue
            if spread is None:
                spread = limits.spread_limits(pod, facts)
                inter_pod = limits.inter_pod_limits(pod, facts)
            broken = limits.broken_spread(spread, name)
            if broken is not None:
                # The rest of the run of nodes in this node's domain would break the constraint as well.
                position = node_order.run_ends(broken.get("topologyKey"), self.index.nodes)[position]
            elif rules.has_room(requests, name) and limits.inter_pod_refusal(inter_pod, name) is None and \
                    not rules.ports_taken(facts, name):
                return name
            else:
                position += 1
        return None


def room_reason(requests):
    """Why a pod fits on no node for want of room: its cpu and memory, and any other resource it requests."""
    shown = {"cpu": requests["cpu"], "memory": requests["memory"]}
    shown.update((resource, value) for resource, value in requests.items() if resource not in RESOURCES and value)
    return "no node has room for its requests (%s)" % amounts_text(shown, sorted(shown, key=_resource_order))


def _resource_order(resource):
    return (resource not in RESOURCES, RESOURCES.index(resource) if resource in RESOURCES else 0, resource)


def ports_reason(ports):
    return "its host port %s is taken on every node" % ", ".join(
        "%s/%d" % (protocol, port) for protocol, port, _address in sorted(ports))


class _NodeOrder:
    """An order of the nodes that PlacementSimulator.place fits pods in: where fits start (the nodes before ``start`` take
    none of the pods left), and per topology key the ends of its runs of nodes of one domain (``run_ends``)."""

    def __init__(self, order):
        self.order = order
        self.start = 0
        self._run_ends = {}

    def run_ends(self, topology_key, nodes):
        """For each position of the order, the position just after the run of nodes around it that have the same
        value of label ``topology_key`` (or none) on ``nodes`` (name -> node), worked out once per key."""
        ends = self._run_ends.get(topology_key)
        if ends is None:
            ends = self._run_ends[topology_key] = list(range(1, len(self.order) + 1))
            domains = [node_labels(nodes[node["metadata"]["name"]]).get(topology_key) for node in self.order]
            for position in range(len(ends) - 2, -1, -1):
                if domains[position] == domains[position + 1]:
                    ends[position] = ends[position + 1]
        return ends


def fit(pods, nodes, resident_pods, preference=None, bystanders=()):
    """Place ``pods`` on ``nodes`` by requests, first fit in decreasing cpu order. Pure.

    ``resident_pods`` are already on those nodes (or on ``bystanders``, nodes
    that take no pod but whose pods count for topology spread, as the
    scheduler counts them) and stay. ``preference(pod, node)``, when given,
    orders the nodes for each pod (lowest first; ties keep the order of
    ``nodes``). Returns (placement pod key -> node name, unplaced [{pod, reason}]).
    """
    nodes = list(nodes)
    return PlacementSimulator(nodes + list(bystanders), resident_pods).place(pods, nodes, preference)
