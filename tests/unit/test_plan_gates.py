"""Gates judged from what was read (plan/gates.py): alerts, query results, objects, HTTP answers."""

from __future__ import annotations

from ansible_collections.kubeops.rotation.plugins.module_utils.plan.gates import (
    alerts_gate,
    condition_error,
    gates_message,
    http_gate,
    objects_gate,
    query_gate,
    waiting_line,
)

FIRING = {"labels": {"alertname": "ShopErrors", "severity": "critical", "namespace": "shop"}, "state": "firing"}
PENDING = {"labels": {"alertname": "ShopSlow", "severity": "critical"}, "state": "pending"}
ACTIVE = {"labels": {"alertname": "NodeDown", "severity": "page"}, "status": {"state": "active"}}


def test_an_alert_gate_trips_on_a_firing_alert_that_a_matcher_selects_and_not_on_a_pending_one():
    tripped = alerts_gate("prometheus", [FIRING, PENDING], [{"severity": "critical"}])
    assert not tripped.held and tripped.saw == "firing: ShopErrors{namespace=shop, severity=critical}"
    assert tripped.gate == "prometheus alerts {severity=critical}"
    held = alerts_gate("prometheus", [FIRING, PENDING], [{"severity": "page"}, {"alertname": "ShopSlow"}])
    assert held.held and held.saw == "1 alert(s) firing, none of them matching"
    assert not alerts_gate("alertmanager", [ACTIVE], []).held, "no matcher: any firing alert"
    assert alerts_gate("prometheus", [], []).saw == "no alert firing"


def test_a_query_returns_no_series_or_values_within_its_bounds():
    series = [{"metric": {"pod": "web-1"}, "value": [1.0, "0.2"]}, {"metric": {"pod": "web-2"}, "value": [1.0, "0.01"]}]
    assert query_gate("errors > 0", []).held
    empty_wanted = query_gate("errors > 0", series)
    assert not empty_wanted.held and empty_wanted.saw.startswith("2 series: {pod=web-1} 0.2")
    bounded = query_gate("ratio", series, maximum=0.05)
    assert not bounded.held and bounded.saw == "{pod=web-1} 0.2, where at most 0.05 is wanted"
    assert query_gate("ratio", series, minimum=0, maximum=0.5).held
    assert not query_gate("ratio", [], maximum=0.05).held, "a value is wanted"
    assert query_gate("scalar(up)", [1.0, "1"], minimum=1).held


def test_an_objects_gate_holds_when_its_jmespath_condition_is_true():
    deployments = [{"metadata": {"name": "web"}, "spec": {"replicas": 3}, "status": {"readyReplicas": 3}},
                   {"metadata": {"name": "api"}, "spec": {"replicas": 2}, "status": {"readyReplicas": 1}}]
    condition = "length([?status.readyReplicas != spec.replicas]) == `0`"
    gate = objects_gate("shop Deployments", deployments, condition)
    assert not gate.held and gate.saw == "2 object(s); %s gives False" % condition
    assert objects_gate("shop Deployments", deployments[:1], condition).held
    assert condition_error(condition) is None
    assert condition_error("length([?").startswith("length([? is not a JMESPath expression")


def test_an_http_gate_holds_on_2xx_or_the_statuses_given():
    assert http_gate("http://shop/healthz", 204).held
    assert not http_gate("http://shop/healthz", 503).held
    assert http_gate("http://shop/healthz", 401, [401]).held
    down = http_gate("http://shop/healthz", None, error="Connection refused")
    assert not down.held and down.saw == "no answer: Connection refused"


def test_the_messages_name_each_gate_that_did_not_hold_and_what_it_saw():
    results = [http_gate("http://shop/healthz", 503), http_gate("http://api/healthz", 200),
               query_gate("errors > 0", [{"metric": {}, "value": [1, "3"]}])]
    assert gates_message(results, "after batch 1/3", 300) == (
        "The gates did not hold after batch 1/3 within 300 s: http http://shop/healthz: answered 503; "
        "query errors > 0: 1 series: {} 3.")
    assert waiting_line(results, "after batch 1/3", 42.5) == (
        "gates after batch 1/3: waiting for 2 of 3 (http http://shop/healthz: answered 503; query errors > 0: 1 "
        "series: {} 3), 42 s so far")
