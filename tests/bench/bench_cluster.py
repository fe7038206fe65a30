"""What every benchmark does with the local control plane: API clients, pods of a namespace, waiting."""

from __future__ import annotations

import time

from kubernetes import client as k8s_client
from kubernetes import config as k8s_config


class ClusterBench:
    """API clients on the benchmark's cluster, and ``work_dir`` for the tools' files."""

    def __init__(self, kubeconfig, work_dir):
        self.kubeconfig = kubeconfig
        self.work_dir = work_dir
        api_client = k8s_config.new_client_from_config(config_file=kubeconfig)
        self.core = k8s_client.CoreV1Api(api_client)
        self.apps = k8s_client.AppsV1Api(api_client)
        self.policy = k8s_client.PolicyV1Api(api_client)

    def pods(self, namespace, selector=None):
        return self.core.list_namespaced_pod(namespace, label_selector=selector).items

    def wait(self, predicate, what, timeout=120):
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise RuntimeError("timed out waiting for %s" % what)
            time.sleep(0.3)
