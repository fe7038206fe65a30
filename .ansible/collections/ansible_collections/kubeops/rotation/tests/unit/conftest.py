"""Unit tests import the collection from the checkout and the test cluster helpers, no cluster needed."""

from __future__ import annotations

import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTIONS_ROOT = os.path.join(REPO, ".cache", "checkout")


def _expose_checkout_as_collection():
    # ansible_collections.kubeops.rotation must resolve to this checkout.
    link = os.path.join(COLLECTIONS_ROOT, "ansible_collections", "kubeops", "rotation")
    if not os.path.islink(link):
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(REPO, link)
    sys.path.insert(0, COLLECTIONS_ROOT)
    sys.path.insert(0, os.path.join(REPO, "tests", "cluster"))


_expose_checkout_as_collection()
