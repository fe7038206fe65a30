"""kubeops.rotation.k8s_drain on the real control plane, run through ansible-playbook with kubernetes.core.k8s_drain's
task arguments: its result lines, changed and check mode, its refusal in kubectl's words, and a drain within a PDB
that kubernetes.core's module would have failed at its first refused eviction."""

from __future__ import annotations

from conftest import TEST_LABEL, deployment_under_pdb, wait_until
from kube import DisruptionWatcher, daemon_set, deployment, running_pods

CORDONED_BY = "kubeops.io/cordoned-by"


def pods_on(cluster, namespace, node):
    return sorted(pod.metadata.name for pod in cluster.pods(namespace) if pod.spec.node_name == node)


def k8s_drain(**arguments):
    return {"kubeops.rotation.k8s_drain": arguments}


def node_info(test_id):
    """A task that reports the test's nodes as the cluster has them (cluster_info), between two k8s_drain steps."""
    return {"kubeops.rotation.cluster_info": {"node_selector": "%s=%s" % (TEST_LABEL, test_id)}}


def unschedulable(info, name):
    return next(node["unschedulable"] for node in info["nodes"] if node["name"] == name)


def test_drain_moves_every_pod_within_a_pdb_that_allows_one_at_a_time(cluster, namespace, make_nodes, run_play,
                                                                      test_id):
    (old,) = make_nodes(1, prefix="old")
    deployment_under_pdb(cluster, namespace, test_id, "web", 3, max_unavailable=1)
    (new,) = make_nodes(1, prefix="new")
    drain = k8s_drain(name=old, delete_options={"ignore_daemonsets": True, "wait_timeout": 180})
    with DisruptionWatcher(cluster, namespace) as watcher:
        play = run_play([dict(drain, check_mode=True), node_info(test_id), drain, drain])
    assert play.rc == 0, play
    planned, before, done, again = play.steps

    taken = "node %s marked unschedulable. 3 Pod(s) deleted from node." % old
    assert planned["changed"] is True and planned["result"] == taken
    assert {entry["outcome"] for entry in planned["pods"] if entry["namespace"] == namespace} == {"planned"}
    assert unschedulable(before, old) is False, "check mode cordoned the node"

    # k8s_drain of kubernetes.core asks for the three evictions at once and fails at the PDB's refusal of the
    # second; here each waits until the PDB allows it.
    assert done["changed"] is True and done["result"] == taken
    assert done["summary"]["evicted"] == 3 and done["remaining"] == []
    assert again["changed"] is False and again["result"] == "node %s already marked unschedulable." % old

    node = cluster.core.read_node(old)
    assert node.spec.unschedulable is True and node.metadata.annotations[CORDONED_BY]
    assert pods_on(cluster, namespace, old) == []
    wait_until(lambda: running_pods(cluster, namespace, "app=web", 3), 60, "web back to 3 on the new node")
    assert {pod.spec.node_name for pod in cluster.pods(namespace, "app=web")} == {new}
    assert watcher.min_ready["web"] >= 2, "the drain took web below what its PDB allows"


def test_cordon_and_uncordon_change_only_what_is_not_so_and_check_mode_changes_nothing(
        cluster, make_nodes, run_play, test_id):
    node, theirs = make_nodes(2)
    cluster.kubectl("cordon", theirs)
    cordon, uncordon = k8s_drain(state="cordon", name=node), k8s_drain(state="uncordon", name=node)
    play = run_play([
        dict(cordon, check_mode=True), node_info(test_id),
        cordon, node_info(test_id),
        dict(cordon, check_mode=True), cordon,
        dict(uncordon, check_mode=True), node_info(test_id),
        uncordon, node_info(test_id),
        dict(uncordon, check_mode=True), uncordon,
        k8s_drain(state="uncordon", name=theirs),
    ])
    assert play.rc == 0, play
    (cordon_checked, after_check, cordoned, after_cordon, cordon_again_checked, cordon_again,
     uncordon_checked, after_uncordon_check, uncordoned, after_uncordon, uncordon_again_checked, uncordon_again,
     theirs_uncordoned) = play.steps

    assert (cordon_checked["changed"], cordon_checked["result"]) == (True, "node %s marked unschedulable." % node)
    assert unschedulable(after_check, node) is False
    assert (cordoned["changed"], cordoned["result"]) == (True, "node %s marked unschedulable." % node)
    assert unschedulable(after_cordon, node) is True
    for step in (cordon_again_checked, cordon_again):
        assert (step["changed"], step["result"]) == (False, "node %s already marked unschedulable." % node)

    assert (uncordon_checked["changed"], uncordon_checked["result"]) == (True, "node %s marked schedulable." % node)
    assert unschedulable(after_uncordon_check, node) is True
    assert (uncordoned["changed"], uncordoned["result"]) == (True, "node %s marked schedulable." % node)
    assert unschedulable(after_uncordon, node) is False
    for step in (uncordon_again_checked, uncordon_again):
        assert (step["changed"], step["result"]) == (False, "node %s already marked schedulable." % node)

    # As kubectl uncordon and kubernetes.core's module do: a cordon someone else made is undone too.
    assert theirs_uncordoned["changed"] is True
    for name in (node, theirs):
        read = cluster.core.read_node(name)
        assert not read.spec.unschedulable and CORDONED_BY not in (read.metadata.annotations or {})


def test_a_daemonset_pod_refuses_the_drain_in_kubectls_words_unless_ignored(
        cluster, namespace, make_nodes, run_play, test_id):
    (old,) = make_nodes(1, prefix="old")
    pinned = {TEST_LABEL: test_id}
    cluster.apps.create_namespaced_daemon_set(namespace, daemon_set("agent", pinned))
    cluster.apps.create_namespaced_deployment(namespace, deployment("web", 1, pinned))
    wait_until(lambda: running_pods(cluster, namespace, "app in (web,agent)", 2), 60,
               "the agent and web pods on the old node")
    (new,) = make_nodes(1, prefix="new")
    before = pods_on(cluster, namespace, old)

    refused = k8s_drain(name=old, delete_options={"wait_timeout": 120})
    play = run_play([dict(refused, check_mode=True, ignore_errors=True), dict(refused, ignore_errors=True)])
    for step in play.steps:
        assert step.get("failed") is True, play
        assert step["msg"].startswith("Node %s not drained: cannot delete DaemonSet-managed Pods (" % old)
        assert "%s/agent-" % namespace in step["msg"]
        assert {entry["outcome"] for entry in step["pods"] if entry["namespace"] == namespace} == {
            "refused", "not attempted"}
    assert pods_on(cluster, namespace, old) == before, "a refused drain evicted a pod"
    assert not cluster.core.read_node(old).spec.unschedulable, "a refused drain left its cordon"

    play = run_play([k8s_drain(name=old, delete_options={"ignore_daemonsets": True, "wait_timeout": 120})])
    assert play.rc == 0, play
    done = play.steps[0]
    assert done["changed"] is True
    assert done["result"] == "node %s marked unschedulable. 1 Pod(s) deleted from node." % old
    outcomes = {(entry["reason"], entry["outcome"]) for entry in done["pods"] if entry["namespace"] == namespace}
    assert outcomes == {("daemonset", "skipped"), ("evictable", "evicted")}
    assert cluster.core.read_node(old).spec.unschedulable is True
    assert [name for name in pods_on(cluster, namespace, old) if name.startswith("agent-")], "the agent pod left"
    wait_until(lambda: running_pods(cluster, namespace, "app=web", 1), 60, "web running again")
    assert [pod.spec.node_name for pod in cluster.pods(namespace, "app=web")] == [new]
