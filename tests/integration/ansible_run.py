"""Running the collection through ansible-playbook, as its users do; shared by the tests and the benchmarks."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
INSTALLED_COLLECTIONS = os.path.join(REPO, ".cache", "collections")
CHECKOUT_COLLECTIONS = os.path.join(REPO, ".cache", "checkout")
# kubernetes.core from the ansible package (make kubernetes-core), beside the installed collection.
WITH_KUBERNETES_CORE = INSTALLED_COLLECTIONS + os.pathsep + os.path.join(REPO, ".cache", "kubernetes-core")


class PlayResult:
    def __init__(self, completed, steps):
        self.rc = completed.returncode
        self.stdout = completed.stdout
        self.stderr = completed.stderr
        self.steps = steps

    def __repr__(self):
        # What pytest prints when an assertion on a play fails: the failures first.
        failures = [step.get("msg") for step in self.steps if isinstance(step, dict) and step.get("failed")]
        return "PlayResult(rc=%s, failures=%r)\n%s\n%s" % (self.rc, failures, self.stdout[-3000:], self.stderr[-2000:])


def ansible_environment(collections_path):
    return dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections_path, ANSIBLE_NOCOLOR="1",
                ANSIBLE_RETRY_FILES_ENABLED="0", ANSIBLE_LOCALHOST_WARNING="0",
                ANSIBLE_INVENTORY_UNPARSED_WARNING="0", ANSIBLE_COLLECTIONS_ON_ANSIBLE_VERSION_MISMATCH="ignore")


def ansible_playbook_command(*args):
    return [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", "localhost,", "-c", "local",
            "-e", "ansible_python_interpreter=%s" % sys.executable] + list(args)


def run_collection_playbook(name, extra_vars, work_dir, collections_path=INSTALLED_COLLECTIONS, check=False,
                            inventory=None, background=False, environment=None, output=None):
    """Run a playbook of the collection by name with extra vars; returns the CompletedProcess
    (or, with ``background``, the running Popen, whose output goes to the file ``output`` if given).
    ``environment`` adds to ansible-playbook's environment (a benchmark's callback settings, for example)."""
    vars_file = os.path.join(str(work_dir), "extra-vars-%s.json" % uuid.uuid4().hex[:6])
    with open(vars_file, "w") as handle:
        json.dump(extra_vars, handle)
    command = ansible_playbook_command(name, "-e", "@%s" % vars_file) + (["--check"] if check else [])
    if inventory:
        command[command.index("-i") + 1] = inventory
    env = dict(ansible_environment(collections_path), **(environment or {}))
    if background:
        # A session of its own, so that a test can kill the whole process group, workers included, as AWX does.
        with open(output or os.devnull, "w") as sink:
            return subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, text=True, env=env,
                                    start_new_session=True)
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=900, check=False)


def kill_if_running(process):
    """Kill a background run, its whole process group (workers included), unless it ended by itself; then reap it."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def run_tasks(tasks, work_dir, connection, collections_path=INSTALLED_COLLECTIONS, check=False, verbosity=0,
              environment=None):
    """Run ``tasks`` in one play on localhost; returns a PlayResult with each task's registered result.

    ``connection`` becomes the module_defaults of group/kubeops.rotation.k8s; ``environment`` adds to
    ansible-playbook's environment.
    """
    results_file = os.path.join(str(work_dir), "results-%s.json" % uuid.uuid4().hex[:6])
    registered = ["step%d" % index for index in range(len(tasks))]
    block = [dict(task, register=name) for task, name in zip(tasks, registered)]
    dump = "{{ {%s} | to_json }}" % ", ".join("'%s': %s | default(None)" % (n, n) for n in registered)
    playbook = [{
        "name": "kubeops.rotation tasks",
        "hosts": "localhost",
        "gather_facts": False,
        "module_defaults": {"group/kubeops.rotation.k8s": connection},
        "tasks": [{"name": "steps", "block": block, "always": [{
            "name": "save results",
            "ansible.builtin.copy": {"content": dump, "dest": results_file, "mode": "0600"},
            "check_mode": False,
        }]}],
    }]
    playbook_file = os.path.join(str(work_dir), "play-%s.yml" % uuid.uuid4().hex[:6])
    with open(playbook_file, "w") as handle:
        yaml.safe_dump(playbook, handle, sort_keys=False)
    command = ansible_playbook_command(playbook_file)
    if check:
        command.append("--check")
    if verbosity:
        command.append("-" + "v" * verbosity)
    completed = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False,
                               env=dict(ansible_environment(collections_path), **(environment or {})))
    steps = {}
    if os.path.exists(results_file):
        with open(results_file) as handle:
            steps = json.load(handle)
    return PlayResult(completed, [steps.get(name) for name in registered])
