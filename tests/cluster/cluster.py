"""A real local Kubernetes control plane for the tests and the demo.

etcd, kube-apiserver, kube-controller-manager and kube-scheduler built from
their Go modules at pinned versions, and kwok playing the kubelets, all on
127.0.0.1 with certificates generated per cluster. Standard library only, so
it runs before any virtualenv exists.

    python3 tests/cluster/cluster.py build      build the binaries into .cache/bin, Karpenter's too
                                                (instant once built)
    python3 tests/cluster/cluster.py up [--dir D] [--provisioner POOLS.yaml | --autoscaler karpenter]
                                                start a cluster, print its kubeconfig
    python3 tests/cluster/cluster.py down [--dir D]
                                                stop it, remove its folder
"""

from __future__ import annotations

import argparse
import base64
import ctypes
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import karpenter  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))
CACHE = os.environ.get("KUBEOPS_CACHE", os.path.join(REPO, ".cache"))
GOBUILD = os.path.join(HERE, "gobuild")
DEFAULT_DIR = os.path.join(tempfile.gettempdir(), "kubeops-cluster")
KWOK_VERSION = "v0.8.0"
# kwok plays the kubelets, with two differences from a kubelet that the tests trip over, patched in its source
# before it is built (the name of the binaries' folder carries their digest, so a change rebuilds):
# - it deletes a pod by name only: a second play of the delete stage, a few ms after the first, deleted the
#   StatefulSet's new pod of the same name (seen in the API server's audit log); a kubelet names the uid;
# - a stage whose request failed other than by "connection refused" or a 5xx timeout was dropped for good, and a
#   retried one waited up to 32 minutes: a pod that the API server's restart interrupted never became Ready.
KWOK_PATCHES = {
    "pkg/kwok/controllers/pod_controller.go": [(
        "err := c.typedClient.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, deleteOpt)",
        "opt := deleteOpt\n\topt.Preconditions = metav1.NewUIDPreconditions(string(pod.UID))\n"
        "\terr := c.typedClient.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, opt)")],
    "pkg/kwok/controllers/utils.go": [
        ("Cap: 32 * time.Minute}", "Cap: 4 * time.Second}"),
        ("\t// ignore all other cases\n\treturn false",
         "\t// a request cut off by the API server's restart, or refused while it starts\n"
         "\treturn apierrors.ReasonForError(err) == \"\" || apierrors.IsInternalError(err) || "
         "apierrors.IsUnauthorized(err)"),
    ],
}
SERVICE_CIDR = "10.96.0.0/16"
POD_CIDR = "10.128.0.0/12"
# kwok manages only nodes carrying this annotation, so a test cluster of
# someone else's with real nodes is safe to point the tests at.
KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node=fake"
KWOK_STAGES = [
    "kustomize/stage/node/fast/node-initialize.yaml",
    "kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
    "kustomize/stage/pod/fast/pod-ready.yaml",
    "kustomize/stage/pod/fast/pod-complete.yaml",
    # The general delete stage, not the fast one: a deleted pod stays
    # Terminating for a second, or for its own grace period, or for the
    # duration in its pod-delete.stage.kwok.x-k8s.io/delay annotation, as a
    # real kubelet's pods do, so that evictions in flight can be measured.
    "kustomize/stage/pod/general/pod-delete.yaml",
]
# Pods become Ready this long after they are bound, as real containers take a while to start, so that
# waiting for replacements and PDB pacing are really exercised. A pod's own
# pod-ready.stage.kwok.x-k8s.io/delay annotation ("10s", "0s") overrides it.
POD_READY_DELAY_MS = 2000
POD_READY_DELAY = """  delay:
    durationMilliseconds: %d
    durationFrom:
      expressionFrom: '.metadata.annotations["pod-ready.stage.kwok.x-k8s.io/delay"]'
""" % POD_READY_DELAY_MS


# The API server's audit log names the client of each request (its User-Agent), which /metrics cannot: the
# benchmarks count each tool's own requests from it (tests/bench/side_by_side.py). Metadata only (no bodies), no
# RequestReceived stage (ResponseComplete, and ResponseStarted for a watch, are enough), Events left out.
AUDIT_POLICY = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived"],
    "rules": [
        {"level": "None", "resources": [{"group": "", "resources": ["events"]},
                                        {"group": "events.k8s.io", "resources": ["events"]}]},
        {"level": "Metadata"},
    ],
}


def log(message):
    print("[cluster] %s" % message, file=sys.stderr, flush=True)


def pinned_version(gomod_dir, module):
    """The version of ``module`` that a gobuild go.mod requires: the one place versions are pinned."""
    with open(os.path.join(GOBUILD, gomod_dir, "go.mod")) as handle:
        match = re.search(r"^\s*(?:require\s+)?%s\s+(v\S+)" % re.escape(module), handle.read(), re.M)
    return match.group(1)


def versions():
    return {
        "kubernetes": pinned_version("kubernetes", "k8s.io/kubernetes"),
        "etcd": pinned_version("etcd", "go.etcd.io/etcd/server/v3"),
        "kwok": KWOK_VERSION,
    }


def bin_dir():
    v = versions()
    patches = hashlib.sha256(json.dumps(KWOK_PATCHES, sort_keys=True).encode()).hexdigest()[:8]
    return os.path.join(CACHE, "bin", "k8s-%s_etcd-%s_kwok-%s-%s" % (v["kubernetes"], v["etcd"], v["kwok"], patches))


def stages_file():
    digest = hashlib.sha256("\n".join(KWOK_STAGES + [POD_READY_DELAY]).encode()).hexdigest()[:8]
    return binary("kwok-stages-%s.yaml" % digest)


def binary(name):
    return os.path.join(bin_dir(), name)


def run(cmd, cwd=None, env=None):
    log("$ " + " ".join(cmd))
    subprocess.run(cmd, cwd=cwd, env=env, check=True)


def build():
    """Build every binary that is missing; a second call returns at once."""
    v = versions()
    target = bin_dir()
    os.makedirs(target, exist_ok=True)
    env = dict(os.environ, CGO_ENABLED="0", GOFLAGS="-buildvcs=false -trimpath")
    started = time.monotonic()
    k8s = ["kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"]
    if not all(os.path.exists(os.path.join(target, name)) for name in k8s):
        major, minor = v["kubernetes"].lstrip("v").split(".")[:2]
        ldflags = " ".join(
            "-X %s.%s=%s" % (pkg, key, value)
            for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")
            for key, value in (("gitVersion", v["kubernetes"]), ("gitMajor", major), ("gitMinor", minor),
                               ("gitTreeState", "clean"))
        )
        run(["go", "build", "-ldflags", ldflags, "-o", target + "/"]
            + ["k8s.io/kubernetes/cmd/%s" % name for name in k8s], cwd=os.path.join(GOBUILD, "kubernetes"), env=env)
    if not os.path.exists(os.path.join(target, "etcd")):
        run(["go", "build", "-o", os.path.join(target, "etcd"), "go.etcd.io/etcd/server/v3"],
            cwd=os.path.join(GOBUILD, "etcd"), env=env)
    module = None
    if not os.path.exists(os.path.join(target, "kwok")):
        module = kwok_module(v["kwok"], env)
        build_patched_kwok(module["Dir"], os.path.join(target, "kwok"), env)
    stages = stages_file()
    if not os.path.exists(stages):
        # The stages kwokctl applies by default, read from kwok's own module.
        module = module or kwok_module(v["kwok"], env)
        documents = []
        for path in KWOK_STAGES:
            with open(os.path.join(module["Dir"], path)) as handle:
                document = handle.read().strip()
            if path.endswith("/pod-ready.yaml"):
                document = document.replace("\nspec:\n", "\nspec:\n" + POD_READY_DELAY, 1)
            documents.append(document)
        with open(stages + ".tmp", "w") as handle:
            handle.write("\n---\n".join(documents) + "\n")
        os.rename(stages + ".tmp", stages)
    karpenter.build(CACHE, run, log)
    log("binaries ready in %s (%.1f s)" % (target, time.monotonic() - started))
    return target


def kwok_module(version, env):
    return json.loads(subprocess.run(["go", "mod", "download", "-json", "sigs.k8s.io/kwok@" + version],
                                     check=True, capture_output=True, env=env).stdout)


def build_patched_kwok(module_dir, output, env):
    """kwok built from a copy of its module with KWOK_PATCHES applied; each must apply exactly once."""
    with tempfile.TemporaryDirectory(prefix="kwok-src-") as work:
        source = os.path.join(work, "kwok")
        shutil.copytree(module_dir, source)
        for root, dirs, files in os.walk(source):
            for name in dirs + files:
                os.chmod(os.path.join(root, name), 0o755 if name in dirs else 0o644)
        for path, replacements in KWOK_PATCHES.items():
            with open(os.path.join(source, path)) as handle:
                text = handle.read()
            for old, new in replacements:
                if text.count(old) != 1:
                    raise RuntimeError("the kwok patch for %s no longer applies: %r" % (path, old))
                text = text.replace(old, new)
            with open(os.path.join(source, path), "w") as handle:
                handle.write(text)
        run(["go", "build", "-o", output, "./cmd/kwok"], cwd=source, env=env)


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def openssl(*args):
    subprocess.run(["openssl"] + list(args), check=True, capture_output=True)


# Extensions strict enough for Python 3.13, whose default SSL context sets VERIFY_X509_STRICT ("CA cert does
# not include key usage extension", "Missing Authority Key Identifier"). Our own openssl config, so that the
# system's openssl.cnf (its v3_ca, its defaults) adds nothing and -addext never collides with it.
OPENSSL_CONFIG = """\
[req]
distinguished_name = subject
[subject]
[ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign,digitalSignature
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always
"""
# The leaves' keys are EC: digitalSignature only (keyEncipherment is for RSA key transport).
LEAF_EXTENSIONS = """\
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = %s
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always
"""


def make_certificates(pki):
    """A CA, the API server's serving certificate, an admin client certificate, the service-account key."""
    os.makedirs(pki)

    def path(name):
        return os.path.join(pki, name)

    with open(path("openssl.cnf"), "w") as handle:
        handle.write(OPENSSL_CONFIG)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-config", path("openssl.cnf")]
    openssl("req", "-x509", *ec, "-extensions", "ca", "-keyout", path("ca.key"), "-out", path("ca.crt"),
            "-days", "3650", "-subj", "/CN=kubeops-test-ca")
    leaves = {
        "apiserver": ("/CN=kube-apiserver", "serverAuth",
                      "subjectAltName=IP:127.0.0.1,DNS:localhost,IP:10.96.0.1,DNS:kubernetes,"
                      "DNS:kubernetes.default,DNS:kubernetes.default.svc"),
        "admin": ("/O=system:masters/CN=kubeops-admin", "clientAuth", None),
    }
    for name, (subject, usage, san) in leaves.items():
        openssl("req", *ec, "-keyout", path(name + ".key"), "-out", path(name + ".csr"), "-subj", subject)
        with open(path(name + ".ext"), "w") as handle:
            handle.write(LEAF_EXTENSIONS % usage + "%s\n" % (san or ""))
        openssl("x509", "-req", "-in", path(name + ".csr"), "-CA", path("ca.crt"), "-CAkey", path("ca.key"),
                "-CAcreateserial", "-out", path(name + ".crt"), "-days", "3650", "-extfile", path(name + ".ext"))
    openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", path("sa.key"))
    openssl("ec", "-in", path("sa.key"), "-pubout", "-out", path("sa.pub"))


def write_kubeconfig(state_dir, server):
    pki = os.path.join(state_dir, "pki")

    def b64(name):
        with open(os.path.join(pki, name), "rb") as handle:
            return base64.b64encode(handle.read()).decode()

    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "kubeops-local", "cluster": {
            "server": server, "certificate-authority-data": b64("ca.crt")}}],
        "users": [{"name": "kubeops-admin", "user": {
            "client-certificate-data": b64("admin.crt"), "client-key-data": b64("admin.key")}}],
        "contexts": [{"name": "kubeops-local", "context": {"cluster": "kubeops-local", "user": "kubeops-admin"}}],
        "current-context": "kubeops-local",
    }
    path = os.path.join(state_dir, "kubeconfig")
    with open(path, "w") as handle:
        json.dump(config, handle, indent=2)  # JSON is YAML, and kubectl reads both
    return path


def _die_with_parent():
    # PR_SET_PDEATHSIG: the component is killed when the test run that started it dies.
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)


def start(state, name, cmd, die_with_parent, env=None):
    logfile = open(os.path.join(state["dir"], "logs", name + ".log"), "ab")
    process = subprocess.Popen(cmd, stdout=logfile, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                               start_new_session=True, preexec_fn=_die_with_parent if die_with_parent else None)
    state["pids"][name] = process.pid
    state.setdefault("commands", {})[name] = list(cmd)
    if env is not None:
        state.setdefault("environments", {})[name] = dict(env)
    save_state(state)
    return process


def outage(state_dir, name, seconds):
    """Kill component ``name`` (SIGKILL, as a crash) and start it again ``seconds`` later, as it was.

    The new process does not die with its parent: the kernel's parent-death signal follows the thread that
    started it, and a fault test starts it from a thread that ends at once; ``down`` stops it."""
    state = load_state(state_dir)
    os.kill(state["pids"][name], signal.SIGKILL)
    time.sleep(seconds)
    start(state, name, state["commands"][name], die_with_parent=False, env=state.get("environments", {}).get(name))


def save_state(state):
    with open(os.path.join(state["dir"], "state.json"), "w") as handle:
        json.dump(state, handle, indent=2)


def load_state(state_dir):
    path = os.path.join(state_dir, "state.json")
    if not os.path.exists(path):
        return None
    with open(path) as handle:
        return json.load(handle)


def wait_for(what, check, processes, timeout=60.0):
    deadline = time.monotonic() + timeout
    while True:
        for name, process in processes.items():
            if process.poll() is not None:
                raise RuntimeError("%s exited with %s while waiting for %s; see its log" %
                                   (name, process.returncode, what))
        try:
            if check():
                return
        except (OSError, urllib.error.URLError, ValueError):
            pass
        if time.monotonic() > deadline:
            raise RuntimeError("timed out after %.0f s waiting for %s" % (timeout, what))
        time.sleep(0.2)


def https_get(url, state, client_cert=True):
    context = ssl.create_default_context(cafile=os.path.join(state["dir"], "pki", "ca.crt"))
    if client_cert:
        pki = os.path.join(state["dir"], "pki")
        context.load_cert_chain(os.path.join(pki, "admin.crt"), os.path.join(pki, "admin.key"))
    else:  # the scheduler's and controller manager's self-signed serving certificates
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    with urllib.request.urlopen(url, context=context, timeout=5) as response:
        return response.status, response.read()


def up(state_dir=DEFAULT_DIR, provisioner_pools=None, die_with_parent=False, python=sys.executable, autoscaler=None,
       api_qps=None, audit=False, node_monitor_grace=None):
    """Start a cluster in ``state_dir``; returns its state (kubeconfig path, ports, pids).
    ``autoscaler`` "karpenter" starts the real Karpenter with a KWOKNodeClass and a NodePool across three zones;
    the test provisioner runs when ``provisioner_pools`` names its pools. ``api_qps`` raises the controller
    manager's and the scheduler's client rate limits (20 and 50 requests a second) for large clusters.
    ``audit`` writes the API server's audit log (``state["audit_log"]``), which the benchmarks read; the tests
    do without it (with it, a rollout stalled after a second API server restart in one cluster, unexplained).
    ``node_monitor_grace`` (seconds) is how long the node lifecycle controller waits for a node's heartbeat before
    it marks the node and its pods not Ready (its default: 50 s)."""
    if load_state(state_dir):
        raise RuntimeError("a cluster already runs from %s; run down first" % state_dir)
    started = time.monotonic()
    build()
    shutil.rmtree(state_dir, ignore_errors=True)
    os.makedirs(os.path.join(state_dir, "logs"))
    ports = {name: free_port() for name in ("etcd", "etcd_peer", "apiserver", "controller_manager", "scheduler")}
    if autoscaler == "karpenter":
        ports.update(karpenter_metrics=free_port(), karpenter_health=free_port())
    state = {"dir": state_dir, "ports": ports, "pids": {}, "versions": versions(), "autoscaler": autoscaler}
    save_state(state)
    pki = os.path.join(state_dir, "pki")
    make_certificates(pki)
    server = "https://127.0.0.1:%d" % ports["apiserver"]
    kubeconfig = write_kubeconfig(state_dir, server)
    state["kubeconfig"] = kubeconfig
    state["server"] = server
    audit_flags = []
    if audit:
        state["audit_log"] = os.path.join(state_dir, "audit.log")
        audit_policy = os.path.join(state_dir, "audit-policy.json")
        with open(audit_policy, "w") as handle:
            json.dump(AUDIT_POLICY, handle, indent=2)  # JSON is YAML
        # written as each request ends (the default blocking mode), so a run's requests are all in it when it
        # returns; rotated only past 1000 MB, so that byte offsets into it stay valid for a cluster's life
        audit_flags = ["--audit-policy-file=" + audit_policy, "--audit-log-path=" + state["audit_log"],
                       "--audit-log-format=json", "--audit-log-maxsize=1000"]
    processes = {}
    try:
        etcd_url = "http://127.0.0.1:%d" % ports["etcd"]
        peer_url = "http://127.0.0.1:%d" % ports["etcd_peer"]
        processes["etcd"] = start(state, "etcd", [
            binary("etcd"), "--name=kubeops", "--data-dir=" + os.path.join(state_dir, "etcd"),
            "--listen-client-urls=" + etcd_url, "--advertise-client-urls=" + etcd_url,
            "--listen-peer-urls=" + peer_url, "--initial-advertise-peer-urls=" + peer_url,
            "--initial-cluster=kubeops=" + peer_url, "--listen-metrics-urls=",
            # a throwaway test store: durability is not worth the fsync latency
            "--unsafe-no-fsync", "--quota-backend-bytes=2147483648",
        ], die_with_parent)
        wait_for("etcd", lambda: json.loads(urllib.request.urlopen(etcd_url + "/health", timeout=2).read())
                 .get("health") == "true", processes)
        processes["kube-apiserver"] = start(state, "kube-apiserver", [
            binary("kube-apiserver"), "--etcd-servers=" + etcd_url,
            "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port=%d" % ports["apiserver"],
            # the kubernetes Service's endpoints would be 127.0.0.1, which Endpoints reject
            "--endpoint-reconciler-type=none",
            "--tls-cert-file=" + os.path.join(pki, "apiserver.crt"),
            "--tls-private-key-file=" + os.path.join(pki, "apiserver.key"),
            "--client-ca-file=" + os.path.join(pki, "ca.crt"),
            "--service-account-issuer=https://kubernetes.default.svc",
            "--service-account-key-file=" + os.path.join(pki, "sa.pub"),
            "--service-account-signing-key-file=" + os.path.join(pki, "sa.key"),
            "--service-cluster-ip-range=" + SERVICE_CIDR,
            "--authorization-mode=RBAC", "--allow-privileged=true", *audit_flags,
        ], die_with_parent)
        wait_for("kube-apiserver /readyz", lambda: https_get(server + "/readyz", state)[0] == 200, processes)
        common = ["--kubeconfig=" + kubeconfig, "--leader-elect=false", "--bind-address=127.0.0.1"]
        if api_qps:
            common += ["--kube-api-qps=%d" % api_qps, "--kube-api-burst=%d" % (2 * api_qps)]
        processes["kube-controller-manager"] = start(state, "kube-controller-manager", [
            binary("kube-controller-manager"), *common, "--secure-port=%d" % ports["controller_manager"],
            "--service-account-private-key-file=" + os.path.join(pki, "sa.key"),
            "--root-ca-file=" + os.path.join(pki, "ca.crt"),
            "--use-service-account-credentials=false", "--cluster-name=kubeops-local",
            *(["--node-monitor-grace-period=%ds" % node_monitor_grace] if node_monitor_grace else []),
        ], die_with_parent)
        processes["kube-scheduler"] = start(state, "kube-scheduler", [
            binary("kube-scheduler"), *common, "--secure-port=%d" % ports["scheduler"],
        ], die_with_parent)
        processes["kwok"] = start(state, "kwok", [
            binary("kwok"), "--kubeconfig=" + kubeconfig, "--config=" + stages_file(),
            "--manage-all-nodes=false", "--manage-nodes-with-annotation-selector=" + KWOK_NODE_ANNOTATION,
            "--node-lease-duration-seconds=40", "--cidr=" + POD_CIDR, "--node-ip=127.0.0.1",
        ], die_with_parent)
        for name in ("controller_manager", "scheduler"):
            url = "https://127.0.0.1:%d/healthz" % ports[name]
            wait_for(name, lambda url=url: https_get(url, state, client_cert=False)[0] == 200, processes)
        # Pods are refused until the service-account controller made the default account.
        wait_for("the default ServiceAccount", lambda: https_get(
            server + "/api/v1/namespaces/default/serviceaccounts/default", state)[0] == 200, processes)
        if provisioner_pools:
            processes["provisioner"] = start(state, "provisioner", [
                python, os.path.join(HERE, "provisioner.py"), "--kubeconfig", kubeconfig,
                "--pools", provisioner_pools,
            ], die_with_parent)
        if autoscaler == "karpenter":
            start_karpenter(state, processes, die_with_parent)
    except BaseException:
        down(state_dir)
        raise
    state["startup_seconds"] = round(time.monotonic() - started, 1)
    save_state(state)
    log("cluster up in %.1f s: export KUBECONFIG=%s" % (state["startup_seconds"], kubeconfig))
    return state


def start_karpenter(state, processes, die_with_parent):
    """Karpenter's CRDs, Karpenter itself (healthy), its KWOKNodeClass and the default NodePool."""
    kubeconfig = state["kubeconfig"]
    karpenter.install(CACHE, binary("kubectl"), kubeconfig)
    ports = state["ports"]
    processes["karpenter"] = start(state, "karpenter", [karpenter.binary(CACHE)], die_with_parent,
                                   env=karpenter.environment(kubeconfig, ports["karpenter_metrics"],
                                                             ports["karpenter_health"]))
    health = "http://127.0.0.1:%d/readyz" % ports["karpenter_health"]
    wait_for("Karpenter /readyz", lambda: urllib.request.urlopen(health, timeout=2).status == 200, processes)
    karpenter.kubectl_apply(binary("kubectl"), kubeconfig, [karpenter.node_class(), karpenter.node_pool()])
    state["versions"]["karpenter"] = karpenter.KARPENTER_VERSION


def add_nodes(state, count, zones=("zone-a", "zone-b", "zone-c")):
    """Create ``count`` kwok nodes spread over ``zones`` with the cluster's own kubectl."""
    from fakenodes import fake_node

    nodes = [fake_node("node-%d" % index, {"topology.kubernetes.io/zone": zones[index % len(zones)]})
             for index in range(1, count + 1)]
    manifest = json.dumps({"apiVersion": "v1", "kind": "List", "items": nodes})
    subprocess.run([binary("kubectl"), "--kubeconfig", state["kubeconfig"], "apply", "-f", "-"],
                   input=manifest.encode(), check=True, capture_output=True)
    log("created %d kwok nodes" % count)


def down(state_dir=DEFAULT_DIR):
    """Stop every process of the cluster and remove its folder; quiet when nothing runs."""
    state = load_state(state_dir)
    # Clients first: the API server waits for their open watches before it exits.
    for pid in reversed(list((state or {}).get("pids", {}).values())):
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(pid, sig)
            except ProcessLookupError:
                break
            deadline = time.monotonic() + 5
            while _alive(pid) and time.monotonic() < deadline:
                time.sleep(0.05)
            if not _alive(pid):
                break
    shutil.rmtree(state_dir, ignore_errors=True)


def _alive(pid):
    """Whether a component still runs; an exited one may linger as a zombie until reaped."""
    try:
        if os.waitpid(pid, os.WNOHANG) != (0, 0):
            return False
    except ChildProcessError:  # not our child: started by an earlier `up`
        pass
    try:
        with open("/proc/%d/stat" % pid) as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["build", "up", "down"])
    parser.add_argument("--dir", default=DEFAULT_DIR, help="folder of the cluster's state (default %(default)s)")
    parser.add_argument("--provisioner", metavar="POOLS_YAML",
                        help="also run the test provisioner with these node pools")
    parser.add_argument("--autoscaler", choices=["karpenter"],
                        help="also run the real Karpenter (KWOK provider) with a NodePool across three zones")
    parser.add_argument("--nodes", type=int, default=0, help="kwok nodes to create after up")
    parser.add_argument("--python", default=sys.executable,
                        help="interpreter with the kubernetes library, for the provisioner")
    args = parser.parse_args(argv)
    if args.command == "build":
        build()
    elif args.command == "up":
        state = up(args.dir, provisioner_pools=args.provisioner, python=args.python, autoscaler=args.autoscaler)
        if args.nodes:
            add_nodes(state, args.nodes)
        print(state["kubeconfig"])
    else:
        down(args.dir)


if __name__ == "__main__":
    main()
