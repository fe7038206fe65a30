"""The version matrix: the unit tests and a short integration subset on each supported end.

Each combination (ansible-core, controller Python, kubernetes client) gets a venv of its own under
.cache/matrix, created once at pinned versions (jmespath and pytest at tests/requirements.txt's pins); the
tests then run from it, so that ansible-playbook, the modules' interpreter and the test provisioner are that
venv's (tests/integration/ansible_run.py and conftest.py take them from sys.executable). The collection is
the one `make collection` installed into .cache/collections. Prints one line per combination at the end and
fails if any test failed.

    python tests/matrix/run.py --combo 2.16.19,3.11,29.0.0 --combo 2.21.5,3.13,37.0.2 \\
        --integration tests/integration/test_cluster_info.py
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from xml.etree import ElementTree

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MATRIX_DIR = os.path.join(REPO, ".cache", "matrix")
# Each combination's pytest temporary folders; pytest empties a --basetemp before it starts.
BASETEMP = os.path.join(tempfile.gettempdir(), "matrix-tests")
VERSIONS = ("import sys, ansible.release, kubernetes; "
            "print(ansible.release.__version__, '%d.%d.%d' % sys.version_info[:3], kubernetes.__version__)")


def log(message):
    print("[matrix] %s" % message, flush=True)


def find_python(version):
    """pyenv's python<version> first (the newest patch), then PATH's."""
    found = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/%s.*/bin/python%s" % (version, version))),
                   key=lambda path: [int(part) for part in re.findall(r"\d+", path.split("/versions/")[1])[:3]])
    return found[-1] if found else shutil.which("python%s" % version)


def pinned(requirements, name):
    with open(requirements) as handle:
        for line in handle:
            if re.match(r"%s==" % re.escape(name), line.strip(), re.IGNORECASE):
                return line.strip()
    raise SystemExit("%s pins no %s" % (requirements, name))


def make_venv(ansible_core, python_version, kubernetes, requirements):
    name = "ansible-core-%s_python-%s_kubernetes-%s" % (ansible_core, python_version, kubernetes)
    venv = os.path.join(MATRIX_DIR, name)
    if os.path.exists(os.path.join(venv, ".installed")):
        return name, venv
    python = find_python(python_version)
    if not python:
        raise SystemExit("Python %s is needed for the matrix (pyenv install %s)" % (python_version, python_version))
    log("creating %s with %s" % (venv, python))
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([python, "-m", "venv", venv], check=True)
    subprocess.run([os.path.join(venv, "bin", "pip"), "install", "--quiet", "--disable-pip-version-check",
                    "ansible-core==%s" % ansible_core, "kubernetes==%s" % kubernetes,
                    pinned(requirements, "jmespath"), pinned(requirements, "pytest")], check=True)
    open(os.path.join(venv, ".installed"), "w").close()
    return name, venv


def pytest(venv, name, kind, paths):
    """Run pytest from ``venv``; returns (passed, failed, skipped) from its JUnit report."""
    report = os.path.join(MATRIX_DIR, "%s-%s.xml" % (name, kind))
    if os.path.exists(report):
        os.remove(report)
    basetemp = os.path.join(BASETEMP, name, kind)
    os.makedirs(os.path.dirname(basetemp), exist_ok=True)
    bin_dir = os.path.join(venv, "bin")
    env = dict(os.environ, VIRTUAL_ENV=venv, PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""))
    command = [os.path.join(bin_dir, "python"), "-m", "pytest", "-q", "-p", "no:logging", "-p", "no:cacheprovider",
               "--continue-on-collection-errors", "--basetemp", basetemp, "--junit-xml", report] + paths
    log("%s: %s" % (name, " ".join(command[1:])))
    subprocess.run(command, cwd=REPO, env=env, check=False)
    if not os.path.exists(report):  # pytest itself failed (an import error in a conftest): count it as a failure
        return 0, 1, 0
    tests = failed = skipped = 0
    root = ElementTree.parse(report).getroot()
    for suite in ([root] if root.tag == "testsuite" else root.iter("testsuite")):
        tests += int(suite.get("tests", 0))
        failed += int(suite.get("failures", 0)) + int(suite.get("errors", 0))
        skipped += int(suite.get("skipped", 0))
    return tests - failed - skipped, failed, skipped


def counts(result):
    passed, failed, skipped = result
    return "%d passed, %d failed%s" % (passed, failed, ", %d skipped" % skipped if skipped else "")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--combo", action="append", required=True, metavar="ANSIBLE_CORE,PYTHON,KUBERNETES",
                        help="e.g. 2.16.19,3.11,29.0.0; repeat for each combination")
    parser.add_argument("--unit", action="append", default=None, help="unit test paths (default tests/unit)")
    parser.add_argument("--integration", action="append", default=[], help="integration test paths")
    parser.add_argument("--requirements", default=os.path.join(REPO, "tests", "requirements.txt"))
    args = parser.parse_args(argv)
    os.makedirs(MATRIX_DIR, exist_ok=True)
    lines, failures = [], 0
    for combo in args.combo:
        ansible_core, python_version, kubernetes = combo.split(",")
        started = time.monotonic()
        name, venv = make_venv(ansible_core, python_version, kubernetes, args.requirements)
        installed = subprocess.run([os.path.join(venv, "bin", "python"), "-c", VERSIONS], capture_output=True,
                                   text=True, check=True).stdout.split()
        tested = time.monotonic()
        unit = pytest(venv, name, "unit", args.unit or ["tests/unit"])
        integration = pytest(venv, name, "integration", args.integration) if args.integration else (0, 0, 0)
        failures += unit[1] + integration[1]
        lines.append("ansible-core %s, Python %s, kubernetes %s: unit %s; integration %s (%.0f s, venv %.0f s)" % (
            installed[0], installed[1], installed[2], counts(unit), counts(integration),
            time.monotonic() - tested, tested - started))
    print("\nThe version matrix:")
    for line in lines:
        print("  " + line)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
