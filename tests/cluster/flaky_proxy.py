"""A flaky network between a client and the API server, for the tests: a TCP proxy that resets a share of the
connections, stalls a share of the answers and drops a share of the answers after the request reached the server
(the write was applied, its answer is lost), as proxies and VPNs between a CI runner and a cluster do. Two faults
never end by themselves: ``silent`` stops forwarding a connection both ways for good, both sockets kept open (a
NAT or load balancer that forgot it; half of the time the request that met it reached the server first), and
``slow`` trickles an answer a few bytes at a time. ``cut()`` makes every connection, open or new, silent until
``restore()``: the API server unreachable, with nothing closed.

TLS passes through untouched (the client still checks the API server's certificate); a fault applies to a chunk
the client sends, which is one request as often as not. Seeded, so a run's faults can be told again.

    python3 tests/cluster/flaky_proxy.py --target 127.0.0.1:6443 --port 0 --seed 1 --reset 0.05 --drop 0.05 \
        --stall 0.05 --stall-seconds 3 --silent 0.03 --slow 0.03 --stats stats.json

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

FAULTS = ("reset", "drop", "stall", "silent", "slow")
# A slow answer comes in pieces of this many bytes, one every SLOW_INTERVAL seconds (6.4 KB/s); a chunk of at most
# 64 KB of it, so that a long list is not trickled whole.
SLOW_BYTES = 128
SLOW_INTERVAL = 0.02


class FlakyProxy:
    """The proxy on 127.0.0.1:``port`` (0: any free port) in a thread of its own; ``stats`` counts what it did."""

    def __init__(self, target_host, target_port, seed=0, reset=0.0, drop=0.0, stall=0.0, stall_seconds=3.0,
                 port=0, silent=0.0, slow=0.0):
        self.target = (target_host, target_port)
        self.rates = {"reset": reset, "drop": drop, "stall": stall, "silent": silent, "slow": slow}
        self.stall_seconds = stall_seconds
        self.random = random.Random(seed)
        self.stats = {"connections": 0, "chunks": 0, "reset": 0, "drop": 0, "stall": 0, "silent": 0, "slow": 0,
                      "cut": 0}
        self.is_cut = False
        self._open = set()  # each open connection's flag: set, it forwards nothing more
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

    def cut(self):
        """From now on forward nothing, on any connection, and close none: the API server out of reach."""
        self.is_cut = True
        self.stats["cut"] += 1
        for silent in list(self._open):
            silent.set()

    def restore(self):
        """Forward again on new connections; those open during the cut stay silent, as a NAT that forgot them."""
        self.is_cut = False
        self._open = set()  # each open connection's flag: set, it forwards nothing more

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
        silent = threading.Event()  # set: this connection forwards nothing more, and stays open
        if self.is_cut:
            silent.set()
        self._open.add(silent)
        upstream = asyncio.ensure_future(self._client_to_server(client_reader, server_writer, answer_fault, silent))
        downstream = asyncio.ensure_future(self._server_to_client(server_reader, client_writer, answer_fault,
                                                                  silent))
        await asyncio.wait([upstream, downstream], return_when=asyncio.FIRST_COMPLETED)
        if silent.is_set():
            # Neither end hears of it: the client waits for an answer, the server for a request.
            await asyncio.gather(upstream, downstream, return_exceptions=True)
        for task in (upstream, downstream):
            task.cancel()
        self._open.discard(silent)
        abort(client_writer)
        abort(server_writer)

    async def _swallow(self, reader):
        """Read and forget what comes, until the other end closes."""
        while await reader.read(65536):
            pass

    async def _next_chunk(self, reader, silent):
        """The next chunk ``reader`` brings; None once the other end closed, or once ``silent`` is set (the rest is
        read and forgotten then)."""
        chunk = await reader.read(65536)
        if not chunk:
            return None
        if silent.is_set():
            await self._swallow(reader)
            return None
        return chunk

    async def _client_to_server(self, reader, writer, answer_fault, silent):
        while True:
            chunk = await self._next_chunk(reader, silent)
            if chunk is None:
                return
            self.stats["chunks"] += 1
            fault = self._fault()
            if fault == "reset":
                self.stats["reset"] += 1
                return
            if fault == "silent":
                self.stats["silent"] += 1
                silent.set()
                if self.random.random() < 0.5:  # the request reached the server: a write was applied
                    writer.write(chunk)
                    await writer.drain()
                await self._swallow(reader)
                return
            if fault in ("drop", "stall", "slow"):
                answer_fault.append(fault)
            writer.write(chunk)
            await writer.drain()

    async def _server_to_client(self, reader, writer, answer_fault, silent):
        while True:
            chunk = await self._next_chunk(reader, silent)
            if chunk is None:
                return
            if answer_fault:
                fault = answer_fault.pop(0)
                self.stats[fault] += 1
                if fault == "drop":
                    return
                if fault == "slow":
                    for start in range(0, len(chunk), SLOW_BYTES):
                        if silent.is_set():
                            break
                        writer.write(chunk[start:start + SLOW_BYTES])
                        await writer.drain()
                        await asyncio.sleep(SLOW_INTERVAL)
                    continue
                await asyncio.sleep(self.stall_seconds)
            writer.write(chunk)
            await writer.drain()


def kubeconfig_through(proxy, kubeconfig, path):
    """Write to ``path`` the JSON kubeconfig ``kubeconfig`` (a path) with its server reached through ``proxy``;
    returns ``path``."""
    with open(kubeconfig) as handle:
        config = json.load(handle)
    config["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:%d" % proxy.port
    with open(path, "w") as handle:
        json.dump(config, handle)
    return str(path)


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
                    args.port, args.silent, args.slow) as proxy:
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
