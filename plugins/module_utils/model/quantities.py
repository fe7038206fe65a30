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


def _requests(container, resource):
    requests = (container.get("resources") or {}).get("requests") or {}
    return parse_quantity(requests[resource]) if resource in requests else 0.0


def pod_requests(pod):
    """Requests of a pod as the scheduler counts them, per resource: its containers plus its native sidecars
    (init containers with restartPolicy Always, which run beside them), or, when larger, what the init phase
    needs at its peak (an init container plus the sidecars started before it), plus the pod's overhead; every
    pod counts 1 against "pods"."""
    spec = pod.get("spec") or {}
    counted = {"pods": 1.0}
    for resource in ("cpu", "memory"):
        running = sum(_requests(container, resource) for container in spec.get("containers") or ())
        sidecars = peak = 0.0
        for container in spec.get("initContainers") or ():
            if container.get("restartPolicy") == "Always":
                sidecars += _requests(container, resource)
                running += _requests(container, resource)
                peak = max(peak, sidecars)
            else:
                peak = max(peak, _requests(container, resource) + sidecars)
        overhead = spec.get("overhead") or {}
        counted[resource] = max(running, peak) + (parse_quantity(overhead[resource]) if resource in overhead else 0.0)
    return counted


def amount_text(resource, value):
    """An amount for people: cpu in cores or millicores ("3.5 CPU", "250m CPU"), memory in binary units
    ("8 GiB", "512 MiB"), pods as a count."""
    if resource == "cpu":
        return "%g CPU" % round(value, 3) if value >= 1 or value == 0 else "%dm CPU" % round(value * 1000)
    if resource == "pods":
        return "%d pods" % value
    for unit, size in (("TiB", 2 ** 40), ("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if value >= size:
            return "%g %s" % (round(value / size, 1), unit)
    return "%d B" % value


def amounts_text(amounts, resources=RESOURCES):
    """Amounts of ``resources`` for people: "3.5 CPU, 8 GiB, 6 pods"."""
    return ", ".join(amount_text(resource, amounts[resource]) for resource in resources if resource in amounts)
