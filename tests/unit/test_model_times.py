from __future__ import annotations

import datetime

import pytest

from ansible_collections.kubeops.rotation.plugins.module_utils.model.times import (
    parse_duration,
    parse_time,
    utc_now,
)

UTC = datetime.timezone.utc


def test_durations_are_seconds():
    assert parse_duration("90") == 90 and parse_duration(90) == 90
    assert parse_duration("30s") == 30 and parse_duration("45m") == 2700 and parse_duration("12h") == 43200
    assert parse_duration("7d") == 604800 and parse_duration("2w") == 1209600
    assert parse_duration(" 5 m ") == 300


@pytest.mark.parametrize("text", ["", "m", "1.5h", "-5m", "5y", "5 minutes", None])
def test_anything_else_is_not_a_duration(text):
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration(text)


def test_api_timestamps_parse_to_aware_datetimes():
    assert parse_time("2026-12-03T06:00:00Z") == datetime.datetime(2026, 12, 3, 6, tzinfo=UTC)
    assert parse_time("2026-12-03T08:00:00+02:00") == datetime.datetime(2026, 12, 3, 6, tzinfo=UTC)


def test_fractions_of_a_second_are_dropped():
    assert parse_time("2026-12-03T06:00:00.123456Z") == datetime.datetime(2026, 12, 3, 6, tzinfo=UTC)
    assert parse_time("2026-12-03T06:00:00.5+00:00") == datetime.datetime(2026, 12, 3, 6, tzinfo=UTC)


def test_now_is_written_as_the_api_writes_times_and_reads_back():
    now = utc_now()
    assert len(now) == 20 and now.endswith("Z")
    assert abs((parse_time(now) - datetime.datetime.now(UTC)).total_seconds()) < 5


def test_durations_may_combine_units_as_people_and_go_write_them():
    assert parse_duration("1h30m") == 5400 and parse_duration("1d12h") == 129600 and parse_duration("2m30s") == 150
    assert parse_duration("1h 30m") == 5400
    for wrong in ("1h30", "h", "1.5h", "-5m", "", "1x"):
        try:
            parse_duration(wrong)
        except ValueError as exc:
            assert "use 90, 90s, 10m, 1h30m, 7d" in str(exc)
        else:
            raise AssertionError("%r was read as a duration" % wrong)
