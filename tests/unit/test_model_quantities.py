from __future__ import annotations

import pytest

from ansible_collections.kubeops.rotation.plugins.module_utils.model.quantities import (
    amount_text,
    amounts_text,
    parse_quantity,
    pod_requests,
    resource_amounts,
)
from builders import pod


@pytest.mark.parametrize("text, value", [
    ("2", 2.0),
    (3, 3.0),
    ("100m", 0.1),
    ("1.5", 1.5),
    ("2k", 2000.0),
    ("16M", 16e6),
    ("16Mi", 16 * 2 ** 20),
    ("16Gi", 16 * 2 ** 30),
    ("1Ti", 2 ** 40),
    ("1e3", 1000.0),
    ("1.5E2", 150.0),
    ("2e-3", 0.002),
    (" 4 ", 4.0),
    ("-1", -1.0),
    ("500n", 5e-7),
    ("250u", 2.5e-4),
])
def test_quantities_are_base_units(text, value):
    assert parse_quantity(text) == pytest.approx(value)


@pytest.mark.parametrize("text", ["", "abc", "1Zi", "1 Gi", "16gi", "Gi", "1,5"])
def test_anything_else_is_not_a_quantity(text):
    with pytest.raises(ValueError, match="not a Kubernetes quantity"):
        parse_quantity(text)


def test_resource_amounts_count_a_missing_resource_as_zero():
    assert resource_amounts({"cpu": "250m", "memory": "1Gi"}) == {"cpu": 0.25, "memory": 2 ** 30, "pods": 0}
    assert resource_amounts(None) == {"cpu": 0, "memory": 0, "pods": 0}


def test_requests_are_the_sum_of_the_containers_and_one_pod():
    subject = pod(containers=[{"name": "a", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}},
                              {"name": "b", "resources": {"requests": {"cpu": "400m", "ephemeral-storage": "1Gi"}}},
                              {"name": "c"}])
    assert pod_requests(subject) == {"cpu": pytest.approx(0.5), "memory": 64 * 2 ** 20, "pods": 1.0,
                                     "ephemeral-storage": 2 ** 30}


def test_every_resource_a_node_advertises_or_a_pod_requests_is_counted():
    assert resource_amounts({"cpu": "4", "example.com/gpu": "2", "hugepages-2Mi": "1Gi"}) == {
        "cpu": 4.0, "memory": 0, "pods": 0, "example.com/gpu": 2.0, "hugepages-2Mi": 2 ** 30}
    subject = pod(cpu="1", containers=[
        {"name": "a", "resources": {"requests": {"cpu": "1", "example.com/gpu": "1"}}},
        {"name": "b", "resources": {"requests": {"example.com/gpu": "1", "pods": "5"}}}])
    assert pod_requests(subject) == {"cpu": 1.0, "memory": 0.0, "pods": 1.0, "example.com/gpu": 2.0}
    assert amount_text("example.com/gpu", 2.0) == "2 example.com/gpu"
    assert amount_text("hugepages-2Mi", 2 ** 30) == "1 GiB hugepages-2Mi"


def test_a_larger_init_container_decides_per_resource():
    subject = pod(cpu="500m", memory="64Mi",
                  initContainers=[{"name": "init", "resources": {"requests": {"cpu": "2", "memory": "32Mi"}}}])
    assert pod_requests(subject) == {"cpu": 2.0, "memory": 64 * 2 ** 20, "pods": 1.0}


def test_overhead_is_added_after_the_init_containers():
    subject = pod(cpu="500m", memory="64Mi", overhead={"cpu": "250m", "memory": "16Mi"},
                  initContainers=[{"name": "init", "resources": {"requests": {"cpu": "1"}}}])
    assert pod_requests(subject) == {"cpu": 1.25, "memory": 80 * 2 ** 20, "pods": 1.0}


def test_a_pod_without_requests_still_takes_a_pod_slot():
    assert pod_requests({"spec": {"containers": [{"name": "c"}]}}) == {"cpu": 0.0, "memory": 0.0, "pods": 1.0}


def _pod(containers, init=(), overhead=None):
    def container(cpu, memory, always=False):
        entry = {"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}}
        if always:
            entry["restartPolicy"] = "Always"
        return entry

    spec = {"containers": [container(*c) for c in containers],
            "initContainers": [container(*c) for c in init]}
    if overhead:
        spec["overhead"] = overhead
    return {"spec": spec}


def test_native_sidecars_count_as_the_scheduler_counts_them():
    plain = _pod([("100m", "64Mi"), ("200m", "64Mi")])
    assert pod_requests(plain) == {"cpu": pytest.approx(0.3), "memory": 128 * 2 ** 20, "pods": 1.0}
    # A classic init container larger than the app: its peak counts.
    assert pod_requests(_pod([("100m", "64Mi")], [("1", "32Mi")]))["cpu"] == 1.0
    # A sidecar runs beside the app: added to it.
    with_sidecar = pod_requests(_pod([("100m", "64Mi")], [("50m", "16Mi", True)]))
    assert with_sidecar["cpu"] == pytest.approx(0.15) and with_sidecar["memory"] == 80 * 2 ** 20
    # An init container after a sidecar runs beside it: its peak is both.
    after_sidecar = pod_requests(_pod([("100m", "64Mi")], [("300m", "16Mi", True), ("500m", "16Mi")]))
    assert after_sidecar["cpu"] == pytest.approx(0.8)
    # ... and one before it does not.
    before_sidecar = pod_requests(_pod([("100m", "64Mi")], [("500m", "16Mi"), ("300m", "16Mi", True)]))
    assert before_sidecar["cpu"] == 0.5
    assert pod_requests(_pod([("100m", "64Mi")], overhead={"cpu": "250m"}))["cpu"] == pytest.approx(0.35)


def test_amounts_are_written_for_people():
    assert amount_text("cpu", 3.5) == "3.5 CPU" and amount_text("cpu", 0.25) == "250m CPU"
    assert amount_text("memory", 8 * 2 ** 30) == "8 GiB" and amount_text("memory", 512 * 2 ** 20) == "512 MiB"
    assert amount_text("memory", 100) == "100 B" and amount_text("pods", 6.0) == "6 pods"
    assert amounts_text({"cpu": 1.0, "memory": 2 ** 30, "pods": 3.0}) == "1 CPU, 1 GiB, 3 pods"
