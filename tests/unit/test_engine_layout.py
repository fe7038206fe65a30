"""engine/ names no endpoint of the Kubernetes client: api/ is the only code that talks to the API server. Read from
the source with ast, without importing it. (The size rule, for engine/ as for every plugin: test_code_size.py.)"""

from __future__ import annotations

import ast
import glob
import os

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENGINE = os.path.join(REPO, "plugins", "module_utils", "engine")
# The typed API groups of api.client.Client.
SDK_GROUPS = frozenset(["core", "apps", "autoscaling", "policy", "version", "authentication", "scheduling",
                        "coordination", "custom", "batch"])


def trees(paths):
    for path in paths:
        with open(path, encoding="utf-8") as source:
            yield os.path.basename(path), ast.parse(source.read())


def engine_trees():
    return trees(sorted(glob.glob(os.path.join(ENGINE, "*.py"))))


def is_client(node):
    return isinstance(node, ast.Name) and node.id == "client" or \
        isinstance(node, ast.Attribute) and node.attr == "client"


def test_engine_reaches_the_api_server_only_through_named_calls_of_api():
    named = ["%s:%d client.%s" % (name, node.lineno, node.attr) for name, tree in engine_trees()
             for node in ast.walk(tree)
             if isinstance(node, ast.Attribute) and node.attr in SDK_GROUPS and is_client(node.value)]
    assert named == [], "engine/ names endpoints of the client; call a named function of api/ instead: %s" % named
