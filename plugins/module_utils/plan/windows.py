# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Maintenance windows: when a rotation's batches may start. A window is either days of the week with a start and
an end time (``{days: [sat, sun], start: "22:00", end: "04:00"}``, an end before the start is the next day's), or a
cron ``schedule`` and a ``duration`` as Karpenter's disruption budgets have them (``{schedule: "0 22 * * *",
duration: 6h}``); each in a ``timezone`` (UTC unless given). Pure: ``now`` is an aware datetime."""

from __future__ import annotations

import datetime

from ansible_collections.kubeops.rotation.plugins.module_utils.model.times import parse_duration

try:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError
except ImportError:  # Python before 3.9: windows in UTC only
    ZoneInfo = None
    ZoneInfoNotFoundError = KeyError

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
MACROS = {"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0",
          "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *"}
# (lowest, highest) of each cron field: minute, hour, day of month, month, day of week (0 and 7 are Sunday).
FIELDS = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 7))
# How far ahead the next opening is looked for, in minutes: a window that opens less than yearly is found.
LOOK_AHEAD = 366 * 24 * 60


class Window:
    """One window, as given; ``error`` says why it is refused (None when it is not)."""

    def __init__(self, spec):
        self.spec = dict(spec or {})
        self.error = None
        self.fields = self.days = self.start = self.end = None
        self.duration = 0
        try:
            self.zone = _zone(self.spec.get("timezone"))
            if self.spec.get("schedule") is not None:
                self.fields = cron_fields(self.spec["schedule"])
                self.duration = parse_duration(self.spec.get("duration", ""))
            else:
                self.days = _days(self.spec.get("days") or DAYS)
                self.start, self.end = _clock(self.spec.get("start", "00:00")), _clock(self.spec.get("end", "24:00"))
        except (ValueError, KeyError) as exc:
            self.error = "%s: %s" % (self.text(), exc)

    def text(self):
        """The window in short, for messages."""
        spec = self.spec
        zone = " %s" % spec["timezone"] if spec.get("timezone") else " UTC"
        if spec.get("schedule") is not None:
            return "%s for %s%s" % (spec.get("schedule"), spec.get("duration"), zone)
        return "%s %s-%s%s" % (",".join(spec.get("days") or ["every day"]), spec.get("start", "00:00"),
                               spec.get("end", "24:00"), zone)

    def open_until(self, now):
        """When the window, open at ``now``, closes (an aware datetime); None when it is not open then."""
        local = now.astimezone(self.zone).replace(second=0, microsecond=0)
        if self.fields is not None:
            for back in range(int(self.duration // 60) + 1):
                moment = local - datetime.timedelta(minutes=back)
                if cron_matches(self.fields, moment) and moment + datetime.timedelta(seconds=self.duration) > local:
                    return moment + datetime.timedelta(seconds=self.duration)
            return None
        minutes = local.hour * 60 + local.minute
        end = self.end + (1440 if self.end <= self.start else 0)
        for day_back in (0, 1):
            start_day = local - datetime.timedelta(days=day_back)
            if start_day.weekday() in self.days and self.start <= minutes + day_back * 1440 < end:
                return start_day.replace(hour=0, minute=0) + datetime.timedelta(minutes=end)
        return None

    def next_start(self, now):
        """When the window next opens after ``now`` (an aware datetime), or None within LOOK_AHEAD."""
        local = now.astimezone(self.zone).replace(second=0, microsecond=0)
        if self.fields is not None:
            for minute in range(1, LOOK_AHEAD):
                moment = local + datetime.timedelta(minutes=minute)
                if cron_matches(self.fields, moment):
                    return moment
            return None
        for day in range(8):
            start = (local + datetime.timedelta(days=day)).replace(hour=0, minute=0) + \
                datetime.timedelta(minutes=self.start)
            if start.weekday() in self.days and start > local:
                return start
        return None


def _zone(name):
    if not name or name == "UTC":
        return datetime.timezone.utc
    if ZoneInfo is None:
        raise ValueError("time zones other than UTC need Python 3.9 or later")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError("no time zone %s (an IANA name such as Europe/Berlin)" % name)


def _days(days):
    found = set()
    for day in days:
        name = str(day).strip().lower()[:3]
        if name not in DAYS:
            raise ValueError("no day %s (mon, tue, wed, thu, fri, sat, sun)" % day)
        found.add(DAYS.index(name))
    return found


def _clock(text):
    """Minutes since midnight of "22:00" (24:00 is the end of the day)."""
    parts = str(text).split(":")
    if len(parts) != 2 or not all(part.isdigit() for part in parts) or int(parts[1]) > 59 or \
            int(parts[0]) * 60 + int(parts[1]) > 1440:
        raise ValueError("not a time of day: %s (use 22:00)" % text)
    return int(parts[0]) * 60 + int(parts[1])


def cron_fields(schedule):
    """The sets of values of a five-field cron schedule (or a macro such as @daily); ValueError when it is none."""
    text = MACROS.get(str(schedule).strip(), str(schedule).strip())
    parts = text.split()
    if len(parts) != 5:
        raise ValueError("not a cron schedule: %s (five fields, as \"0 22 * * *\")" % schedule)
    fields = []
    for part, (low, high), position in zip(parts, FIELDS, range(5)):
        values = set()
        for item in part.split(","):
            values |= _cron_item(item, low, high, position, schedule)
        fields.append(values)
    if 7 in fields[4]:
        fields[4] = (fields[4] - {7}) | {0}
    return fields, parts[2] != "*", parts[4] != "*"


def _cron_item(item, low, high, position, schedule):
    step = 1
    if "/" in item:
        item, step_text = item.split("/", 1)
        if not step_text.isdigit() or int(step_text) < 1:
            raise ValueError("not a cron schedule: %s (a step is a number)" % schedule)
        step = int(step_text)
    names = DAYS if position == 4 else ()
    if item == "*":
        first, last = low, high
    elif "-" in item:
        first, last = (_cron_value(value, names, schedule) for value in item.split("-", 1))
    else:
        first = last = _cron_value(item, names, schedule)
        if step > 1:
            last = high
    if not low <= first <= last <= high:
        raise ValueError("not a cron schedule: %s (%s is out of %d-%d)" % (schedule, item, low, high))
    return set(range(first, last + 1, step))


def _cron_value(text, names, schedule):
    if text.lower()[:3] in names:
        return (names.index(text.lower()[:3]) + 1) % 7
    if not text.isdigit():
        raise ValueError("not a cron schedule: %s (%s is no number)" % (schedule, text))
    return int(text)


def cron_matches(parsed, moment):
    """Whether the cron schedule (cron_fields) fires at the minute ``moment``: day of month and day of week are
    either, when both are restricted, as cron reads them."""
    (minutes, hours, days, months, weekdays), days_given, weekdays_given = parsed
    if moment.minute not in minutes or moment.hour not in hours or moment.month not in months:
        return False
    day_ok, weekday_ok = moment.day in days, (moment.weekday() + 1) % 7 in weekdays
    if days_given and weekdays_given:
        return day_ok or weekday_ok
    return day_ok and weekday_ok


def windows_error(specs):
    """Why the windows are refused, or None."""
    if not isinstance(specs, list):
        return "the maintenance windows are a list, got %r" % (specs,)
    for spec in specs:
        if not isinstance(spec, dict):
            return "a maintenance window is a mapping (days, start, end, or schedule and duration), got %r" % (spec,)
        error = Window(spec).error
        if error:
            return error
    return None


def window_state(specs, now):
    """{"open": whether a window is open at ``now``, "closes": when the one open longest closes, "opens": when the
    next one opens (both ISO 8601 in UTC, or None), "seconds_to_open", "windows": their texts}. No windows: always
    open."""
    windows = [Window(spec) for spec in specs or ()]
    state = {"open": True, "closes": None, "opens": None, "seconds_to_open": 0,
             "windows": [window.text() for window in windows]}
    if not windows:
        return state
    closes = [end for end in (window.open_until(now) for window in windows) if end is not None]
    if closes:
        state["closes"] = _iso(max(closes))
        return state
    state["open"] = False
    starts = [start for start in (window.next_start(now) for window in windows) if start is not None]
    if starts:
        state["opens"] = _iso(min(starts))
        state["seconds_to_open"] = max(0, int((min(starts) - now).total_seconds()))
    return state


def _iso(moment):
    return moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def window_schedule(specs, now, batches, batch_seconds, wait=False):
    """Which window each of ``batches`` (their names, in order) would start in, for a check run: the first starts
    at ``now``, each next one ``batch_seconds`` (a guess: the move, the soak and the gates) after the one before.
    A batch due outside every window starts when the next one opens: waited for with ``wait``, otherwise the
    rotation stops before it and a rerun then goes on. One line per batch; no windows, no lines."""
    windows = [Window(spec) for spec in specs or ()]
    if not windows:
        return []
    lines, moment = [], now
    for name in batches:
        is_open = any(window.open_until(moment) is not None for window in windows)
        if not is_open:
            opening = [start for start in (window.next_start(moment) for window in windows) if start is not None]
            if not opening:
                lines.append("%s: no window opens within a year" % name)
                break
            moment = min(opening)
        window = next(window for window in windows if window.open_until(moment) is not None)
        starts = "starts about %s, in %s" % (_iso(moment), window.text())
        if is_open:
            lines.append("%s: %s" % (name, starts))
        elif wait:
            lines.append("%s: waits for the next window, %s" % (name, starts))
        else:
            lines.append("%s: the rotation stops before it, outside the windows; a rerun then %s" % (name, starts))
        moment = moment + datetime.timedelta(seconds=batch_seconds)
    return lines
