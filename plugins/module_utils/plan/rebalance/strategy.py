# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""What a rebalance strategy provides: the interface every strategy module of plan/rebalance/ satisfies.

A strategy is one module (``node_taints.py``, ``duplicates.py``, ...) registered by one line of
``planner.STRATEGIES``, in the order the planner runs them. It is a ``Strategy``: its ``balance(planner)``
plans its moves on the pass's ``planner.Planner``. A strategy that fixes a rule a pod breaks where it runs
is a ``RuleStrategy`` too: its ``violations(nodes, pods)`` says which pods break the rule, and the plan
counts them before and after (``planner.rule_violations``). Both are checked by ``isinstance`` on the
module itself (tests/unit/test_plan_rebalance_strategies.py).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class Strategy(Protocol):
    """A rebalance strategy."""

    def balance(self, planner) -> None:
        """Plan this strategy's moves over ``planner`` (a ``planner.Planner``): read ``planner.pods``,
        ``planner.room`` and ``planner.settings``; move a pod through ``planner.relocate``,
        ``planner.try_move`` or ``planner.note_move`` (for moves the PlacementSimulator already shows), so that the
        eviction budget and the pods that may not move are honoured; say what could not be done through
        ``planner.record_stuck``. Returns nothing: the moves are the planner's."""


@runtime_checkable
class RuleStrategy(Strategy, Protocol):
    """A strategy that fixes a rule a pod breaks where it runs (a taint, a node affinity, an anti-affinity)."""

    def violations(self, nodes, pods) -> dict:
        """{pod key: where it breaks the rule (a short text)} for each of ``pods`` on one of ``nodes``
        (API JSON) that breaks it; the pods that go with their node (DaemonSet, static) aside. Pure."""
