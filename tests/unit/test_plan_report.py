"""A rotation batch's report entry, planned against done (filter kubeops.rotation.batch_report). The expected entries
are those the rotate_nodes role's Jinja built before the report moved here, key for key."""

from __future__ import annotations

import ast
import os

import pytest
import yaml
from ansible_collections.kubeops.rotation.plugins.filter.batch_report import FilterModule
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.report import (
    BatchRun,
    batch_report,
    report_tables,
)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BATCH = {
    "index": 2, "zone": "zone-a", "nodes": ["node-3", "node-4"],
    "replace": [{"kind": "StatefulSet", "namespace": "shop", "name": "db", "method": "one_at_a_time",
                 "pods": ["shop/db-0", "shop/db-1"]},
                {"kind": "Deployment", "namespace": "shop", "name": "cart", "method": "surge",
                 "pods": ["shop/cart-x"]}],
    "evict": ["shop/web-a", "shop/web-b", "shop/web-c"],
}
REPLACED = {"changed": True, "elapsed_seconds": 14.2,
            "workloads": [{"name": "db", "replaced": ["shop/db-0", "shop/db-1"]},
                          {"name": "cart", "replaced": ["shop/cart-x"]}]}
EVICTION = {"changed": True, "elapsed_seconds": 3.9, "remaining": [],
            "waited_seconds": {"pdb_pace": 1.5, "pods_starting": 2.0, "pods_going": 0.2, "backing_off": 0.0},
            "pods": [{"namespace": "shop", "name": "web-a", "outcome": "evicted"},
                     {"namespace": "shop", "name": "web-b", "outcome": "evicted"},
                     {"namespace": "shop", "name": "web-c", "outcome": "evicted"},
                     {"namespace": "kube-system", "name": "proxy-1", "outcome": "skipped"}]}
WARMED = {"changed": True, "elapsed_seconds": 30.1, "nodes": ["warm-1"]}
SKIPPED = {"changed": False, "skipped": True, "skip_reason": "Conditional result was False"}
STARTED = 1700000000.0


def report(**changed):
    arguments = dict(batch=BATCH, batches=3, replaced=REPLACED, eviction=EVICTION, warmed=WARMED, check_mode=False,
                     started=STARTED, now=STARTED + 48.26)
    arguments.update(changed)
    return FilterModule().filters()["batch_report"](**arguments)


def test_a_batch_that_did_what_was_planned_reports_every_key_in_order_and_no_difference():
    assert report() == {
        "batch": 2,
        "nodes": ["node-3", "node-4"],
        "replacements_planned": ["shop/db-0", "shop/db-1", "shop/cart-x"],
        "replacements_done": ["shop/db-0", "shop/db-1", "shop/cart-x"],
        "replaced_workloads": ["shop/StatefulSet/db", "shop/Deployment/cart"],
        "evictions_planned": ["shop/web-a", "shop/web-b", "shop/web-c"],
        "evictions_done": ["shop/web-a", "shop/web-b", "shop/web-c"],
        "replaced": 3,
        "evicted": 3,
        "differences": [],
        "seconds": 48.3,
        "warm_seconds": 30.1,
        "replace_seconds": 14.2,
        "evict_seconds": 3.9,
        "evict_waits": {"pdb_pace": 1.5, "pods_starting": 2.0, "pods_going": 0.2, "backing_off": 0.0},
        "retire_seconds": 0.0,
        "own_seconds": 0.1,
        "row": "| 2/3 | node-3, node-4 | 3 | 3 | 3 | 3 | 48.3 |",
    }
    assert list(report()) == ["batch", "nodes", "replacements_planned", "replacements_done", "replaced_workloads",
                              "evictions_planned", "evictions_done", "replaced", "evicted", "differences", "seconds",
                              "warm_seconds", "replace_seconds", "evict_seconds", "evict_waits", "retire_seconds", "own_seconds",
                              "row"]


def test_a_batchs_own_seconds_are_what_none_of_its_steps_waited_for():
    entry = report(retire_started=STARTED + 40.0)
    assert (entry["retire_seconds"], entry["own_seconds"]) == (8.3, 0.0), "48.3 s, all of it waited for"
    entry = report(warmed=SKIPPED, retire_started=str(STARTED + 40.0))
    assert (entry["retire_seconds"], entry["own_seconds"]) == (8.3, 21.9)


def test_every_difference_is_one_sentence_a_pod_grouped_as_the_role_listed_them():
    replaced = dict(REPLACED, workloads=[{"replaced": ["shop/db-0", "shop/late-0"]}, {"replaced": ["shop/late-1"]}])
    eviction = dict(EVICTION, pods=[{"namespace": "shop", "name": "web-c", "outcome": "gone"},
                                    {"namespace": "shop", "name": "web-a", "outcome": "evicted"},
                                    {"namespace": "shop", "name": "new-1", "outcome": "evicted"}])
    entry = report(replaced=replaced, eviction=eviction)
    assert entry["differences"] == [
        "batch 2: shop/db-1 planned to replace first, not replaced (gone before)",
        "batch 2: shop/cart-x planned to replace first, not replaced (gone before)",
        "batch 2: shop/late-0 replaced first, not planned (the check of the batch found it may not be evicted now)",
        "batch 2: shop/late-1 replaced first, not planned (the check of the batch found it may not be evicted now)",
        "batch 2: shop/web-b planned to evict, not evicted (gone before)",
        "batch 2: shop/web-c planned to evict, not evicted (gone before)",
        "batch 2: shop/new-1 evicted, not planned (it came to the node after the plan)",
    ]
    assert entry["replacements_done"] == ["shop/db-0", "shop/late-0", "shop/late-1"]
    assert entry["evictions_done"] == ["shop/web-a", "shop/new-1"]
    assert (entry["replaced"], entry["evicted"]) == (3, 2)
    assert entry["row"] == "| 2/3 | node-3, node-4 | 3 | 3 | 3 | 2 | 48.3 |"


def test_a_pod_listed_twice_differs_once_as_ansible_difference_filter_counted_it():
    batch = dict(BATCH, replace=[], evict=["shop/web-a", "shop/web-a"])
    entry = report(batch=batch, replaced={"workloads": []}, eviction={"pods": []})
    assert entry["differences"] == ["batch 2: shop/web-a planned to evict, not evicted (gone before)"]
    assert entry["row"] == "| 2/3 | node-3, node-4 | 0 | 0 | 2 | 0 | 48.3 |"


def test_in_check_mode_nothing_was_done_by_design_and_nothing_differs():
    planned = dict(EVICTION, pods=[dict(pod, outcome="planned") for pod in EVICTION["pods"]])
    entry = report(replaced={"workloads": [{"replaced": []}], "elapsed_seconds": 0.1}, eviction=planned,
                   check_mode=True)
    assert entry["differences"] == []
    assert (entry["replacements_done"], entry["evictions_done"], entry["replaced"], entry["evicted"]) == ([], [], 0, 0)


def test_a_step_skipped_or_without_a_result_counts_0_seconds_and_nothing_done():
    entry = report(replaced={}, eviction={}, warmed=SKIPPED)
    assert (entry["warm_seconds"], entry["replace_seconds"], entry["evict_seconds"]) == (0, 0, 0)
    assert (entry["replacements_done"], entry["evictions_done"]) == ([], [])


def test_seconds_are_rounded_to_a_tenth_from_a_start_noted_as_text():
    assert report(started="1700000000.0", now=STARTED + 12.3449)["seconds"] == 12.3
    assert report(now=STARTED + 0.04)["seconds"] == 0.0
    assert report(now=STARTED + 7)["row"].endswith("| 7.0 |")


def test_the_filter_is_the_report_and_its_documentation_names_every_key_and_option():
    run = BatchRun(replaced=REPLACED, eviction=EVICTION, warmed=WARMED, started=STARTED, now=STARTED + 48.26)
    assert report() == batch_report(BATCH, 3, run, False)
    with open(os.path.join(REPO, "plugins", "filter", "batch_report.py")) as handle:
        tree = ast.parse(handle.read())
    strings = {node.targets[0].id: node.value.value for node in tree.body if isinstance(node, ast.Assign)
               and isinstance(node.value, ast.Constant)}
    documented = yaml.safe_load(strings["RETURN"])["_value"]["contains"]
    assert list(documented) == list(report())
    options = set(yaml.safe_load(strings["DOCUMENTATION"])["options"]) - {"_input"}
    assert options == {"batches", "check_mode"} | set(BatchRun.__dataclass_fields__)


def test_the_filter_names_an_option_it_does_not_take():
    with pytest.raises(TypeError, match="retired_started"):
        report(retired_started=STARTED)


def test_the_report_tables_show_each_batch_and_each_workloads_zones_before_and_after():
    batches = [{"row": "| 1/1 | old-1 | 0 | 0 | 2 | 2 | 3.2 |"}]
    before = {"shop/Deployment/web": {"zone-b": 1, "zone-a": 2}, "shop/StatefulSet/db": {"-": 1}}
    lines = report_tables(batches, before, {"shop/Deployment/web": {"zone-a": 2, "zone-b": 1}})
    assert lines[2] == "| 1/1 | old-1 | 0 | 0 | 2 | 2 | 3.2 |" and lines[3] == ""
    assert lines[-2:] == ["| shop/Deployment/web | zone-a 2, zone-b 1 | zone-a 2, zone-b 1 |",
                          "| shop/StatefulSet/db | - 1 |  |"]
    assert report_tables([], {}, {})[:2] == ["| batch | nodes | replacements planned | replacements done | "
                                             "evictions planned | evictions done | seconds |", "|---|---|---|---|---|---|---|"]
