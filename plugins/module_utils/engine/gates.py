# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The gates module's work: read what each gate looks at, judge it (plan.gates), and check again every
``interval`` until every gate holds or ``timeout`` passes."""

from __future__ import annotations

import time
import urllib.parse
from dataclasses import dataclass, replace

from ansible_collections.kubeops.rotation.plugins.module_utils.api.http import get_json, http_get
from ansible_collections.kubeops.rotation.plugins.module_utils.api.objects import list_objects
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.progress import tell_progress
from ansible_collections.kubeops.rotation.plugins.module_utils.model.errors import (
    GatesClosed,
    InvalidInput,
    KubeopsError,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.model.inputs import selector_error
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.gates import (
    GateResult,
    alerts_gate,
    condition_error,
    gates_message,
    http_gate,
    objects_gate,
    query_gate,
    waiting_line,
)

# Where each server lists its alerts: Prometheus all its rules' alerts, Alertmanager those not silenced or inhibited.
ALERTS_PATHS = {"prometheus": "/api/v1/alerts",
                "alertmanager": "/api/v2/alerts?active=true&silenced=false&inhibited=false"}


@dataclass(frozen=True)
class Gates:
    """What the gates look at (the module's options): ``servers`` (source, options) of Prometheus and
    Alertmanager, ``kubernetes`` and ``http`` their lists of checks; ``stage`` names the moment in messages."""

    servers: tuple = ()
    kubernetes: tuple = ()
    http: tuple = ()
    timeout: int = 0
    interval: int = 10
    stage: str = "now"

    @classmethod
    def from_params(cls, params, prefix=""):
        """The gates of the gates module's parameters (or of a role's gates, whose names ``prefix`` gives in
        errors; one left out keeps its default), or InvalidInput naming the first that makes no sense."""
        given = {key: value for key, value in params.items() if value is not None}
        gates = cls(tuple((source, given[source]) for source in ("prometheus", "alertmanager") if given.get(source)),
                    tuple(given.get("kubernetes", ())), tuple(given.get("http", ())),
                    given.get("timeout", cls.timeout), given.get("interval", cls.interval), given.get("stage", cls.stage))
        if gates.timeout < 0:
            raise InvalidInput("%stimeout must be 0 or more, got %s." % (prefix, gates.timeout))
        if gates.interval < 1:
            raise InvalidInput("%sinterval must be 1 or more, got %s." % (prefix, gates.interval))
        for index, check in enumerate(gates.kubernetes):
            error = condition_error(check["condition"]) or selector_error(
                "%skubernetes[%d].label_selector" % (prefix, index), check.get("label_selector"))
            if error:
                raise InvalidInput("%skubernetes[%d].condition: %s" % (prefix, index, error) if "JMESPath" in error
                                   else error)
        for source, server in gates.servers:
            for matcher in server.get("alerts") or ():
                if any(not isinstance(value, (str, int, float)) for value in matcher.values()):
                    raise InvalidInput("%s%s.alerts: each matcher maps label names to values, got %s."
                                       % (prefix, source, matcher))
        return gates

    def __bool__(self):
        return bool(self.servers or self.kubernetes or self.http)


def check_gates(client, gates):
    """One GateResult per gate, as the cluster and the servers are now. A server that does not answer trips the
    gates that read it."""
    results = []
    for source, server in gates.servers:
        results.extend(_server_gates(source, server))
    results.extend(_objects_gate(client, check) for check in gates.kubernetes)
    for check in gates.http:
        status, body = http_get(check["url"], check.get("headers"), check.get("validate_certs", True),
                                check.get("ca_cert"), check.get("timeout") or 10)
        results.append(http_gate(check["url"], status, check.get("status"), body))
    return results


def _server_gates(source, server):
    base = server["url"].rstrip("/")
    options = (server.get("headers"), server.get("validate_certs", True), server.get("ca_cert"))
    results = []
    if server.get("alerts") is not None:
        try:
            answer = get_json(base + ALERTS_PATHS[source], *options)
            alerts = answer if isinstance(answer, list) else (answer.get("data") or {}).get("alerts") or []
            results.append(alerts_gate(source, alerts, server["alerts"]))
        except KubeopsError as exc:
            results.append(replace(alerts_gate(source, [], server["alerts"]), held=False, saw=str(exc)))
    for query in server.get("queries") or ():
        name = query.get("name") or "%s query %s" % (source, query["query"])
        try:
            answer = get_json(base + "/api/v1/query?" + urllib.parse.urlencode({"query": query["query"]}), *options)
            results.append(query_gate(query["query"], (answer.get("data") or {}).get("result"), query.get("min"),
                                      query.get("max"), name))
        except KubeopsError as exc:
            results.append(GateResult(name, False, str(exc)))
    return results


def _objects_gate(client, check):
    where = " ".join(part for part in (
        check.get("namespace") and "in %s" % check["namespace"],
        check.get("label_selector") and "(%s)" % check["label_selector"]) if part)
    name = check.get("name") or "kubernetes %s%s: %s" % (
        check["kind"], " " + where if where else "", check["condition"])
    try:
        objects = list_objects(client, check.get("api_version") or "v1", check["kind"], check.get("namespace"),
                               check.get("label_selector"))
    except KubeopsError as exc:
        return GateResult(name, False, str(exc))
    return objects_gate(name, objects, check["condition"])


def wait_for_gates(client, gates, clock=time.monotonic, sleep=time.sleep):
    """The results once every gate holds, checked again every ``gates.interval`` s; GatesClosed at
    ``gates.timeout`` (0: checked once), carrying every gate's result."""
    started = clock()
    checks = 0
    while True:
        results = check_gates(client, gates)
        checks += 1
        seconds = clock() - started
        result = {"changed": False, "held": all(r.held for r in results), "gates": [r.to_dict() for r in results],
                  "checks": checks, "seconds": round(seconds, 1)}
        if result["held"]:
            return result
        if seconds + gates.interval > gates.timeout:
            raise GatesClosed(gates_message(results, gates.stage, seconds), result)
        tell_progress(waiting_line(results, gates.stage, seconds))
        sleep(gates.interval)
