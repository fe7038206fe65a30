# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""Kubernetes timestamps (RFC 3339, UTC, whole seconds): now, and parsed."""

from __future__ import annotations

import datetime

FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def utc_now():
    """Now, as the API writes times, for example 2026-12-03T06:00:00Z."""
    return datetime.datetime.now(datetime.timezone.utc).strftime(FORMAT)


def parse_time(text):
    """An aware datetime from an API timestamp ("...Z" or "...+00:00"; fractions of a second are dropped)."""
    return datetime.datetime.strptime(text.replace("Z", "+00:00")[:25], "%Y-%m-%dT%H:%M:%S%z")
