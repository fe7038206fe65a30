"""API clients on a test cluster, as the demo, the benchmarks and the integration fixtures use them."""

from __future__ import annotations

import time

from kubernetes import client as k8s_client
from kubernetes import config as k8s_config

# What the tests' own requests say in the API server's audit log, apart from the tools they measure (the python
# client's default, OpenAPI-Generator/..., is kubernetes.core's).
USER_AGENT = "kubeops-tests"


class ClusterClients:
    """The API groups the scenarios touch, the pods of a namespace, and waiting for a condition."""

    def __init__(self, kubeconfig):
        self.kubeconfig = kubeconfig
        self.api_client = k8s_config.new_client_from_config(config_file=kubeconfig)
        self.api_client.user_agent = USER_AGENT
        self.core = k8s_client.CoreV1Api(self.api_client)
        self.apps = k8s_client.AppsV1Api(self.api_client)
        self.batch = k8s_client.BatchV1Api(self.api_client)
        self.policy = k8s_client.PolicyV1Api(self.api_client)
        self.coordination = k8s_client.CoordinationV1Api(self.api_client)

    def pods(self, namespace, selector=None):
        return self.core.list_namespaced_pod(namespace, label_selector=selector).items

    def wait(self, predicate, what, timeout=120, interval=0.3):
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise RuntimeError("timed out waiting for %s" % what)
            time.sleep(interval)
