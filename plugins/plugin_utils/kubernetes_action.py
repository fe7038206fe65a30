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
- When the module would run on this machine with this very Python (localhost's implicit interpreter, or
  ``ansible_python_interpreter`` naming it), no become, no async, it runs here, in the worker process:
  ansible-playbook has imported the kubernetes client and the collection once, and its workers share them, where
  a module of its own would start a Python, unpack itself, compile the collection's code and import the client
  (0.3 to 1 s a call, more than the work of most calls). Its result is the one the module would return.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import sys
import tempfile
import threading
import time
import warnings

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display
from ansible.utils.vars import merge_hash
from ansible_collections.kubeops.rotation.plugins.module_utils.ansible_module import (
    CONNECTION_ARGUMENT_SPEC,
    KUBERNETES_IMPORT_ERROR,
    InProcessCall,
    run_in_process,
)
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


def is_this_python(interpreter):
    """Whether ``interpreter`` is the Python that runs this process: the same file in the same folder (a venv's
    python and python3 are; its base interpreter, the same file in another folder, is not)."""
    if not interpreter or not os.path.isabs(interpreter):
        return False
    try:
        return (os.path.dirname(os.path.abspath(interpreter)) == os.path.dirname(os.path.abspath(sys.executable))
                and os.path.samefile(interpreter, sys.executable))
    except OSError:
        return False


class EnvironmentSet:
    """``os.environ`` with ``variables`` set while the block runs, as it was afterwards."""

    def __init__(self, variables):
        self.variables = {name: str(value) for name, value in variables.items()}
        self.saved = {}

    def __enter__(self):
        self.saved = {name: os.environ.get(name) for name in self.variables}
        os.environ.update(self.variables)
        return self

    def __exit__(self, *_exc):
        for name, value in self.saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def progress_label(host, task_name):
    """The few words before a progress line: the role and the step of its task (``rotate_nodes: batch 2/5 move``)
    rather than a task name of a hundred characters, which would push the line off an AWX screen; a task of no
    role, its name cut short. The host leads when it is not localhost (one cluster of several)."""
    role, own = task_name.rpartition(" : ")[::2]
    stage = re.match(r"([A-Z][\w ]{0,19}): ", own)
    batch = re.search(r"\bbatch (\d+/\d+)$", own)
    if role and stage:
        words = ["batch %s" % batch.group(1)] if batch else []
        label = "%s: %s" % (role.rpartition(".")[2], " ".join(words + [stage.group(1).lower()]))
    else:
        label = (role.rpartition(".")[2] + ": " if role else "") + (own if len(own) <= 60 else own[:59] + "…")
    return label if host in ("", "localhost") else "%s | %s" % (host, label)


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
            with ProgressShown(progress_label(host, self._task.get_name())) as progress:
                # ansible-playbook (this worker's parent): the module exits when it is killed (engine.controller)
                added = {PROGRESS_FILE_ENV: progress.path, CONTROLLER_PID_ENV: str(os.getppid())}
                if self._runs_here(task_vars or {}):
                    result = merge_hash(result, self._run_here(module_args, added))
                else:
                    result = merge_hash(result, self._execute_module_with(module_args, task_vars, added))
        if not wrap_async:
            self._remove_tmp_path(self._connection._shell.tmpdir)
        return result

    def _runs_here(self, task_vars):
        """Whether the module would run with this process's Python, as this user: see the module docstring."""
        if KUBERNETES_IMPORT_ERROR or self._play_context.become:
            return False
        return is_this_python(self._templar.template(task_vars.get("ansible_python_interpreter")))

    def _execute_module_with(self, module_args, task_vars, variables):
        """The module run as ansible.builtin's normal action runs it, with ``variables`` added to its environment."""
        environment = self._task.environment
        self._task.environment = list(environment or []) + [variables]
        try:
            return self._execute_module(module_args=module_args, task_vars=task_vars)
        finally:
            self._task.environment = environment

    def _run_here(self, module_args, variables):
        """The module run in this process (run_in_process), in the task's environment plus ``variables``; its
        result as JSON would carry it. Python's warnings (urllib3's, with validate_certs off) are left out, as a
        module's stderr would be."""
        environment = {}
        self._compute_environment_string(raw_environment_out=environment)
        module = importlib.import_module(self.__class__.__module__.replace(".plugins.action.", ".plugins.modules."))
        call = InProcessCall(self._task.action, module_args, bool(self._task.check_mode), bool(self._task.diff))
        with EnvironmentSet(dict(environment, **variables)), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return json.loads(json.dumps(run_in_process(module.main, call)))
