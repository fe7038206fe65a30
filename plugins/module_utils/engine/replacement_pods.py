# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""What replacing pods first waits on, shared by its surge (engine.replacement_surge) and its one pod at a time
(engine.replacement_one_by_one): each namespace's pods and PDBs followed by an Informer, one workload's pods as
it sees them, and each workload's progress."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from ansible_collections.kubeops.rotation.plugins.module_utils.api.workloads import (
    pdbs_in,
    pods_informer,
    read_workload,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.progress import ProgressParts
from ansible_collections.kubeops.rotation.plugins.module_utils.model.errors import Blocked, TimedOut
from ansible_collections.kubeops.rotation.plugins.module_utils.model.keys import MANAGER
from ansible_collections.kubeops.rotation.plugins.module_utils.model.owners import Workload
from ansible_collections.kubeops.rotation.plugins.module_utils.model.pods import (
    is_ready,
    is_terminal,
    is_terminating,
    pod_key,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.model.selectors import index_label, selector_matches
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.progress import not_ready_text
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.replacement import (
    SURGE,
    Budget,
    is_leaving,
    replicas_managers,
)

# How often a wait for pods also reads the workload again, to see whether someone else set its replicas.
RECHECK_SECONDS = 5.0


@dataclass
class WorkloadReplacement:
    """One workload's way through: which of its pods leave, how, and what came of it."""

    workload: Workload
    leaving: list = field(default_factory=list)
    method: str = SURGE
    action: str = "planned"
    replaced: list = field(default_factory=list)
    replacements: list = field(default_factory=list)
    replicas_steps: list = field(default_factory=list)
    autoscaler: str | None = None
    replicas_managers: list = field(default_factory=list)
    detail: str = ""
    seconds: float = 0.0

    def result(self):
        return dict(self.workload.target(), method=self.method, action=self.action, leaving=sorted(self.leaving),
                    replaced=sorted(self.replaced), replacements=sorted(self.replacements),
                    replicas_steps=self.replicas_steps, autoscaler=self.autoscaler,
                    replicas_managers=self.replicas_managers, detail=self.detail, seconds=self.seconds)


class ReplicasTaken(Blocked):
    """Someone else set the workload's replicas while it surged."""


class Replacing:
    """The pods and PDBs of the namespaces whose pods are replaced, read as they change, and the waits on them
    that each step of Surge and of one_at_a_time takes."""

    def __init__(self, client, run_id, deadline, clock=time.monotonic, sleep=time.sleep, every_pod=None):
        self.client = client
        self.run_id = run_id
        self.deadline = deadline
        self.clock = clock
        self.sleep = sleep
        self.every_pod = every_pod
        self._pods = {}
        self._pdbs = {}
        # What each workload replaced now waits for (namespaces run at once).
        self.progress = ProgressParts("replacing first")

    def pods(self, namespace):
        """The Informer of the namespace's pods: listed, or taken from ``every_pod`` (api.watch.BackgroundInformer) when the
        caller follows every pod, and watched from there."""
        if namespace not in self._pods:
            informer = pods_informer(self.client, namespace)
            if self.every_pod is None:
                informer.relist()
            else:
                version, objects = self.every_pod.snapshot()
                informer.start_from(version, {uid: pod for uid, pod in objects.items()
                                              if pod["metadata"].get("namespace") == namespace})
            self._pods[namespace] = informer
        return self._pods[namespace]

    def budgets(self, namespace, template_labels, mine):
        """The Budgets of the PDBs that select the workload's pods, its own pods (uids ``mine``) left out."""
        if namespace not in self._pdbs:
            self._pdbs[namespace] = [(pdb, _Selected(self.pods(namespace), (pdb.get("spec") or {}).get("selector")))
                                     for pdb in pdbs_in(self.client, namespace)]
        budgets = []
        for pdb, selected in self._pdbs[namespace]:
            if not selector_matches(selected.selector, template_labels):
                continue
            others = [pod for pod in selected() if pod["metadata"]["uid"] not in mine]
            budgets.append(Budget(pdb, len(others), sum(1 for pod in others if is_ready(pod))))
        return budgets

    def wait(self, state, replicas, deadline, until):
        """``until()`` over the namespace's pods as they change; reads the workload when it holds and every
        RECHECK_SECONDS, and raises ReplicasTaken when its replicas are no longer ``replicas`` (so that no step
        is taken from a count someone else set), TimedOut at ``deadline``."""
        while True:
            self.progress.tell(state.workload, "%s: %s" % (state.workload.label, state.describe(replicas)))
            found = state.informer.wait(lambda _objects, _change: until(),
                                        min(deadline, self.clock() + RECHECK_SECONDS))
            current = read_workload(self.client, state.workload)
            if current is None:
                raise Blocked("%s was deleted while its pods were replaced." % state.workload.label)
            if (current.get("spec") or {}).get("replicas") != replicas:
                raise ReplicasTaken("%s: spec.replicas was set to %s while this run had set it to %d, by %s; its pods "
                                    "cannot be replaced first against that." % (
                                        state.workload.label, (current.get("spec") or {}).get("replicas"), replicas,
                                        ", ".join(replicas_managers(current, MANAGER)) or "another client"))
            if found:
                return found
            if self.clock() >= deadline:
                raise TimedOut("%s: %s" % (state.workload.label, state.describe(replicas)))


class _Selected:
    """The pods of an Informer that a selector selects, those ended or ending left out. BackgroundInformer event by event, and
    worked out again from all pods only after a list: each test of a wait asks for them several times, and a
    namespace may hold thousands of pods."""

    def __init__(self, informer, selector):
        self.informer = informer
        self.selector = selector
        self.index = index_label(selector)
        self.selected = {}
        self.pods = ()
        self.seen = None

    def __call__(self):
        changes = self.informer.changes
        if self.seen != changes:
            last = self.informer.last_change
            if last is not None and self.seen == changes - 1:
                uid, pod = last
                if pod is not None and self.wanted(pod):
                    self.selected[uid] = pod
                else:
                    self.selected.pop(uid, None)
            else:
                self.selected = {uid: pod for uid, pod in self.informer.objects.items() if self.wanted(pod)}
            self.pods = tuple(self.selected.values())
            self.seen = changes
        return self.pods

    def wanted(self, pod):
        """One label of the selector looked at first: it turns away at once the many pods of other workloads."""
        labels = pod["metadata"].get("labels") or {}
        return (self.index is None or labels.get(self.index[0]) == self.index[1]) and \
            selector_matches(self.selector, labels) and not is_terminal(pod) and not is_terminating(pod)


class WorkloadPods:
    """One workload's pods as the namespace's Informer sees them."""

    def __init__(self, replacing, workload, spec):
        self.replacing = replacing
        self.workload = workload
        self.template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        self.informer = replacing.pods(workload.namespace)
        self._mine = _Selected(self.informer, spec.get("selector"))

    def mine(self):
        return self._mine()

    def pod(self, key):
        return next((pod for pod in self.mine() if pod_key(pod) == key), None)

    def by_uid(self, uid):
        return next((pod for pod in self.mine() if pod["metadata"]["uid"] == uid), None)

    def leaving_now(self, asked, run_id):
        """The asked pods still here, and those a killed run of ``run_id`` marked that still are."""
        return sorted(pod_key(pod) for pod in self.mine() if pod_key(pod) in asked or is_leaving(pod, run_id))

    def ready(self):
        return sum(1 for pod in self.mine() if is_ready(pod))

    def budgets(self):
        return self.replacing.budgets(self.workload.namespace, self.template_labels,
                                      {pod["metadata"]["uid"] for pod in self.mine()})

    def replacements_ready(self, replicas, leaving):
        """Every pod that stays is Ready: the replacements of the steps so far are."""
        mine = self.mine()
        staying = [pod for pod in mine if pod_key(pod) not in leaving]
        return len(staying) >= replicas - (len(mine) - len(staying)) and all(is_ready(pod) for pod in staying)

    def removed(self, replicas):
        return len(self.mine()) <= replicas

    def describe(self, replicas):
        mine = self.mine()
        not_ready = [pod for pod in mine if not is_ready(pod) and not pod["metadata"].get("deletionTimestamp")]
        return "%d of %d pods Ready at %d replicas%s" % (
            self.ready(), len(mine), replicas, "; %s" % not_ready_text(not_ready) if not_ready else "")
