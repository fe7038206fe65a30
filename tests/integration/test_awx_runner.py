"""AWX's path: the rotation and a rebalance pass run as AWX runs a job, through ansible-runner.

AWX hands ansible-runner a private data directory: env/extravars (the job
template's variables, the survey's answers and AWX's own awx_* variables),
env/envvars (what the job's credentials inject: here the K8S_AUTH_* variables
of AWX's built-in Kubernetes bearer token credential and of the kubeconfig credential type of docs/awx.md), inventory/hosts (localhost) and
project/ (the project's playbook: docs/awx/rotate_nodes.yml and
docs/awx/rebalance.yml, which run the collection's roles). The collection comes
from ANSIBLE_COLLECTIONS_PATH, the installed tarball, as it comes from the
execution environment's collections in AWX. The process's own KUBECONFIG points
at nothing, so a job connects through what env/envvars injects or not at all.

The report is read back as AWX reads it: the set_stats data of the job's
playbook_on_stats event (what AWX shows as the job's artifacts), and the job
events of the tasks (what AWX shows as the job's output).

Autoscaler: the test provisioner (tests/cluster/provisioner.py), node-group style: a fixed pool that scales up
from pending pods, as cluster-autoscaler with an ASG does. The rotation and warm nodes on the real Karpenter
are in test_karpenter.py.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import sys

import ansible_runner
import pytest
import yaml
from ansible_run import INSTALLED_COLLECTIONS
from conftest import REPO, TEST_LABEL
from kube import DisruptionWatcher
from kubernetes import client as k8s_client
from test_rebalance import APPS, piled_up, pods_per_node, zoned_nodes

PROJECT_PLAYBOOKS = os.path.join(REPO, "docs", "awx")
AWX_VARIABLES = {"awx_job_id": 4242, "awx_job_template_name": "Rotate nodes"}
RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"


def private_data_dir(base, playbook, extravars, credential, inventory=None):
    """The private data directory of one AWX job, laid out as AWX lays it out; ``inventory`` (YAML) in place of
    localhost alone."""
    for folder in ("env", "inventory", "project"):
        os.makedirs(os.path.join(base, folder))
    with open(os.path.join(base, "env", "extravars"), "w") as handle:
        yaml.safe_dump(dict(AWX_VARIABLES, **extravars), handle)
    with open(os.path.join(base, "env", "envvars"), "w") as handle:
        yaml.safe_dump(dict(credential, ANSIBLE_COLLECTIONS_PATH=INSTALLED_COLLECTIONS), handle)
    with open(os.path.join(base, "inventory", "hosts"), "w") as handle:
        if inventory is None:
            handle.write("localhost ansible_connection=local ansible_python_interpreter=%s\n" % sys.executable)
        else:
            yaml.safe_dump(inventory, handle)
    shutil.copy(os.path.join(PROJECT_PLAYBOOKS, playbook), os.path.join(base, "project", playbook))
    return base


def run_job(base, playbook, run=ansible_runner.run, **options):
    """One AWX job (``options``: a job's limit, check mode as cmdline, a cancel callback); ``run``
    ansible_runner.run_async for a job to cancel while it runs."""
    return run(
        private_data_dir=base, playbook=playbook, quiet=True, timeout=900, **options,
        # The execution environment's PATH (its ansible-playbook is this venv's); no kubeconfig of the process.
        envvars={"PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
                 "KUBECONFIG": os.path.join(base, "no-kubeconfig")})


def stamped_workloads(cluster, namespace):
    """namespace/kind/name of the Deployments and StatefulSets that a rollout restart has stamped."""
    workloads = [("Deployment", item) for item in cluster.apps.list_namespaced_deployment(namespace).items] + \
        [("StatefulSet", item) for item in cluster.apps.list_namespaced_stateful_set(namespace).items]
    return {"%s/%s/%s" % (namespace, kind, item.metadata.name) for kind, item in workloads
            if RESTARTED_AT in (item.spec.template.metadata.annotations or {})}


def job_artifacts(runner):
    """What AWX shows as the job's artifacts: the set_stats data of its playbook_on_stats event."""
    stats = [event for event in runner.events if event["event"] == "playbook_on_stats"]
    assert stats, "the job has no playbook_on_stats event"
    return stats[-1]["event_data"]["artifact_data"]


def task_results(runner, task):
    return [event["event_data"]["res"] for event in runner.events
            if event["event"] == "runner_on_ok" and event["event_data"].get("task") == task]


def describe(runner):
    """What pytest prints when an assertion on a job fails: its status and the end of its output."""
    return "status %s, rc %s\n%s" % (runner.status, runner.rc, runner.stdout.read()[-4000:])


def test_a_rotation_run_as_an_awx_job_rotates_and_publishes_its_report_as_artifacts(cluster, demo, tmp_path):
    base = private_data_dir(str(tmp_path / "job"), "rotate_nodes.yml", demo.rotation,
                            {"K8S_AUTH_KUBECONFIG": cluster.kubeconfig})
    with DisruptionWatcher(demo, demo.namespace) as watcher:
        runner = run_job(base, "rotate_nodes.yml")
    assert (runner.status, runner.rc) == ("successful", 0), describe(runner)
    assert demo.verify(watcher) == []

    report = job_artifacts(runner)["rotate_nodes_report"]
    assert report["rotation_id"] == demo.rotation["rotate_nodes_id"]
    batches = [batch["nodes"] for batch in report["batches"]]
    assert [len(nodes) for nodes in batches] == [2, 2], batches
    assert sorted(name for nodes in batches for name in nodes) == sorted(demo.old_nodes)
    assert all(len({demo.old_nodes[name] for name in nodes}) == 1 for nodes in batches), "one zone per batch"
    assert report["left"] == []
    # The report read back is what happened on the cluster: the pods it says it replaced first (the do-not-disrupt
    # StatefulSet's and the single replica's) are gone or came back new, no workload was restarted, and pods were
    # evicted.
    replaced = {key for batch in report["batches"] for key in batch["replacements_done"]}
    assert {key.split("/")[1].rsplit("-", 2)[0] for key in replaced if "checkout" in key} == {"checkout"}
    assert {"%s/db-0" % demo.namespace, "%s/db-1" % demo.namespace} <= replaced
    assert stamped_workloads(cluster, demo.namespace) == set()
    assert any(batch["evictions_done"] for batch in report["batches"])

    # The job's output holds the same report as the table the role prints, and the Lease named the AWX job.
    table = task_results(runner, "Report the rotation, planned against done")
    assert table and any(row.startswith("| 2/2 |") for row in table[0]["msg"]), table
    leases = task_results(runner, "Take the cluster's Lease before changing anything (a second run is refused here, "
                                  "naming the holder)")
    assert leases and leases[0]["lease"]["holder"] == "%s (AWX job 4242)" % demo.rotation["rotate_nodes_id"]
    assert not cluster.coordination.read_namespaced_lease("kubeops-rotation", "kube-system").spec.holder_identity, \
        "the Lease is released at the end"


@pytest.fixture
def cluster_admin_token(cluster, namespace, test_id):
    """A bearer token of a ServiceAccount bound to cluster-admin (TokenRequest), as a token credential holds."""
    rbac = k8s_client.RbacAuthorizationV1Api(cluster.api_client)
    cluster.core.create_namespaced_service_account(namespace, {"metadata": {"name": "awx"}})
    rbac.create_cluster_role_binding({
        "metadata": {"name": test_id, "labels": {TEST_LABEL: test_id}},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"kind": "ServiceAccount", "name": "awx", "namespace": namespace}]})
    try:
        yield cluster.core.create_namespaced_service_account_token(
            "awx", namespace, {"spec": {"expirationSeconds": 3600}}).status.token
    finally:
        rbac.delete_cluster_role_binding(test_id)


def test_a_rebalance_run_as_an_awx_job_with_a_token_credential_evens_out_pods(
        cluster, namespace, make_nodes, test_id, cluster_admin_token, tmp_path):
    old = piled_up(cluster, namespace, make_nodes, test_id)
    new = zoned_nodes(make_nodes, "abc", "new")
    fewest = sum(max(0, count - 1) for app in APPS for count in pods_per_node(cluster, namespace, app, old).values())

    with open(cluster.kubeconfig) as handle:
        entry = yaml.safe_load(handle)["clusters"][0]["cluster"]
    ca_file = tmp_path / "ca.crt"  # a credential's file input: AWX writes it and injects its path
    ca_file.write_bytes(base64.b64decode(entry["certificate-authority-data"]))
    base = private_data_dir(str(tmp_path / "job"), "rebalance.yml", {
        "rebalance_namespaces": [namespace], "rebalance_node_selector": "%s=%s" % (TEST_LABEL, test_id),
        "rebalance_max_unavailable_per_owner": "100%", "rebalance_timeout": 180, "rebalance_fail_above_skew": 1,
    }, {"K8S_AUTH_HOST": entry["server"], "K8S_AUTH_API_KEY": cluster_admin_token, "K8S_AUTH_VERIFY_SSL": "True",
        "K8S_AUTH_SSL_CA_CERT": str(ca_file)})
    runner = run_job(base, "rebalance.yml")
    assert (runner.status, runner.rc) == ("successful", 0), describe(runner)

    for app in APPS:
        counts = pods_per_node(cluster, namespace, app, old + new)
        assert max(counts.values()) - min(counts.values()) <= 1, (app, counts)
    report = job_artifacts(runner)["rebalance_report"]
    assert report["evictions"] == {"evicted": fewest}
    assert report["skew_after"]["max_skew"] <= 1
    assert all(move["landed_on"] in new for move in report["moves"]), report["moves"]
    # AWX keeps the job's output and events; the token is in neither.
    assert cluster_admin_token not in runner.stdout.read() + json.dumps(list(runner.events))
