# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""A module that stops when the ansible-playbook that started it is killed.

ansible-core runs each task in a worker process of a session of its own, so
a SIGKILL of ansible-playbook's process group (a CI job cancelled, AWX's
node lost, ``kill -9``) leaves the task's module running: it went on surging
or evicting while the rerun of the rotation did the same. The collection's
action plugin names ansible-playbook's pid in KUBEOPS_CONTROLLER_PID when
the module runs on the controller's machine; the module then exits within a
second of that process going, as a kill of its group would have made it, and
the rerun finds what it recorded.
"""

from __future__ import annotations

import os
import threading
import time

CONTROLLER_PID_ENV = "KUBEOPS_CONTROLLER_PID"
CHECK_SECONDS = 1.0


def is_alive(pid):
    """Whether process ``pid`` runs (a zombie, killed and not yet reaped, does not)."""
    try:
        with open("/proc/%d/stat" % pid) as handle:
            # "pid (comm) state ...": comm may hold spaces and parentheses
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:  # no /proc (macOS): ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


def exit_with_controller(environ=None, exit_now=os._exit):
    """Start watching the controller named in the environment, if any; returns the watching thread."""
    pid = (environ if environ is not None else os.environ).get(CONTROLLER_PID_ENV)
    if not pid or not pid.isdigit():
        return None

    def watch():
        while is_alive(int(pid)):
            time.sleep(CHECK_SECONDS)
        exit_now(1)

    thread = threading.Thread(target=watch, name="exit-with-controller", daemon=True)
    thread.start()
    return thread
