# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Gates: what must hold before a rotation starts and after each of its batches, judged from what was read (the
alerts and query results of Prometheus or Alertmanager, Kubernetes objects, the status of an HTTP check). Pure: the
reading is engine.gates'. Each gate judges to a GateResult: its name, whether it held, and what it saw, in words."""

from __future__ import annotations

import math
from dataclasses import dataclass

try:
    import jmespath
    from jmespath.exceptions import JMESPathError
except ImportError:  # reported by the module through missing_required_lib
    jmespath = None
    JMESPathError = Exception

# Alerts and series quoted in what a gate saw, at most.
SHOWN = 3


@dataclass(frozen=True)
class GateResult:
    gate: str
    held: bool
    saw: str

    def to_dict(self):
        return {"gate": self.gate, "held": self.held, "saw": self.saw}


def labels_text(labels):
    return "{%s}" % ", ".join("%s=%s" % item for item in sorted((labels or {}).items()))


def _shown(texts):
    return ", ".join(texts[:SHOWN]) + (" and %d more" % (len(texts) - SHOWN) if len(texts) > SHOWN else "")


def alerts_gate(source, alerts, matchers):
    """No alert firing whose labels include every label of one of ``matchers`` (dicts; none: any alert at all).
    ``alerts`` as Prometheus' /api/v1/alerts (state "firing") or Alertmanager's /api/v2/alerts (status.state
    "active") give them; a pending alert (its ``for`` not over yet) does not trip the gate."""
    firing = [alert for alert in alerts
              if alert.get("state", (alert.get("status") or {}).get("state")) in ("firing", "active")]
    tripped = [alert for alert in firing if not matchers or any(
        all((alert.get("labels") or {}).get(key) == str(value) for key, value in matcher.items())
        for matcher in matchers)]
    name = "%s alerts %s" % (source, " or ".join(labels_text(matcher) for matcher in matchers) if matchers
                             else "(any)")
    if tripped:
        return GateResult(name, False, "firing: %s" % _shown(
            [(alert.get("labels") or {}).get("alertname", "?") + labels_text(
                {key: value for key, value in (alert.get("labels") or {}).items() if key != "alertname"})
             for alert in tripped]))
    return GateResult(name, True, "%d alert(s) firing, none of them matching" % len(firing) if firing
                      else "no alert firing")


def query_gate(query, result, minimum=None, maximum=None, name=None):
    """An instant query's ``result`` (the ``data.result`` of /api/v1/query): with no bounds, it must return no
    series; with ``minimum`` or ``maximum``, it must return some, each value within them."""
    name = name or "query %s" % query
    if isinstance(result, list) and not result and minimum is None and maximum is None:
        return GateResult(name, True, "no series")
    values = _values(result)
    if minimum is None and maximum is None:
        return GateResult(name, False, "%d series: %s" % (len(values), _shown(
            ["%s %g" % (labels_text(metric), value) for metric, value in values])))
    if not values:
        return GateResult(name, False, "no series, where a value within its bounds is wanted")
    outside = [(metric, value) for metric, value in values
               if math.isnan(value) or (minimum is not None and value < minimum)
               or (maximum is not None and value > maximum)]
    bounds = " ".join(part for part in (
        "at least %g" % minimum if minimum is not None else "", "at most %g" % maximum if maximum is not None
        else "") if part)
    if outside:
        return GateResult(name, False, "%s, where %s is wanted" % (_shown(
            ["%s %g" % (labels_text(metric), value) for metric, value in outside]), bounds))
    return GateResult(name, True, "%s (%s)" % (_shown(["%g" % value for _metric, value in values]), bounds))


def _values(result):
    """(labels, float value) of each series of a vector result (a scalar is one series without labels)."""
    if isinstance(result, list) and len(result) == 2 and not isinstance(result[0], dict):
        return [({}, float(result[1]))]
    return [(series.get("metric") or {}, float((series.get("value") or [0, "nan"])[1])) for series in result or []]


def condition_error(expression):
    """Why a JMESPath expression does not compile, or None."""
    if jmespath is None:
        return None
    try:
        jmespath.compile(expression)
    except JMESPathError as exc:
        return "%s is not a JMESPath expression: %s" % (expression, exc)
    return None


def objects_gate(name, objects, condition):
    """``condition`` (JMESPath) over ``objects`` (a list of the API's JSON) must be true (truthy: a non-empty
    list, a true, a non-zero number)."""
    value = jmespath.search(condition, objects)
    held = bool(value)
    seen = "%d object(s); %s gives %s" % (len(objects), condition, _brief(value))
    return GateResult(name, held, seen)


def _brief(value, limit=160):
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def http_gate(url, status, wanted=None, error=None):
    """An HTTP check of ``url``: it answered with ``status`` (None: no answer, ``error`` says why), one of
    ``wanted`` (default any 2xx)."""
    name = "http %s" % url
    if status is None:
        return GateResult(name, False, "no answer: %s" % error)
    held = status in wanted if wanted else 200 <= status < 300
    return GateResult(name, held, "answered %d" % status)


def gates_message(results, stage, seconds):
    """The one-line failure: the gates that did not hold and what each saw."""
    failed = [result for result in results if not result.held]
    return "The gates did not hold %s within %s s: %s." % (stage, _seconds(seconds), "; ".join(
        "%s: %s" % (result.gate, result.saw) for result in failed))


def waiting_line(results, stage, seconds):
    """The progress line while gates are checked again."""
    failed = [result for result in results if not result.held]
    return "gates %s: waiting for %d of %d (%s), %d s so far" % (
        stage, len(failed), len(results), "; ".join("%s: %s" % (result.gate, result.saw) for result in failed[:2]),
        int(seconds))


def _seconds(value):
    return int(value) if float(value).is_integer() else round(value, 1)
