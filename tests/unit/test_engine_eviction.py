from __future__ import annotations

import random

from ansible_collections.kubeops.rotation.plugins.module_utils.engine.eviction import backoff


def test_backoff_grows_is_capped_and_jittered():
    rng = random.Random(7).random
    delays = [backoff(attempt, rng) for attempt in range(1, 8)]
    assert 0.5 <= delays[0] <= 1.5
    assert all(delay <= 7.5 for delay in delays)
    assert backoff(3, lambda: 0.5) == 4.0
    assert backoff(10, lambda: 0.5) == 5.0
