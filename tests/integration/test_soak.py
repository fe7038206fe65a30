"""The kill-and-resume soak (tests/soak/kill_and_resume.py) in a small seeded form: two rotations of the
protected workloads, each SIGKILLed at a seeded moment (once or twice) and run again to the end, through a network
where some connections go silent for good and some answers trickle, and every invariant read from the cluster.
The long form, at least 30 runs, is one command (see the soak's docstring).

Autoscaler: the test provisioner (tests/cluster/provisioner.py), node-group style.
"""

from __future__ import annotations

import os
import sys


sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "soak"))
from kill_and_resume import soak, table  # noqa: E402

# One rotation of the small form takes about this long on these machines: the kills fall within it.
SMALL_ROTATION_SECONDS = 60


def test_rotations_killed_at_seeded_moments_and_run_again_keep_every_invariant(cluster, tmp_path):
    cluster.need_provisioner()
    records = soak(cluster, seed=26, runs=2, scale=1, expected_seconds=SMALL_ROTATION_SECONDS,
                   work_dir=str(tmp_path), report=lambda line: None, silent=0.02)
    assert len(records) == 2 and all(record["kills"] for record in records)
    assert not any(record["violations"] for record in records), table(records)
