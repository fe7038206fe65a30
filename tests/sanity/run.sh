#!/usr/bin/env bash
# ansible-test sanity on a copy of the collection at the path ansible-test
# requires (.../ansible_collections/kubeops/rotation), with the venv's tools.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
venv_bin="$repo/.venv/bin"
work="${TMPDIR:-/tmp}/kubeops-sanity"
target="$work/ansible_collections/kubeops/rotation"

# ansible-test fetches pip's bootstrap script; where that host is out of
# reach, cache the offline stand-in under the name ansible-test looks for.
pip_version=$(grep -oP "pip='\K[0-9.]+" "$("$venv_bin/python" -c 'import ansible_test, os; print(os.path.dirname(ansible_test.__file__))')/_internal/python_requirements.py")
cached="$HOME/.ansible/test/cache/get_pip_${pip_version//./_}.py"
if [ ! -f "$cached" ] && ! curl -sfI -m 10 "https://ci-files.testing.ansible.com/ansible-test/get-pip-$pip_version.py" >/dev/null; then
  echo "sanity: pip's bootstrap script cannot be downloaded here; using tests/sanity/get_pip_offline.py"
  mkdir -p "$(dirname "$cached")"
  cp "$repo/tests/sanity/get_pip_offline.py" "$cached"
fi

rm -rf "$work"
mkdir -p "$target"
# Tracked and new files as they are in the working tree (a file deleted but not yet committed is left out).
(cd "$repo" && git ls-files --cached --others --exclude-standard -z \
  | while IFS= read -r -d '' file; do if [ -e "$file" ]; then printf '%s\0' "$file"; fi; done \
  | xargs -0 cp --parents -t "$target")
cd "$target"
PATH="$venv_bin:$PATH" "$venv_bin/ansible-test" sanity --color no --python "$("$venv_bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')" "$@"
