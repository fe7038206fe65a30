# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Limits users give as a count or a percent: unavailable pods per owner, nodes per batch."""

from __future__ import annotations

import math


def unavailable_limit(limit, desired):
    """max_unavailable_per_owner as a number of pods: a count, or a percent of ``desired`` rounded
    down, never below 1 (a limit of 0 would make the owner's pods impossible to move)."""
    if limit is None:
        return None
    text = str(limit).strip()
    if text.endswith("%"):
        return max(1, int(desired * float(text[:-1]) / 100))
    return max(1, int(text))


def scaled_count(value, total, round_up):
    """A Kubernetes IntOrString (a count, or a percent of ``total``) as a number of pods, a percent rounded up or
    down as the field that holds it is (a PDB's both ways up, a Deployment's maxSurge up, its maxUnavailable down)."""
    text = str(value).strip()
    if text.endswith("%"):
        amount = float(text[:-1]) * total / 100.0
        return int(math.ceil(amount - 1e-9)) if round_up else int(math.floor(amount + 1e-9))
    return int(text)


def count_or_percent_error(name, value):
    """Why ``value`` is not a count >= 1 or a percent 1-100%, or None. Digits are 0-9 only, as Kubernetes reads an
    IntOrString."""
    text = str(value).strip()
    number = text[:-1] if text.endswith("%") else text
    if not (number.isascii() and number.isdigit()) or int(number) < 1 or (text.endswith("%") and int(number) > 100):
        return "%s must be a count like 1 or a percent like 25%%, got %s." % (name, value)
    return None


def unavailable_limit_error(limit):
    """Why ``limit`` is not a valid max_unavailable_per_owner, or None."""
    return count_or_percent_error("max_unavailable_per_owner", limit)


def batch_count(size, total):
    """Nodes per batch from a count ("2") or a percent of ``total`` ("25%", rounded down as
    Kubernetes rounds maxUnavailable, so fewer nodes go at once), at least 1."""
    text = str(size).strip()
    if text.endswith("%"):
        return max(1, int(math.floor(total * float(text[:-1]) / 100)))
    return max(1, int(text))
