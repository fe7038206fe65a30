"""Integration fixtures: a real control plane once per session, a namespace and nodes per test.

By default the session starts the local control plane of tests/cluster
(etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok and the
test provisioner). Set KUBEOPS_TEST_KUBECONFIG to a kubeconfig to run against
a cluster of your own instead (kind, k3d, EKS...): it must run kwok managing
nodes annotated kwok.x-k8s.io/node=fake, since the tests make their own
nodes; set KUBEOPS_TEST_PROVISIONER=1 too if it runs tests/cluster/provisioner.py
with tests/cluster/pools.yaml, otherwise the tests that need it are skipped.

Tests on the real Karpenter (test_karpenter.py) start a second control plane
of their own with Karpenter as its autoscaler (``karpenter_cluster``); with
KUBEOPS_TEST_KUBECONFIG they run against that cluster only when
KUBEOPS_TEST_KARPENTER=1 says it runs Karpenter with the KWOK provider.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
import uuid

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CLUSTER_DIR = os.path.join(REPO, "tests", "cluster")
sys.path.insert(0, CLUSTER_DIR)

import cluster as local_cluster  # noqa: E402
from ansible_run import INSTALLED_COLLECTIONS, run_collection_playbook, run_tasks  # noqa: E402
from clients import ClusterClients  # noqa: E402
from demo import Demo  # noqa: E402
from fakenodes import fake_node  # noqa: E402
from kube import deployment, pdb, running_pods, unless_missing  # noqa: E402

TEST_LABEL = "kubeops.io/test"
# One per pytest-xdist worker: each starts a control plane of its own.
METRICS_FILE = os.path.join(REPO, ".cache", "last-cluster-metrics%s.json" % (
    "-" + os.environ["PYTEST_XDIST_WORKER"] if os.environ.get("PYTEST_XDIST_WORKER") else ""))


def pytest_addoption(parser):
    parser.addoption("--repeat", action="append", default=[], metavar="TEST=N",
                     help="run the test function TEST N times in this session, after the tests before it: a scenario "
                          "again and again on a control plane that has served a long run")


# The files of the longest tests (minutes each) go first: the workers share the rest, instead of one worker running
# them alone at the end while the other has nothing left.
LONGEST_FIRST = ("test_soak.py", "test_flaky_network.py")


def pytest_collection_modifyitems(items):
    def rank(item):
        name = os.path.basename(str(item.fspath))
        return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)
    items.sort(key=rank)


def pytest_generate_tests(metafunc):
    for spec in metafunc.config.getoption("repeat"):
        name, separator, count = spec.partition("=")
        if metafunc.function.__name__ == name:
            metafunc.fixturenames.append("repeat_round")
            metafunc.parametrize("repeat_round", range(int(count) if separator else 1))


def wait_until(predicate, timeout=60.0, what="condition", interval=0.3, describe=None):
    """Poll ``predicate`` until it returns something truthy; fail the test naming ``what`` (and what ``describe()``
    says then, when given)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail("timed out after %.0f s waiting for %s" % (timeout, what) + (
                " " + describe() if describe else ""))
        time.sleep(interval)


class Cluster(ClusterClients):
    def __init__(self, kubeconfig, kubectl, has_provisioner, state_dir=None):
        super().__init__(kubeconfig)
        self.kubectl_binary = kubectl
        self.has_provisioner = has_provisioner
        # The local control plane's state, for fault tests that stop a component; None for a cluster of yours.
        self.state_dir = state_dir

    def need_provisioner(self):
        """Skip the test where no test provisioner brings nodes up (a cluster of yours without it)."""
        if not self.has_provisioner:
            pytest.skip("this cluster runs no test provisioner to bring nodes up (KUBEOPS_TEST_PROVISIONER)")

    def kubectl(self, *args, check=True):
        return subprocess.run([self.kubectl_binary, "--kubeconfig", self.kubeconfig] + list(args),
                              capture_output=True, text=True, check=check)


def _peak_memory_kib(pids):
    """Peak resident memory (VmHWM) of each component, read before it is stopped."""
    peaks = {}
    for name, pid in pids.items():
        try:
            with open("/proc/%d/status" % pid) as handle:
                for line in handle:
                    if line.startswith("VmHWM:"):
                        peaks[name] = int(line.split()[1])
        except OSError:
            pass
    return peaks


@pytest.fixture(scope="session")
def cluster(tmp_path_factory):
    external = os.environ.get("KUBEOPS_TEST_KUBECONFIG")
    if external:
        yield Cluster(external, shutil.which("kubectl"), os.environ.get("KUBEOPS_TEST_PROVISIONER") == "1")
        return
    with local_control_plane(str(tmp_path_factory.mktemp("control-plane"))) as (started, state):
        try:
            yield started
        finally:
            peaks = _peak_memory_kib(state["pids"])
            with open(METRICS_FILE, "w") as handle:
                json.dump({"startup_seconds": state["startup_seconds"], "versions": state["versions"],
                           "peak_rss_mib": {name: round(kib / 1024) for name, kib in peaks.items()},
                           "peak_rss_mib_total": round(sum(peaks.values()) / 1024)}, handle, indent=2)


@contextlib.contextmanager
def local_control_plane(state_dir, node_monitor_grace=None):
    """A local control plane with the test provisioner, in ``state_dir``: yields (Cluster, its state), then stops.
    ``node_monitor_grace``: see cluster.up."""
    state = local_cluster.up(state_dir, provisioner_pools=os.path.join(CLUSTER_DIR, "pools.yaml"),
                             die_with_parent=True, python=sys.executable, node_monitor_grace=node_monitor_grace)
    try:
        yield Cluster(state["kubeconfig"], local_cluster.binary("kubectl"), True, state_dir), state
    finally:
        local_cluster.down(state_dir)


@pytest.fixture(scope="session")
def karpenter_cluster(tmp_path_factory):
    """A control plane whose autoscaler is the real Karpenter (KWOK provider), for the tests that need it."""
    external = os.environ.get("KUBEOPS_TEST_KUBECONFIG")
    if external:
        if os.environ.get("KUBEOPS_TEST_KARPENTER") != "1":
            pytest.skip("this cluster runs no Karpenter (KUBEOPS_TEST_KARPENTER)")
        yield Cluster(external, shutil.which("kubectl"), False)
        return
    state_dir = str(tmp_path_factory.mktemp("karpenter-control-plane"))
    state = local_cluster.up(state_dir, die_with_parent=True, python=sys.executable, autoscaler="karpenter")
    try:
        yield Cluster(state["kubeconfig"], local_cluster.binary("kubectl"), False, state_dir)
    finally:
        local_cluster.down(state_dir)


@pytest.fixture
def test_id(request):
    """Short, unique, DNS-safe id of this test, used to name its namespace and nodes."""
    return "t%s" % uuid.uuid4().hex[:6]


@pytest.fixture
def namespace(cluster, test_id):
    cluster.core.create_namespace({"metadata": {"name": test_id, "labels": {TEST_LABEL: test_id}}})
    wait_until(lambda: default_service_account(cluster, test_id), 30, "the namespace's default ServiceAccount")
    yield test_id
    cluster.core.delete_namespace(test_id)


def default_service_account(cluster, namespace):
    """The namespace's default ServiceAccount, None until its controller made it (pods wait for it)."""
    return unless_missing(cluster.core.read_namespaced_service_account, "default", namespace)


@pytest.fixture
def make_nodes(cluster, test_id):
    """make_nodes(count, labels=..., capacity=...) -> names of new kwok nodes, Ready; deleted after the test."""
    created = []

    def make(count, labels=None, capacity=None, prefix="node"):
        names = ["%s-%s-%d" % (test_id, prefix, len(created) + index) for index in range(count)]
        for name in names:
            cluster.core.create_node(fake_node(name, dict({TEST_LABEL: test_id}, **(labels or {})), capacity))
            created.append(name)
        wait_until(lambda: all(_node_ready(cluster, name) for name in names), 60, "nodes %s to be Ready" % names)
        return names

    yield make
    for name in created:
        unless_missing(cluster.core.delete_node, name)


def deployment_under_pdb(cluster, namespace, test_id, app, replicas, timeout=60, **budget):
    """Deployment ``app`` of ``replicas`` pods on the test's nodes under PDB ``app`` (``budget``: its min_available or
    max_unavailable); returns its pods once they all run."""
    cluster.apps.create_namespaced_deployment(namespace, deployment(app, replicas, {TEST_LABEL: test_id}))
    cluster.policy.create_namespaced_pod_disruption_budget(namespace, pdb(app, {"app": app}, **budget))
    return wait_until(lambda: running_pods(cluster, namespace, "app=" + app, replicas), timeout,
                      "%d %s pods" % (replicas, app))


def delete_pool_nodes(cluster):
    """Delete the nodes the test provisioner made and wait until they are gone: a Terminating node
    still takes pods, which would land the next test's pods on a node about to vanish."""
    selector = "kubeops.io/provisioned-by=test-provisioner"
    for node in cluster.core.list_node(label_selector=selector).items:
        cluster.core.delete_node(node.metadata.name)
    wait_until(lambda: not cluster.core.list_node(label_selector=selector).items, 60, "pool nodes to be gone")


def _node_ready(cluster, name):
    """Ready, and without the node lifecycle controller's not-ready taint, which stays a moment longer
    and makes the scheduler pile the first pods on the nodes it left first."""
    node = cluster.core.read_node(name)
    return any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or []) and \
        not any(taint.key == "node.kubernetes.io/not-ready" for taint in node.spec.taints or [])


@pytest.fixture
def run_playbook(cluster, tmp_path):
    """Run a playbook of the installed collection by its name, with extra vars; returns the CompletedProcess."""

    def run(name, extra_vars):
        return run_collection_playbook(name, dict({"kubeops_kubeconfig": cluster.kubeconfig}, **extra_vars),
                                       tmp_path, INSTALLED_COLLECTIONS)

    return run


@pytest.fixture
def run_play(cluster, tmp_path):
    """Run tasks through ansible-playbook on localhost; returns the registered result of each task.

    The collection comes from its installed tarball unless ``collections_path``
    says otherwise; ``module_defaults`` of group/kubeops.rotation.k8s carry the
    test cluster's kubeconfig unless ``connection`` replaces them.
    """

    def run(tasks, check=False, connection=None, collections_path=INSTALLED_COLLECTIONS, verbosity=0, environment=None):
        return run_tasks(tasks, tmp_path, connection or {"kubeconfig": cluster.kubeconfig}, collections_path,
                         check=check, verbosity=verbosity, environment=environment)

    return run


@pytest.fixture
def demo(cluster, test_id):
    """The demo's scenario (tests/cluster/demo.py) under this test's prefix; its namespace, old nodes and
    the pool nodes the provisioner made are deleted afterwards."""
    cluster.need_provisioner()
    scenario = Demo(cluster.kubeconfig, prefix=test_id + "-")
    scenario.setup()
    yield scenario
    cluster.core.delete_namespace(scenario.namespace)
    for name in scenario.old_nodes:
        try:
            cluster.core.delete_node(name)
        except Exception:  # pylint: disable=broad-except  # already retired by the rotation
            pass
    delete_pool_nodes(cluster)
