"""The modules' documentation is complete where ansible-doc and the docs site need it: every return value has a
sample (or, for a dict or a list of dicts, the keys it contains, each with a sample), every module points to its
related modules with seealso, and every seealso entry leads somewhere that exists.

The DOCUMENTATION and RETURN strings are read from the module files with ast, without importing the modules or
ansible's plugin loader, so the test needs neither a collections path nor the kubernetes client.
"""

from __future__ import annotations

import ast
import glob
import os
import re

import pytest
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODULES_DIR = os.path.join(REPO, "plugins", "modules")
COLLECTION = "kubeops.rotation"
# Modules of other collections that a seealso may name, each with why it is a fair pointer. A module named here
# must be a real, published FQCN; add it with its reason rather than loosening the check.
EXTERNAL_MODULES = {
    "kubernetes.core.k8s_drain": "the module whose tasks kubeops.rotation.k8s_drain takes with only the name changed",
}
# The seealso forms that ansible-doc renders and ansible-test's validate-modules accepts (its seealso_schema).
# plugin_type "role" is not among them for a module's seealso (ansible-test refuses it), so roles are linked
# with the name/link/description form.
SEEALSO_FORMS = ({"module"}, {"plugin", "plugin_type"}, {"ref"}, {"name", "link"})
PLUGIN_TYPES = ("become", "cache", "callback", "cliconf", "connection", "httpapi", "inventory", "lookup", "netconf",
                "shell", "vars", "module", "strategy", "test", "filter")


def module_files():
    return sorted(glob.glob(os.path.join(MODULES_DIR, "*.py")))


def module_names():
    return [os.path.splitext(os.path.basename(path))[0] for path in module_files() if not path.endswith("__init__.py")]


def doc_strings(path):
    """The module-level string constants (DOCUMENTATION, EXAMPLES, RETURN) of a module file, by name."""
    with open(path) as handle:
        tree = ast.parse(handle.read(), path)
    found = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            found[node.targets[0].id] = node.value.value
    return found


def docs_of(name):
    strings = doc_strings(os.path.join(MODULES_DIR, name + ".py"))
    return yaml.safe_load(strings["DOCUMENTATION"]), yaml.safe_load(strings["RETURN"])


def return_problems(returns, path=""):
    """Every return value, at every level, without a sample or (a dict or a list of dicts) contains."""
    problems = []
    for key, spec in (returns or {}).items():
        where = path + key
        if not isinstance(spec, dict):
            problems.append("%s: not a mapping" % where)
            continue
        if "contains" in spec:
            if spec.get("type") not in ("dict", "list") or \
                    (spec.get("type") == "list" and spec.get("elements") != "dict"):
                problems.append("%s: contains on a %s (only a dict or a list of dicts has keys)" % (
                    where, spec.get("type")))
            problems.extend(return_problems(spec["contains"], where + ("[]." if spec.get("type") == "list" else ".")))
        elif "sample" not in spec:
            problems.append("%s: no sample%s" % (
                where, " and no contains" if spec.get("type") in ("dict", "list") else ""))
    return problems


def seealso_problems(name, documentation, modules, repo=REPO):
    """What is wrong with a module's seealso: missing, a form ansible-doc does not render, or a pointer to a
    module, role or file that does not exist."""
    entries = documentation.get("seealso")
    if not entries:
        return ["%s: no seealso" % name]
    problems, seen = [], set()
    for entry in entries:
        keys = set(entry) - {"description"}
        if keys not in SEEALSO_FORMS:
            problems.append("%s: seealso entry %r is none of the forms %s" % (name, entry, SEEALSO_FORMS))
            continue
        if ("ref" in keys or "name" in keys) and not entry.get("description"):
            problems.append("%s: seealso entry %r needs a description" % (name, entry))
        target = entry.get("module") or entry.get("plugin") or entry.get("name") or entry.get("ref")
        if target in seen:
            problems.append("%s: seealso names %s twice" % (name, target))
        seen.add(target)
        if "module" in keys:
            problems.extend(_module_problems(name, entry["module"], modules))
        elif "plugin" in keys:
            if entry["plugin_type"] not in PLUGIN_TYPES:
                problems.append("%s: seealso plugin_type %s is not one validate-modules accepts" % (
                    name, entry["plugin_type"]))
            if entry["plugin_type"] == "module":
                problems.extend(_module_problems(name, entry["plugin"], modules))
        elif "name" in keys:
            problems.extend(_link_problems(name, entry, repo))
    return problems


def _module_problems(name, fqcn, modules):
    if fqcn == "%s.%s" % (COLLECTION, name):
        return ["%s: seealso names the module itself" % name]
    if fqcn.startswith(COLLECTION + "."):
        if fqcn[len(COLLECTION) + 1:] not in modules:
            return ["%s: seealso names %s, which is not a module of the collection" % (name, fqcn)]
        return []
    if fqcn not in EXTERNAL_MODULES:
        return ["%s: seealso names %s, neither a module of %s nor one of EXTERNAL_MODULES" % (name, fqcn, COLLECTION)]
    return []


def _link_problems(name, entry, repo):
    """A name/link entry: a web address, or a path inside the collection that exists; a role of the collection
    ("kubeops.rotation.<role> role") must exist and be what the link points into."""
    problems = []
    link = entry["link"]
    if not re.match(r"https?://", link):
        if os.path.isabs(link) or ".." in link.split("/") or not os.path.exists(os.path.join(repo, link)):
            problems.append("%s: seealso link %s is neither a web address nor a file of the collection" % (
                name, link))
    role = re.match(r"^%s\.(\w+) role$" % re.escape(COLLECTION), entry["name"])
    if role:
        if not os.path.isdir(os.path.join(repo, "roles", role.group(1))):
            problems.append("%s: seealso names the role %s, which the collection does not have" % (
                name, role.group(1)))
        elif not re.match(r"https?://", link) and not link.startswith("roles/%s/" % role.group(1)):
            problems.append("%s: seealso link %s is not a file of the role %s" % (name, link, role.group(1)))
    return problems


def rv_problems(name, documentation, returns):
    """RV(key) in the module's own DOCUMENTATION must name a return value it has (C(RV(a[].b)) walks contains)."""
    problems = []
    for reference in re.findall(r"RV\(([^)#]+)\)", yaml.safe_dump(documentation, width=10 ** 6)):
        spec = {"contains": returns}
        for part in reference.split("=")[0].replace("[]", "").split("."):
            spec = (spec.get("contains") or {}).get(part)
            if spec is None:
                problems.append("%s: RV(%s) names no return value" % (name, reference))
                break
    return problems


MODULES = module_names()


def test_every_module_file_has_its_docs_and_names_itself():
    assert MODULES, "no module found in %s" % MODULES_DIR
    for name in MODULES:
        strings = doc_strings(os.path.join(MODULES_DIR, name + ".py"))
        assert {"DOCUMENTATION", "EXAMPLES", "RETURN"} <= set(strings), name
        assert yaml.safe_load(strings["DOCUMENTATION"])["module"] == name
        assert yaml.safe_load(strings["EXAMPLES"]), name


@pytest.mark.parametrize("name", MODULES)
def test_every_return_value_at_every_level_has_a_sample_or_contains(name):
    _documentation, returns = docs_of(name)
    assert returns, "%s documents no return value" % name
    assert return_problems(returns) == []


@pytest.mark.parametrize("name", MODULES)
def test_every_module_has_a_seealso_whose_modules_roles_and_files_exist(name):
    documentation, _returns = docs_of(name)
    assert seealso_problems(name, documentation, set(MODULES)) == []


@pytest.mark.parametrize("name", MODULES)
def test_return_values_the_documentation_refers_to_exist(name):
    documentation, returns = docs_of(name)
    assert rv_problems(name, documentation, returns) == []


def test_every_module_of_the_collection_is_pointed_to_from_another_one():
    pointed = set()
    for name in MODULES:
        documentation, _returns = docs_of(name)
        pointed.update(entry["module"] for entry in documentation.get("seealso") or () if "module" in entry)
    # cluster_info is a pre-flight that points to others; every module that acts is reachable from a neighbour.
    assert {"%s.%s" % (COLLECTION, name) for name in MODULES if name != "cluster_info"} <= pointed


# The checks themselves: each catches what it is for (so that a green run means something).

def test_the_check_finds_a_nested_return_value_without_a_sample():
    returns = yaml.safe_load("""
nodes:
  description: d
  type: list
  elements: dict
  contains:
    name: {description: d, type: str, sample: n1}
    taints: {description: d, type: list, elements: dict}
count: {description: d, type: int}
summary: {description: d, type: dict, sample: {a: 1}}
""")
    assert return_problems(returns) == ["nodes[].taints: no sample and no contains", "count: no sample"]


def test_the_check_refuses_contains_on_a_scalar_or_a_list_of_strings():
    returns = yaml.safe_load("""
names: {description: d, type: list, elements: str, contains: {a: {description: d, type: str, sample: x}}}
""")
    assert return_problems(returns) == ["names: contains on a list (only a dict or a list of dicts has keys)"]


def test_the_check_finds_seealso_missing_unknown_external_self_and_broken_links(tmp_path):
    (tmp_path / "roles" / "drain_node" / "meta").mkdir(parents=True)
    (tmp_path / "roles" / "drain_node" / "meta" / "argument_specs.yml").write_text("{}")
    modules = {"cordon", "evict"}
    assert seealso_problems("evict", {}, modules, str(tmp_path)) == ["evict: no seealso"]
    documentation = {"seealso": [
        {"module": "kubeops.rotation.cordon"},
        {"module": "kubeops.rotation.drain"},
        {"module": "kubeops.rotation.evict"},
        {"module": "community.general.nothing"},
        {"plugin": "kubeops.rotation.rotate_nodes", "plugin_type": "role"},
        {"name": "kubeops.rotation.drain_node role", "link": "roles/drain_node/meta/argument_specs.yml",
         "description": "d"},
        {"name": "kubeops.rotation.gone role", "link": "roles/gone/meta/argument_specs.yml", "description": "d"},
        {"ref": "some_label"},
    ]}
    assert seealso_problems("evict", documentation, modules, str(tmp_path)) == [
        "evict: seealso names kubeops.rotation.drain, which is not a module of the collection",
        "evict: seealso names the module itself",
        "evict: seealso names community.general.nothing, neither a module of kubeops.rotation nor one of "
        "EXTERNAL_MODULES",
        "evict: seealso plugin_type role is not one validate-modules accepts",
        "evict: seealso link roles/gone/meta/argument_specs.yml is neither a web address nor a file of the "
        "collection",
        "evict: seealso names the role gone, which the collection does not have",
        "evict: seealso entry {'ref': 'some_label'} needs a description",
    ]


def test_the_check_finds_a_return_value_reference_that_names_nothing():
    returns = yaml.safe_load("""
batches: {description: d, type: list, elements: dict, contains: {evict: {description: d, type: list, sample: []}}}
""")
    documentation = {"description": ["See RV(batches[].evict) and RV(batches[].restart) and RV(summary)."]}
    assert rv_problems("m", documentation, returns) == [
        "m: RV(batches[].restart) names no return value", "m: RV(summary) names no return value"]
