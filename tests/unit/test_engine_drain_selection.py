"""engine.drain's PodSelection: a rotation's batch names its nodes and nothing else, so its drain can take them and
their pods from the steering's lists of every node and pod."""

from __future__ import annotations

import pytest

from ansible_collections.kubeops.rotation.plugins.module_utils.engine.drain import PodSelection


def test_nodes_named_and_nothing_else_are_only_named_nodes():
    assert PodSelection(nodes=("n1", "n2")).only_named_nodes


@pytest.mark.parametrize("selection", [
    PodSelection(),
    PodSelection(nodes=("n1",), node_selector="pool=old"),
    PodSelection(nodes=("n1",), namespaces=("shop",)),
    PodSelection(nodes=("n1",), pod_selector="app=web"),
    PodSelection(nodes=("n1",), pod_selector=""),
    PodSelection(nodes=("n1",), field_selector="status.phase=Running"),
    PodSelection(node_selector="pool=old"),
])
def test_a_selection_narrowed_or_without_names_is_not(selection):
    assert not selection.only_named_nodes
