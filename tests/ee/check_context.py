"""Check the build context that `ansible-builder create` wrote for execution-environment.yml.

No image is built here (no container engine is needed): this checks that the
context would build the image the definition describes. The Containerfile
starts from the base image the definition names and installs the collection
from the tarball in the context, through a galaxy requirements file that points
at it. That tarball is this checkout's collection at galaxy.yml's version, and
ships the metadata that ansible-builder's introspection reads
(meta/execution-environment.yml, requirements.txt, bindep.txt). The Python
requirements are requirements.txt's. Prints one line per problem and exits 1
when there is any.

    python tests/ee/check_context.py --context .cache/ee-context
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tarfile

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def requirement_lines(path):
    with open(path) as handle:
        return [line.strip() for line in handle if line.strip() and not line.lstrip().startswith("#")]


def base_image_problems(containerfile, definition):
    wanted = definition["images"]["base_image"]["name"]
    found = re.search(r'^ARG EE_BASE_IMAGE="([^"]*)"', containerfile, re.MULTILINE)
    if not found:
        return ["the Containerfile declares no EE_BASE_IMAGE"]
    problems = []
    if found.group(1) != wanted:
        problems.append("the Containerfile starts from %s, not %s" % (found.group(1), wanted))
    if "FROM $EE_BASE_IMAGE AS base" not in containerfile:
        problems.append("the Containerfile does not start from $EE_BASE_IMAGE")
    if "ansible-doc --json kubeops.rotation.cluster_info" not in containerfile:
        problems.append("the Containerfile does not check that ansible loads the collection (append_final)")
    return problems


def galaxy_problems(context, containerfile):
    """The galaxy requirements point at a tarball in the context, and the Containerfile installs from them."""
    problems = []
    requirements_file = os.path.join(context, "_build", "requirements.yml")
    if not os.path.exists(requirements_file):
        return ["_build/requirements.yml (the galaxy requirements) is missing"]
    with open(requirements_file) as handle:
        collections = (yaml.safe_load(handle) or {}).get("collections") or []
    if [entry.get("type") for entry in collections] != ["file"]:
        return ["_build/requirements.yml should name one collection tarball (type: file), got %s" % collections]
    # The galaxy stage runs ansible-galaxy in /build, where the context's _build folder is copied.
    if "COPY _build /build\nWORKDIR /build" not in containerfile or \
            "ansible-galaxy collection install $ANSIBLE_GALAXY_CLI_COLLECTION_OPTS -r requirements.yml" \
            not in containerfile:
        problems.append("the Containerfile does not install the collections of requirements.yml from /build")
    tarball = os.path.join(context, "_build", collections[0]["name"])
    if not os.path.isfile(tarball):
        return problems + ["the galaxy requirements name %s, which is not in the context" % collections[0]["name"]]
    return problems + tarball_problems(tarball)


def tarball_problems(tarball):
    with open(os.path.join(REPO, "galaxy.yml")) as handle:
        galaxy = yaml.safe_load(handle)
    with tarfile.open(tarball) as archive:
        names = set(archive.getnames())
        manifest = json.load(archive.extractfile("MANIFEST.json"))["collection_info"]
        meta = yaml.safe_load(archive.extractfile("meta/execution-environment.yml")) \
            if "meta/execution-environment.yml" in names else {}
        shipped_requirements = archive.extractfile("requirements.txt").read().decode() \
            if "requirements.txt" in names else ""
    problems = []
    found = (manifest["namespace"], manifest["name"], manifest["version"])
    wanted = (galaxy["namespace"], galaxy["name"], galaxy["version"])
    if found != wanted:
        problems.append("the tarball holds %s.%s %s, not %s.%s %s" % (found + wanted))
    dependencies = (meta or {}).get("dependencies") or {}
    if dependencies.get("python") != "requirements.txt" or dependencies.get("system") != "bindep.txt":
        problems.append("the tarball's meta/execution-environment.yml does not name requirements.txt and bindep.txt")
    for name in ("requirements.txt", "bindep.txt", "roles/rotate_nodes/meta/argument_specs.yml"):
        if name not in names:
            problems.append("the tarball lacks %s" % name)
    if "execution-environment.yml" in names:
        problems.append("the tarball ships execution-environment.yml, which galaxy.yml should leave out")
    kubernetes = [line for line in shipped_requirements.splitlines() if line.startswith("kubernetes")]
    if kubernetes != [line for line in requirement_lines(os.path.join(REPO, "requirements.txt"))
                      if line.startswith("kubernetes")]:
        problems.append("the tarball's requirements.txt pins kubernetes as %s, not as this checkout does" % kubernetes)
    return problems


def requirement_problems(context, definition):
    problems = []
    for key, name in (("python", "requirements.txt"), ("system", "bindep.txt")):
        copied = os.path.join(context, "_build", name)
        source = os.path.join(REPO, definition["dependencies"][key])
        if not os.path.exists(copied):
            problems.append("_build/%s is missing" % name)
        elif requirement_lines(copied) != requirement_lines(source):
            problems.append("_build/%s differs from %s" % (name, definition["dependencies"][key]))
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--context", required=True)
    parser.add_argument("--definition", default=os.path.join(REPO, "execution-environment.yml"))
    args = parser.parse_args()
    with open(args.definition) as handle:
        definition = yaml.safe_load(handle)
    containerfile_path = os.path.join(args.context, "Containerfile")
    if not os.path.exists(containerfile_path):
        sys.exit("PROBLEM: %s does not exist" % containerfile_path)
    with open(containerfile_path) as handle:
        containerfile = handle.read()
    problems = (base_image_problems(containerfile, definition) + galaxy_problems(args.context, containerfile)
                + requirement_problems(args.context, definition))
    for problem in problems:
        print("PROBLEM: " + problem)
    if problems:
        sys.exit(1)
    print("Build context %s: FROM %s, installs kubeops.rotation from its tarball, requirements.txt and bindep.txt." % (
        args.context, definition["images"]["base_image"]["name"]))


if __name__ == "__main__":
    main()
