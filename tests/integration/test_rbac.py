"""Least privilege: the rotation as the ServiceAccounts of docs/rbac.yaml, by token, with nothing more.

The full ClusterRole must carry a whole rotation of the demo (a verb missing
from docs/rbac.yaml fails it); the read-only one must carry the same rotation
in check mode, and must be refused, naming the request, when it tries a real
one. The playbook gets the identity as kubeops_host / kubeops_api_key /
kubeops_ca_cert, never a kubeconfig, whose admin client certificate would
otherwise be sent too.

Teardown deletes every object the tests created (both ClusterRoles, both
ClusterRoleBindings and both ServiceAccounts) and leaves those that existed
before, on a cluster of your own.

Autoscaler: the test provisioner (tests/cluster/provisioner.py), node-group style: a fixed pool that scales up
from pending pods, as cluster-autoscaler with an ASG does. The rotation and warm nodes on the real Karpenter
are in test_karpenter.py.
"""

from __future__ import annotations

import base64
import json
import os
import re

import pytest
import yaml
from ansible_run import run_collection_playbook
from conftest import REPO, wait_until
from kube import DisruptionWatcher, unless_missing
from kubernetes import client as k8s_client
from kubernetes.client.rest import ApiException

RBAC_FILE = os.path.join(REPO, "docs", "rbac.yaml")
SYSTEM = "kube-system"
FULL = "kubeops-rotation"
READONLY = "kubeops-rotation-readonly"
# The read-only ClusterRole of docs/rbac.yaml bound to a ServiceAccount of its own, as its comments say.
READONLY_MANIFEST = [
    {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": READONLY, "namespace": SYSTEM}},
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": READONLY},
     "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": READONLY},
     "subjects": [{"kind": "ServiceAccount", "name": READONLY, "namespace": SYSTEM}]},
]
WARM_NAMESPACE = "kubeops-warm"
WARM_PRIORITY_CLASS = "kubeops-warm-placeholder"
LEASE = ("kubeops-rotation", SYSTEM)
MANAGED_BY = ("app.kubernetes.io/managed-by", "kubeops.rotation")


def service_account_user(name):
    return "system:serviceaccount:%s:%s" % (SYSTEM, name)


def _exists(cluster, obj):
    namespace = obj["metadata"].get("namespace")
    completed = cluster.kubectl("get", obj["kind"].lower(), obj["metadata"]["name"], "--ignore-not-found",
                                "-o", "name", *(["-n", namespace] if namespace else []))
    return bool(completed.stdout.strip())


def _delete(cluster, obj):
    namespace = obj["metadata"].get("namespace")
    cluster.kubectl("delete", obj["kind"].lower(), obj["metadata"]["name"], "--ignore-not-found", "--wait=false",
                    *(["-n", namespace] if namespace else []), check=False)


def _api_as(cluster_server, ca_file, token):
    configuration = k8s_client.Configuration()
    configuration.host = cluster_server
    configuration.ssl_ca_cert = ca_file
    configuration.api_key = {"authorization": "Bearer %s" % token}
    return k8s_client.ApiClient(configuration)


@pytest.fixture(scope="module")
def identities(cluster, tmp_path_factory):
    """{"full": ..., "readonly": ...}: the playbook's connection vars (kubeops_host, kubeops_api_key,
    kubeops_ca_cert) for a token of each ServiceAccount, its RBAC applied and in effect."""
    work = tmp_path_factory.mktemp("rbac")
    with open(RBAC_FILE) as handle:
        objects = list(yaml.safe_load(handle)["items"])
    objects += READONLY_MANIFEST
    created = [obj for obj in objects if not _exists(cluster, obj)]
    readonly_file = work / "readonly.yaml"
    readonly_file.write_text(yaml.safe_dump_all(READONLY_MANIFEST))
    try:
        for manifest in (RBAC_FILE, str(readonly_file)):
            applied = cluster.kubectl("apply", "-f", manifest, check=False)
            assert applied.returncode == 0, "kubectl apply -f %s: %s" % (manifest, applied.stderr)
        with open(cluster.kubeconfig) as handle:
            kubeconfig = yaml.safe_load(handle)
        server = kubeconfig["clusters"][0]["cluster"]["server"]
        ca_file = work / "ca.crt"
        ca_file.write_bytes(base64.b64decode(kubeconfig["clusters"][0]["cluster"]["certificate-authority-data"]))
        connections = {}
        for key, name in (("full", FULL), ("readonly", READONLY)):
            token = cluster.core.create_namespaced_service_account_token(
                name, SYSTEM, {"spec": {"expirationSeconds": 3600}}).status.token
            connections[key] = {"kubeops_host": server, "kubeops_api_key": token, "kubeops_ca_cert": str(ca_file)}
            # The authorizer learns of a new binding from a watch: wait until it lets the token list nodes.
            core = k8s_client.CoreV1Api(_api_as(server, str(ca_file), token))
            wait_until(lambda core=core: _can_list_nodes(core), 30, "the ClusterRoleBinding of %s to apply" % name)
        yield connections
    finally:
        for obj in reversed(created):
            _delete(cluster, obj)


def _can_list_nodes(core):
    try:
        core.list_node(limit=1)
        return True
    except ApiException as exc:
        if exc.status in (401, 403):
            return False
        raise


def rotate_as(demo, connection, work_dir, check=False, extra=None):
    """demo.rotate, but connecting as ``connection`` (kubeops_host / kubeops_api_key / kubeops_ca_cert)
    instead of the admin kubeconfig; returns (CompletedProcess, watcher)."""
    extra_vars = dict(demo.rotation, rotate_nodes_report_file=os.path.join(str(work_dir), "rotation-report.json"))
    extra_vars.update(connection)
    extra_vars.update(extra or {})
    with DisruptionWatcher(demo, demo.namespace) as watcher:
        completed = run_collection_playbook("kubeops.rotation.rotate_nodes", extra_vars, str(work_dir), check=check)
    return completed, watcher


def untouched(cluster, demo, pods_before):
    """What "changed nothing" means: old nodes schedulable, none of our marks on them, the same pods."""
    problems = []
    for name in demo.old_nodes:
        node = cluster.core.read_node(name)
        if node.spec.unschedulable:
            problems.append("%s is cordoned" % name)
        marks = [key for key in node.metadata.annotations or {} if key.startswith("kubeops.io/")]
        marks += [taint.key for taint in node.spec.taints or [] if taint.key.startswith("kubeops.io/")]
        if marks:
            problems.append("%s carries %s" % (name, ", ".join(sorted(marks))))
    after = {pod.metadata.uid for pod in cluster.pods(demo.namespace)}
    if after != pods_before:
        problems.append("pods changed: %d gone, %d new" % (len(pods_before - after), len(after - pods_before)))
    if _placeholders(cluster, demo):
        problems.append("warm placeholders exist: %s" % _placeholders(cluster, demo))
    return problems


def _placeholders(cluster, demo):
    listed = unless_missing(cluster.apps.list_namespaced_deployment, WARM_NAMESPACE)
    return [item.metadata.name for item in (listed.items if listed else [])
            if demo.rotation["rotate_nodes_id"] in item.metadata.name]


def _managed(obj):
    return (obj.metadata.labels or {}).get(MANAGED_BY[0]) == MANAGED_BY[1]


def start_fresh(cluster):
    """Remove what earlier runs left and a rotation creates only when missing (the Lease when nobody holds
    it; the warm namespace and PriorityClass when ours and no placeholder is left), so that the rotation
    uses their create verbs whatever ran before."""
    lease = unless_missing(cluster.coordination.read_namespaced_lease, *LEASE)
    if lease is not None and not lease.spec.holder_identity:
        cluster.coordination.delete_namespaced_lease(*LEASE)
    namespace = unless_missing(cluster.core.read_namespace, WARM_NAMESPACE)
    if namespace is not None and cluster.apps.list_namespaced_deployment(WARM_NAMESPACE).items:
        return
    if namespace is not None and _managed(namespace):
        cluster.core.delete_namespace(WARM_NAMESPACE)
        wait_until(lambda: unless_missing(cluster.core.read_namespace, WARM_NAMESPACE) is None, 120,
                   "namespace %s to be deleted" % WARM_NAMESPACE)
    scheduling = k8s_client.SchedulingV1Api(cluster.api_client)
    priority_class = unless_missing(scheduling.read_priority_class, WARM_PRIORITY_CLASS)
    if priority_class is not None and _managed(priority_class):
        scheduling.delete_priority_class(WARM_PRIORITY_CLASS)


def refused(stdout):
    """Whether the output names a request refused for want of RBAC (the Events the engine skips when
    refused are looked for on the cluster instead)."""
    return "(HTTP 403)" in stdout or " is forbidden: " in stdout


def test_cluster_info_sees_each_service_account(identities, run_play):
    for key, name in (("full", FULL), ("readonly", READONLY)):
        connection = {option: identities[key]["kubeops_" + option] for option in ("host", "api_key", "ca_cert")}
        play = run_play([{"kubeops.rotation.cluster_info": {}}], connection=connection)
        assert play.rc == 0, play
        assert play.steps[0]["user"]["username"] == service_account_user(name)
        assert play.steps[0]["server_version"]


def test_the_full_role_carries_a_whole_rotation(cluster, identities, demo, tmp_path):
    start_fresh(cluster)
    # An owner limit reads each evicted pod's ReplicaSet and Deployment, as well as what a plain rotation does.
    completed, watcher = rotate_as(demo, identities["full"], tmp_path,
                                   extra={"rotate_nodes_max_unavailable_per_owner": "1"})
    assert completed.returncode == 0, completed.stdout[-4000:]
    assert not refused(completed.stdout), completed.stdout[-4000:]
    assert demo.verify(watcher) == []
    assert "batch 2/2: 2 nodes" in completed.stdout
    report = json.loads((tmp_path / "rotation-report.json").read_text())
    assert sum(len(batch["evictions_done"]) for batch in report["batches"]) > 0, report["batches"]
    assert sum(len(batch["replacements_done"]) for batch in report["batches"]) > 0, report["batches"]
    assert not _placeholders(cluster, demo), "placeholders are released"
    # Events are a courtesy the engine skips silently when refused: only here does a missing verb show.
    pod_events = {event.reason for event in cluster.core.list_namespaced_event(demo.namespace).items
                  if event.source and event.source.component == "kubeops.rotation"}
    assert "Evicted" in pod_events, pod_events
    node_events = {event.reason for event in cluster.core.list_namespaced_event("default").items
                   if event.involved_object.name in demo.old_nodes and event.source
                   and event.source.component == "kubeops.rotation"}
    assert node_events == {"Draining", "Drained"}, node_events
    lease = cluster.coordination.read_namespaced_lease(*LEASE)
    assert not lease.spec.holder_identity, "released at the end"


def test_the_readonly_role_carries_the_rotation_in_check_mode(cluster, identities, demo, tmp_path):
    before = {pod.metadata.uid for pod in cluster.pods(demo.namespace)}
    completed, _watcher = rotate_as(demo, identities["readonly"], tmp_path, check=True)
    assert completed.returncode == 0, completed.stdout[-4000:]
    assert not refused(completed.stdout), completed.stdout[-4000:]
    assert "batch 1/2" in completed.stdout and "batch 2/2" in completed.stdout
    assert untouched(cluster, demo, before) == []


def test_the_readonly_role_is_refused_a_real_rotation_and_changes_nothing(cluster, identities, demo, tmp_path):
    before = {pod.metadata.uid for pod in cluster.pods(demo.namespace)}
    completed, _watcher = rotate_as(demo, identities["readonly"], tmp_path)
    assert completed.returncode != 0
    out = completed.stdout
    # The first write of a rotation is taking the Lease (created, or updated when a released one is there);
    # ansible prints the message JSON-escaped.
    assert "(HTTP 403)" in out, out[-4000:]
    assert "The API server refused a request" in out, out[-4000:]
    assert service_account_user(READONLY) in out, out[-4000:]
    assert re.search(r'cannot (create|update) resource \\?"leases\\?" in API group \\?"coordination\.k8s\.io\\?"',
                     out), out[-4000:]
    assert untouched(cluster, demo, before) == []
    try:
        lease = cluster.coordination.read_namespaced_lease(*LEASE)
    except ApiException as exc:
        assert exc.status == 404
    else:
        assert not (lease.spec.holder_identity or "").startswith(demo.rotation["rotate_nodes_id"])
