"""docs/pipelines.md names only what exists: the role's variables and the playbook's, the collection's modules, roles
and playbooks, the role's task names a pipeline looks for, the keys of the JSON report, and ansible-playbook's exit
codes as ansible-core defines them."""

from __future__ import annotations

import os
import re

import pytest
import yaml
from ansible.executor.task_queue_manager import TaskQueueManager
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.batch_failure import batch_failure
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.report import BatchRun, batch_report

try:
    from ansible.errors import ExitCode
except ImportError:  # ansible-core 2.16, the matrix's oldest, has no ExitCode
    ExitCode = None

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC = os.path.join(REPO, "docs", "pipelines.md")
ROLE = os.path.join(REPO, "roles", "rotate_nodes")
# Task names of the role that the page quotes: a pipeline's jq filter selects the first, the others are what its
# log shows. A name ending in "batch" stands for the per-batch name that follows with the batch's number.
TASK_NAMES = (
    "Plan which nodes rotate, in which batches, and how every pod moves",
    "Show the plan",
    "Stop before touching anything when the pods do not fit, cannot move safely, or may not move now",
    "Take the cluster's Lease before changing anything (a second run is refused here, naming the holder)",
    "Stop the rotation, saying what was left and how to resume, batch",
    "Write the report as JSON",
)
# The JSON report as the page describes it: its top-level keys, the keys of each entry of batches and of left.
REPORT_KEYS = ("rotation_id", "outcome", "stopped", "check_mode", "plan", "planned_batches", "batches", "zones_before",
               "zones_planned", "zones_after", "left", "gates")
BATCH_KEYS = ("batch", "nodes", "replacements_planned", "replacements_done", "replaced_workloads", "evictions_planned",
              "evictions_done", "replaced", "evicted", "differences", "seconds", "warm_seconds", "replace_seconds",
              "evict_seconds", "evict_waits", "retire_seconds", "own_seconds", "row")
LEFT_KEYS = ("batch", "step", "reason")


def read(*path):
    with open(os.path.join(*path)) as handle:
        return handle.read()


def doc():
    return read(DOC)


def role_tasks():
    """Every task of the role, blocks and rescues flattened."""
    found = []

    def walk(tasks):
        for task in tasks or ():
            found.append(task)
            for key in ("block", "rescue", "always"):
                walk(task.get(key))

    for name in ("main.yml", "batch.yml"):
        walk(yaml.safe_load(read(ROLE, "tasks", name)))
    return found


def role_options():
    return yaml.safe_load(read(ROLE, "meta", "argument_specs.yml"))["argument_specs"]["main"]["options"]


def test_every_role_variable_the_page_names_is_an_option_or_the_retire_loop_variable():
    options = set(role_options())
    named = set(re.findall(r"\brotate_nodes_\w+", doc()))
    # rotate_nodes_node is the loop variable of the retire tasks (rotate_nodes_retire=tasks), not an option.
    assert "rotate_nodes_node" in read(ROLE, "tasks", "batch.yml")
    assert sorted(named - options - {"rotate_nodes_node"}) == []


def test_every_playbook_variable_the_page_names_is_one_the_playbook_reads():
    playbook = read(REPO, "playbooks", "rotate_nodes.yml")
    named = set(re.findall(r"\bkubeops_\w+", doc()))
    assert named, "the page names no connection variable"
    assert sorted(name for name in named if name not in playbook) == []


def test_every_collection_name_the_page_uses_is_a_module_role_or_playbook():
    modules = {name[:-3] for name in os.listdir(os.path.join(REPO, "plugins", "modules")) if name.endswith(".py")}
    roles = set(os.listdir(os.path.join(REPO, "roles")))
    playbooks = {name[:-4] for name in os.listdir(os.path.join(REPO, "playbooks")) if name.endswith(".yml")}
    named = set(re.findall(r"\bkubeops\.rotation\.(\w+)", doc()))
    assert sorted(named - modules - roles - playbooks) == []


def test_the_task_names_the_page_quotes_are_the_roles():
    text = " ".join(doc().split())
    names = [" ".join(str(task.get("name", "")).split()) for task in role_tasks()]
    for quoted in TASK_NAMES:
        assert quoted in text, "the page no longer quotes %r: update TASK_NAMES" % quoted
        if quoted.endswith(", batch"):
            assert any(name.startswith(quoted + " {{") for name in names), quoted
        else:
            assert quoted in names, quoted


def test_the_report_keys_the_page_lists_are_what_the_role_writes():
    text = doc()
    write = next(task for task in role_tasks() if task.get("name") == "Write the report as JSON")
    written = set(re.findall(r"'(\w+)':", write["ansible.builtin.copy"]["content"]))
    assert set(REPORT_KEYS) == written
    batch = next(task for task in role_tasks() if str(task.get("name", "")).startswith("Report: planned against done"))
    assert "kubeops.rotation.batch_report(" in batch["ansible.builtin.set_fact"]["rotate_nodes_report"]
    entry = batch_report({"index": 1, "nodes": ["node-1"], "replace": [], "evict": []}, batches=1,
                         run=BatchRun(replaced={}, eviction={}, warmed={}, started=0, now=1), check_mode=False)
    assert tuple(entry) == BATCH_KEYS
    set_aside = next(task for task in role_tasks() if str(task.get("name", "")).startswith("Set the batch aside"))
    assert "rotate_nodes_failure.left" in set_aside["ansible.builtin.set_fact"]["rotate_nodes_left"]
    blocked = batch_failure({"index": 1, "nodes": ["node-1"]}, {"stage": "move", "task": "evict", "result": {}},
                            {"id": "r1", "batches": 1, "on_blocked": "skip", "revisiting": True, "keep_warm": False})
    assert tuple(blocked["left"][0]) == LEFT_KEYS
    for key in REPORT_KEYS + BATCH_KEYS + LEFT_KEYS:
        assert "`%s`" % key in text, key


@pytest.mark.skipif(ExitCode is None, reason="this ansible-core has no ansible.errors.ExitCode")
def test_the_exit_code_table_is_ansible_cores():
    rows = re.findall(r"^\| (\d+) \|", doc(), re.M)
    documented = [int(code) for code in rows]
    known = {int(code) for code in ExitCode} | {TaskQueueManager.RUN_FAILED_BREAK_PLAY}
    assert sorted(set(documented) - known) == []
    # Every code ansible-core still uses is there (6, UNICODE_ERROR, is obsolete).
    assert sorted(known - set(documented) - {ExitCode.UNICODE_ERROR}) == []
