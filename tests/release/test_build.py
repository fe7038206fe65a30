"""The collection as `ansible-galaxy collection build` makes it: what ships and what must not, and its version.

Builds the working tree into a temporary folder (`make release-check`; no cluster, no network) and reads the
tarball: nothing of a cache, a venv, a build or a binary ships; MANIFEST.json says galaxy.yml's version, the one
place the version lives; and the top-level paths are exactly EXPECTED_TOP_LEVEL, so that a new folder ships only
once someone has decided it should (add it here, or to galaxy.yml's build_ignore).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile

import pytest
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# What the tarball holds at its top; MANIFEST.json and FILES.json are written by the build.
EXPECTED_TOP_LEVEL = {
    "CHANGELOG.rst",
    "FILES.json",
    "LICENSE",
    "MANIFEST.json",
    "README.md",
    "bindep.txt",
    "changelogs",
    "docs",
    "extensions",
    "meta",
    "playbooks",
    "plugins",
    "requirements.txt",
    "roles",
    "tests",
}
# Folders that only a tool's run or a build leaves behind, anywhere in the tree.
NEVER_SHIPPED_FOLDERS = {".cache", ".venv", "venv", ".git", ".ansible", "__pycache__", ".pytest_cache", ".tox",
                         ".mypy_cache", ".ruff_cache", "node_modules", "build", "dist", "htmlcov", "output"}
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip", ".whl", ".gz", ".xz", ".bz2", ".zst", ".egg")
# Magic numbers of executables and archives.
BINARY_MAGIC = {b"\x7fELF": "ELF", b"\xcf\xfa\xed\xfe": "Mach-O", b"\xfe\xed\xfa\xcf": "Mach-O",
                b"\x1f\x8b": "gzip", b"PK\x03\x04": "zip"}
# Where the version may be written besides galaxy.yml: what the build and the changelog write.
VERSION_MAY_APPEAR_IN = ("MANIFEST.json", "FILES.json", "CHANGELOG.rst", "changelogs/")


def galaxy():
    with open(os.path.join(REPO, "galaxy.yml")) as handle:
        return yaml.safe_load(handle)


def ansible_galaxy():
    beside = os.path.join(os.path.dirname(sys.executable), "ansible-galaxy")
    return beside if os.path.exists(beside) else shutil.which("ansible-galaxy")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(tarball path, {member name: TarInfo}, {file name: first bytes}) of a fresh build of the working tree."""
    output = tmp_path_factory.mktemp("dist")
    command = [ansible_galaxy(), "collection", "build", "--output-path", str(output), REPO]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=False)
    assert done.returncode == 0, "%s failed:\n%s%s" % (" ".join(command), done.stdout, done.stderr)
    tarballs = os.listdir(output)
    assert len(tarballs) == 1, tarballs
    path = os.path.join(output, tarballs[0])
    members, heads = {}, {}
    with tarfile.open(path) as tar:
        for member in tar.getmembers():
            name = member.name[2:] if member.name.startswith("./") else member.name
            members[name.rstrip("/")] = member
            if member.isfile():
                heads[name] = tar.extractfile(member).read(8192)
    return path, members, heads


def test_the_build_lists_its_files(built):
    _path, members, _heads = built
    listing = sorted(members)
    print("\n".join(listing))
    assert "MANIFEST.json" in listing and "FILES.json" in listing
    assert any(name.startswith("plugins/modules/") and name.endswith(".py") for name in listing)


def test_the_tarball_and_manifest_carry_galaxy_yml_version_and_name(built):
    path, _members, heads = built
    meta = galaxy()
    assert os.path.basename(path) == "%s-%s-%s.tar.gz" % (meta["namespace"], meta["name"], meta["version"])
    with tarfile.open(path) as tar:
        manifest = json.load(tar.extractfile("MANIFEST.json"))
    info = manifest["collection_info"]
    assert (info["namespace"], info["name"], info["version"]) == (meta["namespace"], meta["name"], meta["version"])


def test_no_cache_venv_build_folder_or_bytecode_ships(built):
    _path, members, _heads = built
    wrong = sorted(name for name in members
                   if set(name.split("/")) & NEVER_SHIPPED_FOLDERS
                   or name.endswith((".pyc", ".pyo"))
                   or name.split("/")[-1].endswith(".egg-info"))
    assert wrong == []


def test_no_tarball_or_other_archive_ships(built):
    _path, members, heads = built
    wrong = sorted(name for name in members if name.endswith(ARCHIVE_SUFFIXES))
    wrong += sorted("%s (%s)" % (name, kind) for name, head in heads.items()
                    for magic, kind in BINARY_MAGIC.items() if head.startswith(magic) and kind in ("gzip", "zip"))
    assert wrong == []


def test_no_binary_ships(built):
    _path, _members, heads = built
    executables = sorted("%s (%s)" % (name, kind) for name, head in heads.items()
                         for magic, kind in BINARY_MAGIC.items() if head.startswith(magic))
    assert executables == []
    # Everything the collection ships is text; a NUL byte means a binary file slipped in.
    assert sorted(name for name, head in heads.items() if b"\0" in head) == []


def test_the_top_level_paths_are_exactly_the_expected_ones(built):
    _path, members, _heads = built
    top = {name.split("/")[0] for name in members}
    assert sorted(top - EXPECTED_TOP_LEVEL) == [], "ships something new at the top (add it to EXPECTED_TOP_LEVEL " \
        "in %s, or to build_ignore in galaxy.yml)" % os.path.relpath(__file__, REPO)
    assert sorted(EXPECTED_TOP_LEVEL - top) == [], "no longer ships these"


def test_the_version_lives_only_in_galaxy_yml(built):
    """Nothing shipped repeats galaxy.yml's version (it would go stale at the next release), except what the
    build and the changelog write and the version_added of a documented option."""
    path, members, _heads = built
    version = galaxy()["version"]
    pattern = re.compile(r"(?<![\w.])v?%s(?![\w.])" % re.escape(version))
    found = []
    with tarfile.open(path) as tar:
        for member in tar.getmembers():
            name = member.name[2:] if member.name.startswith("./") else member.name
            if not member.isfile() or name.startswith(VERSION_MAY_APPEAR_IN):
                continue
            text = tar.extractfile(member).read().decode("utf-8", "replace")
            found.extend("%s:%d: %s" % (name, number, line.strip())
                         for number, line in enumerate(text.splitlines(), start=1)
                         if pattern.search(line) and "version_added" not in line)
    assert found == []
