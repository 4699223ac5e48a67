"""A real Kubernetes control plane for e2e tests: etcd + kube-apiserver as OS processes.

`KubeCluster.start(binary=...)` runs the binary built by tests/e2e/build.py:
embedded etcd and kube-apiserver on free loopback ports, RBAC authorization, an
admin identity (static token in group system:masters), ServiceAccount token
issuance (TokenRequest), and the CRDs from crds/ installed. There is no kubelet
and no controller-manager: Nodes are plain objects, pods are never run, and
nothing garbage-collects owner references or finishes namespace deletion.

Helpers cover what the e2e tests need: Node and Namespace objects, server-side
apply of manifests (including a small subset of kustomize), kubeconfigs for
ServiceAccounts (optionally bound to a Pod, so the token carries the node
claim), nfd console scripts as separate OS processes under those identities,
and stopping/restarting the apiserver for outage tests.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import yaml

from tests.e2e.netns import KUBERNETES_SERVICE_IP, NODE_IP, NetNamespace

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_CRDS_DIR = REPO_ROOT / "crds"
ADMIN_USER = "e2e-admin"
FIELD_MANAGER = "e2e"
SA_ISSUER = "https://kubernetes.default.svc.cluster.local"



class HttpError(Exception):
    """A non-2xx answer from the apiserver, with its Status message."""

    def __init__(self, status: int, reason: str, message: str, body: Any = None) -> None:
        super().__init__(f"HTTP {status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message
        self.body = body


class RestClient:
    """Minimal synchronous JSON client for one identity (bearer token)."""

    MAX_RETRIES = 10

    def __init__(self, *, server: str, ca_file: str, token: str) -> None:
        self.server = server.rstrip("/")
        self.token = token
        self._ctx = ssl.create_default_context(cafile=ca_file)

    def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        params: dict[str, Any] | None = None,
        content_type: str = "application/json",
        timeout: float = 30.0,
        headers_out: dict[str, str] | None = None,
    ) -> Any:
        """``headers_out``: filled with the answer's headers, names lowercased (e.g. API Priority
        and Fairness's x-kubernetes-pf-* classification)."""
        url = self.server + path
        if params:
            url += "?" + urllib.parse.urlencode({k: v for k, v in params.items() if v is not None})
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        req = urllib.request.Request(url, data=data, method=method)
        req.add_header("Authorization", f"Bearer {self.token}")
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", content_type)
        for attempt in range(self.MAX_RETRIES + 1):
            try:
                with urllib.request.urlopen(req, context=self._ctx, timeout=timeout) as resp:
                    raw = resp.read()
                    if headers_out is not None:
                        headers_out.update((k.lower(), v) for k, v in resp.headers.items())
                break
            except urllib.error.HTTPError as e:
                raw = e.read()
                retry_after = e.headers.get("Retry-After")
                # Like client-go: 429 (e.g. "storage is (re)initializing" while a watch cache
                # fills after a CRD is added or the apiserver restarts) with Retry-After is retried.
                if e.code == 429 and retry_after and attempt < self.MAX_RETRIES:
                    time.sleep(min(float(retry_after), 2.0))
                    continue
                try:
                    status_obj = json.loads(raw)
                except ValueError:
                    status_obj = {"message": raw.decode(errors="replace")}
                raise HttpError(e.code, str(status_obj.get("reason", e.reason)),
                                str(status_obj.get("message", "")), status_obj) from None
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return raw.decode(errors="replace")

    def get(self, path: str, **params: Any) -> Any:
        return self.request("GET", path, params=params or None)


def flowcontrol_counts(kube: KubeCluster) -> dict[str, int]:
    """The apiserver's API Priority and Fairness counters from /metrics, summed by priority level:
    ``"<level>: dispatched"`` and ``"<level>: rejected <reason>"`` (queue-full, time-out, ...)."""
    out: dict[str, int] = {}
    for line in str(kube.request("GET", "/metrics")).splitlines():
        m = re.match(r'apiserver_flowcontrol_(dispatched|rejected)_requests_total\{(.*)\} (\S+)$', line)
        if not m:
            continue
        lab = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
        key = f"{lab.get('priority_level')}: {m.group(1)}" + (f" {lab['reason']}" if "reason" in lab else "")
        out[key] = out.get(key, 0) + int(float(m.group(3)))
    return out


def wait_until(fn: Callable[[], Any], *, timeout: float = 30.0, interval: float = 0.1,
               message: str = "condition") -> Any:
    """Poll `fn` until it returns something truthy and return that; TimeoutError otherwise.

    Exceptions from `fn` count as "not yet" (the last one is chained to the TimeoutError).
    """
    deadline = time.monotonic() + timeout
    last: Any = None
    last_exc: BaseException | None = None
    while True:
        try:
            last = fn()
            last_exc = None
            if last:
                return last
        except Exception as e:  # retried until the deadline
            last_exc = e
        if time.monotonic() > deadline:
            raise TimeoutError(f"{message} not met within {timeout}s (last value: {last!r})") from last_exc
        time.sleep(interval)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _popen(argv: list[str], *, log_path: Path, env: dict[str, str] | None = None,
           cwd: str | None = None, netns: NetNamespace | None = None) -> subprocess.Popen[bytes]:
    """``netns``: the child runs in that network namespace (the real node's cluster).

    No ``preexec_fn``: Python code between fork and exec in a process with other threads (a gRPC
    server of a test's device plugin) crashed the test process once (SIGSEGV in the child's
    fork handlers). util-linux's setpriv and nsenter do the same in the child, then exec."""
    # children die with the test process even if it is SIGKILLed (PR_SET_PDEATHSIG, kept across
    # exec); it fires when the spawning *thread* exits, so only from the main thread
    if netns is not None:
        argv = netns.exec_argv(argv)
    if threading.current_thread() is threading.main_thread():
        argv = ["setpriv", "--pdeathsig", "KILL", "--", *argv]
    with open(log_path, "ab") as log:
        return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                env=env, cwd=cwd, start_new_session=True)


def _terminate(proc: subprocess.Popen[bytes], *, timeout: float) -> int | None:
    if proc.poll() is not None:
        return proc.returncode
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        return proc.wait(timeout=10)


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


class ManagedProcess:
    """One OS process started by the harness, logging to a file in the cluster's tmpdir."""

    def __init__(self, name: str, argv: list[str], log_path: Path, proc: subprocess.Popen[bytes]) -> None:
        self.name = name
        self.argv = argv
        self.log_path = log_path
        self.proc = proc

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def returncode(self) -> int | None:
        return self.proc.poll()

    @property
    def running(self) -> bool:
        return self.proc.poll() is None

    def stop(self, timeout: float = 15.0) -> int | None:
        """SIGTERM, then SIGKILL after `timeout` seconds; returns the exit status."""
        return _terminate(self.proc, timeout=timeout)

    def kill(self) -> int | None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
        return self.proc.wait(timeout=10)

    def wait(self, timeout: float | None = None) -> int:
        return self.proc.wait(timeout=timeout)

    def logs(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def wait_log(self, substring: str, timeout: float = 30.0, *, start: int = 0) -> str:
        """Wait until the log (from character `start`) contains `substring`; return the log.

        Raises TimeoutError (or RuntimeError if the process exited first) with the log tail.
        """
        deadline = time.monotonic() + timeout
        while True:
            text = self.logs()
            if substring in text[start:]:
                return text
            if self.proc.poll() is not None:
                text = self.logs()
                if substring in text[start:]:
                    return text
                raise RuntimeError(f"{self.name} exited ({self.proc.returncode}) before logging "
                                   f"{substring!r}; log tail:\n{_tail(self.log_path)}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.name}: {substring!r} not logged within {timeout}s; "
                                   f"log tail:\n{_tail(self.log_path)}")
            time.sleep(0.1)

    def __repr__(self) -> str:
        return f"ManagedProcess({self.name!r}, pid={self.pid}, running={self.running})"


def write_kubeconfig(path: Path, *, server: str, ca_file: str, token: str, user: str,
                     namespace: str | None = None) -> str:
    context: dict[str, Any] = {"cluster": "e2e", "user": user}
    if namespace:
        context["namespace"] = namespace
    cfg = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "e2e", "cluster": {"server": server, "certificate-authority": ca_file}}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": "e2e", "context": context}],
        "current-context": "e2e",
    }
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    path.chmod(0o600)
    return str(path)


def read_kubeconfig_token(path: str) -> str:
    cfg = yaml.safe_load(Path(path).read_text())
    ctx_name = cfg["current-context"]
    ctx = next(c["context"] for c in cfg["contexts"] if c["name"] == ctx_name)
    user = next(u["user"] for u in cfg["users"] if u["name"] == ctx["user"])
    token: str = user["token"]
    return token


def load_manifest_objects(paths: Iterable[Path]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for p in paths:
        with open(p) as f:
            for doc in yaml.safe_load_all(f):
                if isinstance(doc, dict) and doc.get("kind"):
                    if doc["kind"].endswith("List") and "items" in doc:
                        out.extend(doc["items"])
                    else:
                        out.append(doc)
    return out


# Kustomize fields the harness understands; anything else is refused loudly rather than
# silently applied wrong.
_KUSTOMIZE_KNOWN = {"apiVersion", "kind", "resources", "namespace", "components", "commonLabels", "labels"}


def render_manifest_dir(path: str | Path) -> list[dict[str, Any]]:
    """Objects of a manifest directory: a kustomization.yaml (a subset of kustomize) or *.yaml."""
    root = Path(path)
    kfile = next((root / n for n in ("kustomization.yaml", "kustomization.yml", "Kustomization")
                  if (root / n).exists()), None)
    if kfile is None:
        files = sorted(p for p in root.iterdir() if p.suffix in (".yaml", ".yml"))
        return load_manifest_objects(files)
    k = yaml.safe_load(kfile.read_text()) or {}
    unknown = set(k) - _KUSTOMIZE_KNOWN
    if unknown:
        raise ValueError(f"{kfile}: kustomize fields not supported by the e2e harness: {sorted(unknown)}")
    objs: list[dict[str, Any]] = []
    for entry in list(k.get("resources") or []) + list(k.get("components") or []):
        target = (root / entry).resolve()
        if target.is_dir():
            objs.extend(render_manifest_dir(target))
        elif target.exists():
            objs.extend(load_manifest_objects([target]))
        else:
            raise FileNotFoundError(f"{kfile}: resource {entry!r} not found")
    labels: dict[str, str] = dict(k.get("commonLabels") or {})
    for spec in k.get("labels") or []:
        labels.update(spec.get("pairs") or {})
    for obj in objs:
        if labels:
            obj.setdefault("metadata", {}).setdefault("labels", {}).update(labels)
    ns = k.get("namespace")
    if ns:
        for obj in objs:
            _set_namespace(obj, ns)
    return objs


_CLUSTER_SCOPED_KINDS = {
    "Namespace", "Node", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition",
    "PersistentVolume", "StorageClass", "PriorityClass", "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding", "ValidatingWebhookConfiguration",
    "MutatingWebhookConfiguration", "APIService", "NodeFeatureRule", "NodeResourceTopology",
    "RuntimeClass", "IngressClass",
}


def _set_namespace(obj: dict[str, Any], ns: str) -> None:
    # Like kustomize's namespace transformer: namespaced objects move to `ns`, and
    # ServiceAccount subjects of (Cluster)RoleBindings that name "default" follow them.
    kind = obj.get("kind", "")
    if kind not in _CLUSTER_SCOPED_KINDS:
        obj.setdefault("metadata", {})["namespace"] = ns
    if kind in ("RoleBinding", "ClusterRoleBinding"):
        for subj in obj.get("subjects") or []:
            if subj.get("kind") == "ServiceAccount" and subj.get("namespace") in (None, "", "default"):
                subj["namespace"] = ns


def _apply_order(obj: dict[str, Any]) -> int:
    kind = obj.get("kind")
    if kind == "Namespace":
        return 0
    if kind == "CustomResourceDefinition":
        return 1
    if kind in ("ServiceAccount", "ClusterRole", "Role"):
        return 2
    return 3


class KubeCluster:
    """etcd + kube-apiserver started from the harness binary, plus e2e helpers."""

    def __init__(self, *, binary: str | Path, tmpdir: str | Path, netns: NetNamespace | None = None) -> None:
        self.binary = str(binary)
        #: with a network namespace, etcd, the apiserver and every process started here run in
        #: it, and the apiserver serves on the namespace's node address (NODE_IP)
        self.netns = netns
        self.address = NODE_IP if netns is not None else "127.0.0.1"
        self.tmpdir = str(tmpdir)
        self._tmp = Path(tmpdir)
        self.pki = self._tmp / "pki"
        self.ca_file = str(self.pki / "ca.crt")
        self.admin_token = secrets.token_hex(24)
        self.etcd_port = 0
        self.etcd_peer_port = 0
        self.port = 0
        self.server = ""
        self.kubeconfig = ""
        self._etcd: subprocess.Popen[bytes] | None = None
        self._apiserver: subprocess.Popen[bytes] | None = None
        self._processes: list[ManagedProcess] = []
        self._discovery: dict[str, list[dict[str, Any]]] = {}
        self._counter = 0
        self._admin: RestClient | None = None
        self.started_in_s = 0.0  # wall time of start(): etcd + apiserver + CRDs

    # ---- lifecycle -------------------------------------------------------------------------

    @classmethod
    def start(cls, *, binary: str | Path, crds_dir: str | Path | None = DEFAULT_CRDS_DIR,
              tmpdir: str | Path | None = None, netns: NetNamespace | None = None) -> KubeCluster:
        """Start etcd and the apiserver and install the CRDs; stops everything on failure.
        ``netns``: the cluster lives in that network namespace (tests/e2e/netns.py)."""
        began = time.monotonic()
        tmp = Path(tmpdir) if tmpdir else Path(tempfile.mkdtemp(prefix="nfd-e2e-"))
        cluster = cls(binary=binary, tmpdir=tmp, netns=netns)
        try:
            cluster._setup()
            if crds_dir is not None:
                cluster.install_crds(crds_dir)
        except BaseException:
            cluster.close()
            raise
        cluster.started_in_s = time.monotonic() - began
        return cluster

    def _setup(self) -> None:
        self.pki.mkdir(parents=True, exist_ok=True)
        extra_ips = [self.address, KUBERNETES_SERVICE_IP] if self.netns is not None else []
        subprocess.run([self.binary, "certs", "--dir", str(self.pki), *(f"--ip={ip}" for ip in extra_ips)],
                       check=True, capture_output=True, timeout=60)
        (self.pki / "tokens.csv").write_text(f"{self.admin_token},{ADMIN_USER},{ADMIN_USER},system:masters\n")
        (self._tmp / "etcd").mkdir(exist_ok=True)
        (self._tmp / "logs").mkdir(exist_ok=True)
        (self._tmp / "kubeconfigs").mkdir(exist_ok=True)
        for attempt in range(3):  # free ports can be taken by a concurrent session: retry
            self.etcd_port, self.etcd_peer_port = free_port(), free_port()
            try:
                self._start_etcd()
                break
            except RuntimeError:
                if self._etcd is not None:
                    _terminate(self._etcd, timeout=5)
                shutil.rmtree(self._tmp / "etcd" / "data", ignore_errors=True)
                if attempt == 2:
                    raise
        for attempt in range(3):
            self.port = free_port()
            self.server = f"https://{self.address}:{self.port}"
            try:
                self.start_apiserver()
                break
            except RuntimeError:
                if attempt == 2:
                    raise
        self.kubeconfig = write_kubeconfig(self._tmp / "kubeconfigs" / "admin.yaml", server=self.server,
                                           ca_file=self.ca_file, token=self.admin_token, user=ADMIN_USER)
        self._admin = RestClient(server=self.server, ca_file=self.ca_file, token=self.admin_token)

    def _start_etcd(self) -> None:
        log = self._tmp / "logs" / "etcd.log"
        self._etcd = _popen([self.binary, "etcd", "--data-dir", str(self._tmp / "etcd" / "data"),
                             "--client-port", str(self.etcd_port), "--peer-port", str(self.etcd_peer_port)],
                            log_path=log, netns=self.netns)
        url = f"http://127.0.0.1:{self.etcd_port}/health"
        deadline = time.monotonic() + 60
        while True:
            if self._etcd.poll() is not None:
                raise RuntimeError(f"etcd exited ({self._etcd.returncode}):\n{_tail(log)}")
            with contextlib.suppress(OSError), self._entered(), urllib.request.urlopen(url, timeout=2) as r:
                if json.loads(r.read()).get("health") == "true":
                    return
            if time.monotonic() > deadline:
                raise RuntimeError(f"etcd not healthy within 60s:\n{_tail(log)}")
            time.sleep(0.1)

    def _apiserver_argv(self) -> list[str]:
        p = self.pki
        return [
            self.binary, "kube-apiserver",
            f"--etcd-servers=http://127.0.0.1:{self.etcd_port}",
            # in the node's namespace: every address of it (the node's, for the kubernetes
            # Service's endpoints and the pods; loopback, for the node's own components)
            f"--bind-address={'0.0.0.0' if self.netns is not None else '127.0.0.1'}",
            f"--advertise-address={self.address}",
            f"--secure-port={self.port}",
            f"--cert-dir={self._tmp / 'apiserver-certs'}",
            f"--tls-cert-file={p / 'server.crt'}",
            f"--tls-private-key-file={p / 'server.key'}",
            f"--client-ca-file={p / 'ca.crt'}",
            # the node proxy (a kubelet's /configz, logs) as kubeadm sets it up
            f"--kubelet-client-certificate={p / 'kubelet-client.crt'}",
            f"--kubelet-client-key={p / 'kubelet-client.key'}",
            # the node's address first, as kubeadm: a Hostname would be looked up in DNS
            "--kubelet-preferred-address-types=InternalIP,Hostname",
            f"--token-auth-file={p / 'tokens.csv'}",
            "--authorization-mode=RBAC",
            f"--service-account-issuer={SA_ISSUER}",
            f"--service-account-key-file={p / 'sa.pub'}",
            f"--service-account-signing-key-file={p / 'sa.key'}",
            "--service-cluster-ip-range=10.96.0.0/16",
            # NFD_TEST_APISERVER_PROFILING=1: /debug/pprof for benchmark investigations
            f"--profiling={'true' if os.environ.get('NFD_TEST_APISERVER_PROFILING') else 'false'}",
            "--v=1",
            # NFD_TEST_APISERVER_ARGS: extra flags for benchmark investigations, e.g.
            # "--feature-gates=WatchList=false" (clients then list with paginated LISTs)
            *os.environ.get("NFD_TEST_APISERVER_ARGS", "").split(),
        ]

    def start_apiserver(self, *, timeout: float = 120.0) -> None:
        """Start (or restart) the apiserver on the same port and etcd data; wait for /readyz."""
        if self._apiserver is not None and self._apiserver.poll() is None:
            return
        log = self._tmp / "logs" / "kube-apiserver.log"
        self._apiserver = _popen(self._apiserver_argv(), log_path=log, netns=self.netns)
        self._wait_ready(timeout=timeout, log=log)
        self._discovery.clear()

    def stop_apiserver(self) -> None:
        """Stop the apiserver (clients see connection refused); etcd and its data stay."""
        if self._apiserver is not None:
            _terminate(self._apiserver, timeout=20)
            self._apiserver = None

    def restart_apiserver(self) -> None:
        self.stop_apiserver()
        self.start_apiserver()

    @property
    def apiserver_running(self) -> bool:
        return self._apiserver is not None and self._apiserver.poll() is None

    def _wait_ready(self, *, timeout: float, log: Path) -> None:
        ctx = ssl.create_default_context(cafile=self.ca_file)
        req = urllib.request.Request(self.server + "/readyz")
        req.add_header("Authorization", f"Bearer {self.admin_token}")
        deadline = time.monotonic() + timeout
        assert self._apiserver is not None
        while True:
            if self._apiserver.poll() is not None:
                raise RuntimeError(f"kube-apiserver exited ({self._apiserver.returncode}):\n{_tail(log)}")
            with contextlib.suppress(OSError), urllib.request.urlopen(req, context=ctx, timeout=5) as r:
                if r.status == 200:
                    return
            if time.monotonic() > deadline:
                _terminate(self._apiserver, timeout=5)
                raise RuntimeError(f"kube-apiserver not ready within {timeout}s:\n{_tail(log)}")
            time.sleep(0.2)

    def close(self) -> None:
        """Stop every process the harness started and remove its files."""
        for mp in reversed(self._processes):
            with contextlib.suppress(Exception):
                mp.stop(timeout=5)
        self._processes.clear()
        with contextlib.suppress(Exception):
            self.stop_apiserver()
        if self._etcd is not None:
            with contextlib.suppress(Exception):
                _terminate(self._etcd, timeout=10)
            self._etcd = None
        if os.environ.get("NFD_E2E_KEEP_TMP"):
            print(f"nfd e2e: kept {self.tmpdir}", file=sys.__stderr__)
        else:
            shutil.rmtree(self.tmpdir, ignore_errors=True)

    def _entered(self) -> contextlib.AbstractContextManager[None]:
        """This thread in the cluster's network namespace for the block (loopback there)."""
        return self.netns.entered() if self.netns is not None else contextlib.nullcontext()

    # ---- raw access ------------------------------------------------------------------------

    @property
    def admin(self) -> RestClient:
        assert self._admin is not None, "cluster not started"
        return self._admin

    def client(self, kubeconfig: str | None = None) -> RestClient:
        """A RestClient for the identity of a kubeconfig written by this harness (admin if None)."""
        if kubeconfig is None:
            return self.admin
        return RestClient(server=self.server, ca_file=self.ca_file, token=read_kubeconfig_token(kubeconfig))

    def get(self, res_path: str, **params: Any) -> Any:
        """GET an API path as admin, e.g. '/api/v1/nodes/n1'; HttpError on failure."""
        return self.admin.get(res_path, **params)

    def get_or_none(self, res_path: str) -> Any:
        try:
            return self.admin.get(res_path)
        except HttpError as e:
            if e.status == 404:
                return None
            raise

    def request(self, method: str, path: str, **kw: Any) -> Any:
        return self.admin.request(method, path, **kw)

    # ---- discovery and apply ---------------------------------------------------------------

    def _resources(self, api_version: str, *, refresh: bool = False) -> list[dict[str, Any]]:
        if refresh or api_version not in self._discovery:
            path = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
            try:
                self._discovery[api_version] = self.admin.get(path)["resources"]
            except HttpError as e:
                if e.status != 404:
                    raise
                self._discovery[api_version] = []
        return self._discovery[api_version]

    def resource_for(self, api_version: str, kind: str) -> tuple[str, bool]:
        """(plural, namespaced) for a kind, from discovery."""
        for refresh in (False, True):
            for r in self._resources(api_version, refresh=refresh):
                if r["kind"] == kind and "/" not in r["name"]:
                    return r["name"], bool(r["namespaced"])
        raise KeyError(f"{api_version} {kind} is not served by the apiserver")

    def object_path(self, obj: dict[str, Any], *, name: bool = True) -> str:
        """API path of an object (or of its collection with name=False)."""
        api_version, kind = obj["apiVersion"], obj["kind"]
        plural, namespaced = self.resource_for(api_version, kind)
        base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        meta = obj.get("metadata") or {}
        if namespaced:
            base += f"/namespaces/{meta.get('namespace') or 'default'}"
        base += f"/{plural}"
        return f"{base}/{meta['name']}" if name else base

    def apply_objects(self, objs: list[dict[str, Any]], *, dry_run: bool = False,
                      field_manager: str = FIELD_MANAGER) -> list[dict[str, Any]]:
        """Server-side apply each object (force, field manager 'e2e'); returns the results."""
        out = []
        for obj in sorted(objs, key=_apply_order):
            params: dict[str, Any] = {"fieldManager": field_manager, "force": "true"}
            if dry_run:
                params["dryRun"] = "All"
            out.append(self.admin.request("PATCH", self.object_path(obj), body=obj, params=params,
                                          content_type="application/apply-patch+yaml"))
            if obj.get("kind") == "CustomResourceDefinition" and not dry_run:
                self.wait_crd_established(obj["metadata"]["name"])
        return out

    def apply_manifest_dir(self, path: str | Path) -> list[dict[str, Any]]:
        """Apply a manifest directory (kustomization.yaml subset or plain *.yaml files).

        Namespaces the objects land in are created first if missing (kubectl would fail;
        a test wants them).
        """
        objs = render_manifest_dir(path)
        declared = {o["metadata"]["name"] for o in objs if o.get("kind") == "Namespace"}
        for ns in sorted({o["metadata"]["namespace"] for o in objs
                          if (o.get("metadata") or {}).get("namespace")} - declared):
            self.create_namespace(ns, exist_ok=True)
        return self.apply_objects(objs)

    def install_crds(self, crds_dir: str | Path = DEFAULT_CRDS_DIR) -> list[dict[str, Any]]:
        objs = [o for o in render_manifest_dir(crds_dir) if o.get("kind") == "CustomResourceDefinition"]
        return self.apply_objects(objs)

    def wait_crd_established(self, name: str, timeout: float = 60.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            crd = self.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
            conds = {c["type"]: c["status"] for c in (crd.get("status") or {}).get("conditions") or []}
            if conds.get("Established") == "True":
                self._discovery.pop(f"{crd['spec']['group']}/{crd['spec']['versions'][0]['name']}", None)
                result: dict[str, Any] = crd
                return result
            if time.monotonic() > deadline:
                raise TimeoutError(f"CRD {name} not Established within {timeout}s: {conds}")
            time.sleep(0.1)

    # ---- objects ---------------------------------------------------------------------------

    def create_namespace(self, name: str, *, exist_ok: bool = False) -> dict[str, Any]:
        """Create a Namespace and its 'default' ServiceAccount (no controller-manager makes it)."""
        try:
            ns: dict[str, Any] = self.admin.request(
                "POST", "/api/v1/namespaces",
                body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        except HttpError as e:
            if not (exist_ok and e.status == 409):
                raise
            ns = self.get(f"/api/v1/namespaces/{name}")
        self.create_serviceaccount(name, "default", exist_ok=True)
        return ns

    def delete_namespace(self, name: str) -> None:
        """Delete the namespace's objects now (no namespace controller), then the Namespace.

        The Namespace itself stays Terminating forever; its contents are gone.
        """
        for api_version in ["v1", *self._group_versions()]:
            for r in self._resources(api_version):
                if not r["namespaced"] or "/" in r["name"] or "deletecollection" not in r.get("verbs", []):
                    continue
                base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
                with contextlib.suppress(HttpError):
                    self.admin.request("DELETE", f"{base}/namespaces/{name}/{r['name']}",
                                       params={"gracePeriodSeconds": "0"})
        with contextlib.suppress(HttpError):
            self.admin.request("DELETE", f"/api/v1/namespaces/{name}")

    def _group_versions(self) -> list[str]:
        groups = self.get("/apis")["groups"]
        return [g["preferredVersion"]["groupVersion"] for g in groups]

    def create_serviceaccount(self, namespace: str, name: str, *, exist_ok: bool = False) -> dict[str, Any]:
        try:
            sa: dict[str, Any] = self.admin.request(
                "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts",
                body={"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}})
            return sa
        except HttpError as e:
            if not (exist_ok and e.status == 409):
                raise
            existing: dict[str, Any] = self.get(f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}")
            return existing

    def create_node(self, name: str, *, labels: dict[str, str] | None = None,
                    capacity: dict[str, str] | None = None,
                    annotations: dict[str, str] | None = None) -> dict[str, Any]:
        """Create a Node object (there is no kubelet); capacity also becomes allocatable."""
        meta: dict[str, Any] = {"name": name, "labels": dict(labels or {})}
        if annotations:
            meta["annotations"] = dict(annotations)
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", "metadata": meta, "spec": {}}
        node: dict[str, Any] = self.admin.request("POST", "/api/v1/nodes", body=body)
        if capacity:
            status = {"status": {"capacity": dict(capacity), "allocatable": dict(capacity)}}
            node = self.admin.request("PATCH", f"/api/v1/nodes/{name}/status", body=status,
                                      content_type="application/merge-patch+json")
        return node

    def delete_node(self, name: str) -> bool:
        try:
            self.admin.request("DELETE", f"/api/v1/nodes/{name}")
            return True
        except HttpError as e:
            if e.status == 404:
                return False
            raise

    def create_pod(self, namespace: str, name: str, *, node_name: str | None = None,
                   service_account: str = "default", labels: dict[str, str] | None = None,
                   image: str = "registry.k8s.io/pause:3.10") -> dict[str, Any]:
        """Create a Pod object (never runs); with node_name it counts as scheduled there."""
        spec: dict[str, Any] = {"serviceAccountName": service_account,
                                "containers": [{"name": "main", "image": image}]}
        if node_name:
            spec["nodeName"] = node_name
        body = {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": namespace, "labels": dict(labels or {})},
                "spec": spec}
        pod: dict[str, Any] = self.admin.request("POST", f"/api/v1/namespaces/{namespace}/pods", body=body)
        return pod

    # ---- identities ------------------------------------------------------------------------

    def serviceaccount_token(self, namespace: str, name: str, *,
                             bound_pod: tuple[str, str] | None = None, expiration_s: int = 3600) -> str:
        spec: dict[str, Any] = {"expirationSeconds": expiration_s}
        if bound_pod is not None:
            pod_ns, pod_name = bound_pod
            if pod_ns != namespace:
                raise ValueError(f"bound pod {pod_ns}/{pod_name} must be in the ServiceAccount's "
                                 f"namespace {namespace}")
            pod = self.get(f"/api/v1/namespaces/{pod_ns}/pods/{pod_name}")
            spec["boundObjectRef"] = {"apiVersion": "v1", "kind": "Pod", "name": pod_name,
                                      "uid": pod["metadata"]["uid"]}
        tr = self.admin.request(
            "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
            body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec})
        token: str = tr["status"]["token"]
        return token

    def serviceaccount_kubeconfig(self, namespace: str, name: str, *,
                                  bound_pod: tuple[str, str] | None = None,
                                  expiration_s: int = 3600) -> str:
        """Write a kubeconfig with a TokenRequest token for a ServiceAccount; returns its path.

        With bound_pod=(namespace, pod) the token is bound to that Pod, so if the pod has a
        nodeName the identity carries the node claim (user extra
        authentication.kubernetes.io/node-name).
        """
        token = self.serviceaccount_token(namespace, name, bound_pod=bound_pod, expiration_s=expiration_s)
        self._counter += 1
        suffix = f"-{bound_pod[1]}" if bound_pod else ""
        path = self._tmp / "kubeconfigs" / f"sa-{namespace}-{name}{suffix}-{self._counter}.yaml"
        return write_kubeconfig(path, server=self.server, ca_file=self.ca_file, token=token,
                                user=f"system:serviceaccount:{namespace}:{name}", namespace=namespace)

    def whoami(self, kubeconfig: str | None = None) -> dict[str, Any]:
        """The identity the apiserver sees for a kubeconfig (SelfSubjectReview status.userInfo)."""
        r = self.client(kubeconfig).request(
            "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            body={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
        info: dict[str, Any] = r["status"]["userInfo"]
        return info

    # ---- processes -------------------------------------------------------------------------

    def start_process(self, argv: list[str], *, kubeconfig: str, env: dict[str, str] | None = None,
                      name: str | None = None) -> ManagedProcess:
        """Run a console script (e.g. ['nfd-master', '-v']) as a separate OS process.

        KUBECONFIG is set to `kubeconfig`; output goes to logs/<name>.log in tmpdir. The
        process is stopped at session end if the test has not stopped it.
        """
        if not argv:
            raise ValueError("empty argv")
        exe = argv[0]
        if os.sep not in exe:
            beside = Path(sys.executable).parent / exe  # the venv's console scripts
            exe = str(beside) if beside.exists() else (shutil.which(exe) or exe)
        self._counter += 1
        label = name or f"{Path(argv[0]).name}-{self._counter}"
        log = self._tmp / "logs" / f"{label}.log"
        full_env = dict(os.environ)
        full_env.update({"KUBECONFIG": kubeconfig, "PYTHONUNBUFFERED": "1"})
        full_env.update(env or {})
        proc = _popen([exe, *argv[1:]], log_path=log, env=full_env, cwd=self.tmpdir, netns=self.netns)
        mp = ManagedProcess(label, [exe, *argv[1:]], log, proc)
        self._processes.append(mp)
        return mp

    @property
    def processes(self) -> list[ManagedProcess]:
        return list(self._processes)

    def wait_until(self, fn: Callable[[], Any], *, timeout: float = 30.0, interval: float = 0.1,
                   message: str = "condition") -> Any:
        return wait_until(fn, timeout=timeout, interval=interval, message=message)

    def unique_name(self, prefix: str) -> str:
        return f"{prefix}-{secrets.token_hex(4)}"


def tcp_connections(port: int, pid: int | str = "self") -> int:
    """ESTABLISHED TCP connections of process ``pid`` to local port ``port`` (Linux /proc)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    n = 0
    for table in ("tcp", "tcp6"):
        try:
            lines = Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if f[3] == "01" and int(f[2].rsplit(":", 1)[1], 16) == port and f[9] in inodes:
                n += 1
    return n
