# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""How many nodes a Karpenter NodePool's disruption budgets let go at once, for a reason, now.

As Karpenter reads ``spec.disruption.budgets``: a budget without
``reasons`` applies to every reason; one with a ``schedule`` (cron, UTC)
and ``duration`` is in force from each time the schedule fires for that
long; ``nodes`` is a count or a percent of the pool's nodes, rounded up;
the most restrictive budget in force wins; a pool without budgets allows
10 %. Pure: the clock is passed in.
"""

from __future__ import annotations

import datetime
import math
import re

from ansible_collections.kubeops.rotation.plugins.module_utils.model.times import parse_go_duration

DEFAULT_BUDGETS = ({"nodes": "10%"},)
_MACROS = {"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0",
           "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *"}
_NAMES = {"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "oct": 10,
          "nov": 11, "dec": 12, "sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}
# (lowest, highest) of minute, hour, day of month, month, day of week.
_FIELDS = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 6))


def _value(text):
    text = text.strip().lower()
    return _NAMES[text] if text in _NAMES else int(text)


def _field_values(text, lowest, highest):
    """The set of values a cron field allows; raises ValueError on anything else."""
    values = set()
    for part in text.split(","):
        match = re.match(r"^(\*|\?|[0-9a-z]+(?:-[0-9a-z]+)?)(?:/(\d+))?$", part.strip().lower())
        if not match:
            raise ValueError("not a cron field: %r" % text)
        span, step = match.group(1), int(match.group(2) or 1)
        if span in ("*", "?"):
            start, end = lowest, highest
        elif "-" in span:
            start, end = (_value(bound) for bound in span.split("-"))
        else:
            start = _value(span)
            end = highest if match.group(2) else start
        if step < 1 or start < lowest or end > highest + (1 if highest == 6 else 0) or start > end:
            raise ValueError("cron field out of range: %r" % text)
        values.update(value % 7 if highest == 6 else value for value in range(start, end + 1, step))
    return values


class CronSchedule:
    """A standard five-field cron schedule (or an @ macro), as Karpenter's budgets take them, in UTC."""

    def __init__(self, text):
        fields = _MACROS.get(text.strip().lower(), text).split()
        if len(fields) != 5:
            raise ValueError("a schedule has five fields (minute hour day month weekday), got %r" % text)
        self.minutes, self.hours, self.days, self.months, self.weekdays = (
            _field_values(field, *bounds) for field, bounds in zip(fields, _FIELDS))
        # As cron: when both day fields are restricted, either one matching is enough.
        self.day_or_weekday = fields[2] not in ("*", "?") and fields[4] not in ("*", "?")

    def matches(self, moment):
        if moment.minute not in self.minutes or moment.hour not in self.hours or moment.month not in self.months:
            return False
        day = moment.day in self.days
        weekday = (moment.isoweekday() % 7) in self.weekdays
        return (day or weekday) if self.day_or_weekday else (day and weekday)

    def fired_within(self, now, seconds):
        """Whether the schedule fired less than ``seconds`` before ``now``, or at ``now``."""
        now = now.astimezone(datetime.timezone.utc)
        earliest = now - datetime.timedelta(seconds=seconds)
        moment = now.replace(second=0, microsecond=0)
        while moment > earliest:
            if self.matches(moment):
                return True
            moment -= datetime.timedelta(minutes=1)
        return False


def budget_in_force(budget, now):
    """Whether a budget applies now: always without a schedule, else for ``duration`` after each firing."""
    if not budget.get("schedule"):
        return True
    return CronSchedule(budget["schedule"]).fired_within(now, parse_go_duration(budget.get("duration") or "0s"))


def budget_nodes(budget, pool_nodes):
    """Nodes a budget allows: a count, or a percent of ``pool_nodes`` rounded up."""
    text = str(budget.get("nodes", "10%")).strip()
    if text.endswith("%"):
        return int(math.ceil(float(text[:-1]) * pool_nodes / 100.0))
    return int(text)


def allowed_disruptions(node_pool, pool_nodes, now, reason="Drifted"):
    """(nodes the NodePool lets go at once for ``reason`` now, in words) — the most restrictive budget in force
    that covers the reason; None when none limits it."""
    budgets = ((node_pool.get("spec") or {}).get("disruption") or {}).get("budgets")
    if budgets is None:
        budgets = DEFAULT_BUDGETS
    allowed, source = None, None
    for budget in budgets:
        if budget.get("reasons") and reason not in budget["reasons"]:
            continue
        if not budget_in_force(budget, now):
            continue
        nodes = budget_nodes(budget, pool_nodes)
        if allowed is None or nodes < allowed:
            allowed, source = nodes, budget
    name = node_pool["metadata"]["name"]
    if allowed is None:
        return None, "NodePool %s: no budget limits %s disruption now" % (name, reason)
    detail = "nodes %s of %d" % (source.get("nodes", "10%"), pool_nodes)
    if source.get("schedule"):
        detail += ", schedule %s for %s" % (source["schedule"], source.get("duration"))
    return allowed, "NodePool %s allows %d %s disruption(s) at once now (budget %s)" % (name, allowed, reason, detail)
