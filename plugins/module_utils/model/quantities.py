# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Kubernetes quantities and what a pod requests, as the scheduler counts it."""

from __future__ import annotations

import functools
import re

# What every node and pod is counted in; a node may advertise more (ephemeral-storage, hugepages-2Mi,
# nvidia.com/gpu), which a pod that requests them needs as well.
RESOURCES = ("cpu", "memory", "pods")
_SUFFIXES = {"": 1, "n": 1e-9, "u": 1e-6, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
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
    """Every resource of a resource list ({"cpu": "4", "nvidia.com/gpu": "8", ...}) as numbers; cpu, memory and
    pods are there even when missing (0)."""
    quantities = quantities or {}
    amounts = {resource: parse_quantity(value) for resource, value in quantities.items()}
    for resource in RESOURCES:
        amounts.setdefault(resource, 0.0)
    return amounts


def _requests(container, resource):
    requests = (container.get("resources") or {}).get("requests") or {}
    return parse_quantity(requests[resource]) if resource in requests else 0.0


def _requested(containers):
    """Every resource some container requests, beyond cpu, memory and pods (which every pod is counted in)."""
    return {resource for container in containers for resource in
            ((container.get("resources") or {}).get("requests") or {})} - {"cpu", "memory", "pods"}


def pod_requests(pod):
    """Requests of a pod as the scheduler counts them, per resource: its containers plus its native sidecars
    (init containers with restartPolicy Always, which run beside them), or, when larger, what the init phase
    needs at its peak (an init container plus the sidecars started before it), plus the pod's overhead; every
    pod counts 1 against "pods"."""
    spec = pod.get("spec") or {}
    counted = {"pods": 1.0}
    overhead = spec.get("overhead") or {}
    extended = _requested(list(spec.get("containers") or ()) + list(spec.get("initContainers") or ())) | \
        (set(overhead) - {"cpu", "memory", "pods"})
    for resource in ("cpu", "memory", *sorted(extended)):
        running = sum(_requests(container, resource) for container in spec.get("containers") or ())
        sidecars = peak = 0.0
        for container in spec.get("initContainers") or ():
            if container.get("restartPolicy") == "Always":
                sidecars += _requests(container, resource)
                running += _requests(container, resource)
                peak = max(peak, sidecars)
            else:
                peak = max(peak, _requests(container, resource) + sidecars)
        counted[resource] = max(running, peak) + (parse_quantity(overhead[resource]) if resource in overhead else 0.0)
    return counted


def amount_text(resource, value):
    """An amount for people: cpu in cores or millicores ("3.5 CPU", "250m CPU"), memory in binary units ("8 GiB",
    "512 MiB"), ephemeral-storage and hugepages the same, named ("5 GiB ephemeral-storage"), pods as a count, any
    other resource as a count and its name ("2 nvidia.com/gpu")."""
    if resource == "cpu":
        return "%g CPU" % round(value, 3) if value >= 1 or value == 0 else "%dm CPU" % round(value * 1000)
    if resource == "pods":
        return "%d pods" % value
    if resource not in ("memory", "ephemeral-storage") and not resource.startswith("hugepages-"):
        return "%g %s" % (round(value, 3), resource)
    named = "" if resource == "memory" else " " + resource
    for unit, size in (("TiB", 2 ** 40), ("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if value >= size:
            return "%g %s%s" % (round(value / size, 1), unit, named)
    return "%d B%s" % (value, named)


def amounts_text(amounts, resources=RESOURCES):
    """Amounts of ``resources`` for people: "3.5 CPU, 8 GiB, 6 pods"."""
    return ", ".join(amount_text(resource, amounts[resource]) for resource in resources if resource in amounts)
