# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Events on the pods and nodes the collection acts on, so that ``kubectl describe`` says who moved them."""

from __future__ import annotations

import socket
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.kubeops.rotation.plugins.module_utils.api.errors import ApiException, ConnectionFailed
from ansible_collections.kubeops.rotation.plugins.module_utils.api.events import create_event
from ansible_collections.kubeops.rotation.plugins.module_utils.model.keys import MANAGER
from ansible_collections.kubeops.rotation.plugins.module_utils.model.times import utc_now

# Threads sending Events beside the eviction loop; those left when it ends (a Drained Event per node) are sent
# before the module returns.
EVENT_SENDERS = 4


class EvictionHooks:
    """What EvictionRun tells as it goes, like kubectl drain's started and finished callbacks;
    every hook does nothing unless overridden."""

    def run_started(self, nodes, pending):
        """The run begins on ``nodes`` with ``pending`` pods to remove."""

    def pod_started(self, state):
        """The API server accepted the eviction (or deletion) of ``state.pod``."""

    def pod_held(self, state):
        """A PodDisruptionBudget refused ``state.pod`` (``state.held_by`` says which); it is retried."""

    def pod_finished(self, state):
        """``state.pod`` is gone."""

    def run_finished(self, nodes, removed):
        """The run ended without timing out, having removed ``removed`` pods."""

    def run_ended(self):
        """The run is over, however it ended: what the hook still does is finished before the run returns."""


class EventRecorder(EvictionHooks):
    """Records an Event for each eviction and for the start and end of a drain of nodes. The POSTs leave the
    eviction loop: each Event is written as it happens, sent by a few worker threads, all sent at the run's end."""

    def __init__(self, client, reason=""):
        self.client = client
        self.suffix = ": %s" % reason if reason else ""
        self.senders = ThreadPoolExecutor(max_workers=EVENT_SENDERS)

    def run_started(self, nodes, pending):
        for node in nodes if pending else ():
            self.on_node(node, "Draining", "Evicting %d pod(s)" % pending)

    def pod_started(self, state):
        reason = "Deleted" if state.verb == "deleted" else "Evicted"
        self.record(state.namespace, self.involved(state.pod), reason,
                    "%s by %s%s" % (state.verb.capitalize(), MANAGER, self.suffix))

    @staticmethod
    def involved(pod):
        metadata = pod["metadata"]
        return {"apiVersion": "v1", "kind": "Pod", "name": metadata["name"], "namespace": metadata["namespace"],
                "uid": metadata["uid"]}

    def pod_held(self, state):
        self.record(state.namespace, self.involved(state.pod), "EvictionHeld",
                    "Held by %s; %s evicts it when the budget allows%s" % (state.held_by, MANAGER, self.suffix),
                    kind="Warning")

    def run_finished(self, nodes, removed):
        for node in nodes if removed else ():
            self.on_node(node, "Drained", "Evicted %d pod(s)" % removed)

    def on_node(self, node, reason, message):
        self.record("default", {"apiVersion": "v1", "kind": "Node", "name": node, "uid": node},
                    reason, "%s by %s%s" % (message, MANAGER, self.suffix))

    def record(self, namespace, involved, reason, message, kind="Normal"):
        now = utc_now()
        body = {
            "metadata": {"generateName": "%s." % involved["name"], "namespace": namespace},
            "involvedObject": involved, "reason": reason, "message": message, "type": kind,
            "source": {"component": MANAGER}, "reportingComponent": MANAGER,
            "reportingInstance": socket.gethostname(), "firstTimestamp": now, "lastTimestamp": now, "count": 1,
        }
        self.senders.submit(self._send, namespace, body)

    def _send(self, namespace, body):
        try:
            create_event(self.client, namespace, body)
        except (ApiException, ConnectionFailed):  # an event is a courtesy: lacking RBAC for events, or its
            pass  # answer lost on the way back, must not stop a drain

    def run_ended(self):
        self.senders.shutdown(wait=True)
