# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""What an eviction run waits on between its passes, by watching, never by polling: its pods gone, room made for
the next (a pod Ready), the PDBs allowing the pods they refused, and at the end the replacements Ready. Each is an
Informer of api.watch, so that a watch that expired or broke is listed again and nothing is missed. Also the
replica counts of the workloads whose pods are evicted (max_unavailable_per_owner)."""

from __future__ import annotations

import contextlib

from ansible_collections.kubeops.rotation.plugins.module_utils.api.watch import RELISTED
from ansible_collections.kubeops.rotation.plugins.module_utils.api.workloads import (
    deployment_of,
    pdbs_informer,
    pods_in,
    pods_informer,
    pods_version,
    read_workload,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.progress import tell_progress
from ansible_collections.kubeops.rotation.plugins.module_utils.model.owners import REPLICATED_KINDS, owner_of
from ansible_collections.kubeops.rotation.plugins.module_utils.model.pods import is_ready
from ansible_collections.kubeops.rotation.plugins.module_utils.model.selectors import labels_text, selector_text
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.eviction import (
    IN_FLIGHT_RECHECK,
    Wait,
    name_pdbs,
    release_allowed,
    what_to_wait_for,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.progress import not_ready_text


def pod_scope(states, by_node=True):
    """(namespace or None for every one, node or None) to watch the pods of ``states`` in: one node, one
    namespace, or everything. ``by_node=False`` when a pod Ready matters, which lands on other nodes."""
    nodes = {state.node for state in states}
    namespaces = {state.namespace for state in states}
    if by_node and len(nodes) == 1:
        return None, nodes.pop()
    return (namespaces.pop() if len(namespaces) == 1 else None), None


# What an eviction run waits for: a PDB to allow another disruption; pods to start (the replacements that give
# a workload replicas to spare, and those waited for at the end); evicted pods to go; a backoff after a 429; the
# API server's answers to the evictions themselves.
PDB_PACE, PODS_STARTING, PODS_GOING, BACKING_OFF = "pdb_pace", "pods_starting", "pods_going", "backing_off"
API_ANSWERS = "api_answers"
WAITED_FOR = (PDB_PACE, PODS_STARTING, PODS_GOING, BACKING_OFF, API_ANSWERS)


class EvictionWaits:
    """The waits of one eviction run; ``on_gone(state)`` is called for each pod in flight seen gone."""

    def __init__(self, client, settings, clock, sleep, on_gone):
        self.client = client
        self.settings = settings
        self.clock = clock
        self.sleep = sleep
        self.on_gone = on_gone
        self.version = None
        self._pods = None
        self._scope = None
        # Seconds waited, by what for (WAITED_FOR): where an eviction's time goes, for the rotation's report.
        self.waited = dict.fromkeys(WAITED_FOR, 0.0)

    def start(self, states):
        """Before the first eviction: where the watches of pods start, so that no deletion to come is missed."""
        if states:
            self.version = pods_version(self.client, *pod_scope(states))

    def pods(self, states, by_node=True):
        """The Informer of the pods of ``states``, knowing them. Each scope watched holds every pod in flight, so
        a new scope is watched from where the last one stopped (as from the run's start): no deletion is missed,
        and none seen already is told again."""
        scope = pod_scope(states, by_node)
        if scope != self._scope:
            self.version = self._pods.version if self._pods else self.version
            self._pods, self._scope = pods_informer(self.client, *scope).start_from(self.version), scope
        for state in states:  # evicted since it last watched: known, so that only its deletion removes it
            self._pods.objects.setdefault(state.uid, state.pod)
        return self._pods

    def finish_gone(self, in_flight, objects):
        """Finish the pods in flight that ``objects`` no longer holds; whether there were any."""
        gone = [uid for uid in in_flight if uid not in objects]
        for uid in gone:
            self.on_gone(in_flight.pop(uid))
        return bool(gone)

    def wait(self, queue, in_flight, timeout):
        """Until something may let the loop go on (plan.eviction.what_to_wait_for), or ``timeout`` seconds."""
        wait, states, for_room = what_to_wait_for(queue, in_flight, self.clock(), self.settings.wait)
        kind = PDB_PACE if wait is Wait.PDBS else BACKING_OFF if wait is Wait.SLEEP else \
            PODS_STARTING if for_room else PODS_GOING
        with self.timed(kind):
            self._wait(wait, states, for_room, in_flight, timeout)

    @contextlib.contextmanager
    def timed(self, kind):
        """The block's seconds counted as waited for ``kind`` (WAITED_FOR), however it ends."""
        started = self.clock()
        try:
            yield
        finally:
            self.waited[kind] += self.clock() - started

    def _wait(self, wait, states, for_room, in_flight, timeout):
        if wait is Wait.SLEEP or self.version is None:
            self.sleep(timeout)
        elif wait is Wait.PDBS:
            if in_flight and self.settings.wait:
                # Watching the PDBs, not the pods: a pod in flight is seen gone by a list, every few seconds.
                self.finish_gone(in_flight, self.pods(list(in_flight.values())).relist())
                if in_flight:
                    timeout = min(timeout, IN_FLIGHT_RECHECK)
            self.wait_for_pdbs(states, timeout)
        else:
            self.pods(states, by_node=not for_room).wait(
                lambda objects, change: self._moved(in_flight, for_room, objects, change), self.clock() + timeout)

    def _moved(self, in_flight, for_room, objects, change):
        """Whether the loop may go on: a pod in flight gone (the last, or while a pod waits for room), or, while a
        pod waits for room, a pod Ready (maybe a replacement: its owner may have replicas to spare)."""
        if change is None:
            return False
        if self.finish_gone(in_flight, objects) and (not in_flight or for_room):
            return True
        return for_room and (change is RELISTED or (change[0] in ("ADDED", "MODIFIED") and is_ready(change[1])))

    def wait_for_pdbs(self, refused, timeout):
        """Watch the PDBs of the refused pods until they allow some (then due at once) or ``timeout``: a list first,
        so that a disruption allowed since the refusal is not waited for. Each allowed disruption goes to one pod,
        so that pods do not race for it and are refused again."""
        namespaces = {state.namespace for state in refused}
        informer = pdbs_informer(self.client, next(iter(namespaces)) if len(namespaces) == 1 else None)

        def allowed(objects, change):
            if change is None or change is RELISTED:
                name_pdbs(refused, objects.values())
            return release_allowed(refused, objects.values(), self.clock())
        informer.wait(allowed, self.clock() + timeout)

    def replacements(self, owners, evicted, ready_before, deadline):
        """Watch the pods of each workload of the ``evicted`` states until it has them back: as many Ready as it had
        before the evictions (``ready_before``, by Workload), or as it wants if it wants fewer now. At ``deadline``,
        what is missing, with the scheduler's reason for each pod still Pending."""
        with self.timed(PODS_STARTING):
            return self._replacements(owners, evicted, ready_before, deadline)

    def _replacements(self, owners, evicted, ready_before, deadline):
        for workload in sorted({owners.workload_of(state.pod) for state in evicted} - {None}):
            obj = read_workload(self.client, workload) or {}
            desired = (obj.get("spec") or {}).get("replicas", 1)
            wanted = min(desired, ready_before.get(workload, desired))
            informer = pods_informer(self.client, workload.namespace, label_selector=owners.selector(workload, obj))

            def back(objects, _change, workload=workload, wanted=wanted):
                ready = sum(1 for pod in objects.values() if is_ready(pod))
                if ready < wanted:
                    not_ready = _not_ready(objects.values())
                    tell_progress("waiting for replacements: %s %s/%s has %d of %d Ready%s" % (
                        workload.kind, workload.namespace, workload.name, ready, wanted,
                        "; %s" % not_ready_text(not_ready) if not_ready else ""))
                return ready >= wanted
            if not informer.wait(back, deadline):
                ready = sum(1 for pod in informer.objects.values() if is_ready(pod))
                not_ready = _not_ready(informer.objects.values())
                return "%s/%s in %s has %d of the %d Ready pods it had%s" % (
                    workload.kind, workload.name, workload.namespace, ready, wanted,
                    " (%s)" % not_ready_text(not_ready) if not_ready else "")
        return ""


def _not_ready(pods):
    return [pod for pod in pods if not is_ready(pod) and not pod["metadata"].get("deletionTimestamp")]


class Owners:
    """The workloads that keep the evicted pods' replica counts (a ReplicaSet's Deployment), each read once, and
    their replicas, read once per pass of the loop."""

    def __init__(self, client):
        self.client = client
        self.workloads = {}
        self.this_pass = {}

    def workload_of(self, pod):
        """The Workload that keeps the pod's replica count, or None."""
        owner = owner_of(pod, {})
        if not owner or owner.kind not in REPLICATED_KINDS:
            return None
        if owner not in self.workloads:
            deployment = deployment_of(self.client, owner.namespace, owner.name) if owner.kind == "ReplicaSet" \
                else None
            self.workloads[owner] = deployment or owner
        return self.workloads[owner]

    def selector(self, workload, obj=None):
        obj = obj or read_workload(self.client, workload) or {}
        selector = (obj.get("spec") or {}).get("selector") or {}
        if workload.kind == "ReplicationController":
            return labels_text(selector)
        return selector_text(selector)

    def replicas(self, workload):
        """(desired, ready) of a workload, ready counted from its live pods: a pod being evicted counts as
        unavailable at once, without waiting for the controller to update its status."""
        if workload not in self.this_pass:
            obj = read_workload(self.client, workload)
            if not obj:
                self.this_pass[workload] = (0, 0)
            else:
                pods = pods_in(self.client, workload.namespace, self.selector(workload, obj))
                self.this_pass[workload] = ((obj.get("spec") or {}).get("replicas", 1),
                                            sum(1 for pod in pods if is_ready(pod)))
        return self.this_pass[workload]

    def ready_now(self, states):
        """What each workload of the pods of ``states`` has Ready now: what it must have again once they are
        evicted."""
        return {workload: self.replicas(workload)[1]
                for workload in {self.workload_of(state.pod) for state in states} - {None}}

    def new_pass(self):
        self.this_pass = {}
