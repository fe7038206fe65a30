"""Stands in for pip's get-pip bootstrap script where ansible-test cannot download it.

ansible-test bootstraps pip in each sanity venv from a script it downloads;
run.sh puts this file in its cache only when that download is impossible.
It takes pip from the interpreter's own ensurepip, then installs the packages
ansible-test asked for. ansible-test hides the machine's pip configuration,
so the system CA bundle is named explicitly.
"""

import ensurepip
import os
import subprocess
import sys

SYSTEM_CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
GET_PIP_ONLY_FLAGS = ("--no-setuptools", "--no-wheel")

ensurepip.bootstrap(upgrade=True)
environment = dict(os.environ)
if os.path.exists(SYSTEM_CA_BUNDLE):
    environment["PIP_CERT"] = SYSTEM_CA_BUNDLE
packages = [argument for argument in sys.argv[1:] if argument not in GET_PIP_ONLY_FLAGS]
subprocess.check_call([sys.executable, "-m", "pip", "install"] + packages, env=environment)
