"""The real Karpenter, with its KWOK cloud provider, as the local cluster's autoscaler.

Karpenter's own binary (``sigs.k8s.io/karpenter/kwok``, the version pinned
below and nowhere else) runs out of cluster against the local control plane:
it creates NodeClaims for pending pods, makes their Nodes (which the
cluster's kwok then runs), marks NodeClaims Drifted when their NodePool
changes, consolidates and terminates, as on a real cloud. Standard library
only, like cluster.py.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time

KARPENTER_MODULE = "sigs.k8s.io/karpenter"
KARPENTER_VERSION = "v1.15.0"
# Karpenter v1.15 needs Go 1.26.9 or newer, and the machine has 1.26.8: this build, and only this one, runs
# with a newer toolchain, which the Go module proxy serves (about 76 MB, downloaded once per machine).
KARPENTER_GOTOOLCHAIN = "go1.27.3"
SYSTEM_NAMESPACE = "karpenter"
NODE_CLASS = "default"
DEFAULT_POOL = "general"
ZONES = ("test-zone-a", "test-zone-b", "test-zone-c")
# One instance type, so that a warm node's capacity is known before it exists (rotate_nodes_template_capacity).
INSTANCE_TYPE = "c-4x-amd64-linux"
INSTANCE_CAPACITY = {"cpu": "4", "memory": "8Gi", "pods": "64"}
# The CRDs inside Karpenter's module, applied as they ship.
CRD_FILES = (
    "kwok/charts/crds/karpenter.sh_nodepools.yaml",
    "kwok/charts/crds/karpenter.sh_nodeclaims.yaml",
    "kwok/charts/crds/karpenter.sh_nodeoverlays.yaml",
    "kwok/charts/crds/autoscaling.x-k8s.io_capacitybuffers.yaml",
    "kwok/apis/crds/karpenter.kwok.sh_kwoknodeclasses.yaml",
)


def folder(cache):
    return os.path.join(cache, "bin", "karpenter-%s" % KARPENTER_VERSION)


def binary(cache):
    return os.path.join(folder(cache), "karpenter")


def build(cache, run, log):
    """Build Karpenter's KWOK binary and copy its CRDs next to it; instant once done."""
    target = folder(cache)
    if os.path.exists(binary(cache)) and all(
            os.path.exists(os.path.join(target, os.path.basename(path))) for path in CRD_FILES):
        return target
    os.makedirs(target, exist_ok=True)
    started = time.monotonic()
    env = dict(os.environ, CGO_ENABLED="0", GOFLAGS="-buildvcs=false -trimpath", GOTOOLCHAIN=KARPENTER_GOTOOLCHAIN,
               GOBIN=target)
    run(["go", "install", "%s/kwok@%s" % (KARPENTER_MODULE, KARPENTER_VERSION)], env=env)
    os.replace(os.path.join(target, "kwok"), binary(cache))
    module = json.loads(subprocess.run(
        ["go", "mod", "download", "-json", "%s@%s" % (KARPENTER_MODULE, KARPENTER_VERSION)],
        check=True, capture_output=True, env=env).stdout)
    for path in CRD_FILES:
        shutil.copyfile(os.path.join(module["Dir"], path), os.path.join(target, os.path.basename(path)))
    log("Karpenter %s built in %.1f s" % (KARPENTER_VERSION, time.monotonic() - started))
    return target


def node_class(name=NODE_CLASS):
    return {"apiVersion": "karpenter.kwok.sh/v1alpha1", "kind": "KWOKNodeClass", "metadata": {"name": name}}


def node_pool(name=DEFAULT_POOL, labels=None, annotations=None, zones=ZONES, consolidate_after="30s",
              budgets=None, limit_cpu="400", taints=None):
    """A NodePool of one instance type across ``zones``; ``annotations`` land on its nodes."""
    requirements = [
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": list(zones)},
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": [INSTANCE_TYPE]},
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
        {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
    ]
    template_spec = {"nodeClassRef": {"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": NODE_CLASS},
                     "requirements": requirements, "expireAfter": "Never"}
    if taints:
        template_spec["taints"] = list(taints)
    disruption = {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": consolidate_after}
    if budgets is not None:
        disruption["budgets"] = list(budgets)
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name},
            "spec": {"template": {"metadata": {"labels": dict(labels or {}), "annotations": dict(annotations or {})},
                                  "spec": template_spec},
                     "disruption": disruption, "limits": {"cpu": limit_cpu}}}


def kubectl_apply(kubectl, kubeconfig, objects):
    manifest = json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)})
    subprocess.run([kubectl, "--kubeconfig", kubeconfig, "apply", "--server-side", "-f", "-"],
                   input=manifest.encode(), check=True, capture_output=True)


def install(cache, kubectl, kubeconfig):
    """Karpenter's namespace and CRDs, waited for until the API server serves them."""
    paths = [os.path.join(folder(cache), os.path.basename(path)) for path in CRD_FILES]
    kubectl_apply(kubectl, kubeconfig, [{"apiVersion": "v1", "kind": "Namespace",
                                         "metadata": {"name": SYSTEM_NAMESPACE}}])
    args = [kubectl, "--kubeconfig", kubeconfig]
    subprocess.run(args + ["apply", "--server-side"] + [part for path in paths for part in ("-f", path)],
                   check=True, capture_output=True)
    subprocess.run(args + ["wait", "--for=condition=Established", "--timeout=60s"]
                   + ["-f" + path for path in paths], check=True, capture_output=True)


def environment(kubeconfig, metrics_port, health_port):
    """How Karpenter runs out of cluster: no leader election, its own ports, short batching windows so that
    tests do not wait 10 s for every new node."""
    return {
        "KUBECONFIG": kubeconfig,
        "SYSTEM_NAMESPACE": SYSTEM_NAMESPACE,
        "DISABLE_LEADER_ELECTION": "true",
        "METRICS_PORT": str(metrics_port),
        "HEALTH_PROBE_PORT": str(health_port),
        "BATCH_MAX_DURATION": "2s",
        "BATCH_IDLE_DURATION": "500ms",
        "LOG_LEVEL": "info",
        "PATH": os.environ.get("PATH", ""),
        "HOME": os.environ.get("HOME", "/tmp"),
    }
