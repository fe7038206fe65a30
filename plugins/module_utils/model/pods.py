# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Pure facts about Pod objects, given as the API's JSON (plain dicts)."""

from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.module_utils.model.keys import DO_NOT_DISRUPT, SAFE_TO_EVICT

TERMINAL_PHASES = ("Succeeded", "Failed")


def pod_key(pod):
    """"namespace/name": how results and plans name a pod."""
    return "%s/%s" % (pod["metadata"]["namespace"], pod["metadata"]["name"])


def node_of(pod):
    return (pod.get("spec") or {}).get("nodeName")


def annotations_of(pod):
    return (pod.get("metadata") or {}).get("annotations") or {}


def controller_of(obj):
    """The ownerReference with controller: true, or None for a bare object."""
    for reference in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if reference.get("controller"):
            return reference
    return None


def is_terminal(pod):
    return (pod.get("status") or {}).get("phase") in TERMINAL_PHASES


def is_terminating(pod):
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def is_ready(pod):
    return not is_terminating(pod) and any(
        condition.get("type") == "Ready" and condition.get("status") == "True"
        for condition in (pod.get("status") or {}).get("conditions") or [])


def do_not_disrupt_annotation(pod):
    """(key, value) of the autoscaler annotation that asks to leave the pod alone, or None."""
    annotations = annotations_of(pod)
    for key, value in (DO_NOT_DISRUPT, SAFE_TO_EVICT):
        if annotations.get(key) == value:
            return key, value
    return None


def claim_names(pod):
    return [volume["persistentVolumeClaim"]["claimName"]
            for volume in (pod.get("spec") or {}).get("volumes") or [] if "persistentVolumeClaim" in volume]


def moved_to(pod, node):
    """A copy of ``pod`` as it would be on ``node``."""
    return dict(pod, spec=dict(pod.get("spec") or {}, nodeName=node))
