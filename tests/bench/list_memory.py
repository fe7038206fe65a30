"""Benchmark: the memory a list of every pod holds in the collection's client, lean (as the modules keep it,
without metadata.managedFields) against whole (as the API sends it), on a cluster you give; and the time to
decode the list's pages with the garbage collector paused (as the client decodes them) against running.

    .venv/bin/python tests/bench/list_memory.py --kubeconfig <a cluster's kubeconfig>

The pods are listed through api.client.Client.list_with_version, once each way, in this process; the memory is
what Python holds after the list (tracemalloc), per pod. Run it against a cluster with many pods (the 1,000-node
rotation benchmark's, while it runs: `tests/bench/rotation_vs_manual.py --nodes 1000 ...` prints its kubeconfig).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import time
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


def decode_seconds(pages, decode, runs=5):
    """The median CPU seconds of decoding every page with ``decode``, a few hundred thousand objects held meanwhile
    as a module's process holds them (ansible-core's, the client's)."""
    held = [{"n": [index, str(index)]} for index in range(300000)]
    seconds = []
    for _run in range(runs):
        started = time.process_time()
        decoded = [decode(page) for page in pages]
        seconds.append(time.process_time() - started)
        del decoded
    del held
    return statistics.median(seconds)


def raw_pages(client):
    """The pages of a list of every pod, as the API server sends them."""
    from ansible_collections.kubeops.rotation.plugins.module_utils.api.client import LIST_PAGE_SIZE

    pages, token = [], None
    while True:
        data = client.core.list_pod_for_all_namespaces(limit=LIST_PAGE_SIZE, _continue=token,
                                                       _preload_content=False).data
        pages.append(data)
        token = (json.loads(data).get("metadata") or {}).get("continue")
        if not token:
            return pages


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kubeconfig", required=True)
    args = parser.parse_args(argv)
    expose_checkout_as_collection()
    from ansible_collections.kubeops.rotation.plugins.module_utils.api.client import decode_large, new_client

    client = new_client({"kubeconfig": args.kubeconfig})
    pods, whole = held_per_pod(client, managed_fields=True)
    _pods, lean = held_per_pod(client, managed_fields=False)
    print("%d pods listed; held per pod: %.1f KB whole, %.1f KB lean (%.0f%% less)" % (
        pods, whole, lean, 100.0 * (whole - lean) / whole if whole else 0.0))
    pages = raw_pages(client)
    running, paused = decode_seconds(pages, json.loads), decode_seconds(pages, decode_large)
    megabytes, faster = sum(len(page) for page in pages) / 1e6, running / paused if paused else 0.0
    print("decoding the list (%.1f MB, %d pages), median CPU seconds of 5: %.2f s with the garbage collector "
          "running, %.2f s paused (%.1f times faster)" % (megabytes, len(pages), running, paused, faster))


if __name__ == "__main__":
    main()
