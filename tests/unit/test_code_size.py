"""The size rule, for every Python file of the collection's plugins (plugins/ and extensions/eda/plugins/): no class
longer than a reader holds at once (150 lines), no function longer than a screen (60 lines), no function with more
than 8 parameters (self and cls aside; *args and **kwargs count one each): parameters that travel together go
into a small frozen dataclass. Read from the source with ast, without importing it."""

from __future__ import annotations

import ast
import os

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROOTS = (os.path.join(REPO, "plugins"), os.path.join(REPO, "extensions", "eda", "plugins"))
MAX_CLASS_LINES = 150
MAX_FUNCTION_LINES = 60
MAX_PARAMETERS = 8
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def python_files():
    for root in ROOTS:
        for directory, subfolders, files in os.walk(root):
            subfolders[:] = sorted(name for name in subfolders if name != "__pycache__")
            for name in sorted(files):
                if name.endswith(".py"):
                    yield os.path.join(directory, name)


def definitions():
    """(path relative to the repository, the class or function node) for every definition, nested ones too."""
    for path in python_files():
        with open(path, encoding="utf-8") as source:
            tree = ast.parse(source.read(), path)
        for node in ast.walk(tree):
            if isinstance(node, (ast.ClassDef,) + FUNCTIONS):
                yield os.path.relpath(path, REPO), node


def lines(node):
    return node.end_lineno - node.lineno + 1


def parameters(function):
    arguments = function.args
    names = [argument.arg for argument in arguments.posonlyargs + arguments.args]
    count = len(names) + len(arguments.kwonlyargs) + bool(arguments.vararg) + bool(arguments.kwarg)
    return count - 1 if names and names[0] in ("self", "cls") else count


def test_the_rule_reads_the_plugins_and_the_event_source():
    paths = {path for path, _node in definitions()}
    assert os.path.join("plugins", "module_utils", "api", "client.py") in paths
    assert os.path.join("extensions", "eda", "plugins", "event_source", "new_nodes.py") in paths


def test_no_class_is_longer_than_150_lines():
    long = ["%s:%d class %s has %d lines" % (path, node.lineno, node.name, lines(node))
            for path, node in definitions() if isinstance(node, ast.ClassDef) and lines(node) > MAX_CLASS_LINES]
    assert long == [], "cut these classes into named pieces: %s" % long


def test_no_function_is_longer_than_60_lines():
    long = ["%s:%d %s has %d lines" % (path, node.lineno, node.name, lines(node))
            for path, node in definitions() if isinstance(node, FUNCTIONS) and lines(node) > MAX_FUNCTION_LINES]
    assert long == [], "cut these functions into named pieces: %s" % long


def test_no_function_takes_more_than_8_parameters():
    many = ["%s:%d %s takes %d" % (path, node.lineno, node.name, parameters(node))
            for path, node in definitions() if isinstance(node, FUNCTIONS) and parameters(node) > MAX_PARAMETERS]
    assert many == [], "group the parameters that travel together into a frozen dataclass: %s" % many
