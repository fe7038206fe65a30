"""Benchmark: the memory a list of every pod holds in the collection's client, lean (as the modules keep it,
without metadata.managedFields) against whole (as the API sends it), on a cluster you give.

    .venv/bin/python tests/bench/list_memory.py --kubeconfig <a cluster's kubeconfig>

The pods are listed through api.client.Client.list_with_version, once each way, in this process; the memory is
what Python holds after the list (tracemalloc), per pod. Run it against a cluster with many pods (the 1,000-node
rotation benchmark's, while it runs: `tests/bench/rotation_vs_manual.py --nodes 1000 ...` prints its kubeconfig).
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tracemalloc

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "cluster"))

from checkout import expose_checkout_as_collection  # noqa: E402


def held_per_pod(client, managed_fields):
    """(pods, kilobytes held per pod) of one list of every pod."""
    gc.collect()
    tracemalloc.start()
    pods, _version = client.list_with_version(client.core.list_pod_for_all_namespaces, managed_fields=managed_fields)
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return len(pods), held / 1024.0 / max(1, len(pods))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kubeconfig", required=True)
    args = parser.parse_args(argv)
    expose_checkout_as_collection()
    from ansible_collections.kubeops.rotation.plugins.module_utils.api.client import new_client

    client = new_client({"kubeconfig": args.kubeconfig})
    pods, whole = held_per_pod(client, managed_fields=True)
    _pods, lean = held_per_pod(client, managed_fields=False)
    print("%d pods listed; held per pod: %.1f KB whole, %.1f KB lean (%.0f%% less)" % (
        pods, whole, lean, 100.0 * (whole - lean) / whole if whole else 0.0))


if __name__ == "__main__":
    main()
