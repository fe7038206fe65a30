"""docs/awx.md and docs/awx/ say what the code does: the survey against the role's argument spec, the
credential types against the environment variables the modules read, the project playbooks against the roles."""

from __future__ import annotations

import json
import os
import re

import yaml

from ansible_collections.kubeops.rotation.plugins.module_utils.ansible_module import CONNECTION_ARGUMENT_SPEC

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
AWX_DOC = os.path.join(REPO, "docs", "awx.md")
SURVEY = os.path.join(REPO, "docs", "awx", "rotate_nodes_survey.json")
# What an AWX survey answer is, for each question type, and the argument spec type it can stand for.
# A survey's answer type, and the role's option types it answers (a duration takes whole seconds too).
SURVEY_TYPES = {"text": ("str",), "textarea": ("str",), "multiplechoice": ("str",), "integer": ("int", "raw")}


def load_yaml(*path):
    with open(os.path.join(REPO, *path)) as handle:
        return yaml.safe_load(handle)


def role_options(role):
    return load_yaml("roles", role, "meta", "argument_specs.yml")["argument_specs"]["main"]["options"]


def survey_questions():
    with open(SURVEY) as handle:
        return json.load(handle)["spec"]


def doc_text():
    with open(AWX_DOC) as handle:
        return handle.read()


def test_every_survey_question_is_an_option_of_the_role_with_its_type_choices_default_and_requiredness():
    options = role_options("rotate_nodes")
    for question in survey_questions():
        option = options.get(question["variable"])
        assert option, "%s is not an option of rotate_nodes" % question["variable"]
        assert option["type"] in SURVEY_TYPES[question["type"]], question["variable"]
        # Required: what the role needs, and what has a default of its own (AWX fills it in); optional: what the
        # role takes as "not given" when empty.
        assert question["required"] == (option.get("required", False) or option.get("default") not in ("", None)), \
            question["variable"]
        # An optional text question left empty is the role's "not given" ("" or None, both omitted).
        assert question["default"] == (option.get("default") if option.get("default") is not None else ""), \
            question["variable"]
        if question["type"] == "multiplechoice":
            assert set(question["choices"]) <= set(option["choices"]), question["variable"]
            assert question["default"] in question["choices"]


def test_the_survey_asks_nothing_a_survey_answer_cannot_carry_with_the_right_type():
    options = role_options("rotate_nodes")
    asked = {question["variable"] for question in survey_questions()}
    for name in asked:
        assert options[name]["type"] not in ("bool", "dict", "list"), "%s: a survey answers with a string" % name
    assert "rotate_nodes_report_file" not in asked, "the project playbook sets it"
    assert "rotate_nodes_max_in_flight" not in asked, "an empty answer would be refused by the role"


def test_the_survey_table_of_the_doc_is_the_survey_file():
    rows = re.findall(r"^\| [^|]+ \| `(rotate_nodes_\w+)` \| ([^|]+) \| `([^`]*)` \| (yes|no) \|$", doc_text(),
                      re.MULTILINE)
    questions = survey_questions()
    assert [row[0] for row in rows] == [question["variable"] for question in questions]
    for (variable, kind, default, required), question in zip(rows, questions):
        assert kind.split(":")[0].split(",")[0].strip() == question["type"], variable
        assert (default if default != '""' else "") == str(question["default"]), variable
        assert (required == "yes") == question["required"], variable


def test_the_credential_types_inject_only_variables_the_modules_read_from_inputs_they_declare():
    fallbacks = {name for option in CONNECTION_ARGUMENT_SPEC.values()
                 for name in (option.get("fallback") or (None, []))[1]}
    blocks = [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", doc_text(), re.DOTALL)]
    types = [block for block in blocks if isinstance(block, dict) and "injectors" in block]
    assert len(types) == 2
    for credential_type in types:
        fields = {field["id"] for field in credential_type["inputs"]["fields"]}
        assert set(credential_type["inputs"]["required"]) <= fields
        files = {name.split(".", 1)[1] for name in credential_type["injectors"].get("file", {})}
        for template in credential_type["injectors"].get("file", {}).values():
            assert set(re.findall(r"{{ (\w+) }}", template)) <= fields
        for variable, value in credential_type["injectors"]["env"].items():
            assert variable in fallbacks, "%s is read by no module" % variable
            assert set(re.findall(r"{{ (\w+) }}", value)) <= fields
            assert set(re.findall(r"{{ tower\.filename\.(\w+) }}", value)) <= files


def test_the_project_playbooks_run_the_roles_and_publish_what_the_roles_report():
    for playbook, role, published_when in (("rotate_nodes.yml", "rotate_nodes", "rotate_nodes_report_file is file"),
                                           ("rebalance.yml", "rebalance", "rebalance_result is defined")):
        block = load_yaml("docs", "awx", playbook)[0]["tasks"][0]
        assert block["block"][0]["ansible.builtin.import_role"]["name"] == "kubeops.rotation." + role
        published = block["always"][0]
        assert "ansible.builtin.set_stats" in published and published["when"] == published_when
    assert load_yaml("docs", "awx", "rotate_nodes.yml")[0]["vars"] == {
        "rotate_nodes_report_file": "{{ playbook_dir }}/rotation-report.json"}
    assert "rotate_nodes_report_file" in role_options("rotate_nodes")
    # The rebalance playbook publishes the role's registered result, which is what rebalance_report_file holds.
    with open(os.path.join(REPO, "roles", "rebalance", "tasks", "main.yml")) as handle:
        tasks = handle.read()
    assert "register: rebalance_result" in tasks and 'content: "{{ rebalance_result | to_nice_json }}"' in tasks
