# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The one line that says what a long step is doing now, for the person waiting on it.

A module call blocks until it returns, so Ansible prints nothing while it
waits. The collection's action plugin (plugin_utils.kubernetes_action) names a
file in the environment variable KUBEOPS_PROGRESS_FILE and shows its line in
the terminal and the AWX job output as it changes; the LeaseKeeper copies it
onto the run's Lease, for ``kubectl get lease`` to show. Without either, telling
costs nothing.
"""

from __future__ import annotations

import os
import threading

PROGRESS_FILE_ENV = "KUBEOPS_PROGRESS_FILE"


class Progress:
    """The latest line, written to ``path`` and passed to every listener when it changes. Without ``path``, the
    file named in KUBEOPS_PROGRESS_FILE when the line is told, if any: the action plugin sets it for each module
    call, also for a module it runs in its own process, which imported this module long before."""

    def __init__(self, path=None):
        self.path = path
        self.line = ""
        self._lock = threading.Lock()
        self._listeners = []

    def tell(self, line):
        with self._lock:
            if line == self.line:
                return
            self.line = line
            listeners = list(self._listeners)
            path = self.path or os.environ.get(PROGRESS_FILE_ENV)
            if path:
                _replace(path, line)
        for listener in listeners:
            listener(line)

    def listen(self, listener):
        """Call ``listener(line)`` on every new line until the returned function is called."""
        with self._lock:
            self._listeners.append(listener)

        def stop():
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)
        return stop


def _replace(path, line):
    """Write the line whole, so that a reader never sees half of it."""
    partial = "%s.partial" % path
    try:
        with open(partial, "w", encoding="utf-8") as handle:
            handle.write(line)
        os.replace(partial, path)
    except OSError:  # progress is a courtesy: a full disk must not stop a drain
        pass


PROGRESS = Progress()


def tell_progress(line):
    """Say what the module is doing now (in one line, for people)."""
    PROGRESS.tell(line)


class ProgressParts:
    """One line from the parts that threads working at once each tell (one per workload, say)."""

    def __init__(self, prefix, progress=None):
        self.prefix = prefix
        self.progress = progress or PROGRESS
        self._parts = {}
        self._lock = threading.Lock()

    def tell(self, key, text):
        with self._lock:
            self._parts[key] = text
            line = "%s: %s" % (self.prefix, " | ".join(self._parts[part] for part in sorted(self._parts)))
        self.progress.tell(line)

    def drop(self, key):
        with self._lock:
            self._parts.pop(key, None)
