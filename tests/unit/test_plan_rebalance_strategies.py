"""Every rebalance strategy is one module of plan/rebalance/, registered once in planner.STRATEGIES, and provides
what strategy.Strategy (and, for a rule, strategy.RuleStrategy) declares."""

from __future__ import annotations

import inspect
import os

import pytest
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.rebalance import planner, spread
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.rebalance.planner import (
    RULE_STRATEGIES,
    STRATEGIES,
    STRATEGY_NAMES,
)
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.rebalance.strategy import RuleStrategy, Strategy

# The modules of plan/rebalance/ that are not strategies: the pass, the shared measures, the interface.
NOT_STRATEGIES = {"__init__", "planner", "spread", "strategy"}


def parameters(function):
    return list(inspect.signature(function).parameters)


@pytest.mark.parametrize("name, strategy", STRATEGIES, ids=STRATEGY_NAMES)
def test_every_registered_strategy_is_a_strategy_with_balance_of_the_planner(name, strategy):
    assert isinstance(strategy, Strategy)
    assert parameters(strategy.balance) == ["planner"]
    assert strategy.__name__.rsplit(".", 1)[1] == name, "a strategy is registered by its module's name"


@pytest.mark.parametrize("name, strategy", RULE_STRATEGIES, ids=[name for name, _strategy in RULE_STRATEGIES])
def test_every_rule_strategy_says_which_pods_break_its_rule(name, strategy):
    assert isinstance(strategy, RuleStrategy)
    assert parameters(strategy.violations) == ["nodes", "pods"]
    assert strategy.violations([], []) == {}


def test_the_rule_strategies_are_the_registered_ones_with_violations_in_the_registrys_order():
    assert [name for name, _strategy in RULE_STRATEGIES] == ["node_taints", "node_affinity", "pod_anti_affinity"]


def test_every_module_of_the_folder_but_the_pass_and_its_helpers_is_registered_once():
    folder = os.path.dirname(planner.__file__)
    modules = {name[:-3] for name in os.listdir(folder) if name.endswith(".py")} - NOT_STRATEGIES
    assert sorted(STRATEGY_NAMES) == sorted(modules)
    assert len(set(STRATEGY_NAMES)) == len(STRATEGY_NAMES)


def test_a_module_without_balance_is_no_strategy():
    assert not isinstance(spread, Strategy) and not isinstance(spread, RuleStrategy)
