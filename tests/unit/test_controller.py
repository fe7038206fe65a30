from __future__ import annotations

import os
import subprocess
import sys

from ansible_collections.kubeops.rotation.plugins.module_utils.engine.controller import (
    CONTROLLER_PID_ENV,
    exit_with_controller,
    is_alive,
)


def a_dead_pid():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_running_process_is_alive_and_one_that_ended_is_not():
    assert is_alive(os.getpid())
    assert not is_alive(a_dead_pid())


def test_the_module_exits_once_its_controller_is_gone_and_only_then():
    exits = []
    watching = exit_with_controller({CONTROLLER_PID_ENV: str(a_dead_pid())}, exit_now=exits.append)
    watching.join(5)
    assert exits == [1]
    assert exit_with_controller({}) is None
    alive = exit_with_controller({CONTROLLER_PID_ENV: str(os.getpid())}, exit_now=exits.append)
    alive.join(1.5)
    assert alive.is_alive() and exits == [1]
