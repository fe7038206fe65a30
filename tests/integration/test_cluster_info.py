"""The client factory and its connection options, through ansible-playbook and cluster_info."""

from __future__ import annotations

import base64
import glob
import json
import os

import yaml
from kubernetes import client as k8s_client
from ansible_run import CHECKOUT_COLLECTIONS
from conftest import TEST_LABEL


def kubeconfig_dict(cluster):
    with open(cluster.kubeconfig) as handle:
        return yaml.safe_load(handle)


def test_reports_version_identity_and_selected_nodes(cluster, make_nodes, run_play, test_id):
    nodes = make_nodes(2)
    cluster.kubectl("cordon", nodes[1])
    play = run_play([{"kubeops.rotation.cluster_info": {"node_selector": "%s=%s" % (TEST_LABEL, test_id)}}])
    assert play.rc == 0, play
    info = play.steps[0]
    assert info["changed"] is False
    assert info["server_version"] == json.loads(cluster.kubectl("version", "-o", "json").stdout)[
        "serverVersion"]["gitVersion"]
    assert [node["name"] for node in info["nodes"]] == nodes
    assert [node["schedulable"] for node in info["nodes"]] == [True, False]
    assert info["summary"] == {"nodes": 2, "ready": 2, "schedulable": 1}
    assert "system:masters" in info["user"]["groups"]
    assert info["api_requests"] >= 3


def test_a_module_returns_the_same_run_in_ansible_playbooks_worker_or_as_a_python_of_its_own(
        cluster, make_nodes, run_play, tmp_path, test_id):
    """With this very Python as its interpreter, a module runs in ansible-playbook's worker: no AnsiballZ file is
    written. Run apart (async here), it returns the same."""
    make_nodes(2)
    remote = tmp_path / "remote"
    environment = {"ANSIBLE_KEEP_REMOTE_FILES": "1", "ANSIBLE_REMOTE_TMP": str(remote)}
    task = {"kubeops.rotation.cluster_info": {"node_selector": "%s=%s" % (TEST_LABEL, test_id)}}
    here = run_play([task], environment=environment)
    assert here.rc == 0, here
    assert not glob.glob(str(remote / "**" / "AnsiballZ_cluster_info.py"), recursive=True)
    apart = run_play([dict(task, **{"async": 60, "poll": 1})], environment=environment)
    assert apart.rc == 0, apart
    assert glob.glob(str(remote / "**" / "AnsiballZ_cluster_info.py"), recursive=True)
    for key in ("changed", "nodes", "summary", "server_version", "user", "api_requests"):
        assert here.steps[0][key] == apart.steps[0][key], key


def test_inline_kubeconfig_and_context_work_without_a_file(cluster, run_play):
    config = kubeconfig_dict(cluster)
    config["contexts"].append({"name": "second", "context": dict(config["contexts"][0]["context"])})
    config["current-context"] = "missing"
    play = run_play([{"kubeops.rotation.cluster_info": {}}], connection={"kubeconfig": config, "context": "second"})
    assert play.rc == 0, play
    assert play.steps[0]["user"]["username"] == "kubeops-admin"


def test_host_and_client_certificate_without_kubeconfig(cluster, run_play, tmp_path):
    config = kubeconfig_dict(cluster)
    files = {}
    for option, key, source in (("ca_cert", "certificate-authority-data", config["clusters"][0]["cluster"]),
                                ("client_cert", "client-certificate-data", config["users"][0]["user"]),
                                ("client_key", "client-key-data", config["users"][0]["user"])):
        path = tmp_path / option
        path.write_bytes(base64.b64decode(source[key]))
        files[option] = str(path)
    play = run_play([{"kubeops.rotation.cluster_info": {}}],
                    connection=dict(files, host=config["clusters"][0]["cluster"]["server"]))
    assert play.rc == 0, play
    assert play.steps[0]["user"]["username"] == "kubeops-admin"


def test_impersonation_sends_the_user_and_every_group(cluster, run_play, test_id):
    rbac = k8s_client.RbacAuthorizationV1Api(cluster.api_client)
    # Only the group "sre" may list nodes: the play succeeds only if that second group is sent.
    rbac.create_cluster_role({"metadata": {"name": test_id},
                              "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]}]})
    rbac.create_cluster_role_binding({
        "metadata": {"name": test_id},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": test_id},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "sre"}]})
    try:
        play = run_play([
            {"kubeops.rotation.cluster_info": {"impersonate_user": "jane", "impersonate_groups": ["platform", "sre"]}},
            {"kubeops.rotation.cluster_info": {"impersonate_user": "jane", "impersonate_groups": ["platform"]}},
        ])
    finally:
        rbac.delete_cluster_role_binding(test_id)
        rbac.delete_cluster_role(test_id)
    user = play.steps[0]["user"]
    assert user["username"] == "jane"
    assert {"platform", "sre"} <= set(user["groups"])
    assert 'User "jane" cannot list resource "nodes"' in play.steps[1]["msg"]


def test_api_key_is_used_and_never_printed_and_a_403_is_a_clear_error(cluster, namespace, run_play):
    cluster.core.create_namespaced_service_account(namespace, {"metadata": {"name": "reader"}})
    token = cluster.core.create_namespaced_service_account_token(
        "reader", namespace, {"spec": {"expirationSeconds": 600}}).status.token
    config = kubeconfig_dict(cluster)
    ca_file = os.path.join(os.path.dirname(cluster.kubeconfig), "ca-for-token-test.crt")
    with open(ca_file, "wb") as handle:
        handle.write(base64.b64decode(config["clusters"][0]["cluster"]["certificate-authority-data"]))
    try:
        play = run_play([{"kubeops.rotation.cluster_info": {}}], verbosity=3, connection={
            "host": config["clusters"][0]["cluster"]["server"], "api_key": token, "ca_cert": ca_file})
    finally:
        os.remove(ca_file)
    assert play.rc != 0
    message = play.steps[0]["msg"]
    assert message.startswith("The API server refused a request: nodes is forbidden")
    assert "system:serviceaccount:%s:reader" % namespace in message
    assert "(HTTP 403)" in message
    assert token not in play.stdout + play.stderr


def test_missing_kubeconfig_and_unreachable_server_fail_with_the_cause(run_play, tmp_path):
    play = run_play([{"kubeops.rotation.cluster_info": {}, "ignore_errors": True},
                     {"kubeops.rotation.cluster_info": {"kubeconfig": None, "host": "https://127.0.0.1:9",
                                                        "validate_certs": False, "api_key": "x"}}],
                    connection={"kubeconfig": str(tmp_path / "absent.yaml")})
    assert play.steps[0]["failed"] is True
    assert play.steps[0]["msg"] == "kubeconfig %s does not exist." % (tmp_path / "absent.yaml")
    assert play.steps[1]["failed"] is True
    assert play.steps[1]["msg"].startswith("Cannot reach the API server at https://127.0.0.1:9")


def test_check_mode_reports_the_same_and_the_checkout_works_as_a_collection(cluster, run_play):
    play = run_play([{"kubeops.rotation.cluster_info": {"node_selector": "none=none"}}], check=True,
                    collections_path=CHECKOUT_COLLECTIONS)
    assert play.rc == 0, play
    assert play.steps[0]["changed"] is False
    assert play.steps[0]["summary"] == {"nodes": 0, "ready": 0, "schedulable": 0}
