# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""PodDisruptionBudgets (API JSON): which select a pod, and how to name one in a message."""

from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.module_utils.model.selectors import index_label, selector_matches


def pdbs_for(pod, pdbs):
    """The PodDisruptionBudgets of the pod's namespace that select it."""
    namespace = pod["metadata"]["namespace"]
    labels = pod["metadata"].get("labels") or {}
    return [pdb for pdb in pdbs
            if pdb["metadata"]["namespace"] == namespace and selector_matches(pdb["spec"].get("selector"), labels)]


class PdbIndex:
    """PDBs by namespace and by one label of their selector, so that finding a pod's PDBs among many
    looks at only those that may select it."""

    def __init__(self, pdbs):
        self._buckets = {}
        for position, pdb in enumerate(pdbs):
            key = (pdb["metadata"]["namespace"], index_label(pdb["spec"].get("selector")))
            self._buckets.setdefault(key, []).append((position, pdb))

    def candidates(self, pod):
        """The PDBs that may select ``pod``, in their order: pdbs_for(pod, these) is pdbs_for(pod, all)."""
        namespace = pod["metadata"]["namespace"]
        found = list(self._buckets.get((namespace, None), ()))
        for label in (pod["metadata"].get("labels") or {}).items():
            found.extend(self._buckets.get((namespace, label), ()))
        return [pdb for _position, pdb in sorted(found, key=lambda entry: entry[0])]


def disruptions_allowed(pdb):
    return (pdb.get("status") or {}).get("disruptionsAllowed") or 0


def allowed_now(pods, pdbs):
    """Which of ``pods``, refused by their PDBs, the PDBs now allow, in order: each pod takes one of the
    disruptions allowed by every PDB that selects it, so that no two pods race for the same one."""
    left = {}
    allowed = []
    for pod in pods:
        selecting = pdbs_for(pod, pdbs)
        keys = [(pdb["metadata"]["namespace"], pdb["metadata"]["name"]) for pdb in selecting]
        for key, pdb in zip(keys, selecting):
            left.setdefault(key, disruptions_allowed(pdb) if _status_is_current(pdb) else 0)
        if all(left[key] > 0 for key in keys):
            for key in keys:
                left[key] -= 1
            allowed.append(pod)
    return allowed


def _status_is_current(pdb):
    """Whether the disruption controller has seen the PDB's spec; until then the API server refuses evictions."""
    return (pdb.get("status") or {}).get("observedGeneration", 0) >= pdb["metadata"].get("generation", 0)


def describe_pdb(pdb):
    status = pdb.get("status") or {}
    return "PDB %s/%s (currentHealthy %s, desiredHealthy %s, disruptionsAllowed %s)" % (
        pdb["metadata"]["namespace"], pdb["metadata"]["name"], status.get("currentHealthy", "?"),
        status.get("desiredHealthy", "?"), status.get("disruptionsAllowed", "?"))
