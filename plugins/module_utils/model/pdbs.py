# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""PodDisruptionBudgets (API JSON): which select a pod, and how to name one in a message."""

from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.module_utils.model.selectors import selector_matches


def pdbs_for(pod, pdbs):
    """The PodDisruptionBudgets of the pod's namespace that select it."""
    namespace = pod["metadata"]["namespace"]
    labels = pod["metadata"].get("labels") or {}
    return [pdb for pdb in pdbs
            if pdb["metadata"]["namespace"] == namespace and selector_matches(pdb["spec"].get("selector"), labels)]


def disruptions_allowed(pdb):
    return (pdb.get("status") or {}).get("disruptionsAllowed") or 0


def describe_pdb(pdb):
    status = pdb.get("status") or {}
    return "PDB %s/%s (currentHealthy %s, desiredHealthy %s, disruptionsAllowed %s)" % (
        pdb["metadata"]["namespace"], pdb["metadata"]["name"], status.get("currentHealthy", "?"),
        status.get("desiredHealthy", "?"), status.get("disruptionsAllowed", "?"))
