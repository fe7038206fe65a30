"""The checkout as the collection: ansible_collections.kubeops.rotation imported from the working tree, with nothing
built, for the unit tests, the placement test and the planner benchmark."""

from __future__ import annotations

import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTIONS_ROOT = os.path.join(REPO, ".cache", "checkout")


def expose_checkout_as_collection():
    """Link the checkout at .cache/checkout/ansible_collections/kubeops/rotation (as make checkout-link does) and
    put .cache/checkout on sys.path."""
    link = os.path.join(COLLECTIONS_ROOT, "ansible_collections", "kubeops", "rotation")
    if not os.path.islink(link):
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(REPO, link)
    if COLLECTIONS_ROOT not in sys.path:
        sys.path.insert(0, COLLECTIONS_ROOT)
