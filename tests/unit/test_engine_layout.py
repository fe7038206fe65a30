"""engine/ names no endpoint of the Kubernetes client (api/ is the only code that talks to the API server), and
no class of engine/, nor of plan/placement.py (the Room and the index and fit rules it places pods by), is longer
than a reader holds at once. Read from the source with ast, without importing it."""

from __future__ import annotations

import ast
import glob
import os

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENGINE = os.path.join(REPO, "plugins", "module_utils", "engine")
PLACEMENT = os.path.join(REPO, "plugins", "module_utils", "plan", "placement.py")
# The typed API groups of api.client.Client.
SDK_GROUPS = frozenset(["core", "apps", "autoscaling", "policy", "version", "authentication", "scheduling",
                        "coordination", "custom", "batch"])
MAX_CLASS_LINES = 150


def trees(paths):
    for path in paths:
        with open(path, encoding="utf-8") as source:
            yield os.path.basename(path), ast.parse(source.read())


def engine_trees():
    return trees(sorted(glob.glob(os.path.join(ENGINE, "*.py"))))


def long_classes(named_trees):
    return ["%s: %s has %d lines" % (name, node.name, node.end_lineno - node.lineno + 1)
            for name, tree in named_trees for node in ast.walk(tree)
            if isinstance(node, ast.ClassDef) and node.end_lineno - node.lineno + 1 > MAX_CLASS_LINES]


def is_client(node):
    return isinstance(node, ast.Name) and node.id == "client" or \
        isinstance(node, ast.Attribute) and node.attr == "client"


def test_engine_reaches_the_api_server_only_through_named_calls_of_api():
    named = ["%s:%d client.%s" % (name, node.lineno, node.attr) for name, tree in engine_trees()
             for node in ast.walk(tree)
             if isinstance(node, ast.Attribute) and node.attr in SDK_GROUPS and is_client(node.value)]
    assert named == [], "engine/ names endpoints of the client; call a named function of api/ instead: %s" % named


def test_no_engine_class_is_longer_than_150_lines():
    assert long_classes(engine_trees()) == []


def test_no_placement_class_is_longer_than_150_lines():
    assert long_classes(trees([PLACEMENT])) == []
