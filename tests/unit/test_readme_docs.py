"""The README and the pages it sends readers to name only what exists: the roles' variables, the playbooks'
variables, the collection's modules, roles, playbooks, filters and EDA plugins, the modules' connection options,
the event source's options and the benchmarks' command-line options. The README keeps the command `.ci/run` runs,
the demo's command, a link to every page of docs/, and the first rotation in check mode on its first screen."""

from __future__ import annotations

import os
import re

import yaml

from ansible_collections.kubeops.rotation.plugins.module_utils.ansible_module import CONNECTION_ARGUMENT_SPEC

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
README = os.path.join(REPO, "README.md")
# The README and the pages that took its Karpenter, EDA, Descheduler and benchmark sections.
PAGES = (README,) + tuple(os.path.join(REPO, "docs", name)
                          for name in ("karpenter.md", "eda.md", "descheduler.md", "performance.md"))
# The first screen of the README, in lines: the first rotation in check mode must be on it.
FIRST_SCREEN = 50
# The options of the event source kubeops.rotation.new_nodes that docs/eda.md names.
SOURCE_OPTIONS = ("label_selector", "debounce_seconds", "tolerated_taints", "include_existing", "changes",
                  "changes_debounce_seconds")


def read(*path):
    with open(os.path.join(*path)) as handle:
        return handle.read()


def stems(folder, suffix):
    path = os.path.join(REPO, *folder.split("/"))
    return {name[:-len(suffix)] for name in os.listdir(path) if name.endswith(suffix) and not name.startswith("_")}


def role_options(role):
    specs = yaml.safe_load(read(REPO, "roles", role, "meta", "argument_specs.yml"))["argument_specs"]
    return set(specs["main"]["options"])


def test_the_readme_holds_the_command_that_ci_runs():
    command = re.search(r"^exec (.+)$", read(REPO, ".ci", "run"), re.M).group(1).strip()
    assert re.search(r"^%s(\s|$)" % re.escape(command), read(README), re.M), command


def test_the_readme_holds_the_demo_command():
    assert re.search(r"^demo:", read(REPO, "Makefile"), re.M)
    assert re.search(r"^make demo\s", read(README), re.M)


def test_the_first_rotation_in_check_mode_is_on_the_first_screen():
    lines = read(README).splitlines()
    first = next(number for number, line in enumerate(lines, 1)
                 if line.startswith("ansible-playbook kubeops.rotation.rotate_nodes") and "--check" in line)
    assert first <= FIRST_SCREEN, first


def test_every_page_of_docs_is_linked_from_the_readme():
    linked = set(re.findall(r"\]\(docs/([^)#]+)", read(README)))
    pages = {name for name in os.listdir(os.path.join(REPO, "docs")) if name.endswith((".md", ".yaml"))}
    assert sorted(pages - linked) == []


def test_every_role_variable_the_pages_name_is_an_option_of_its_role():
    # Names that share a role's prefix but are files: the rulebooks and the benchmarks.
    files = stems("extensions/eda/rulebooks", ".yml") | stems("tests/bench", ".py")
    unknown = []
    for page in PAGES:
        text = read(page)
        for role in os.listdir(os.path.join(REPO, "roles")):
            named = set(re.findall(r"\b%s_\w+" % role, text)) - files
            unknown += ["%s: %s" % (os.path.basename(page), name) for name in sorted(named - role_options(role))]
    assert unknown == []


def test_every_collection_name_the_pages_use_exists():
    known = (stems("plugins/modules", ".py") | set(os.listdir(os.path.join(REPO, "roles")))
             | stems("playbooks", ".yml") | stems("plugins/filter", ".py") | stems("plugins/doc_fragments", ".py")
             | stems("extensions/eda/plugins/event_source", ".py") | stems("extensions/eda/rulebooks", ".yml")
             | set(yaml.safe_load(read(REPO, "meta", "runtime.yml"))["action_groups"]))
    unknown = []
    for page in PAGES:
        named = set(re.findall(r"\bkubeops\.rotation\.(\w+)", read(page)))
        unknown += ["%s: %s" % (os.path.basename(page), name) for name in sorted(named - known)]
    assert unknown == []


def test_every_playbook_variable_the_pages_name_is_read_by_a_playbook():
    playbooks = "".join(read(REPO, "playbooks", name) for name in os.listdir(os.path.join(REPO, "playbooks")))
    unknown = []
    for page in PAGES:
        named = set(re.findall(r"\bkubeops_\w+", read(page)))
        unknown += ["%s: %s" % (os.path.basename(page), name) for name in sorted(named) if name not in playbooks]
    assert unknown == []


def test_the_connection_options_the_readme_lists_are_the_modules():
    text = read(README)
    start = text.index("Every module takes the same options")
    listed = re.findall(r"`(\w+)`", text[start:text.index("Each falls back", start)])
    assert listed
    assert sorted(set(listed) - set(CONNECTION_ARGUMENT_SPEC)) == []


def test_the_event_source_options_and_rulebook_variables_of_the_eda_page_exist():
    text = read(REPO, "docs", "eda.md")
    source = read(REPO, "extensions", "eda", "plugins", "event_source", "new_nodes.py")
    documented = re.search(r'DOCUMENTATION = r?"""(.*?)"""', source, re.S).group(1)
    # The keys of its options: block, read by indentation (the block is ansible-doc's format, not run through it).
    block = re.search(r"^options:\n(.*?)^\S", documented, re.S | re.M).group(1)
    options = set(re.findall(r"^  (\w+):", block, re.M))
    for option in SOURCE_OPTIONS:
        assert "`%s" % option in text, "the page no longer names %r: update SOURCE_OPTIONS" % option
        assert option in options, option
    rulebook = read(REPO, "extensions", "eda", "rulebooks", "rebalance_on_new_nodes.yml")
    named = set(re.findall(r"\bnew_nodes_\w+", text))
    assert named
    assert sorted(name for name in named if name not in rulebook) == []


def test_every_benchmark_command_uses_options_its_script_takes():
    commands = 0
    for page in PAGES:
        text = read(page).replace("\\\n", " ")
        for script, arguments in re.findall(r"tests/bench/(\w+)\.py([^\n`]*)", text):
            code = read(REPO, "tests", "bench", script + ".py")
            for option in re.findall(r"(?<!\S)(--[\w-]+)", arguments):
                commands += 1
                assert '"%s"' % option in code, "%s: %s %s" % (os.path.basename(page), script, option)
    assert commands
