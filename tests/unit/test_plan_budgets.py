"""Karpenter's NodePool disruption budgets as this collection reads them: the cron schedules, when a scheduled
budget is in force (as Karpenter's Budget.IsActive decides it), and how many nodes the budgets let go."""

from __future__ import annotations

import datetime

import pytest

from ansible_collections.kubeops.rotation.plugins.module_utils.model.times import parse_go_duration
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.budgets import (
    CronSchedule,
    allowed_disruptions,
    budget_in_force,
    budget_nodes,
)

UTC = datetime.timezone.utc
HOUR = 3600


def at(day, hour=0, minute=0, second=0, month=12, year=2026, microsecond=0):
    """A moment in UTC; in December 2026 the 3rd is a Thursday, the 6th a Sunday and the 7th a Monday."""
    return datetime.datetime(year, month, day, hour, minute, second, microsecond, tzinfo=UTC)


def hits(schedule, moments):
    cron = CronSchedule(schedule)
    return [moment for moment in moments if cron.matches(moment)]


def pool(budgets=None, name="general"):
    """A NodePool; ``budgets=None`` leaves spec.disruption.budgets out, as the API does when nobody set it."""
    disruption = {"consolidationPolicy": "WhenEmptyOrUnderutilized"}
    if budgets is not None:
        disruption["budgets"] = list(budgets)
    return {"metadata": {"name": name}, "spec": {"disruption": disruption}}


# CronSchedule


def test_a_schedule_matches_only_its_minute_hour_day_and_month():
    cron = CronSchedule("30 6 3 12 *")
    assert cron.matches(at(3, 6, 30))
    assert not cron.matches(at(3, 6, 31)) and not cron.matches(at(3, 7, 30))
    assert not cron.matches(at(4, 6, 30)) and not cron.matches(at(3, 6, 30, month=11))


def test_a_schedule_takes_lists_ranges_and_steps():
    minutes = [at(3, 9, minute) for minute in range(60)]
    assert [m.minute for m in hits("0,15,45 * * * *", minutes)] == [0, 15, 45]
    assert [m.minute for m in hits("10-13 * * * *", minutes)] == [10, 11, 12, 13]
    assert [m.minute for m in hits("*/20 * * * *", minutes)] == [0, 20, 40]
    assert [m.minute for m in hits("10-30/10 * * * *", minutes)] == [10, 20, 30]
    # A single value with a step runs from that value to the end of the field, as in cron.
    assert [m.minute for m in hits("5/20 * * * *", minutes)] == [5, 25, 45]
    assert [m.minute for m in hits("1-2,58 * * * *", minutes)] == [1, 2, 58]
    hours = [at(3, hour) for hour in range(24)]
    assert [m.hour for m in hits("0 8-10,22 * * *", hours)] == [8, 9, 10, 22]


def test_months_and_weekdays_may_be_named_in_any_case():
    days = [at(day) for day in range(1, 15)]
    assert [m.day for m in hits("0 0 * * MON-FRI", days)] == [1, 2, 3, 4, 7, 8, 9, 10, 11, 14]
    assert [m.day for m in hits("0 0 * * sat,Sun", days)] == [5, 6, 12, 13]
    assert CronSchedule("0 0 * DEC *").matches(at(3)) and not CronSchedule("0 0 * jan-nov *").matches(at(3))
    assert CronSchedule("0 0 * Jan-Mar *").matches(at(3, month=2))


@pytest.mark.parametrize("macro, fires, does_not_fire", [
    ("@yearly", at(1, month=1), at(1, month=2)),
    ("@annually", at(1, month=1), at(1, 0, 1, month=1)),
    ("@monthly", at(1), at(2)),
    ("@weekly", at(6), at(7)),
    ("@daily", at(3), at(3, 1)),
    ("@midnight", at(4), at(4, 0, 1)),
    ("@hourly", at(3, 7), at(3, 7, 1)),
])
def test_macros_stand_for_their_five_fields(macro, fires, does_not_fire):
    cron = CronSchedule(macro)
    assert cron.matches(fires) and not cron.matches(does_not_fire)


def test_when_both_day_fields_are_restricted_either_one_matching_is_enough():
    days = [at(day) for day in range(1, 15)]
    # The 13th, or any Monday (the 7th and the 14th of December 2026).
    assert [m.day for m in hits("0 0 13 * MON", days)] == [7, 13, 14]
    # With one of them "*" (or "?"), the other alone decides.
    assert [m.day for m in hits("0 0 13 * *", days)] == [13]
    assert [m.day for m in hits("0 0 * * MON", days)] == [7, 14]
    assert [m.day for m in hits("0 0 ? * MON", days)] == [7, 14]
    assert [m.day for m in hits("0 0 13 * ?", days)] == [13]


def test_weekday_7_is_sunday_like_0():
    days = [at(day) for day in range(1, 8)]
    assert [m.day for m in hits("0 0 * * 7", days)] == [6]
    assert [m.day for m in hits("0 0 * * 0", days)] == [6]
    assert [m.day for m in hits("0 0 * * 5-7", days)] == [4, 5, 6]


@pytest.mark.parametrize("schedule", [
    "", "* * * *", "* * * * * *", "60 * * * *", "* 24 * * *", "* * 0 * *", "* * 32 * *", "* * * 0 *",
    "* * * 13 *", "* * * * 8", "*/0 * * * *", "30-10 * * * *", "1,,2 * * * *", "1-2-3 * * * *", "x * * * *",
    "* * * FOO *", "1.5 * * * *", "-1 * * * *", "@every 1h", "@sometimes",
])
def test_a_bad_schedule_raises_value_error(schedule):
    with pytest.raises(ValueError):
        CronSchedule(schedule)


# When a scheduled budget is in force: as Karpenter's Budget.IsActive, in force iff the schedule's next hit after
# (now - duration) is not after now; that is, it fired in (now - duration, now].

@pytest.mark.parametrize("now, in_force", [
    (at(3, 8, 59, 59), False),
    (at(3, 9), True),                       # fired at now
    (at(3, 9, 0, 0, microsecond=1), True),
    (at(3, 12, 30), True),
    (at(3, 16, 59, 59), True),
    (at(3, 16, 59, 59, microsecond=999999), True),
    (at(3, 17), False),                     # fired exactly `duration` ago
    (at(3, 17, 0, 30), False),
    (at(4, 0), False),
])
def test_a_schedule_is_in_force_from_each_firing_for_less_than_its_duration(now, in_force):
    assert CronSchedule("0 9 * * *").fired_within(now, 8 * HOUR) is in_force


def test_in_force_compares_seconds_not_only_minutes():
    cron = CronSchedule("0 9 * * *")
    assert cron.fired_within(at(3, 9, 1, 29), 90)
    assert not cron.fired_within(at(3, 9, 1, 30), 90)
    # Fired at now, zero duration: (now, now] is empty, so Karpenter does not count it.
    assert not cron.fired_within(at(3, 9), 0)


def test_in_force_reaches_back_to_the_days_before():
    weekdays_at_nine = CronSchedule("0 9 * * MON-FRI")
    # Friday 09:00 for 72 h reaches into Monday 08:59; Saturday 09:00 itself does not fire.
    assert weekdays_at_nine.fired_within(at(7, 8, 59), 72 * HOUR)
    assert not weekdays_at_nine.fired_within(at(7, 8, 59), 71 * HOUR)
    assert not weekdays_at_nine.fired_within(at(6, 20), 8 * HOUR)


def test_a_duration_longer_than_the_schedules_period_keeps_it_in_force():
    hourly = CronSchedule("@hourly")
    assert all(hourly.fired_within(at(3, 5, minute), 2 * HOUR) for minute in range(60))
    assert not hourly.fired_within(at(3, 5, 30), 29 * 60)


def test_in_force_is_decided_in_utc_whatever_the_zone_of_now():
    two_hours_east = datetime.timezone(datetime.timedelta(hours=2))
    cron = CronSchedule("0 9 * * *")
    assert cron.fired_within(datetime.datetime(2026, 12, 3, 11, 0, tzinfo=two_hours_east), 60)
    assert not cron.fired_within(datetime.datetime(2026, 12, 3, 9, 0, tzinfo=two_hours_east), 60)


def test_budget_durations_are_go_durations():
    assert parse_go_duration("8h") == 8 * HOUR and parse_go_duration("1h30m") == 5400
    assert parse_go_duration("90s") == 90 and parse_go_duration("1.5h") == 5400
    # As Go's Duration.String() writes them.
    assert parse_go_duration("1h0m0s") == HOUR and parse_go_duration("10m0s") == 600


@pytest.mark.parametrize("text", ["", "8", "h", "-1h", "8d", "1h 30m", "1.h", "8 h", "500ms", None])
def test_anything_else_is_not_a_go_duration(text):
    with pytest.raises(ValueError, match="not a duration"):
        parse_go_duration(text)


def test_a_budget_without_a_schedule_is_always_in_force():
    assert budget_in_force({"nodes": "1"}, at(3, 3, 33))
    assert budget_in_force({"nodes": "1", "schedule": None}, at(3, 3, 33))


def test_a_scheduled_budget_is_in_force_only_in_its_window():
    business_hours = {"nodes": "0", "schedule": "0 9 * * mon-fri", "duration": "8h"}
    assert budget_in_force(business_hours, at(3, 9))
    assert budget_in_force(business_hours, at(3, 16, 59))
    assert not budget_in_force(business_hours, at(3, 17))
    assert not budget_in_force(business_hours, at(5, 12))
    # Without a duration the window is empty, as Karpenter's (now - 0, now].
    assert not budget_in_force({"nodes": "0", "schedule": "0 9 * * *"}, at(3, 9))


def test_a_budget_with_a_bad_schedule_or_duration_raises_value_error():
    with pytest.raises(ValueError):
        budget_in_force({"nodes": "0", "schedule": "0 25 * * *", "duration": "1h"}, at(3))
    with pytest.raises(ValueError):
        budget_in_force({"nodes": "0", "schedule": "0 9 * * *", "duration": "1d"}, at(3))


# How many nodes a budget lets go


@pytest.mark.parametrize("nodes, pool_nodes, allowed", [
    ("10%", 25, 3), ("10%", 20, 2), ("10%", 21, 3), ("1%", 1, 1), ("50%", 4, 2), ("50%", 5, 3), ("100%", 7, 7),
    ("0%", 9, 0), ("10%", 0, 0), ("3", 25, 3), ("0", 25, 0), (3, 25, 3), ("30", 5, 30),
])
def test_budget_nodes_is_a_count_or_a_percent_of_the_pools_nodes_rounded_up(nodes, pool_nodes, allowed):
    assert budget_nodes({"nodes": nodes}, pool_nodes) == allowed


def test_budget_nodes_defaults_to_ten_percent():
    assert budget_nodes({}, 25) == 3


def test_a_pool_without_budgets_allows_ten_percent_of_its_nodes():
    allowed, text = allowed_disruptions(pool(), 25, at(3))
    assert allowed == 3
    assert text == "NodePool general allows 3 Drifted disruption(s) at once now (budget nodes 10% of 25)"
    assert allowed_disruptions({"metadata": {"name": "bare"}}, 25, at(3))[0] == 3
    assert allowed_disruptions({"metadata": {"name": "bare"}, "spec": {"disruption": None}}, 5, at(3))[0] == 1


def test_an_empty_list_of_budgets_limits_nothing():
    assert allowed_disruptions(pool([]), 25, at(3)) == (
        None, "NodePool general: no budget limits Drifted disruption now")


def test_a_budget_for_other_reasons_is_ignored():
    budgets = [{"nodes": "0", "reasons": ["Underutilized", "Empty"]}]
    assert allowed_disruptions(pool(budgets), 10, at(3)) == (
        None, "NodePool general: no budget limits Drifted disruption now")
    assert allowed_disruptions(pool(budgets + [{"nodes": "4"}]), 10, at(3))[0] == 4
    assert allowed_disruptions(pool(budgets), 10, at(3), reason="Empty")[0] == 0


def test_a_budget_that_names_drifted_or_no_reason_counts():
    assert allowed_disruptions(pool([{"nodes": "2", "reasons": ["Empty", "Drifted"]}]), 10, at(3))[0] == 2
    assert allowed_disruptions(pool([{"nodes": "2", "reasons": []}]), 10, at(3))[0] == 2


def test_the_most_restrictive_budget_in_force_wins_and_is_named():
    budgets = [{"nodes": "5"}, {"nodes": "20%"}, {"nodes": "3", "reasons": ["Empty"]}]
    allowed, text = allowed_disruptions(pool(budgets, name="gpu"), 12, at(3))
    assert allowed == 3
    assert text == "NodePool gpu allows 3 Drifted disruption(s) at once now (budget nodes 20% of 12)"
    allowed, text = allowed_disruptions(pool(list(reversed(budgets)), name="gpu"), 30, at(3))
    assert allowed == 5 and "(budget nodes 5 of 30)" in text


def test_a_scheduled_budget_counts_only_in_its_window_and_the_text_says_its_schedule():
    budgets = [{"nodes": "10"}, {"nodes": "0", "schedule": "0 9 * * mon-fri", "duration": "8h"}]
    allowed, text = allowed_disruptions(pool(budgets), 40, at(3, 10))
    assert allowed == 0
    assert text == ("NodePool general allows 0 Drifted disruption(s) at once now "
                    "(budget nodes 0 of 40, schedule 0 9 * * mon-fri for 8h)")
    allowed, text = allowed_disruptions(pool(budgets), 40, at(3, 17))
    assert allowed == 10 and text.endswith("(budget nodes 10 of 40)")
    assert allowed_disruptions(pool(budgets[1:]), 40, at(5, 10)) == (
        None, "NodePool general: no budget limits Drifted disruption now")
