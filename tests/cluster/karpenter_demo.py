"""The demo of `make demo`: the article's situation on the real Karpenter, and the rotation that resolves it.

A NodePool whose nodes Karpenter must not disrupt on its own (its template
annotates them karpenter.sh/do-not-disrupt), and in namespace "shop": a
StatefulSet of 3 whose pods carry karpenter.sh/do-not-disrupt and repel each
other by hostname, a web Deployment of 4 spread over the zones under a PDB
(minAvailable 3), a single-replica Deployment under a minAvailable 1 PDB and
a DaemonSet. Karpenter launches the nodes for them. Then the NodePool's
template changes: Karpenter marks every NodeClaim Drifted and says, in
DisruptionBlocked Events, that it will not move them. kubeops.rotation's
rotate_nodes takes the drifted nodes, has Karpenter launch warm nodes in the
same zones, moves every pod once and deletes the drifted NodeClaims. A watcher
records Ready pods all the way through; the demo fails if a PDB minimum was
crossed, a pod is left on a drifted node, a drifted NodeClaim remains or a
workload changed zones.
"""

from __future__ import annotations

import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))

import karpenter  # noqa: E402
from demo import RotationScenario, below_minimum, demo_arguments, print_min_ready, rotate_and_report  # noqa: E402
from kube import daemon_set, deployment, pdb, stateful_set  # noqa: E402
from kubernetes import client as k8s_client  # noqa: E402

MIN_READY = {"web": 3, "checkout": 1, "db": 2}
NODEPOOL_LABEL = "karpenter.sh/nodepool"


class KarpenterDemo(RotationScenario):
    """The scenario; ``prefix`` names its NodePool, namespace and rotation id, so tests can run it side by side."""

    def __init__(self, kubeconfig, prefix=""):
        super().__init__(kubeconfig)
        self.custom = k8s_client.CustomObjectsApi(self.api_client)
        self.namespace = prefix + "shop"
        self.pool = prefix + "shop"
        self.drifted_nodes = {}
        self.drifted_claims = []
        self.rotation = {
            "rotate_nodes_id": prefix + "nodepool-v2",
            "rotate_nodes_karpenter_drifted": True,
            "rotate_nodes_karpenter_nodepools": [self.pool],
            "rotate_nodes_batch_size": "1",
            "rotate_nodes_pool_node_selector": {NODEPOOL_LABEL: self.pool},
            "rotate_nodes_template_capacity": dict(karpenter.INSTANCE_CAPACITY),
        }

    # NodePools and NodeClaims -------------------------------------------------------------------------------
    def node_claims(self):
        return [claim for claim in self.custom.list_cluster_custom_object("karpenter.sh", "v1", "nodeclaims")["items"]
                if (claim["metadata"].get("labels") or {}).get(NODEPOOL_LABEL) == self.pool]

    @staticmethod
    def drifted(claim):
        return any(condition["type"] == "Drifted" and condition["status"] == "True"
                   for condition in (claim.get("status") or {}).get("conditions") or [])

    def pool_nodes(self):
        return self.core.list_node(label_selector="%s=%s" % (NODEPOOL_LABEL, self.pool)).items

    def setup(self):
        """The NodePool, the workloads on nodes Karpenter launches, then the NodePool change that drifts them."""
        pool = karpenter.node_pool(self.pool, labels={"node-version": "v1"},
                                   annotations={"karpenter.sh/do-not-disrupt": "true"})
        self.custom.create_cluster_custom_object("karpenter.sh", "v1", "nodepools", pool)
        self.core.create_namespace({"metadata": {"name": self.namespace}})
        self.wait(lambda: any(sa.metadata.name == "default"
                              for sa in self.core.list_namespaced_service_account(self.namespace).items), "namespace")
        on_pool = {NODEPOOL_LABEL: self.pool}
        web = deployment("web", 4, on_pool)
        web["spec"]["template"]["spec"]["topologySpreadConstraints"] = [{
            "maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}}}]
        self.apps.create_namespaced_deployment(self.namespace, web)
        self.policy.create_namespaced_pod_disruption_budget(self.namespace, pdb("web", {"app": "web"}, min_available=3))
        db = stateful_set("db", 3, on_pool)
        db["spec"]["template"]["metadata"]["annotations"]["karpenter.sh/do-not-disrupt"] = "true"
        db["spec"]["template"]["spec"]["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "db"}}}]}}
        self.apps.create_namespaced_stateful_set(self.namespace, db)
        self.apps.create_namespaced_deployment(self.namespace, deployment("checkout", 1, on_pool))
        self.policy.create_namespaced_pod_disruption_budget(
            self.namespace, pdb("checkout", {"app": "checkout"}, min_available=1))
        self.apps.create_namespaced_daemon_set(self.namespace, daemon_set("agent", on_pool))
        self.wait(lambda: self.ready_count() >= 4 + 3 + 1 + len(self.pool_nodes()) and self.pool_nodes(),
                  "Karpenter's nodes and the workloads to be Ready", timeout=240)
        self.custom.patch_cluster_custom_object("karpenter.sh", "v1", "nodepools", self.pool, {
            "spec": {"template": {"metadata": {"labels": {"node-version": "v2"}}}}})
        self.wait(lambda: self.node_claims() and all(self.drifted(claim) for claim in self.node_claims()),
                  "every NodeClaim of the pool to be Drifted", timeout=180)
        claims = self.node_claims()
        self.drifted_claims = sorted(claim["metadata"]["name"] for claim in claims)
        self.drifted_nodes = {claim["status"]["nodeName"]: claim["metadata"]["name"] for claim in claims}

    def blocked_events(self):
        """Karpenter's DisruptionBlocked Events about the pool's nodes and NodeClaims, as "object: message"."""
        names = set(self.drifted_nodes) | set(self.drifted_claims)
        return sorted({"%s %s: %s" % (event.involved_object.kind, event.involved_object.name, event.message)
                       for event in self.core.list_event_for_all_namespaces(
                           field_selector="reason=DisruptionBlocked").items
                       if event.involved_object.name in names})

    def karpenter_evicted(self):
        """Pods of the namespace that Karpenter itself evicted (its Evicted Events), as "pod: message"."""
        return sorted("%s: %s" % (event.involved_object.name, event.message)
                      for event in self.core.list_namespaced_event(self.namespace, field_selector="reason=Evicted").items
                      if "karpenter" in ((event.reporting_component or "") + (event.source.component or "")))

    # The rotation's outcome ---------------------------------------------------------------------------------------
    def verify(self, watcher):
        """Problems found, as sentences; empty when the rotation did what it promises."""
        problems = below_minimum(watcher, MIN_READY, "minimum")
        left_claims = sorted(set(self.drifted_claims) & {claim["metadata"]["name"] for claim in self.node_claims()})
        if left_claims:
            problems.append("drifted NodeClaims still exist: %s" % ", ".join(left_claims))
        left_nodes = sorted(set(self.drifted_nodes) & {node.metadata.name for node in self.core.list_node().items})
        if left_nodes:
            problems.append("drifted nodes still exist: %s" % ", ".join(left_nodes))
        protected = [line for line in self.karpenter_evicted() if line.startswith("db-")]
        if protected:
            problems.append("Karpenter evicted do-not-disrupt pods: %s" % "; ".join(protected))
        still_drifted = [claim["metadata"]["name"] for claim in self.node_claims() if self.drifted(claim)]
        if still_drifted:
            problems.append("NodeClaims still Drifted after the rotation: %s" % ", ".join(still_drifted))
        for pod in self.pods(self.namespace):
            if pod.spec.node_name in self.drifted_nodes:
                problems.append("%s still runs on drifted node %s" % (pod.metadata.name, pod.spec.node_name))
        return problems

    def placement(self):
        """Where every pod of the namespace runs: "pod: node (zone)"."""
        zones = {node.metadata.name: (node.metadata.labels or {}).get("topology.kubernetes.io/zone")
                 for node in self.core.list_node().items}
        return sorted("%s: %s (%s)" % (pod.metadata.name, pod.spec.node_name, zones.get(pod.spec.node_name))
                      for pod in self.pods(self.namespace))


def main():
    args = demo_arguments(__doc__)
    demo = KarpenterDemo(args.kubeconfig)
    print("Creating NodePool %s (its nodes annotated do-not-disrupt) and the shop workloads; Karpenter launches "
          "their nodes..." % demo.pool, flush=True)
    started = time.monotonic()
    demo.setup()
    print("Changed the NodePool's template (node-version v1 -> v2) after %.0f s. Karpenter's NodeClaims:" % (
        time.monotonic() - started))
    for claim in demo.node_claims():
        drifted = [c for c in claim["status"]["conditions"] if c["type"] == "Drifted"][0]
        print("  %s on node %s: Drifted=%s (%s)" % (claim["metadata"]["name"], claim["status"].get("nodeName"),
                                                    drifted["status"], drifted.get("reason")))
    # Karpenter's disruption loop says why it leaves them within a few of its 10 s passes.
    deadline = time.monotonic() + 60
    while not any("do-not-disrupt" in line for line in demo.blocked_events()) and time.monotonic() < deadline:
        time.sleep(2)
    print("Karpenter will not move them itself:")
    for line in demo.blocked_events() or ["(no DisruptionBlocked Event yet)"]:
        print("  DisruptionBlocked %s" % line)
    print("Pods before:\n  " + "\n  ".join(demo.placement()))
    print("Running ansible-playbook kubeops.rotation.rotate_nodes on the drifted nodes (with a watcher)...",
          flush=True)

    def show(watcher):
        print("Pods after:\n  " + "\n  ".join(demo.placement()))
        print_min_ready(watcher)
        print("Pods Karpenter evicted itself (its Evicted Events): %s" % (
            "; ".join(demo.karpenter_evicted()) or "none"))
        print("Drifted NodeClaims left: %s" % (sorted(set(demo.drifted_claims) & {
            claim["metadata"]["name"] for claim in demo.node_claims()}) or "none"))

    rotate_and_report(demo, args.work_dir, show)


if __name__ == "__main__":
    main()
