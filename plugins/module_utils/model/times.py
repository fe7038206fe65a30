# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Kubernetes timestamps (RFC 3339, UTC, whole seconds) and the durations users write ("45m", "7d")."""

from __future__ import annotations

import datetime
import re

FORMAT = "%Y-%m-%dT%H:%M:%SZ"
_DURATION = re.compile(r"^\s*(?:\d+\s*[smhdw]?\s*|(?:\d+\s*[smhdw]\s*)+)$")
_DURATION_PART = re.compile(r"(\d+)\s*([smhdw]?)")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_FRACTION = re.compile(r"\.\d+")
_GO_PART = re.compile(r"(\d+(?:\.\d+)?)(h|m|s)")
_GO_DURATION = re.compile(r"^(?:\d+(?:\.\d+)?(?:h|m|s))+$")


MICRO_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


def micro_time(moment):
    """An aware datetime as the API writes a MicroTime (a Lease's renewTime)."""
    return moment.astimezone(datetime.timezone.utc).strftime(MICRO_FORMAT)


def utc_now():
    """Now, as the API writes times, for example 2026-12-03T06:00:00Z."""
    return datetime.datetime.now(datetime.timezone.utc).strftime(FORMAT)


def parse_time(text):
    """An aware datetime from an API timestamp ("...Z" or "...+00:00"; fractions of a second are dropped)."""
    return datetime.datetime.strptime(_FRACTION.sub("", text.replace("Z", "+00:00"), count=1), "%Y-%m-%dT%H:%M:%S%z")


def parse_duration(text):
    """Seconds in "90", "90s", "45m", "1h30m", "12h", "7d", "2w" or "1d12h" (units largest first or not)."""
    if not _DURATION.match(str(text)):
        raise ValueError("not a duration: %r (use 90, 90s, 10m, 1h30m, 7d...)" % (text,))
    return sum(int(number) * _UNIT_SECONDS[unit or "s"] for number, unit in _DURATION_PART.findall(str(text)))


def duration_seconds(value):
    """The whole seconds of a duration as a role takes it: a number of seconds (an int, or a float cut), or a text
    parse_duration reads. Raises ValueError for anything else (a bool is no duration)."""
    if isinstance(value, bool) or value is None:
        raise ValueError("not a duration: %r (use 90, 90s, 10m, 1h30m, 7d...)" % (value,))
    if isinstance(value, (int, float)):
        return int(value)
    text = str(value).strip()
    return int(text) if re.match(r"^-?\d+$", text) else parse_duration(text)


def parse_go_duration(text):
    """Seconds in a Go duration of hours, minutes and seconds, as Karpenter writes them ("8h", "1h30m", "90s")."""
    if not _GO_DURATION.match(str(text)):
        raise ValueError("not a duration: %r (use 8h, 1h30m, 90s...)" % (text,))
    return sum(float(number) * _UNIT_SECONDS[unit] for number, unit in _GO_PART.findall(str(text)))
