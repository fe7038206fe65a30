from __future__ import annotations

import pytest

from ansible_collections.kubeops.rotation.plugins.module_utils.plan.limits import (
    batch_count,
    count_or_percent_error,
    scaled_count,
    unavailable_limit,
    unavailable_limit_error,
)


def test_unavailable_limit_takes_counts_and_percents_never_below_one():
    assert unavailable_limit("2", 10) == 2
    assert unavailable_limit(3, 10) == 3
    assert unavailable_limit("25%", 10) == 2
    assert unavailable_limit("10%", 3) == 1
    assert unavailable_limit("0", 3) == 1
    assert unavailable_limit(None, 3) is None


@pytest.mark.parametrize("value", ["3", 3, "1", "25%", "100%", " 1% "])
def test_counts_from_one_and_percents_up_to_100_are_valid(value):
    assert count_or_percent_error("batch_size", value) is None


# Digits other than 0-9 too: an Arabic-Indic three, a superscript two (which int() cannot read).
@pytest.mark.parametrize("value", ["0", "0%", "150%", "abc", "", "-1", "2.5", "%", None, "\u0663", "\u00b2", "\u00b2%"])
def test_anything_else_is_named_in_the_error(value):
    assert count_or_percent_error("batch_size", value) == \
        "batch_size must be a count like 1 or a percent like 25%%, got %s." % (value,)


def test_unavailable_limit_error_names_its_option():
    assert unavailable_limit_error("150%").startswith("max_unavailable_per_owner must be a count")
    assert unavailable_limit_error("50%") is None


def test_batch_count_takes_a_count_or_a_percent_rounded_down_at_least_one():
    assert batch_count("2", 10) == 2
    assert batch_count(3, 10) == 3
    assert batch_count("25%", 10) == 2
    assert batch_count("50%", 5) == 2
    assert batch_count("10%", 5) == 1
    assert batch_count("100%", 7) == 7
    assert batch_count("0", 5) == 1


def test_an_int_or_percent_scales_to_pods_rounded_the_way_its_field_is():
    assert scaled_count("25%", 12, round_up=False) == 3 and scaled_count("25%", 10, round_up=False) == 2
    assert scaled_count("25%", 10, round_up=True) == 3 and scaled_count("10%", 12, round_up=True) == 2
    assert scaled_count(1, 12, round_up=True) == 1 and scaled_count("2", 12, round_up=False) == 2
