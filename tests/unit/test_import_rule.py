"""model/ and plan/ are pure: they import neither the kubernetes library nor Ansible, nor api/, engine/ or
ansible_module. Checked in a fresh interpreter where kubernetes and ansible cannot be imported at all.

api/ reads and writes, it does not decide: it imports model/ (and kubernetes, Ansible's module_utils), never
plan/, engine/ or ansible_module. Checked in a fresh interpreter too."""

from __future__ import annotations

import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTIONS_ROOT = os.path.join(REPO, ".cache", "checkout")
PACKAGE = "ansible_collections.kubeops.rotation.plugins.module_utils"
PURE = ("model", "plan")
FORBIDDEN = ("kubernetes", "ansible")
ACTING = tuple("%s.%s" % (PACKAGE, name) for name in ("api", "engine", "ansible_module"))
# What api/ must not import: the code that decides (plan/) and the code that acts or reports (engine/,
# ansible_module).
NOT_FOR_API = tuple("%s.%s" % (PACKAGE, name) for name in ("plan", "engine", "ansible_module"))

# Runs in the fresh interpreter: argv[1] is the collections root, argv[2] the modules to import, argv[3] the
# prefixes of the collection's modules they must not import, argv[4] the libraries made unimportable. Prints
# what each import did, as JSON.
IMPORT_ALL = """
import importlib
import json
import sys

root, modules, watched = sys.argv[1], json.loads(sys.argv[2]), tuple(json.loads(sys.argv[3]))
forbidden = tuple(json.loads(sys.argv[4]))
attempts = []


def importer():
    frame = sys._getframe(2)
    while frame and frame.f_globals.get("__name__", "").startswith(("importlib", "_frozen_importlib", "__main__")):
        frame = frame.f_back
    return frame.f_globals.get("__name__") if frame else None


def is_under(name, prefixes):
    return any(name == prefix or name.startswith(prefix + ".") for prefix in prefixes)


class Guard:
    def find_spec(self, name, path=None, target=None):
        if is_under(name, forbidden) or is_under(name, watched):
            attempts.append([importer(), name])
        if is_under(name, forbidden):
            raise ImportError("%s is not importable here" % name)
        return None


already = sorted(name for name in sys.modules if is_under(name, forbidden))
sys.meta_path.insert(0, Guard())
sys.path.insert(0, root)
failed = {}
for module in modules:
    try:
        importlib.import_module(module)
    except Exception as exc:
        failed[module] = "%s: %s" % (type(exc).__name__, exc)
print(json.dumps({"already": already, "failed": failed, "attempts": attempts,
                  "loaded": sorted(name for name in sys.modules if is_under(name, watched + forbidden))}))
"""


def expose_checkout_as_collection():
    link = os.path.join(COLLECTIONS_ROOT, "ansible_collections", "kubeops", "rotation")
    if not os.path.islink(link):
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(REPO, link)


def modules_of(folders):
    """Every module of ``folders`` of module_utils (packages included), by its dotted name."""
    base = os.path.join(REPO, "plugins", "module_utils")
    modules = []
    for folder in folders:
        for directory, subfolders, files in os.walk(os.path.join(base, folder)):
            subfolders[:] = sorted(name for name in subfolders if name != "__pycache__")
            package = os.path.relpath(directory, base).replace(os.sep, ".")
            for name in sorted(files):
                if name == "__init__.py":
                    modules.append("%s.%s" % (PACKAGE, package))
                elif name.endswith(".py"):
                    modules.append("%s.%s.%s" % (PACKAGE, package, name[:-3]))
    return sorted(modules)


def import_all(modules, watched, forbidden):
    """What importing ``modules`` in a fresh interpreter did, where ``forbidden`` cannot be imported and every
    import of a module under ``watched`` (or ``forbidden``) is noted with its importer."""
    expose_checkout_as_collection()
    completed = subprocess.run([sys.executable, "-c", IMPORT_ALL, COLLECTIONS_ROOT, json.dumps(modules),
                                json.dumps(watched), json.dumps(forbidden)],
                               capture_output=True, text=True, check=False, cwd=REPO)
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout)


def test_model_and_plan_import_nothing_that_talks_to_a_cluster_or_to_ansible():
    modules = modules_of(PURE)
    assert {PACKAGE + ".model.keys", PACKAGE + ".plan.rotation", PACKAGE + ".plan.rebalance.planner"} <= set(modules)
    report = import_all(modules, ACTING, FORBIDDEN)
    assert report["already"] == [], "the fresh interpreter had them before any import"
    assert report["failed"] == {}, "modules of model/ or plan/ that cannot be imported without kubernetes and " \
                                   "ansible: %s" % report["failed"]
    assert report["attempts"] == [], "model/ and plan/ must not import these (importer, imported): %s" % (
        report["attempts"],)
    assert report["loaded"] == [], "loaded by importing model/ and plan/: %s" % report["loaded"]


def test_api_imports_nothing_that_decides_or_acts():
    modules = modules_of(("api",))
    assert {PACKAGE + ".api", PACKAGE + ".api.client", PACKAGE + ".api.watch"} <= set(modules)
    report = import_all(modules, NOT_FOR_API, ())
    assert report["failed"] == {}, "modules of api/ that cannot be imported: %s" % report["failed"]
    assert report["attempts"] == [], "api/ must not import these (importer, imported): %s" % (report["attempts"],)
    assert report["loaded"] == [], "loaded by importing api/: %s" % report["loaded"]
