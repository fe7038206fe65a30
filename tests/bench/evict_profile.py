"""Profile: where the evict module's own time goes in a rotation batch on a large cluster.

Builds rotation_vs_manual.py's scenario on the local control plane (--nodes kwok
nodes of --slots pods, every slot taken, the test provisioner adding nodes of
the new pool for pending pods), cordons the first batch of the nodes it would
rotate (--batch-size nodes of one zone), and runs the evict module's engine
(engine.drain.drain) in this process under cProfile, with what a rotation's
batch passes it: keep_zones, the later batches' nodes to avoid, and the
do-not-disrupt pods left to a restart (skip_refused). No warm nodes: the
evicted pods' replacements wait for the provisioner, which the eviction does
not wait for.

Prints the wall time of the call, the engine's own elapsed_seconds (evicting
and waiting for the pods to be gone) and the rest (the module's work around
it), the API requests the client made, and the functions of the collection
that took the most time, cumulative, waiting included (the watches' socket
reads show where it waited). A profile, not a timing: the machine is shared.

  .venv/bin/python tests/bench/evict_profile.py --nodes 500 --slots 10 --batch-size 25 --api-qps 200
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import rotation_vs_manual  # noqa: E402  (puts tests/cluster and tests/integration on the path)
import cluster as local_cluster  # noqa: E402
from planner_scale import expose_checkout_as_collection  # noqa: E402

expose_checkout_as_collection()

from ansible_collections.kubeops.rotation.plugins.module_utils.api.client import new_client  # noqa: E402
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.drain import PodSelection, drain  # noqa: E402
from ansible_collections.kubeops.rotation.plugins.module_utils.engine.eviction import EvictionSettings  # noqa: E402
from ansible_collections.kubeops.rotation.plugins.module_utils.plan.filters import FilterOptions  # noqa: E402

OURS = os.sep + os.path.join("plugins", "module_utils") + os.sep


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=500, help="nodes of the old pool (default %(default)s)")
    parser.add_argument("--slots", type=int, default=10, help="pods per node, all taken (default %(default)s)")
    parser.add_argument("--batch-size", type=int, default=25, help="nodes drained (default %(default)s)")
    parser.add_argument("--api-qps", type=int, default=200, help="the controllers' client rate limit "
                        "(default %(default)s, what a cluster of 500 nodes needs here)")
    parser.add_argument("--top", type=int, default=25, help="functions listed (default %(default)s)")
    return parser.parse_args(argv)


def profile_drain(kubeconfig, scenario):
    batch = scenario.batches[0]
    later = [name for nodes in scenario.batches[1:] for name in nodes]
    for name in batch:
        scenario.core.patch_node(name, {"spec": {"unschedulable": True}})
    client = new_client({"kubeconfig": kubeconfig})
    profile = cProfile.Profile()
    started = time.monotonic()
    profile.enable()
    result = drain(client, PodSelection(nodes=tuple(batch)), FilterOptions(delete_emptydir_data=True),
                   EvictionSettings(timeout=600), skip_refused=True, keep_zones=True, avoid_nodes=tuple(later))
    profile.disable()
    return result, time.monotonic() - started, client.request_count, profile


def ours_only(profile, top):
    """The ``top`` functions of the collection by cumulative time, as pstats prints them."""
    out = io.StringIO()
    stats = pstats.Stats(profile, stream=out)
    stats.sort_stats("cumulative").print_stats(OURS.replace(os.sep, "/"), top)
    return out.getvalue()


def main(argv=None):
    args = parse_args(argv)
    work_dir = tempfile.mkdtemp(prefix="kubeops-profile-")
    cluster_dir = os.path.join(work_dir, "cluster")
    scenario_id = "p0"
    pools = rotation_vs_manual.pools_file(os.path.join(work_dir, "pools.yaml"), [scenario_id], args.nodes,
                                          args.slots)
    state = local_cluster.up(cluster_dir, provisioner_pools=pools, die_with_parent=True, python=sys.executable,
                             api_qps=args.api_qps)
    try:
        scenario = rotation_vs_manual.Scenario(state["kubeconfig"], scenario_id, args.nodes, args.slots,
                                               args.batch_size, "10%")
        scenario.build()
        result, wall, requests, profile = profile_drain(state["kubeconfig"], scenario)
    finally:
        local_cluster.down(cluster_dir)
    engine = result["elapsed_seconds"]
    print("%d nodes of %d pods; evict on %d cordoned nodes: %s" % (
        args.nodes, args.slots, len(result["nodes"]), ", ".join("%s %d" % item
                                                               for item in sorted(result["summary"].items()))))
    print("wall %.2f s = engine %.2f s (evicting, waiting for the pods to be gone) + the rest %.2f s; "
          "%d API requests; %d nodes steered" % (wall, engine, wall - engine, requests,
                                                  len(result.get("steered_nodes") or [])))
    print("\nthe collection's functions by cumulative time (waiting included):")
    print(ours_only(profile, args.top))


if __name__ == "__main__":
    main()
