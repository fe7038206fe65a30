# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Replacement first for a StatefulSet or a Deployment whose strategy is Recreate: they cannot surge, so their
leaving pods go one at a time through the Eviction API and come back Ready before the next."""

from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.module_utils.api.errors import (
    ApiException,
    ConnectionFailed,
    api_message,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.api.workloads import evict_pod, pod_now
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.replacement_pods import WorkloadPods
from ansible_collections.kubeops.rotation.plugins.module_utils.model.errors import Blocked
from ansible_collections.kubeops.rotation.plugins.module_utils.model.pods import node_of, pod_key
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.eviction import found_removed
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.replacement import one_may_go


def one_at_a_time(replacing, progress, obj):
    """Evict the leaving pods of a StatefulSet or a Recreate Deployment one at a time, each when every pod is Ready
    and the PDBs allow one, and wait for it to come back Ready before the next."""
    workload = progress.workload
    spec = obj.get("spec") or {}
    state = WorkloadPods(replacing, workload, spec)
    replicas = spec.get("replicas", 1)
    leaving = set(state.leaving_now(progress.leaving, replacing.run_id))
    # Each pod by its uid, as it is now: once it is gone, a new pod takes its name.
    uids = {pod_key(pod): pod["metadata"]["uid"] for pod in state.mine() if pod_key(pod) in leaving}
    for key, uid in sorted(uids.items(), reverse=True):
        while state.by_uid(uid) is not None:
            replacing.wait(state, replicas, replacing.deadline,
                           lambda: one_may_go(replicas, state.ready(), state.budgets()))
            pod = state.by_uid(uid)
            if pod is None:
                break
            try:
                evict_pod(replacing.client, pod)
            except ConnectionFailed:
                # Its answer was lost: asked again only if it was not applied, so that it is evicted once.
                if found_removed(pod_now(replacing.client, pod)) is None:
                    replacing.sleep(1)
                    continue
            except ApiException as exc:
                if exc.status == 429:  # a PDB counted differently; wait for the next change
                    replacing.sleep(1)
                    continue
                if exc.status not in (404, 409):
                    raise Blocked("%s: evicting %s failed: %s" % (workload.label, key, api_message(exc)))
            replacing.wait(state, replicas, replacing.deadline, lambda: uid not in state.informer.objects
                           and state.ready() >= replicas)
            progress.replaced.append(key)
            replacement = state.pod(key)
            if replacement is not None:
                progress.replacements.append("%s on %s" % (key, node_of(replacement)))
            break
    progress.action = "replaced"
