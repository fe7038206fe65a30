# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The action of every module of the collection: the module, run as ansible.builtin's normal action runs it,
with two things added on the controller.

- Connection options left unset are taken from ``module_defaults: group/kubernetes.core.k8s`` (or
  ``group/k8s``), so that a playbook written for kubernetes.core connects the same way.
- While the module runs on this machine (a local connection, as the collection's playbooks use), its
  progress line (engine.progress) is shown in the terminal and the AWX job output when it changes, at most
  every few seconds, and again at least every PROGRESS_REPEAT_SECONDS while the wait goes on.
"""

from __future__ import annotations

import os
import tempfile
import threading
import time

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display
from ansible.utils.vars import merge_hash
from ansible_collections.kubeops.rotation.plugins.module_utils.ansible_module import CONNECTION_ARGUMENT_SPEC
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.controller import CONTROLLER_PID_ENV
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.progress import PROGRESS_FILE_ENV

display = Display()

KUBERNETES_CORE_GROUPS = ("group/kubernetes.core.k8s", "group/k8s")
# A module that returns this soon shows no progress; a changed line waits this long after the last one shown;
# an unchanged line is shown again this often.
PROGRESS_QUIET_SECONDS = 3.0
PROGRESS_GAP_SECONDS = 5.0
PROGRESS_REPEAT_SECONDS = 20.0


def option_of_name():
    """Every name a connection option answers to (its own and its aliases), and that option."""
    names = {}
    for option, spec in CONNECTION_ARGUMENT_SPEC.items():
        for name in [option] + list(spec.get("aliases") or ()):
            names[name] = option
    return names


def kubernetes_core_defaults(module_defaults, args):
    """The connection options that kubernetes.core's module_defaults groups set (later entries winning) and
    ``args`` sets under none of their names."""
    names = option_of_name()
    given = {names[name] for name in args if name in names}
    found = {}
    for defaults in module_defaults or ():
        for group in KUBERNETES_CORE_GROUPS:
            found.update((name, value) for name, value in ((defaults or {}).get(group) or {}).items()
                         if name in names and names[name] not in given)
    return found


def elapsed_text(seconds):
    minutes, seconds = divmod(int(seconds), 60)
    return "%dm%02ds" % (minutes, seconds) if minutes else "%ds" % seconds


class ProgressShown:
    """Shows the line of a progress file while a module runs, from a thread of the worker."""

    def __init__(self, label, clock=time.monotonic, show=display.display):
        descriptor, self.path = tempfile.mkstemp(prefix="kubeops-progress-")
        os.close(descriptor)
        self.label = label
        self.clock = clock
        self.show = show
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.started = clock()
        self.shown, self.shown_at = "", None

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *_exc):
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5)
        for path in (self.path, "%s.partial" % self.path):
            try:
                os.remove(path)
            except OSError:
                pass

    def _run(self):
        while not self._stop.wait(1.0):
            self.poll()

    def poll(self):
        """Show the line if it is new and the last one was shown long enough ago, or if it is time to repeat."""
        try:
            with open(self.path, encoding="utf-8") as handle:
                line = handle.read().strip()
        except OSError:
            return
        now = self.clock()
        if not line or now - self.started < PROGRESS_QUIET_SECONDS:
            return
        since = None if self.shown_at is None else now - self.shown_at
        if since is None or (line != self.shown and since >= PROGRESS_GAP_SECONDS) or since >= PROGRESS_REPEAT_SECONDS:
            self.show("%s [%s] %s" % (self.label, elapsed_text(now - self.started), line))
            self.shown, self.shown_at = line, now


class KubernetesAction(ActionBase):
    """Runs the collection's module of the same name (see the module docstring)."""

    _supports_check_mode = True
    _supports_async = True

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        wrap_async = self._task.async_val and not self._connection.has_native_async
        module_args = dict(self._task.args)
        core_defaults = kubernetes_core_defaults(self._task.module_defaults, module_args)
        if core_defaults:
            module_args.update(self._templar.template(core_defaults))
        if wrap_async or getattr(self._connection, "transport", None) != "local":
            result = merge_hash(result, self._execute_module(module_args=module_args, task_vars=task_vars,
                                                             wrap_async=wrap_async))
        else:
            host = (task_vars or {}).get("inventory_hostname", "")
            environment = self._task.environment
            with ProgressShown("%s | %s" % (host, self._task.get_name())) as progress:
                # ansible-playbook (this worker's parent): the module exits when it is killed (engine.controller)
                self._task.environment = list(environment or []) + [{PROGRESS_FILE_ENV: progress.path,
                                                                     CONTROLLER_PID_ENV: str(os.getppid())}]
                try:
                    result = merge_hash(result, self._execute_module(module_args=module_args, task_vars=task_vars))
                finally:
                    self._task.environment = environment
        if not wrap_async:
            self._remove_tmp_path(self._connection._shell.tmpdir)
        return result
