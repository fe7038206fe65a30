# -*- coding: utf-8 -*-
# Copyright: kubeops.rotation contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment:
    # The connection options that every module of the collection shares; the
    # argument spec they document is CONNECTION_ARGUMENT_SPEC in
    # module_utils/ansible_module.py. module_defaults can set them for all modules at
    # once through the action group group/kubeops.rotation.k8s (meta/runtime.yml),
    # which also covers kubernetes.core's group k8s when that collection is installed.
    DOCUMENTATION = r"""
options:
  kubeconfig:
    description:
      - Path to a kubeconfig file, or the kubeconfig itself as a dictionary.
      - When neither O(kubeconfig) nor O(host) is given, the file named by the
        E(KUBECONFIG) environment variable or C(~/.kube/config) is used, and
        when there is none, the in-cluster service account (for example in an
        AWX job pod).
      - Falls back to the E(K8S_AUTH_KUBECONFIG) environment variable.
    type: raw
  context:
    description:
      - The kubeconfig context to use instead of its current context.
      - Falls back to the E(K8S_AUTH_CONTEXT) environment variable.
    type: str
  host:
    description:
      - URL of the Kubernetes API server, for example V(https://10.0.0.1:6443).
        Overrides the server of the kubeconfig.
      - Falls back to the E(K8S_AUTH_HOST) environment variable.
    type: str
  api_key:
    description:
      - Bearer token to authenticate with. Overrides the kubeconfig's user.
      - Falls back to the E(K8S_AUTH_API_KEY) environment variable.
    type: str
  ca_cert:
    description:
      - Path to the CA bundle that signed the API server's certificate.
      - Falls back to the E(K8S_AUTH_CA_CERT) environment variable, then to
        E(K8S_AUTH_SSL_CA_CERT).
    type: path
    aliases: [ssl_ca_cert]
  client_cert:
    description:
      - Path to a client certificate to authenticate with.
      - Falls back to the E(K8S_AUTH_CLIENT_CERT) environment variable, then to
        E(K8S_AUTH_CERT_FILE).
    type: path
    aliases: [cert_file]
  client_key:
    description:
      - Path to the key of O(client_cert).
      - Falls back to the E(K8S_AUTH_CLIENT_KEY) environment variable, then to
        E(K8S_AUTH_KEY_FILE).
    type: path
    aliases: [key_file]
  validate_certs:
    description:
      - Whether to verify the API server's certificate. When unset, the
        kubeconfig decides (it verifies unless it says
        C(insecure-skip-tls-verify)).
      - Falls back to the E(K8S_AUTH_VALIDATE_CERTS) environment variable, then
        to E(K8S_AUTH_VERIFY_SSL), read as a boolean (V(true) or V(false),
        V(yes) or V(no), V(1) or V(0)).
    type: bool
    aliases: [verify_ssl]
  proxy:
    description:
      - URL of an HTTP proxy to reach the API server through.
      - Falls back to the E(K8S_AUTH_PROXY) environment variable.
    type: str
  no_proxy:
    description:
      - Comma-separated host names, domain suffixes, IP addresses and CIDR
        ranges, for example V(localhost,.internal.example.com,10.0.0.0/8).
        When the API server's host matches one of them, it is reached
        directly, without O(proxy).
      - Falls back to the E(K8S_AUTH_NO_PROXY) environment variable.
    type: str
    version_added: 0.3.0
  impersonate_user:
    description:
      - User name to act as (the C(Impersonate-User) header), as
        C(kubectl --as) does. The authenticated user needs the RBAC verb
        C(impersonate) on it.
      - Falls back to the E(K8S_AUTH_IMPERSONATE_USER) environment variable.
    type: str
  impersonate_groups:
    description:
      - Groups to act as (one C(Impersonate-Group) header each), as
        C(kubectl --as-group) does. Requires O(impersonate_user).
      - Falls back to the E(K8S_AUTH_IMPERSONATE_GROUPS) environment variable,
        a comma-separated list such as V(system:authenticated,ops).
    type: list
    elements: str
requirements:
  - python >= 3.9
  - kubernetes >= 29.0.0
notes:
  - The environment variables are those kubernetes.core reads, under the
    same names; one that is empty counts as unset. An option given in the
    task, or by C(module_defaults), wins over them.
  - Every request the module makes goes through one client, which retries
    reads that fail with a connection error or with HTTP 429, 500, 502, 503 or 504
    a few times with backoff. Writes are not retried there; the modules
    decide what a failed write means.
  - Tokens from kubeconfig C(exec) plugins (for example C(aws eks get-token))
    are refreshed when they expire, so long runs keep working.
"""
