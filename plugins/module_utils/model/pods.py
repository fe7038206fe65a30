# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Pure facts about Pod objects, given as the API's JSON (plain dicts)."""

from __future__ import annotations

import json
import re

from ansible_collections.kubeops.rotation.plugins.module_utils.model.errors import NotFound
from ansible_collections.kubeops.rotation.plugins.module_utils.model.keys import DO_NOT_DISRUPT, SAFE_TO_EVICT, WARM_SET_LABEL
from ansible_collections.kubeops.rotation.plugins.module_utils.model.nodes import node_name

TERMINAL_PHASES = ("Succeeded", "Failed")
# A Go duration ("30m", "1h30m", "90s", "1.5h"), which Karpenter also takes as a do-not-disrupt value.
_GO_DURATION = re.compile(r"^(?:\d+(?:\.\d+)?(?:ns|us|\u00b5s|ms|s|m|h))+$")


def pod_key(pod):
    """"namespace/name": how results and plans name a pod."""
    return "%s/%s" % (pod["metadata"]["namespace"], pod["metadata"]["name"])


def node_of(pod):
    return (pod.get("spec") or {}).get("nodeName")


def by_node_and_key(pod):
    """The order in which pods are judged and reported: by node, then by "namespace/name"."""
    return node_of(pod) or "", pod_key(pod)


def pods_of_named_nodes(names, nodes, pods):
    """The pods on the nodes ``names`` (sorted by node and key) and those names (sorted), from ``nodes`` and
    ``pods``, every node and every pod as listed. A name that is no node's is NotFound, nothing being changed."""
    wanted = set(names)
    missing = wanted - {node_name(node) for node in nodes}
    if missing:
        raise NotFound.nodes(missing)
    return sorted((pod for pod in pods if node_of(pod) in wanted), key=by_node_and_key), sorted(wanted)


def annotations_of(pod):
    return (pod.get("metadata") or {}).get("annotations") or {}


def annotation_json(obj, key):
    """The JSON object in the annotation ``key`` of ``obj``: None without the annotation, {} when it is not one."""
    text = annotations_of(obj).get(key)
    if not text:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


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


def is_placeholder(pod):
    """A warm node's placeholder: it gives its room up to any pod that moves (it is preempted)."""
    return WARM_SET_LABEL in ((pod.get("metadata") or {}).get("labels") or {})


def is_ready(pod):
    return not is_terminating(pod) and any(
        condition.get("type") == "Ready" and condition.get("status") == "True"
        for condition in (pod.get("status") or {}).get("conditions") or [])


def do_not_disrupt_annotation(pod):
    """(key, value) of the autoscaler annotation that asks to leave the pod alone, or None:
    Karpenter's do-not-disrupt as "true" or as a duration ("30m"), cluster-autoscaler's
    safe-to-evict as "false"."""
    annotations = annotations_of(pod)
    karpenter = annotations.get(DO_NOT_DISRUPT[0])
    if karpenter is not None and (karpenter == DO_NOT_DISRUPT[1] or _GO_DURATION.match(karpenter)):
        return DO_NOT_DISRUPT[0], karpenter
    if annotations.get(SAFE_TO_EVICT[0]) == SAFE_TO_EVICT[1]:
        return SAFE_TO_EVICT
    return None


def claim_names(pod):
    return [volume["persistentVolumeClaim"]["claimName"]
            for volume in (pod.get("spec") or {}).get("volumes") or [] if "persistentVolumeClaim" in volume]


def moved_to(pod, node):
    """A copy of ``pod`` as it would be on ``node``."""
    return dict(pod, spec=dict(pod.get("spec") or {}, nodeName=node))
