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


def describe_pdb(pdb):
    status = pdb.get("status") or {}
    return "PDB %s/%s (currentHealthy %s, desiredHealthy %s, disruptionsAllowed %s)" % (
        pdb["metadata"]["namespace"], pdb["metadata"]["name"], status.get("currentHealthy", "?"),
        status.get("desiredHealthy", "?"), status.get("disruptionsAllowed", "?"))
