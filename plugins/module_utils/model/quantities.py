# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Kubernetes quantities and what a pod requests, as the scheduler counts it."""

from __future__ import annotations

import functools
import re

RESOURCES = ("cpu", "memory", "pods")
_SUFFIXES = {"": 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
             "Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40, "Pi": 2 ** 50, "Ei": 2 ** 60}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)$")


# A cluster has few distinct quantities and plans parse them once per pod and node.
@functools.lru_cache(maxsize=4096, typed=True)
def parse_quantity(text):
    """A Kubernetes quantity ("100m", "16Gi", "2", "1e3") as a number of base units (cores, bytes, pods)."""
    match = _QUANTITY.match(str(text).strip())
    if not match or match.group(2) not in _SUFFIXES:
        raise ValueError("not a Kubernetes quantity: %r" % (text,))
    return float(match.group(1)) * _SUFFIXES[match.group(2)]


def resource_amounts(quantities):
    """cpu, memory and pods of a resource list ({"cpu": "4", ...}) as numbers; a missing resource is 0."""
    quantities = quantities or {}
    return {resource: parse_quantity(quantities.get(resource, 0)) for resource in RESOURCES}


def pod_requests(pod):
    """Requests of a pod as the scheduler counts them: the sum of its containers, or its largest
    init container when that is larger, plus its overhead; every pod counts 1 against "pods"."""
    spec = pod.get("spec") or {}
    cpu = memory = 0.0
    for container in spec.get("containers") or ():
        requests = (container.get("resources") or {}).get("requests")
        if requests:
            if "cpu" in requests:
                cpu += parse_quantity(requests["cpu"])
            if "memory" in requests:
                memory += parse_quantity(requests["memory"])
    for container in spec.get("initContainers") or ():
        requests = (container.get("resources") or {}).get("requests")
        if requests:
            if "cpu" in requests:
                cpu = max(cpu, parse_quantity(requests["cpu"]))
            if "memory" in requests:
                memory = max(memory, parse_quantity(requests["memory"]))
    overhead = spec.get("overhead")
    if overhead:
        if "cpu" in overhead:
            cpu += parse_quantity(overhead["cpu"])
        if "memory" in overhead:
            memory += parse_quantity(overhead["memory"])
    return {"cpu": cpu, "memory": memory, "pods": 1.0}
