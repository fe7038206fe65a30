"""Bad input is refused before anything changes (issue 12).

Every case runs one module, or a role through its playbook, with one bad
input, and checks three things: the task failed; its message is one line, no
traceback, that names the option or the object and the problem; and nothing
changed in the cluster (the test's nodes, the Events in its namespace and on
its nodes, the warm placeholders and what they need, the cluster's Lease).

An unknown namespace in ``evict`` is refused too: a drain of a namespace that
does not exist would evict nothing and look like success. That needs an API
read, so the engine does it, not the module's validation.
"""

from __future__ import annotations

import json
import time

import pytest
import yaml
from kube import unless_missing
from kubernetes import client as k8s_client

LEASE = ("kubeops-rotation", "kube-system")
WARM_NAMESPACE = "kubeops-warm"
WARM_PRIORITY_CLASS = "kubeops-warm-placeholder"
CAPACITY = {"cpu": "4", "memory": "16Gi", "pods": "110"}

# (id, what to run, its arguments, substrings of the one-line message, connection[, known gap]).
# "module" cases run through run_play, "role" cases through run_playbook. In strings, {node} and {other} are
# the test's two nodes, {missing} a node that does not exist, {namespace} the test's namespace, {test_id} its id.
CASES = [
    ("cluster_info-blank-node_selector", "module", "cluster_info", {"node_selector": "  "},
     ["node_selector is empty"], None),
    ("cluster_info-wrong-context", "module", "cluster_info", {},
     ["Cannot load the Kubernetes configuration", "no-such-context"], "wrong-context"),
    ("cordon-empty-nodes", "module", "cordon", {"nodes": []},
     ["nodes is empty: name at least one node"], None),
    ("cordon-malformed-node_selector", "module", "cordon", {"node_selector": "=x"},
     ['node_selector "=x" is not a label selector'], None),
    ("cordon-unknown-node", "module", "cordon", {"nodes": ["{node}", "{missing}"]},
     ["No node named {missing}; nothing was changed."], None),
    ("cordon-lease-duration-2", "module", "cordon",
     {"nodes": ["{node}"], "lease": {"run_id": "{test_id}", "duration": 2}},
     ["lease.duration must be 5 seconds or more, got 2"], None),
    ("evict-blank-pod_selector", "module", "evict", {"namespaces": ["{namespace}"], "pod_selector": ""},
     ["pod_selector is empty"], None),
    ("evict-malformed-pod_selector", "module", "evict", {"namespaces": ["{namespace}"], "pod_selector": "a==b==c"},
     ['pod_selector "a==b==c" is not a label selector', '"==" follows a==b'], None),
    ("evict-malformed-node_selector", "module", "evict", {"node_selector": "app in (a"},
     ['node_selector "app in (a" is not a label selector', 'no closing ")"'], None),
    ("evict-malformed-field_selector", "module", "evict", {"nodes": ["{node}"], "field_selector": "status.phase"},
     ['field_selector "status.phase" is not a field selector'], None),
    ("evict-empty-namespaces", "module", "evict", {"namespaces": []},
     ["namespaces is empty"], None),
    ("evict-timeout-0", "module", "evict", {"nodes": ["{node}"], "timeout": 0},
     ["timeout must be 1 or more, got 0"], None),
    ("evict-max_in_flight-negative", "module", "evict", {"nodes": ["{node}"], "max_in_flight": -1},
     ["max_in_flight must be 1 or more, got -1"], None),
    ("evict-max_unavailable-over-100", "module", "evict", {"nodes": ["{node}"], "max_unavailable_per_owner": "150%"},
     ["max_unavailable_per_owner must be a count like 1 or a percent like 25%, got 150%"], None),
    ("evict-unknown-node", "module", "evict", {"nodes": ["{missing}"]},
     ["No node named {missing}; nothing was changed."], None),
    ("evict-keep_zones-unknown-node", "module", "evict",
     {"nodes": ["{node}", "{missing}"], "keep_zones": True, "avoid_nodes": ["{other}"]},
     ["No node named {missing}; nothing was changed."], None),
    ("evict-unknown-namespace", "module", "evict", {"namespaces": ["does-not-exist"]},
     ["No namespace named does-not-exist"], None),
    ("evict-unreachable-host", "module", "evict", {"nodes": ["{node}"]},
     ["Cannot reach the API server at https://127.0.0.1:1"], "unreachable"),
    ("lease-blank-run_id", "module", "lease", {"run_id": " "},
     ["run_id is empty"], None),
    ("lease-missing-kubeconfig", "module", "lease", {"run_id": "{test_id}"},
     ["kubeconfig", "absent.yaml does not exist"], "missing-kubeconfig"),
    ("rebalance-blank-node_selector", "module", "rebalance", {"namespaces": ["{namespace}"], "node_selector": ""},
     ["node_selector is empty"], None),
    ("rebalance-max_skew-0", "module", "rebalance", {"namespaces": ["{namespace}"], "max_skew": 0},
     ["max_skew must be 1 or more, got 0"], None),
    ("rebalance-utilization_deviation-100", "module", "rebalance",
     {"namespaces": ["{namespace}"], "strategies": ["utilization"], "utilization_deviation": 100},
     ["utilization_deviation must be between 1 and 99, got 100"], None),
    ("replace_pods-malformed-pod", "module", "replace_pods", {"pods": ["{namespace}"], "run_id": "{test_id}"},
     ["pods takes namespace/name, got {namespace}."], None),
    ("replace_pods-blank-run_id", "module", "replace_pods", {"pods": [], "run_id": " "},
     ["run_id is empty"], None),
    ("rollout_restart-empty-target-name", "module", "rollout_restart",
     {"targets": [{"kind": "Deployment", "name": "", "namespace": "{namespace}"}]},
     ["targets[1].name is empty"], None),
    ("rollout_restart-malformed-label_selector", "module", "rollout_restart",
     {"label_selector": "app in (a", "namespaces": ["{namespace}"]},
     ['label_selector "app in (a" is not a label selector'], None),
    ("rollout_restart-timeout-0", "module", "rollout_restart", {"on_nodes": ["{node}"], "timeout": 0},
     ["timeout must be 1 or more, got 0"], None),
    ("rotation_plan-batch_size-0", "module", "rotation_plan", {"nodes": ["{node}"], "batch_size": "0"},
     ["batch_size must be a count like 1 or a percent like 25%, got 0."], None),
    ("rotation_plan-batch_size-over-100", "module", "rotation_plan", {"nodes": ["{node}"], "batch_size": "150%"},
     ["batch_size must be a count like 1 or a percent like 25%, got 150%."], None),
    ("rotation_plan-no-nodes", "module", "rotation_plan", {"nodes": []},
     ["one of nodes, node_selector or karpenter_drifted is needed"], None),
    ("rotation_plan-unknown-node", "module", "rotation_plan", {"nodes": ["{node}", "{missing}"]},
     ["No node named {missing}"], None),
    ("rotation_plan-template_capacity-without-pods", "module", "rotation_plan",
     {"nodes": ["{node}"], "template_capacity": {"cpu": "4", "memory": "16Gi"}},
     ["template_capacity needs cpu, memory, pods; pods missing."], None),
    ("rotation_state-empty-nodes", "module", "rotation_state",
     {"nodes": [], "rotation_id": "{test_id}", "phase": "drained"},
     ["nodes is empty: name at least one node."], None),
    ("rotation_state-empty-rotation_id", "module", "rotation_state",
     {"nodes": ["{node}"], "rotation_id": "", "phase": "planned"},
     ["rotation_id is empty"], None),
    ("warm_nodes-count-negative", "module", "warm_nodes", {"count": -1},
     ["count must be 0 or more, got -1"], None),
    ("warm_nodes-zone-count-negative", "module", "warm_nodes", {"zones": [{"zone": "zone-a", "count": -1}]},
     ["zones[1].count must be 0 or more, got -1"], None),
    ("warm_nodes-requests-not-quantities", "module", "warm_nodes", {"count": 1, "requests": {"cpu": "lots"}},
     ['requests.cpu "lots" is not a Kubernetes quantity'], None),
    ("warm_nodes-count-and-capacity_for_nodes", "module", "warm_nodes", {"count": 1, "capacity_for_nodes": ["{node}"]},
     ["mutually exclusive: count|capacity_for_nodes|zones"], None),
    ("warm_nodes-template_capacity-and-template_node", "module", "warm_nodes",
     {"capacity_for_nodes": ["{node}"], "template_capacity": CAPACITY, "template_node": "{other}"},
     ["mutually exclusive: template_capacity|template_node"], None),
    ("warm_nodes-template_capacity-not-quantities", "module", "warm_nodes",
     {"capacity_for_nodes": ["{node}"], "template_capacity": dict(CAPACITY, memory="16 GB")},
     ['template_capacity.memory "16 GB" is not a Kubernetes quantity'], None),
    ("warm_nodes-wrong-token", "module", "warm_nodes", {"count": 1},
     ["The API server refused a request", "(HTTP 401)"], "wrong-token"),
    ("rotate_nodes-batch_size-0", "role", "rotate_nodes",
     {"rotate_nodes_id": "{test_id}", "rotate_nodes_nodes": ["{node}"], "rotate_nodes_batch_size": "0"},
     ["batch_size must be a count like 1 or a percent like 25%, got 0."], None),
    ("rotate_nodes-soak-negative", "role", "rotate_nodes",
     {"rotate_nodes_id": "{test_id}", "rotate_nodes_nodes": ["{node}"], "rotate_nodes_soak_seconds": -1},
     ["rotate_nodes_soak_seconds must be 0 or more, got -1."], None),
    ("rotate_nodes-lease-seconds-3", "role", "rotate_nodes",
     {"rotate_nodes_id": "{test_id}", "rotate_nodes_nodes": ["{node}"], "rotate_nodes_lease_seconds": 3},
     ["rotate_nodes_lease_seconds must be 5 or more, got 3."], None),
    ("rotate_nodes-malformed-node_selector", "role", "rotate_nodes",
     {"rotate_nodes_id": "{test_id}", "rotate_nodes_node_selector": "app in (a"},
     ['node_selector "app in (a" is not a label selector'], None),
    ("drain_node-max_in_flight-0", "role", "drain_node",
     {"drain_node_nodes": ["{node}"], "drain_node_max_in_flight": 0},
     ["drain_node_max_in_flight must be 1 or more, got 0."], None),
    ("drain_node-malformed-node_selector", "role", "drain_node", {"drain_node_node_selector": "=x"},
     ['node_selector "=x" is not a label selector', "Nothing was changed."], None),
    ("drain_node-no-nodes", "role", "drain_node", {"drain_node_nodes": [], "drain_node_node_selector": ""},
     ["drain_node_nodes and drain_node_node_selector are both empty"], None),
    ("drain_node-unknown-node", "role", "drain_node", {"drain_node_nodes": ["{missing}"]},
     ["No node named {missing}; nothing was changed."], None),
    ("rebalance-role-malformed-pod_selector", "role", "rebalance",
     {"rebalance_namespaces": ["{namespace}"], "rebalance_pod_selector": "a==b==c"},
     ['pod_selector "a==b==c" is not a label selector'], None),
]


def cluster_snapshot(cluster, nodes, namespace):
    """What a refused call must leave as it was: the resourceVersion of each of ``nodes``, the Events in
    ``namespace`` and on those nodes, the warm placeholders' Deployments, namespace and PriorityClass, and
    the cluster's Lease (None when absent)."""
    def version_or_none(read, *args):
        found = unless_missing(read, *args)
        return found.metadata.resource_version if found is not None else None

    def ours(events):
        # The node controller and kwok record Events of their own on new nodes, whenever they get to it.
        return [event for event in events if "kubeops.rotation" in (
            event.reporting_component, event.source.component if event.source else None)]

    node_events = ours(cluster.core.list_namespaced_event("default", field_selector="involvedObject.kind=Node").items)
    return {
        "nodes": {name: version_or_none(cluster.core.read_node, name) for name in nodes},
        "events in namespace": len(ours(cluster.core.list_namespaced_event(namespace).items)),
        "events on nodes": len([event for event in node_events if event.involved_object.name in nodes]),
        "warm deployments": {deployment.metadata.name: deployment.metadata.resource_version
                             for deployment in cluster.apps.list_namespaced_deployment(WARM_NAMESPACE).items},
        "warm namespace": version_or_none(cluster.core.read_namespace, WARM_NAMESPACE) is not None,
        "warm priority class": version_or_none(k8s_client.SchedulingV1Api(cluster.api_client).read_priority_class,
                                               WARM_PRIORITY_CLASS) is not None,
        "lease": version_or_none(cluster.coordination.read_namespaced_lease, *LEASE),
    }


def filled(value, names):
    """``value`` with {node}, {namespace}... replaced in every string, however deep."""
    if isinstance(value, str):
        return value.format(**names)
    if isinstance(value, list):
        return [filled(item, names) for item in value]
    if isinstance(value, dict):
        return {key: filled(item, names) for key, item in value.items()}
    return value


def connection_for(kind, cluster, tmp_path):
    """module_defaults for a broken connection, or None for the test cluster's own."""
    if kind is None:
        return None
    if kind == "missing-kubeconfig":
        return {"kubeconfig": str(tmp_path / "absent.yaml")}
    if kind == "wrong-context":
        return {"kubeconfig": cluster.kubeconfig, "context": "no-such-context"}
    if kind == "unreachable":
        return {"host": "https://127.0.0.1:1", "validate_certs": False}
    assert kind == "wrong-token", kind
    with open(cluster.kubeconfig) as handle:
        server = yaml.safe_load(handle)["clusters"][0]["cluster"]["server"]
    return {"host": server, "api_key": "wrong", "validate_certs": False}


def last_failure(stdout):
    """The result of the last task that failed, as ansible-playbook prints it ("... FAILED! => {...}")."""
    failures = [line.split("FAILED! => ", 1)[1] for line in stdout.splitlines() if "FAILED! => " in line]
    assert failures, "no task failed:\n%s" % stdout[-3000:]
    return json.loads(failures[-1])


@pytest.mark.parametrize("kind, name, arguments, expected, connection", [
    pytest.param(*case[1:6], id=case[0], marks=case[6:]) for case in CASES])
def test_bad_input_fails_in_one_line_and_changes_nothing(
        cluster, namespace, make_nodes, run_play, run_playbook, test_id, tmp_path,
        kind, name, arguments, expected, connection):
    nodes = make_nodes(2, prefix="bad")
    names = {"node": nodes[0], "other": nodes[1], "missing": test_id + "-missing", "namespace": namespace,
             "test_id": test_id}
    arguments, expected = filled(arguments, names), filled(expected, names)
    before = cluster_snapshot(cluster, nodes, namespace)

    started = time.monotonic()
    if kind == "module":
        play = run_play([{"kubeops.rotation." + name: arguments}],
                        connection=connection_for(connection, cluster, tmp_path))
        assert play.rc != 0 and (play.steps[0] or {}).get("failed") is True, play
        result, output = play.steps[0], play.stdout + play.stderr
    else:
        completed = run_playbook("kubeops.rotation." + name, arguments)
        assert completed.returncode != 0, completed.stdout[-3000:]
        result, output = last_failure(completed.stdout), completed.stdout + completed.stderr
    elapsed = time.monotonic() - started

    message = str(result.get("msg", ""))
    assert "\n" not in message.strip() and "Traceback" not in output and "MODULE FAILURE" not in message, message
    for part in expected:
        assert part in message, "%r not in %r" % (part, message)
    if connection == "unreachable":
        assert elapsed < 25, "an unreachable server took %.0f s to report" % elapsed
    assert cluster_snapshot(cluster, nodes, namespace) == before, message
