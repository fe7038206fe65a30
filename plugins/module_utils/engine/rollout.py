# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Rollout restart: patch the workloads as ``kubectl rollout restart`` does, at most ``max_concurrent``
at a time, and wait for each by watching it until ``kubectl rollout status`` would say done
(plan.restart decides)."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from ansible_collections.kubeops.rotation.plugins.module_utils.api.errors import ConnectionFailed
from ansible_collections.kubeops.rotation.plugins.module_utils.api.workloads import (
    deployment_of,
    patch_workload,
    pdbs_in,
    pods_in,
    read_workload,
    workload_informer,
    workloads_in,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.progress import ProgressParts
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.steering import MovingPods, steering_while_moving
from ansible_collections.kubeops.rotation.plugins.module_utils.model.errors import InvalidInput, TimedOut
from ansible_collections.kubeops.rotation.plugins.module_utils.model.inputs import (
    first_error,
    names_error,
    number_error,
    selector_error,
    text_error,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.model.owners import RESTARTABLE_KINDS, Workload, owner_of
from ansible_collections.kubeops.rotation.plugins.module_utils.model.pods import is_terminating, node_of, pod_key
from ansible_collections.kubeops.rotation.plugins.module_utils.model.quantities import pod_requests
from ansible_collections.kubeops.rotation.plugins.module_utils.model.selectors import selector_text
from ansible_collections.kubeops.rotation.plugins.module_utils.model.times import parse_time, utc_now
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.capacity import smallest_request
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.restart import (
    Rollout,
    Status,
    owners_on_nodes,
    paced_strategy,
    restart_patch,
    restart_plan,
    restarted_at,
    rollout_status,
    strategy_put_back,
)


@dataclass
class RestartProgress:
    """One workload's way through a restart: what was done, and how its rollout went."""

    workload: Workload
    pods_on_nodes: list = field(default_factory=list)
    action: str = "planned"
    reason: str = ""
    rollout: str = "not waited"
    rollout_message: str = ""
    seconds: float = 0.0
    landed_on_avoided_nodes: list = field(default_factory=list)
    paced_from: dict | None = None
    # kubectl.kubernetes.io/restartedAt of its pod template, before and after (in check mode, "now").
    restarted_at: tuple = (None, None)

    def result(self):
        return dict(self.workload.target(), action=self.action, reason=self.reason, rollout=self.rollout,
                    rollout_message=self.rollout_message, seconds=self.seconds, pods_on_nodes=self.pods_on_nodes,
                    landed_on_avoided_nodes=self.landed_on_avoided_nodes, paced_from=self.paced_from)


class RolloutRestart:
    """Restarts workloads, ``max_concurrent`` at a time, each waited for by watching it until ``deadline``."""

    def __init__(self, client, restart_id=None, restarted_after=None, wait=True, avoid_nodes=(), max_concurrent=1,
                 clock=time.monotonic):
        self.client = client
        self.restart_id = restart_id
        self.restarted_after = restarted_after
        self.wait = wait
        self.avoid_nodes = set(avoid_nodes or ())
        self.max_concurrent = max_concurrent
        self.clock = clock
        self.progress = ProgressParts("restarting")

    def read(self, progress):
        return read_workload(self.client, progress.workload, required=True)

    def run(self, workloads, timeout, check_mode=False):
        deadline = self.clock() + timeout
        if check_mode:
            for progress in workloads:
                obj = self.read(progress)
                needed, reason = restart_plan(obj, self.restart_id, self.restarted_after)
                progress.restarted_at = (restarted_at(obj), "now" if needed else restarted_at(obj))
                progress.action = "planned" if needed else "already_restarted"
                progress.reason = "would be restarted" if needed else reason
            return workloads
        with ThreadPoolExecutor(max_workers=max(1, self.max_concurrent)) as pool:
            list(pool.map(lambda progress: self.restart_and_wait(progress, deadline), workloads))
        return workloads

    def restart_and_wait(self, progress, deadline):
        started = self.clock()
        workload = progress.workload
        obj = self.read(progress)
        before = restarted_at(obj)
        needed, reason = restart_plan(obj, self.restart_id, self.restarted_after)
        if needed:
            paced = None
            if workload.kind == "Deployment":
                paced, progress.paced_from = paced_strategy(obj, pdbs_in(self.client, workload.namespace))
            obj = self.patch(progress, paced)
            progress.action = "restarted"
        else:
            progress.action = "already_restarted"
        progress.restarted_at = (before, restarted_at(obj))
        progress.reason = reason
        if self.wait:
            status = self.wait_for_rollout(progress, obj, deadline)
            progress.rollout, progress.rollout_message = status.state.value, status.message
            if status.state is Rollout.DONE and self.avoid_nodes:
                progress.landed_on_avoided_nodes = self.pods_on_avoided_nodes(workload, obj)
            put_back = strategy_put_back(obj) if status.state is Rollout.DONE else None
            if put_back:
                patch_workload(self.client, workload, put_back)
        progress.seconds = round(self.clock() - started, 2)
        self.progress.drop(workload)

    def patch(self, progress, paced=None):
        """Restart the workload (with ``paced``, its rolling update cut to what its PDBs allow, in the same patch);
        when the API server went away mid-request and a restart id tells whether the patch was applied, read it
        again and patch only if it was not, so that it restarts once."""
        workload = progress.workload
        body = restart_patch(utc_now(), self.restart_id)
        if paced:
            body = {"spec": dict(body["spec"], **paced["spec"]),
                    "metadata": {"annotations": dict((body.get("metadata") or {}).get("annotations") or {},
                                                     **paced["metadata"]["annotations"])}}
        try:
            return patch_workload(self.client, workload, body)
        except ConnectionFailed:
            if not self.restart_id:
                raise
            obj = self.read(progress)
            if not restart_plan(obj, self.restart_id)[0]:
                return obj
            return patch_workload(self.client, workload, body)

    def wait_for_rollout(self, progress, obj, deadline):
        """Watch the workload until its rollout is done, stuck, or ``deadline`` passes."""
        workload = progress.workload
        informer = workload_informer(self.client, workload, self.clock).start_from(
            obj["metadata"]["resourceVersion"], {obj["metadata"]["uid"]: obj})

        def settled(objects, _change):
            current = latest(objects)
            status = rollout_status(workload.kind, current)
            if status.state is Rollout.PROGRESSING:
                self.progress.tell(workload, "%s: %s" % (workload.label, status.message))
                return None
            return status

        def latest(objects):
            return next((o for o in objects.values() if o.get("spec")), obj)
        status = informer.wait(settled, deadline)
        if status:
            return status
        current = latest(informer.objects)
        return Status(Rollout.TIMEOUT, rollout_status(workload.kind, current).message + self.conditions(current))

    @staticmethod
    def conditions(obj):
        conditions = (obj.get("status") or {}).get("conditions") or []
        if not conditions:
            return ""
        return " (conditions: %s)" % "; ".join(
            "%s=%s %s: %s" % (c.get("type"), c.get("status"), c.get("reason"), c.get("message")) for c in conditions)

    def pods_on_avoided_nodes(self, workload, obj):
        selector = selector_text((obj.get("spec") or {}).get("selector"))
        pods = pods_in(self.client, workload.namespace, selector)
        return sorted("%s on %s" % (pod["metadata"]["name"], node_of(pod)) for pod in pods
                      if node_of(pod) in self.avoid_nodes and not is_terminating(pod))


@dataclass(frozen=True)
class RestartSettings:
    """Which workloads to restart (explicit targets, a label selector, the owners of pods on nodes) and how."""

    targets: tuple = ()
    label_selector: str | None = None
    namespaces: tuple = ()
    on_nodes: tuple = ()
    include_daemonsets: bool = False
    restart_id: str | None = None
    restarted_after: str | None = None
    wait: bool = True
    timeout: int = 600
    max_concurrent: int = 1
    avoid_nodes: tuple = ()
    keep_zones: bool = False

    @classmethod
    def from_params(cls, params, prefix=""):
        """The settings from the rollout_restart module's parameters (one it does not get keeps its default here),
        or InvalidInput naming the first that makes no sense, with ``prefix`` before its name."""
        given = {key: value for key, value in params.items() if value is not None}
        default = cls()
        targets = given.get("targets")
        restarted_after = given.get("restarted_after")
        time_error = None
        if restarted_after is not None:
            try:
                parse_time(restarted_after.strip())
            except ValueError:
                time_error = "%srestarted_after must be an RFC 3339 time like 2026-12-03T06:00:00Z, got %s." % (
                    prefix, restarted_after or '""')
        error = first_error(
            names_error(prefix + "targets", targets, "workload"),
            *(text_error("%stargets[%d].%s" % (prefix, index, key), target[key], optional=False)
              for index, target in enumerate(targets or (), 1) for key in ("name", "namespace")),
            # Named as the task names it, by the option or its old name.
            selector_error(prefix + ("label_selector" if "label_selector" in given else "workload_selector"),
                           given.get("workload_selector")),
            names_error(prefix + "namespaces", given.get("namespaces"), "namespace"),
            names_error(prefix + "on_nodes", given.get("on_nodes"), "node"),
            names_error(prefix + "avoid_nodes", given.get("avoid_nodes") or None, "node"),
            text_error(prefix + "restart_id", given.get("restart_id")),
            time_error,
            number_error(prefix + "timeout", given.get("timeout"), 1),
            number_error(prefix + "max_concurrent", given.get("max_concurrent"), 1))
        if error:
            raise InvalidInput(error)
        return cls(
            targets=tuple(Workload(target["kind"], target["namespace"], target["name"]) for target in targets or ()),
            label_selector=given.get("workload_selector"), namespaces=tuple(given.get("namespaces", ())),
            on_nodes=tuple(given.get("on_nodes", ())),
            include_daemonsets=given.get("include_daemonsets", default.include_daemonsets),
            restart_id=given.get("restart_id"), restarted_after=restarted_after, wait=given.get("wait", default.wait),
            timeout=given.get("timeout", default.timeout),
            max_concurrent=given.get("max_concurrent", default.max_concurrent),
            avoid_nodes=tuple(given.get("avoid_nodes", ())), keep_zones=given.get("keep_zones", default.keep_zones))


def find_workloads(client, settings):
    """The RestartProgress of each workload to restart, sorted: explicit targets, those matching a label
    selector, and the owners of pods on nodes."""
    found = {}
    for target in settings.targets:
        found[target] = []
    if settings.label_selector:
        kinds = RESTARTABLE_KINDS if settings.include_daemonsets else RESTARTABLE_KINDS[:2]
        for namespace in settings.namespaces or [None]:
            for kind in kinds:
                for obj in workloads_in(client, kind, namespace, settings.label_selector):
                    found.setdefault(Workload(kind, obj["metadata"]["namespace"], obj["metadata"]["name"]), [])
    if settings.on_nodes:
        on_nodes = set(settings.on_nodes)
        # A pod already terminating is leaving anyway; it is no reason to restart its owner.
        pods = [pod for pod in pods_in(client)
                if node_of(pod) in on_nodes and not is_terminating(pod)
                and (not settings.namespaces or pod["metadata"]["namespace"] in settings.namespaces)]
        replica_set_owners = {}
        for pod in pods:
            owner = owner_of(pod, {})
            if owner and owner.kind == "ReplicaSet" and (owner.namespace, owner.name) not in replica_set_owners:
                deployment = deployment_of(client, owner.namespace, owner.name)
                replica_set_owners[(owner.namespace, owner.name)] = deployment.name if deployment else None
        for workload, pod_names in owners_on_nodes(pods, replica_set_owners, settings.include_daemonsets).items():
            found.setdefault(workload, []).extend(pod_names)
    return [RestartProgress(workload, sorted(pods)) for workload, pods in sorted(found.items())]


def moving_pods(client, workloads):
    """What a restart of the workloads moves: the smallest request of their pod templates
    (plan.capacity.smallest_request), and the keys of their pods now and the nodes those run on."""
    nodes, requests, pod_keys = set(), [], []
    for progress in workloads:
        obj = read_workload(client, progress.workload)
        if obj:
            spec = obj.get("spec") or {}
            requests.append(pod_requests(spec.get("template") or {}))
            pods = pods_in(client, progress.workload.namespace, selector_text(spec.get("selector")))
            pod_keys.extend(pod_key(pod) for pod in pods)
            nodes.update(node_of(pod) for pod in pods if node_of(pod))
    return smallest_request(requests), pod_keys, sorted(nodes)


def restart_diff(ran):
    """Each restarted (in check mode, to be restarted) workload's restartedAt, before and after."""
    changed = [progress for progress in ran if progress.restarted_at[0] != progress.restarted_at[1]]
    return {"before": {progress.workload.label: progress.restarted_at[0] for progress in changed},
            "after": {progress.workload.label: progress.restarted_at[1] for progress in changed}}


def restart_workloads(client, settings, check_mode=False):
    """Find, restart and wait; returns the result, with ``warnings`` for pods left on nodes to avoid.

    Raises TimedOut (carrying the result) when a rollout did not complete.
    """
    started = time.monotonic()
    runner = RolloutRestart(client, settings.restart_id, settings.restarted_after, settings.wait,
                            settings.avoid_nodes, settings.max_concurrent)
    workloads = find_workloads(client, settings)
    # A DaemonSet's pods belong on every node: kept off some, its rollout would wait for them until the timeout.
    daemons = any(progress.workload.kind == "DaemonSet" for progress in workloads)
    avoid = () if check_mode or daemons else settings.avoid_nodes
    keep_zones = settings.keep_zones and not check_mode
    request, leaving, nodes = None, [], []
    if (avoid or keep_zones) and workloads:
        request, leaving, nodes = moving_pods(client, workloads)
    with steering_while_moving(client, avoid, nodes if keep_zones else (), MovingPods(request, leaving)) as steered:
        ran = runner.run(workloads, settings.timeout, check_mode)
        entries = [progress.result() for progress in ran]
    summary = {"workloads": len(entries)}
    for entry in entries:
        for key in (entry["action"], entry["rollout"]):
            summary[key] = summary.get(key, 0) + 1
    result = {"changed": any(entry["action"] == "restarted" for entry in entries), "workloads": entries,
              "summary": summary, "elapsed_seconds": round(time.monotonic() - started, 2), "steered_nodes": steered,
              "diff": restart_diff(ran),
              "warnings": ["%s %s/%s has pods on nodes to avoid: %s" % (
                  entry["kind"], entry["namespace"], entry["name"], ", ".join(entry["landed_on_avoided_nodes"]))
                  for entry in entries if entry["landed_on_avoided_nodes"]]}
    unfinished = [entry for entry in entries if entry["rollout"] in (Rollout.STUCK, Rollout.TIMEOUT)]
    if unfinished:
        done = sum(1 for entry in entries if entry["rollout"] == "done")
        raise TimedOut("%d rollout(s) did not complete: %s. %d of %d workloads rolled out; rerunning with the same "
                       "restart_id does not restart them again." % (
                           len(unfinished), "; ".join(entry["rollout_message"] for entry in unfinished), done,
                           len(entries)), result)
    return result
