# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The few ways an engine or a plan fails; ``ansible_module`` turns each into one ``fail_json``.

They live in ``model/`` so that pure planning raises the same errors as the
code that acts. Every message is one sentence that names the object and the
cause, then what was left and how to continue.
"""

from __future__ import annotations


class KubeopsError(Exception):
    """Base of the collection's errors; ``result`` is what the module still reports."""

    def __init__(self, message, result=None):
        super().__init__(message)
        self.result = result or {}


class InvalidInput(KubeopsError):
    """The parameters make no sense; nothing was read or changed."""


class NotFound(KubeopsError):
    """The parameters name something that does not exist; nothing was changed."""

    @classmethod
    def nodes(cls, missing):
        """The error for the node names ``missing``, which a step was given and no node has."""
        return cls("No node named %s; nothing was changed." % ", ".join(sorted(missing)))


class Blocked(KubeopsError):
    """The cluster refuses the work as asked (pods that cannot move safely, evictions that failed)."""


class Refused(Blocked):
    """Pods that may not move as asked refused the whole drain before anything was evicted; ``result`` has the
    verdict on every pod."""


class TimedOut(KubeopsError):
    """The deadline passed; ``result`` carries what was done so far."""


class LeaseLost(KubeopsError):
    """The run could not renew its Lease within the renew deadline, or another run took it over: it stopped
    before its next request, so that two runs never act at once."""


class GatesClosed(KubeopsError):
    """A gate did not hold within its timeout; ``result`` carries what each gate saw."""
