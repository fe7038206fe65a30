"""Node objects that kwok adopts and plays the kubelet for (test fixture)."""

from __future__ import annotations

FAKE_NODE_ANNOTATION = {"kwok.x-k8s.io/node": "fake"}
DEFAULT_CAPACITY = {"cpu": "4", "memory": "16Gi", "pods": "110"}


def fake_node(name, labels=None, capacity=None, finalizers=None, taints=None):
    """A Node manifest for kwok; capacity is also the allocatable."""
    capacity = dict(DEFAULT_CAPACITY, **(capacity or {}))
    metadata = {
        "name": name,
        "annotations": dict(FAKE_NODE_ANNOTATION),
        "labels": dict({
            "kubernetes.io/hostname": name,
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            "type": "kwok",
        }, **(labels or {})),
    }
    if finalizers:
        metadata["finalizers"] = list(finalizers)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": metadata,
        "spec": {"taints": list(taints or [])},
        "status": {"capacity": capacity, "allocatable": dict(capacity)},
    }
