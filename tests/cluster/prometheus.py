"""A real Prometheus for the gates' tests: Debian's prometheus binary (``make prometheus`` installs it), scraping a
tiny exporter that the test sets, with an alerting rule that fires while the exporter's error count is above 0.

    with Prometheus(work_dir) as prometheus:
        prometheus.set_errors(3)
        prometheus.wait_for_alert(firing=True)
"""

from __future__ import annotations

import http.server
import json
import os
import shutil
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request

BINARY = shutil.which("prometheus") or "/usr/bin/prometheus"
ALERT = "KubeopsTestErrors"
METRIC = "kubeops_test_errors"


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class _Exporter(http.server.BaseHTTPRequestHandler):
    value = 0.0

    def do_GET(self):  # noqa: N802 (the name http.server calls)
        body = ("# TYPE %s gauge\n%s %g\n" % (METRIC, METRIC, type(self).value)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args):
        pass


class Prometheus:
    """Prometheus on a free port of 127.0.0.1 (``url``), scraping and evaluating every second."""

    def __init__(self, work_dir):
        self.work_dir = os.path.join(str(work_dir), "prometheus")
        os.makedirs(self.work_dir, exist_ok=True)
        self.exporter = http.server.ThreadingHTTPServer(("127.0.0.1", 0), type("Exporter", (_Exporter,), {}))
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.process = None

    @staticmethod
    def available():
        return os.access(BINARY, os.X_OK)

    def __enter__(self):
        threading.Thread(target=self.exporter.serve_forever, daemon=True).start()
        with open(os.path.join(self.work_dir, "rules.yml"), "w", encoding="utf-8") as handle:
            handle.write(json.dumps({"groups": [{"name": "kubeops-test", "rules": [{
                "alert": ALERT, "expr": "%s > 0" % METRIC, "labels": {"severity": "critical", "team": "shop"}}]}]}))
        with open(os.path.join(self.work_dir, "prometheus.yml"), "w", encoding="utf-8") as handle:
            handle.write(json.dumps({
                "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                "rule_files": [os.path.join(self.work_dir, "rules.yml")],
                "scrape_configs": [{"job_name": "shop", "static_configs": [
                    {"targets": ["127.0.0.1:%d" % self.exporter.server_address[1]]}]}]}))
        self.process = subprocess.Popen(
            [BINARY, "--config.file=" + os.path.join(self.work_dir, "prometheus.yml"),
             "--storage.tsdb.path=" + os.path.join(self.work_dir, "data"),
             "--web.listen-address=127.0.0.1:%d" % self.port],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.work_dir, "prometheus.log"), "wb"))
        self._wait(lambda: self._get("/-/ready") is not None, 60, "Prometheus to be ready")
        self._wait(lambda: self.query("up") == [1.0], 60, "the first scrape")
        return self

    def __exit__(self, *exc):
        if self.process:
            self.process.terminate()
            self.process.wait(30)
        self.exporter.shutdown()

    def set_errors(self, value):
        self.exporter.RequestHandlerClass.value = value

    def query(self, expression):
        answer = self._get("/api/v1/query?" + urllib.parse.urlencode({"query": expression}))
        return [float(series["value"][1]) for series in json.loads(answer)["data"]["result"]] if answer else None

    def firing(self):
        answer = self._get("/api/v1/alerts")
        return [alert for alert in json.loads(answer)["data"]["alerts"]
                if alert["state"] == "firing" and alert["labels"]["alertname"] == ALERT] if answer else []

    def wait_for_alert(self, firing, timeout=60):
        self._wait(lambda: bool(self.firing()) == firing, timeout,
                   "the alert %s to %s" % (ALERT, "fire" if firing else "resolve"))

    def _get(self, path):
        try:
            with urllib.request.urlopen(self.url + path, timeout=5) as answer:
                return answer.read().decode()
        except OSError:
            return None

    def _wait(self, condition, timeout, what):
        deadline = time.monotonic() + timeout
        while not condition():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("timed out waiting for %s; Prometheus exited %s" % (what, self.process.poll()))
            time.sleep(0.5)
