"""A fleet of clusters in waves (plan/fleet.py): the waves, when the fleet stops, its report."""

from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.module_utils.plan.fleet import (
    fleet_error,
    fleet_report,
    fleet_stop,
    fleet_waves,
)

CLUSTERS = ["dev", "prod-a", "prod-b", "prod-c", "prod-d"]


def test_the_canary_goes_alone_first_then_numbered_waves_then_the_rest_a_wave_size_at_a_time():
    fleet = fleet_waves(CLUSTERS, canary=["prod-b"], wave_of={"dev": 0}, wave_size=2)
    assert fleet["waves"] == [["prod-b"], ["dev"], ["prod-a", "prod-c"], ["prod-d"]]
    assert fleet["order"] == ["prod-b", "dev", "prod-a", "prod-c", "prod-d"] and fleet["serial"] == [1, 1, 2, 1]
    assert fleet_waves(["a", "b"], wave_size=5)["waves"] == [["a", "b"]]


def test_the_fleet_stops_after_a_wave_with_more_clusters_unfinished_than_allowed():
    waves = [["canary"], ["a", "b", "c", "d"]]
    assert fleet_stop(waves[:1], ["canary"]) is None
    assert fleet_stop(waves[:1], []) == "wave 1: canary did not finish (1 of 1 clusters, 0 allowed)"
    assert fleet_stop(waves, ["canary", "a", "b", "c"], "25%") is None
    assert fleet_stop(waves, ["canary", "a", "b"], "25%") == "wave 2: c, d did not finish (2 of 4 clusters, 25% allowed)"
    assert fleet_stop(waves, ["canary", "a", "b"], 2) is None


def test_fleet_inputs_that_make_no_sense_are_refused():
    assert fleet_error(CLUSTERS, ["prod-x"], 1, 0) == "kubeops_fleet_canary names prod-x, not a cluster of the fleet."
    assert fleet_error([], [], 1, 0).startswith("The fleet has no cluster")
    assert fleet_error(CLUSTERS, [], 0, 0) == "kubeops_fleet_wave_size must be 1 or more, got 0."
    assert fleet_error(CLUSTERS, [], 2, "half").startswith("kubeops_fleet_max_failed must be a count")
    assert fleet_error(CLUSTERS, ["dev"], "2", "10%") is None


def test_the_fleet_report_gives_each_cluster_its_outcome_work_time_gates_and_report():
    report = {"outcome": "finished", "batches": [{"nodes": ["n1", "n2"], "evicted": 5, "replaced": 1}],
              "gates": [{"stage": "before the first batch", "gates": [{"gate": "http", "held": True}]}]}
    stopped = {"outcome": "stopped", "stopped": "gates after batch 1/2", "batches": [{"nodes": ["m1"], "evicted": 2}],
               "gates": [{"stage": "after batch 1/2", "gates": [{"gate": "prometheus alerts", "held": False}]}]}
    fleet = fleet_report("f1", [["dev"], ["prod-a", "prod-b"]], {
        "dev": {"report": report, "report_file": "/r/dev.json", "started": 100.0, "ended": 130.5},
        "prod-a": {"report": stopped, "report_file": "/r/prod-a.json", "started": 131.0, "ended": 150.0}})
    assert fleet["outcome"] == "stopped"
    dev, prod_a, prod_b = fleet["clusters"]
    assert (dev["outcome"], dev["nodes_rotated"], dev["pods_moved"], dev["seconds"], dev["gates"]) == \
        ("finished", 2, 6, 30.5, "held (1)")
    assert prod_a["gates"] == "tripped: prometheus alerts" and prod_a["stopped"] == "gates after batch 1/2"
    assert prod_b["outcome"] == "not started" and prod_b["seconds"] is None
    assert fleet["markdown"][0] == "# Fleet f1 (stopped)"
    assert fleet["markdown"][4] == "| 1 | dev | finished | 2 | 6 | 30.5 | held (1) | /r/dev.json |"
