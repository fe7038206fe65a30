"""Maintenance windows (plan/windows.py): days and times, cron schedules with a duration, time zones."""

from __future__ import annotations

import datetime

import pytest
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.windows import (
    cron_fields,
    cron_matches,
    window_schedule,
    window_state,
    windows_error,
)

UTC = datetime.timezone.utc


def at(text):
    return datetime.datetime.strptime(text, "%Y-%m-%d %H:%M").replace(tzinfo=UTC)


NIGHTS = [{"days": ["mon", "tue", "wed", "thu", "fri"], "start": "22:00", "end": "04:00"}]


@pytest.mark.parametrize("moment, is_open, closes, opens", [
    ("2026-12-07 23:00", True, "2026-12-08T04:00:00Z", None),   # Monday night
    ("2026-12-08 03:59", True, "2026-12-08T04:00:00Z", None),   # Tuesday morning, Monday's window
    ("2026-12-08 04:00", False, None, "2026-12-08T22:00:00Z"),
    ("2026-12-12 01:00", True, "2026-12-12T04:00:00Z", None),   # Saturday 1:00 is Friday's night
    ("2026-12-12 23:00", False, None, "2026-12-14T22:00:00Z"),  # Saturday night: next Monday
])
def test_a_window_of_days_and_times_crosses_midnight_into_the_next_day(moment, is_open, closes, opens):
    state = window_state(NIGHTS, at(moment))
    assert (state["open"], state["closes"], state["opens"]) == (is_open, closes, opens)


def test_a_cron_schedule_with_a_duration_is_open_from_each_firing_for_that_long():
    daily = [{"schedule": "0 22 * * *", "duration": "6h"}]
    assert window_state(daily, at("2026-12-07 23:30"))["closes"] == "2026-12-08T04:00:00Z"
    closed = window_state(daily, at("2026-12-08 04:00"))
    assert not closed["open"] and closed["opens"] == "2026-12-08T22:00:00Z" and closed["seconds_to_open"] == 64800
    assert window_state([{"schedule": "@hourly", "duration": "10m"}], at("2026-12-07 05:05"))["open"]


def test_a_window_is_read_in_its_time_zone():
    berlin = [{"days": ["mon"], "start": "09:00", "end": "17:00", "timezone": "Europe/Berlin"}]
    assert window_state(berlin, at("2026-12-07 08:30"))["open"], "09:30 in Berlin in winter"
    assert window_state(berlin, at("2026-12-07 16:30"))["open"] is False


def test_no_windows_is_always_open_and_cron_reads_as_cron_does():
    assert window_state([], at("2026-12-07 12:00"))["open"]
    fields = cron_fields("*/15 9-17 * * mon-fri")
    assert cron_matches(fields, at("2026-12-07 09:45")) and not cron_matches(fields, at("2026-12-06 09:45"))
    # Day of month and day of week both given: either.
    assert cron_matches(cron_fields("0 0 1 * sun"), at("2026-12-06 00:00"))


@pytest.mark.parametrize("windows, error", [
    ([{"schedule": "0 22 * *", "duration": "6h"}], "not a cron schedule: 0 22 * * (five fields"),
    ([{"schedule": "0 25 * * *", "duration": "6h"}], "not a cron schedule: 0 25 * * * (25 is out of 0-23)"),
    ([{"schedule": "0 22 * * *", "duration": "six hours"}], "not a duration"),
    ([{"days": ["someday"]}], "no day someday"),
    ([{"days": ["mon"], "start": "25:00"}], "not a time of day: 25:00"),
    ([{"days": ["mon"], "timezone": "Mars/Olympus"}], "no time zone Mars/Olympus"),
    ("mon 22:00", "the maintenance windows are a list"),
])
def test_windows_that_make_no_sense_are_refused_naming_what(windows, error):
    assert error in windows_error(windows)


def test_a_check_run_places_each_batch_in_the_window_it_would_start_in():
    batches = ["batch 1/3", "batch 2/3", "batch 3/3"]
    lines = window_schedule(NIGHTS, at("2026-12-11 02:00"), batches, 3600)
    assert lines == [
        "batch 1/3: starts about 2026-12-11T02:00:00Z, in mon,tue,wed,thu,fri 22:00-04:00 UTC",
        "batch 2/3: starts about 2026-12-11T03:00:00Z, in mon,tue,wed,thu,fri 22:00-04:00 UTC",
        "batch 3/3: the rotation stops before it, outside the windows; a rerun then starts about "
        "2026-12-11T22:00:00Z, in mon,tue,wed,thu,fri 22:00-04:00 UTC"]
    waited = window_schedule(NIGHTS, at("2026-12-11 12:00"), batches[:1], 3600, wait=True)
    assert waited == ["batch 1/3: waits for the next window, starts about 2026-12-11T22:00:00Z, in "
                      "mon,tue,wed,thu,fri 22:00-04:00 UTC"]
    assert window_schedule([], at("2026-12-11 12:00"), batches, 3600) == []


def test_a_batch_due_between_whole_seconds_starts_when_its_window_opens():
    moment = at("2026-12-11 12:00") + datetime.timedelta(seconds=0.4)
    lines = window_schedule([{"schedule": "0 13 * * *", "duration": "1h"}], moment, ["batch 1/1"], 60, wait=True)
    assert lines == ["batch 1/1: waits for the next window, starts about 2026-12-11T13:00:00Z, in 0 13 * * * for 1h UTC"]
