"""Unit tests import the collection from the checkout and the test cluster helpers, no cluster needed."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "cluster"))

from checkout import expose_checkout_as_collection  # noqa: E402

expose_checkout_as_collection()
