"""A module run in the action plugin's process (ansible_module.run_in_process) returns what the same module run as
a Python of its own would: the same validation and its errors, check and diff mode, warnings, no_log values kept
out; the action plugin runs it there only for this very Python."""

from __future__ import annotations

import os
import sys

import pytest

from ansible_collections.kubeops.rotation.plugins.module_utils.ansible_module import (
    InProcessCall,
    kubernetes_module,
    run_in_process,
)
from ansible_collections.kubeops.rotation.plugins.modules import evict
from ansible_collections.kubeops.rotation.plugins.plugin_utils.kubernetes_action import (
    EnvironmentSet,
    is_this_python,
)

SPEC = dict(nodes=dict(type="list", elements="str", required=True), token=dict(type="str", no_log=True))


def echo_main():
    module = kubernetes_module(SPEC)
    module.warn("a warning")
    module.exit_json(changed=not module.check_mode, nodes=module.params["nodes"], diff_on=module._diff,
                     said="token %s" % module.params["token"])


def call(args, check_mode=False, diff=False):
    return run_in_process(echo_main, InProcessCall("kubeops.rotation.echo", args, check_mode, diff))


def test_a_module_returns_its_result_its_modes_and_warnings_with_no_log_values_masked():
    result = call({"nodes": "a,b", "token": "s3cret"}, check_mode=True, diff=True)
    assert result["changed"] is False and result["diff_on"] is True
    assert result["nodes"] == ["a", "b"], "the list type splits a string, as AnsibleModule does"
    assert result["warnings"] == ["a warning"]
    assert "s3cret" not in repr(result)
    assert result["invocation"]["module_args"]["kubeconfig"] is None


@pytest.mark.parametrize("args, message", [
    ({}, "missing required arguments: nodes"),
    ({"nodes": ["a"], "bogus": 1}, "Unsupported parameters for (kubeops.rotation.echo) module: bogus"),
    ({"nodes": ["a"], "client_cert": "/c"}, "parameters are required together: client_cert, client_key"),
])
def test_bad_arguments_fail_with_ansible_modules_own_message(args, message):
    result = call(args)
    assert result["failed"] is True
    assert message in result["msg"]


def test_a_real_modules_own_validation_fails_before_anything_is_read():
    result = run_in_process(evict.main, InProcessCall("kubeops.rotation.evict", {"nodes": ["n"], "timeout": 0},
                                                      False, False))
    assert result["failed"] is True and "timeout" in result["msg"] and "api_requests" not in result


def test_this_python_is_only_the_same_file_in_the_same_folder(tmp_path):
    assert is_this_python(sys.executable)
    assert not is_this_python(os.path.basename(sys.executable))
    assert not is_this_python(None)
    assert not is_this_python(str(tmp_path / "python"))
    elsewhere = tmp_path / "python"
    os.symlink(sys.executable, str(elsewhere))
    assert not is_this_python(str(elsewhere)), "another folder is another environment (a venv's base interpreter)"


def test_the_environment_is_set_for_the_call_and_put_back(monkeypatch):
    monkeypatch.setenv("KUBEOPS_KEPT", "before")
    monkeypatch.delenv("KUBEOPS_ADDED", raising=False)
    with EnvironmentSet({"KUBEOPS_KEPT": "during", "KUBEOPS_ADDED": 1}):
        assert os.environ["KUBEOPS_KEPT"] == "during" and os.environ["KUBEOPS_ADDED"] == "1"
    assert os.environ["KUBEOPS_KEPT"] == "before" and "KUBEOPS_ADDED" not in os.environ
