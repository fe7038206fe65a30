"""A flaky network between a client and the API server, for the tests: a TCP proxy that resets a share of the
connections, stalls a share of the answers and drops a share of the answers after the request reached the server
(the write was applied, its answer is lost), as proxies and VPNs between a CI runner and a cluster do.

TLS passes through untouched (the client still checks the API server's certificate); a fault applies to a chunk
the client sends, which is one request as often as not. Seeded, so a run's faults can be told again.

    python3 tests/cluster/flaky_proxy.py --target 127.0.0.1:6443 --port 0 --seed 1 --reset 0.05 --drop 0.05 \
        --stall 0.05 --stall-seconds 3 --stats stats.json

Standard library only. ``FlakyProxy`` runs it in a thread of the tests.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import socket
import struct
import threading
import time

FAULTS = ("reset", "drop", "stall")


class FlakyProxy:
    """The proxy on 127.0.0.1:``port`` (0: any free port) in a thread of its own; ``stats`` counts what it did."""

    def __init__(self, target_host, target_port, seed=0, reset=0.0, drop=0.0, stall=0.0, stall_seconds=3.0,
                 port=0):
        self.target = (target_host, target_port)
        self.rates = {"reset": reset, "drop": drop, "stall": stall}
        self.stall_seconds = stall_seconds
        self.random = random.Random(seed)
        self.stats = {"connections": 0, "chunks": 0, "reset": 0, "drop": 0, "stall": 0}
        self.port = port
        self._ready = threading.Event()
        self._loop = None
        self._server = None
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc):
        self._loop.call_soon_threadsafe(self._server.close)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def set_rates(self, **rates):
        """Change the shares of faults while it runs (0 for all: a healthy network)."""
        self.rates.update(rates)

    def _run(self):
        self._loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(asyncio.start_server(self._serve, "127.0.0.1", self.port))
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()

    def _fault(self):
        """One of FAULTS, or None, drawn for a connection or a chunk."""
        draw = self.random.random()
        for fault in FAULTS:
            if draw < self.rates[fault]:
                return fault
            draw -= self.rates[fault]
        return None

    async def _serve(self, client_reader, client_writer):
        self.stats["connections"] += 1
        if self._fault() == "reset":
            self.stats["reset"] += 1
            abort(client_writer)
            return
        try:
            server_reader, server_writer = await asyncio.open_connection(*self.target)
        except OSError:
            abort(client_writer)
            return
        answer_fault = []  # the fault that waits for the server's next bytes
        upstream = asyncio.ensure_future(self._client_to_server(client_reader, server_writer, answer_fault))
        downstream = asyncio.ensure_future(self._server_to_client(server_reader, client_writer, answer_fault))
        await asyncio.wait([upstream, downstream], return_when=asyncio.FIRST_COMPLETED)
        for task in (upstream, downstream):
            task.cancel()
        abort(client_writer)
        abort(server_writer)

    async def _client_to_server(self, reader, writer, answer_fault):
        while True:
            chunk = await reader.read(65536)
            if not chunk:
                return
            self.stats["chunks"] += 1
            fault = self._fault()
            if fault == "reset":
                self.stats["reset"] += 1
                return
            if fault in ("drop", "stall"):
                answer_fault.append(fault)
            writer.write(chunk)
            await writer.drain()

    async def _server_to_client(self, reader, writer, answer_fault):
        while True:
            chunk = await reader.read(65536)
            if not chunk:
                return
            if answer_fault:
                fault = answer_fault.pop(0)
                self.stats[fault] += 1
                if fault == "drop":
                    return
                await asyncio.sleep(self.stall_seconds)
            writer.write(chunk)
            await writer.drain()


def abort(writer):
    """Close with a TCP reset, as a proxy that gave up does, not a clean FIN."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
    writer.close()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--target", required=True, help="host:port of the API server")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--seed", type=int, default=0)
    for fault in FAULTS:
        parser.add_argument("--" + fault, type=float, default=0.0, help="share of %s" % fault)
    parser.add_argument("--stall-seconds", type=float, default=3.0)
    parser.add_argument("--stats", help="file to write the counts to every second")
    args = parser.parse_args(argv)
    host, port = args.target.rsplit(":", 1)
    with FlakyProxy(host, int(port), args.seed, args.reset, args.drop, args.stall, args.stall_seconds,
                    args.port) as proxy:
        print("listening on 127.0.0.1:%d" % proxy.port, flush=True)
        try:
            while True:
                time.sleep(1)
                if args.stats:
                    with open(args.stats, "w") as handle:
                        json.dump(proxy.stats, handle)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
