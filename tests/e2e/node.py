"""A real Kubernetes node for the e2e tests: kubelet, containerd and runc on this machine.

The node joins a control plane of its own (a KubeCluster: etcd + kube-apiserver) with the
kube-controller-manager (DaemonSet, Deployment, garbage-collector, root-CA publisher, namespace
and node lifecycle controllers), the kube-scheduler and kube-proxy. The Kubernetes binaries (and
the DRA test driver, a kubelet plugin the DRA tests run beside the kubelet) are built from
tests/tools/node (the k8s.io/kubernetes version of tests/apiserver) in one `go build`, cached
like the apiserver; containerd, runc, the CNI plugins and nft come from Debian packages
(tests/e2e/hostpkgs.py). Images are imported into containerd: the project's image
(tests/e2e/image.py) and a pause image holding tests/tools/node/pause. That pause image is also
served as `registry.k8s.io/pause` (every tag the tests pull) by a registry mirror inside the
node's namespace (CNCF distribution's registry, tests/tools/registry, on the namespace's own
loopback): containerd's hosts config sends registry.k8s.io there and nowhere else, so a pod
that always pulls the pause image (upstream's e2e suite's sleeper pods) runs without any
address outside the namespace.

The cluster is shaped like a kind cluster's node, inside a network namespace the run creates
and removes (tests/e2e/netns.py): the node's address is NODE_IP (not loopback: the apiserver's
node proxy reaches the kubelet there, as upstream's e2e suite reads /configz), pods run on a pod
network (the CNI bridge plugin, POD_CIDR, with portmap for host ports) and reach the API through
the `kubernetes` Service (10.96.0.1:443, kube-proxy in nftables mode), as in-cluster clients do.
The kubelet runs the CPU manager's static policy and the topology manager, authenticates and
authorizes its API through the apiserver (webhook), as a production kubelet does. The tests
reach the apiserver at NODE_IP through the namespace's veth; nothing in the namespace reaches
out of it.

`real_node` (session fixture) starts it once for the tests marked `node`; `python -m
tests.e2e.node` builds (or reuses) everything and prints the set-up times.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e import hostpkgs, netns
from tests.e2e.build import BuildError, _ldflags, ensure_built, find_go, kubernetes_version
from tests.e2e.harness import KubeCluster, ManagedProcess, free_port
from tests.e2e.image import PACKAGES as IMAGE_PACKAGES
from tests.e2e.image import ImageError, ensure_image
from tests.e2e.tools import ensure_tool

REPO_ROOT = Path(__file__).resolve().parents[2]
MODULE_DIR = REPO_ROOT / "tests" / "tools" / "node"
COMMANDS = {
    "kubelet": "k8s.io/kubernetes/cmd/kubelet",
    "kube-controller-manager": "k8s.io/kubernetes/cmd/kube-controller-manager",
    "kube-scheduler": "k8s.io/kubernetes/cmd/kube-scheduler",
    "kube-proxy": "k8s.io/kubernetes/cmd/kube-proxy",
    # upstream's e2e suite runs `kubectl proxy` to read the kubelet's /configz (tests/e2e/upstream.py)
    "kubectl": "k8s.io/kubernetes/cmd/kubectl",
    "pause": "./pause",
    # the DRA kubelet plugin Kubernetes' own e2e tests use (tests/e2e/test_node_dra.py)
    "dra-test-driver": "k8s.io/kubernetes/test/e2e/dra/test-driver",
}
PACKAGES = hostpkgs.NODE
CNI_BIN_DIR = "/usr/lib/cni"
PAUSE_REF = "docker.io/library/nfd-pause:e2e"
#: the registry mirror: on the node namespace's loopback; what it serves as registry.k8s.io/pause
MIRROR_ADDR = "127.0.0.1:5000"
MIRRORED_REGISTRY = "registry.k8s.io"
MIRRORED_PAUSE_TAGS = ("latest",)
NODE_NAME = "nfd-e2e-node"
#: the kubelet's root and pod logs are where users' manifests expect them (the DaemonSets'
#: hostPaths stay as shipped); one real node per machine at a time (MACHINE_LOCK)
KUBELET_ROOT = Path("/var/lib/kubelet")
POD_LOGS = Path("/var/log/pods")
MACHINE_LOCK = Path(os.environ.get("TMPDIR", "/tmp")) / "nfd-test-node.lock"


class NodeError(RuntimeError):
    pass


# ---- building ---------------------------------------------------------------------------------


def cache_root() -> Path:
    from tests.e2e.build import cache_dir

    return cache_dir("nfd-test-node", "NFD_TEST_NODE_CACHE")


def build_key(go: str) -> str:
    """Hash of the module's files (pause included) and the Go version."""
    from tests.e2e.build import go_version

    h = hashlib.sha256()
    for p in sorted(MODULE_DIR.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(MODULE_DIR)).encode() + b"\0" + p.read_bytes() + b"\0")
    h.update(go_version(go).encode())
    return h.hexdigest()[:16]


def ensure_binaries(*, log: Callable[[str], None] = print) -> dict[str, Path]:
    """kubelet, kube-controller-manager, kube-scheduler, pause and the DRA test driver, built by
    one `go build` if any is missing (BuildError on failure)."""
    go = find_go()
    if go is None:
        raise BuildError("Go is not installed (no `go` on PATH)")
    out = cache_root() / f"bin-{build_key(go)}"
    paths = {name: out / name for name in COMMANDS}
    if all(p.exists() for p in paths.values()):
        return paths
    out.mkdir(parents=True, exist_ok=True)
    with open(out / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if all(p.exists() for p in paths.values()):
            return paths
        tmp = out / f".tmp-{os.getpid()}"
        tmp.mkdir(exist_ok=True)
        env = dict(os.environ)  # as tests/e2e/build.py, so the Go build cache is shared
        env["GOFLAGS"] = (env.get("GOFLAGS", "") + " -buildvcs=false -mod=readonly").strip()
        log(f"building {', '.join(COMMANDS)} from tests/tools/node into {out} (first run; this takes a while)")
        start = time.monotonic()
        proc = subprocess.run([go, "build", f"-ldflags={_ldflags(kubernetes_version())}", "-o", f"{tmp}/",
                               *COMMANDS.values()], cwd=MODULE_DIR, env=env, capture_output=True, text=True,
                              check=False)
        if proc.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-40:])
            raise BuildError(f"go build failed (exit {proc.returncode}) in {MODULE_DIR}:\n{tail}")
        for name, package in COMMANDS.items():
            os.replace(tmp / Path(package).name, paths[name])  # go names a binary after its package
        shutil.rmtree(tmp, ignore_errors=True)
        log(f"built the node binaries in {time.monotonic() - start:.1f}s")
    for old in sorted((d for d in cache_root().glob("bin-*") if d != out), key=lambda d: d.stat().st_mtime,
                      reverse=True)[1:]:
        shutil.rmtree(old, ignore_errors=True)
    return paths


def pause_archive(pause_bin: Path, dest: Path, *, tag: str = "nfd-pause:e2e", labels: dict[str, str] | None = None) -> Path:
    """A docker-archive tar (manifest.json, config, one layer) of an image running `pause_bin`
    as /pause: what `ctr images import` takes, tagged `tag`. ``labels`` go into the config, so
    the image gets an ID of its own."""
    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w") as t:
        info = tarfile.TarInfo("pause")
        data = pause_bin.read_bytes()
        info.size, info.mode = len(data), 0o755
        t.addfile(info, io.BytesIO(data))
    layer_bytes = layer.getvalue()
    diff_id = "sha256:" + hashlib.sha256(layer_bytes).hexdigest()
    config = json.dumps({"architecture": "amd64", "os": "linux",
                         "config": {"Entrypoint": ["/pause"], "User": "65535:65535",
                                    **({"Labels": labels} if labels else {})},
                         "rootfs": {"type": "layers", "diff_ids": [diff_id]}}).encode()
    config_name = hashlib.sha256(config).hexdigest() + ".json"
    manifest = json.dumps([{"Config": config_name, "RepoTags": [tag], "Layers": ["layer.tar"]}]).encode()
    with tarfile.open(dest, mode="w") as t:
        for name, body in (("layer.tar", layer_bytes), (config_name, config), ("manifest.json", manifest)):
            info = tarfile.TarInfo(name)
            info.size = len(body)
            t.addfile(info, io.BytesIO(body))
    return dest


# ---- what the machine must allow ------------------------------------------------------------


def cannot_run_containers() -> str | None:
    """Why this machine cannot run containers at all (the one reason the node tests skip), or None."""
    if sys.platform != "linux":
        return f"not Linux ({sys.platform}): no containers"
    if os.geteuid() != 0:
        return "not root: kubelet and containerd need root to run containers"
    if not Path("/sys/fs/cgroup").is_dir() or not any(Path("/sys/fs/cgroup").iterdir()):
        return "no cgroup filesystem at /sys/fs/cgroup"
    if (os.cpu_count() or 1) < 2:
        return "one CPU: the CPU manager's static policy has no CPU to give a Guaranteed pod"
    reason = netns.unavailable()
    if reason:
        return reason
    return hostpkgs.missing_reason((*PACKAGES, *IMAGE_PACKAGES))


def fs_type(path: Path) -> str:
    """The filesystem type of the mount holding `path` (/proc/self/mountinfo)."""
    best, kind = "", ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            fields = line.split()
            mnt, fstype = fields[4], fields[fields.index("-") + 1]
            if (str(path) + "/").startswith(mnt.rstrip("/") + "/") and len(mnt) >= len(best):
                best, kind = mnt, fstype
    return kind


# ---- the node ---------------------------------------------------------------------------------


@dataclass
class Timings:
    image_s: float = 0.0
    binaries_s: float = 0.0
    registry_s: float = 0.0
    start_s: float = 0.0

    def line(self) -> str:
        return (f"real node set-up: image {self.image_s:.1f}s, kubelet/controller-manager/scheduler/kube-proxy/"
                f"DRA test driver build {self.binaries_s:.1f}s, registry mirror build {self.registry_s:.1f}s, "
                f"node start (network namespace, containerd, image import, registry mirror, kubelet Ready, "
                f"kubernetes Service answering) {self.start_s:.1f}s")


@dataclass
class RealNode:
    kube: KubeCluster
    bins: dict[str, Path]
    image_tar: Path
    tmp: Path
    registry_bin: Path | None = None  # the registry mirror's binary (tests/tools/registry)
    name: str = NODE_NAME
    kubelet_port: int = 10250
    timings: Timings = field(default_factory=Timings)
    processes: dict[str, ManagedProcess] = field(default_factory=dict)
    restarts: int = 0  # of the kubelet (restart_kubelet)

    root_dir: Path = KUBELET_ROOT
    pod_logs_dir: Path = POD_LOGS

    @property
    def containerd_sock(self) -> Path:
        return self.tmp / "containerd" / "containerd.sock"

    # ---- start / stop ----

    def start(self, *, log: Callable[[str], None] = print) -> None:
        began = time.monotonic()
        self.tmp.chmod(0o755)
        self._start_containerd()
        self.ctr("images", "import", str(self.image_tar))
        self.ctr("images", "import", str(pause_archive(self.bins["pause"], self.tmp / "pause.tar")))
        if self.registry_bin is not None:
            self._start_mirror(self.registry_bin)
        self._start_controllers()
        self._start_kubelet()
        self.kube.wait_until(self._ready, timeout=180, interval=1, message=f"Node {self.name} Ready")
        self._start_kube_proxy()
        self.kube.wait_until(lambda: self.kube.get_or_none("/api/v1/namespaces/default/configmaps/kube-root-ca.crt"),
                             timeout=120, interval=1, message="kube-root-ca.crt published")
        self.timings.start_s += time.monotonic() - began
        log(f"node {self.name} Ready in {self.timings.start_s:.1f}s (control plane included)")

    def _ready(self) -> bool:
        node = self.kube.get_or_none(f"/api/v1/nodes/{self.name}")
        if node is None:
            self._check_running()
            return False
        self.initialize_node(node)
        conds = {c["type"]: c["status"] for c in node.get("status", {}).get("conditions") or []}
        taints = [t["key"] for t in node["spec"].get("taints") or []]
        return conds.get("Ready") == "True" and "node.kubernetes.io/not-ready" not in taints

    @property
    def address(self) -> str:
        """The node's InternalIP: where the kubelet serves, the hostIP of its pods."""
        return self.kube.address

    def initialize_node(self, node: dict[str, Any]) -> None:
        """The node controller's part where the kubelet left it: the Node's InternalIP, and the
        uninitialized taint gone."""
        addresses = node.get("status", {}).get("addresses") or []
        if not any(a["type"] == "InternalIP" for a in addresses):
            self.kube.request("PATCH", f"/api/v1/nodes/{self.name}/status",
                              content_type="application/merge-patch+json",
                              body={"status": {"addresses": [{"type": "InternalIP", "address": self.address},
                                                             {"type": "Hostname", "address": self.name}]}})
        taints = node["spec"].get("taints") or []
        kept = [t for t in taints if t["key"] != "node.cloudprovider.kubernetes.io/uninitialized"]
        if kept != taints:
            self.kube.request("PATCH", f"/api/v1/nodes/{self.name}", content_type="application/merge-patch+json",
                              body={"spec": {"taints": kept or None}})

    def _check_running(self) -> None:
        for name, p in self.processes.items():
            if not p.running:
                raise NodeError(f"{name} exited ({p.returncode}):\n{p.logs()[-3000:]}")

    def _start_containerd(self) -> None:
        d = self.tmp / "containerd"
        cni_conf = self.tmp / "cni" / "net.d"
        cni_conf.mkdir(parents=True)
        # The pod network: a bridge in the node's namespace, the node its gateway (the pods'
        # default route: Service addresses, the node's address); portmap for host ports.
        (cni_conf / "10-nfd-e2e.conflist").write_text(json.dumps({
            "cniVersion": "1.0.0", "name": "nfd-e2e",
            "plugins": [{"type": "bridge", "bridge": "nfde2e0", "isGateway": True, "ipMasq": False,
                         "hairpinMode": True,
                         "ipam": {"type": "host-local", "ranges": [[{"subnet": netns.POD_CIDR}]],
                                  "routes": [{"dst": "0.0.0.0/0"}],
                                  "dataDir": str(self.tmp / "cni" / "ipam")}},
                        {"type": "portmap", "capabilities": {"portMappings": True}}]}))
        d.mkdir(parents=True, exist_ok=True)
        config = f"""version = 2
root = "{d / 'root'}"
state = "{d / 'state'}"
[grpc]
  address = "{self.containerd_sock}"
[ttrpc]
  address = "{d / 'containerd.sock.ttrpc'}"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{PAUSE_REF}"
  # runc may not lower oom_score_adj in this sandboxed machine (pod sandboxes fail otherwise)
  restrict_oom_score_adj = true
  # the pods' network namespaces under the state directory: removed with it, never left in
  # the machine's /run/netns
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "{'native' if fs_type(d) == 'overlay' else 'overlayfs'}"  # no overlay on overlay
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{CNI_BIN_DIR}"
    conf_dir = "{cni_conf}"
  [plugins."io.containerd.grpc.v1.cri".registry]
    # per-registry hosts (certs.d layout): registry.k8s.io is the mirror in the namespace
    config_path = "{self._registry_hosts()}"
"""
        d.mkdir(parents=True, exist_ok=True)
        (d / "config.toml").write_text(config)
        self.processes["containerd"] = self.kube.start_process(
            ["/usr/bin/containerd", "--config", str(d / "config.toml")], kubeconfig=self.kube.kubeconfig,
            name="containerd")
        self.kube.wait_until(lambda: self._check_running() or self.containerd_sock.exists(), timeout=60,
                             message="containerd socket")
        self.kube.wait_until(lambda: subprocess.run(self._ctr("version"), capture_output=True).returncode == 0,
                             timeout=60, message="containerd answering")

    def _registry_hosts(self) -> Path:
        """containerd's hosts directory: registry.k8s.io resolved and pulled from the mirror, its
        only server (no fallback to the real registry: nothing leaves the namespace)."""
        hosts = self.tmp / "containerd" / "certs.d"
        d = hosts / MIRRORED_REGISTRY
        d.mkdir(parents=True, exist_ok=True)
        (d / "hosts.toml").write_text(f'server = "http://{MIRROR_ADDR}"\n\n'
                                      f'[host."http://{MIRROR_ADDR}"]\n'
                                      f'  capabilities = ["pull", "resolve"]\n')
        return hosts

    def _start_mirror(self, registry_bin: Path) -> None:
        """The registry mirror in the namespace, holding the pause image as `pause:<tag>` for
        each of MIRRORED_PAUSE_TAGS (pushed by ctr from inside the namespace)."""
        d = self.tmp / "registry"
        d.mkdir(parents=True, exist_ok=True)
        conf = {"version": 0.1, "log": {"level": "warn"},
                "storage": {"filesystem": {"rootdirectory": str(d / "data")}},
                "http": {"addr": MIRROR_ADDR}}
        (d / "config.json").write_text(json.dumps(conf))  # YAML is a superset of JSON
        self.processes["registry"] = self.kube.start_process([str(registry_bin), "serve", str(d / "config.json")],
                                                             kubeconfig=self.kube.kubeconfig, name="registry")
        host, port = MIRROR_ADDR.rsplit(":", 1)

        def answers() -> bool:
            self._check_running()
            with self.kube._entered(), contextlib.suppress(OSError), socket.create_connection((host, int(port)),
                                                                                                timeout=1):
                return True
            return False

        self.kube.wait_until(answers, timeout=30, interval=0.2, message="the registry mirror answering")
        netns_path = self.kube.netns.path if self.kube.netns is not None else None
        for tag in MIRRORED_PAUSE_TAGS:
            ref = f"{MIRROR_ADDR}/pause:{tag}"
            # an image ID of its own: with the sandbox image's ID (nfd-pause:e2e), pods pulling
            # registry.k8s.io/pause left containerd 1.6's CRI without nfd-pause:e2e, and every
            # later pod on the node failed with ErrImageNeverPull
            archive = pause_archive(self.bins["pause"], self.tmp / f"pause-mirror-{tag}.tar", tag=ref,
                                    labels={"nfd.e2e/mirror": "1"})
            self.ctr("images", "import", str(archive))
            argv = self._ctr("images", "push", "--plain-http", ref)
            if netns_path is not None:  # ctr itself speaks to the registry: from inside the namespace
                argv = ["nsenter", f"--net={netns_path}", "--", *argv]
            proc = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=120)
            if proc.returncode != 0:
                raise NodeError(f"pushing the pause image to the registry mirror ({ref}) failed "
                                f"(exit {proc.returncode}): {(proc.stdout + proc.stderr).strip()[-800:]}")
            self.ctr("images", "rm", ref)

    def _ctr(self, *args: str) -> list[str]:
        return ["ctr", "--address", str(self.containerd_sock), "-n", "k8s.io", *args]

    def ctr(self, *args: str) -> str:
        proc = subprocess.run(self._ctr(*args), capture_output=True, text=True, check=False, timeout=600)
        if proc.returncode != 0:
            raise NodeError(f"ctr {' '.join(args)} failed (exit {proc.returncode}): {proc.stderr.strip()[-500:]}")
        return proc.stdout

    def _start_controllers(self) -> None:
        kc = self.kube.kubeconfig
        pki = self.kube.pki
        common = [f"--kubeconfig={kc}", f"--authentication-kubeconfig={kc}", f"--authorization-kubeconfig={kc}",
                  "--bind-address=127.0.0.1", "--leader-elect=false", "--v=1"]
        self.processes["kube-controller-manager"] = self.kube.start_process(
            [str(self.bins["kube-controller-manager"]), *common, f"--secure-port={free_port()}",
             f"--root-ca-file={pki / 'ca.crt'}", f"--service-account-private-key-file={pki / 'sa.key'}",
             "--use-service-account-credentials=false"],
            kubeconfig=kc, name="kube-controller-manager")
        self.processes["kube-scheduler"] = self.kube.start_process(
            [str(self.bins["kube-scheduler"]), *common, f"--secure-port={free_port()}"],
            kubeconfig=kc, name="kube-scheduler")

    def kubelet_config(self) -> dict[str, Any]:
        return {
            "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
            "address": self.address, "port": self.kubelet_port, "readOnlyPort": 0,
            "healthzBindAddress": "127.0.0.1", "healthzPort": free_port(),
            "containerRuntimeEndpoint": f"unix://{self.containerd_sock}",
            "failCgroupV1": False,  # cgroups v1 on these machines; v1.35 refuses them by default
            "cgroupDriver": "cgroupfs", "failSwapOn": False,
            "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": True},
                               "x509": {"clientCAFile": str(self.kube.pki / "ca.crt")}},
            "authorization": {"mode": "Webhook"},
            # static: a Guaranteed pod with integer CPUs gets CPUs of its own; the reservation is
            # rounded up to CPU 0 for the CPU manager, but allocatable keeps 1.9 of 2 CPUs so the
            # nfd pods and a 1-CPU Guaranteed pod fit on a 2-core machine.
            "cpuManagerPolicy": "static", "kubeReserved": {"cpu": "100m"},
            "topologyManagerPolicy": "best-effort", "topologyManagerScope": "container",
            "evictionHard": {}, "enforceNodeAllocatable": [], "resolvConf": "",
            "podLogsDir": str(self.pod_logs_dir), "maxPods": 30,
            "imageGCHighThresholdPercent": 100, "imageGCLowThresholdPercent": 99,
            "serializeImagePulls": False, "nodeStatusUpdateFrequency": "5s",
        }

    def _start_kubelet(self) -> None:
        self.clean_host_dirs()
        (self.root_dir / "device-plugins").mkdir(parents=True)  # the topology-updater needs it, as upstream's
        self.pod_logs_dir.mkdir(parents=True, exist_ok=True)
        conf = self.tmp / "kubelet.yaml"
        conf.write_text(yaml.safe_dump(self.kubelet_config()))
        self.processes["kubelet"] = self.kube.start_process(
            [str(self.bins["kubelet"]), f"--config={conf}", f"--kubeconfig={self.kube.kubeconfig}",
             f"--root-dir={self.root_dir}", f"--hostname-override={self.name}",
             f"--node-ip={self.address}", "--v=1"],
            kubeconfig=self.kube.kubeconfig, name="kubelet")

    def restart_kubelet(self, *, timeout: float = 120, config: dict[str, Any] | None = None) -> None:
        """Stop the kubelet and start it again with the same arguments, root and pods (a kubelet
        upgrade or crash): the containers keep running, device plugins must register again.
        ``config``: KubeletConfiguration fields to change in its file first, None removing one (a
        reconfigured kubelet; what readers of the file, like the topology-updater's
        ``-kubelet-config-uri=file://``, then read too). A changed CPU or memory manager policy
        starts from no state file, as the kubelet asks (its checkpoint names the old policy)."""
        argv = self.processes["kubelet"].argv
        self.processes["kubelet"].stop(timeout=30)
        if config:
            conf = self.tmp / "kubelet.yaml"
            new = {**yaml.safe_load(conf.read_text()), **config}
            conf.write_text(yaml.safe_dump({k: v for k, v in new.items() if v is not None}))
            for policy, state in (("cpuManagerPolicy", "cpu_manager_state"),
                                  ("memoryManagerPolicy", "memory_manager_state")):
                if policy in config:
                    (self.root_dir / state).unlink(missing_ok=True)
        self.restarts += 1
        self.processes["kubelet"] = self.kube.start_process(argv, kubeconfig=self.kube.kubeconfig,
                                                            name=f"kubelet-{self.restarts}")
        port = yaml.safe_load((self.tmp / "kubelet.yaml").read_text())["healthzPort"]
        healthz = f"http://127.0.0.1:{port}/healthz"

        def healthy() -> bool:
            self._check_running()
            # the kubelet serves its healthz inside the node's network namespace
            with self.kube._entered(), contextlib.suppress(OSError), urllib.request.urlopen(healthz, timeout=2) as r:
                return bool(r.status == 200)
            return False

        self.kube.wait_until(healthy, timeout=timeout, interval=0.5, message="kubelet healthy after its restart")

    def _start_kube_proxy(self) -> None:
        """kube-proxy (nftables mode) on the node; started once the Node exists (it reads the
        node's address from it). Ready when the `kubernetes` Service answers in the namespace."""
        self.processes["kube-proxy"] = self.kube.start_process(
            [str(self.bins["kube-proxy"]), f"--kubeconfig={self.kube.kubeconfig}", "--proxy-mode=nftables",
             f"--hostname-override={self.name}", f"--cluster-cidr={netns.POD_CIDR}",
             # the namespace's conntrack table as the kernel made it (nothing machine-wide)
             "--conntrack-max-per-core=0", "--conntrack-tcp-timeout-established=0",
             "--conntrack-tcp-timeout-close-wait=0",
             f"--metrics-bind-address=127.0.0.1:{free_port()}", f"--healthz-bind-address=127.0.0.1:{free_port()}",
             "--v=1"],
            kubeconfig=self.kube.kubeconfig, name="kube-proxy")

        def service_answers() -> bool:
            self._check_running()
            with self.kube._entered(), socket.create_connection((netns.KUBERNETES_SERVICE_IP, 443), timeout=2):
                return True

        self.kube.wait_until(service_answers, timeout=120, interval=0.5,
                             message="the kubernetes Service answering through kube-proxy")

    def close(self) -> None:
        """Stop the kubelet, the pods' containers, the controllers, containerd; unmount what the
        kubelet mounted (projected volumes) so the directory can go."""
        for name in ("kubelet", "kube-proxy", "kube-scheduler", "kube-controller-manager", "registry"):
            p = self.processes.get(name)
            if p is not None:
                with contextlib.suppress(Exception):
                    p.stop(timeout=10)
        if self.processes.get("containerd") is not None and self.processes["containerd"].running:
            with contextlib.suppress(Exception):
                for task in self.ctr("tasks", "ls", "-q").split():
                    subprocess.run(self._ctr("tasks", "kill", "-s", "SIGKILL", task), capture_output=True)
                time.sleep(1)
                for task in self.ctr("tasks", "ls", "-q").split():
                    subprocess.run(self._ctr("tasks", "delete", "-f", task), capture_output=True)
                for c in self.ctr("containers", "ls", "-q").split():
                    subprocess.run(self._ctr("containers", "delete", c), capture_output=True)
            with contextlib.suppress(Exception):
                self.processes["containerd"].stop(timeout=15)
        self.unmount_all()

    def unmount_all(self) -> None:
        """Unmount what the kubelet and containerd left mounted under the node's directories."""
        dirs = (str(self.tmp), str(self.root_dir))  # the kubelet bind-mounts its root on itself
        prefixes = tuple(f"{d}/" for d in dirs)
        with contextlib.suppress(OSError):
            mounts = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]
            for m in sorted({m for m in mounts if m.startswith(prefixes) or m in dirs}, key=len, reverse=True):
                subprocess.run(["umount", "-l", m], capture_output=True)

    def clean_host_dirs(self) -> None:
        """A fresh kubelet root and pod logs: a previous session's cpu_manager_state or pods
        would be taken for this node's."""
        self.unmount_all()
        shutil.rmtree(self.root_dir, ignore_errors=True)
        for d in self.pod_logs_dir.glob("*"):
            shutil.rmtree(d, ignore_errors=True)

    # ---- helpers for tests ----

    def node(self) -> dict[str, Any]:
        node: dict[str, Any] = self.kube.get(f"/api/v1/nodes/{self.name}")
        return node

    def cpu_manager_state(self) -> dict[str, Any]:
        state: dict[str, Any] = json.loads((self.root_dir / "cpu_manager_state").read_text())
        return state

    def pod_log(self, namespace: str, pod: str) -> str:
        """A pod's containers' logs, read from the kubelet's podLogsDir (as `kubectl logs` shows)."""
        out = []
        for d in self.pod_logs_dir.glob(f"{namespace}_{pod}_*"):
            for f in sorted(d.rglob("*.log")):
                out.append(f.read_text(errors="replace"))
        return "".join(out)

    def describe(self) -> str:
        """The node components' log tails, for failure messages."""
        parts = []
        for name, p in self.processes.items():
            parts.append(f"--- {name} ({'running' if p.running else f'exited {p.returncode}'}):\n"
                         f"{p.logs()[-1500:]}")
        return "\n".join(parts)


def _other_kubelet() -> str | None:
    """The pid of a kubelet this session did not start, if one runs on the machine."""
    for d in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError):
            if (d / "comm").read_text().strip() == "kubelet":
                return d.name
    return None


def start_node(*, log: Callable[[str], None] = print, image: Path | None = None) -> RealNode:
    """Build (or reuse) the image and binaries, start a control plane and the node on it.

    ``image``: another docker-archive for containerd to hold instead of the project's (upstream's
    image, tests/e2e/upstream_image.py)."""
    timings = Timings()
    pid = _other_kubelet()
    if pid:
        raise NodeError(f"a kubelet already runs on this machine (pid {pid}): not starting a second one")
    hostpkgs.ensure(PACKAGES, log=log)
    t = time.monotonic()
    image = image or ensure_image(log=log)
    timings.image_s = time.monotonic() - t
    t = time.monotonic()
    bins = ensure_binaries(log=log)
    timings.binaries_s = time.monotonic() - t
    t = time.monotonic()
    registry_bin = ensure_tool("registry", log=log)
    timings.registry_s = time.monotonic() - t
    began = time.monotonic()
    ns = netns.NetNamespace.create()
    try:
        kube = KubeCluster.start(binary=ensure_built(log=log), netns=ns)
    except BaseException:
        ns.close()
        raise
    timings.start_s = time.monotonic() - began  # the namespace and the control plane: the node's start
    tmp = Path(tempfile.mkdtemp(prefix="nfd-node-"))
    node = RealNode(kube=kube, bins=bins, image_tar=image, tmp=tmp, registry_bin=registry_bin, kubelet_port=10250,
                    timings=timings)
    try:
        node.start(log=log)
    except BaseException:
        with contextlib.suppress(Exception):
            log(node.describe())
        stop_node(node)
        raise
    log(timings.line())
    return node


def stop_node(node: RealNode) -> None:
    node.close()
    node.kube.close()
    if node.kube.netns is not None:
        node.kube.netns.close()
    if not os.environ.get("NFD_E2E_KEEP_TMP"):
        node.clean_host_dirs()
        shutil.rmtree(node.tmp, ignore_errors=True)


@contextlib.contextmanager
def machine_lock(*, log: Callable[[str], None] = print) -> Iterator[None]:
    """One real node per machine: another session's waits here (kubelet root, port 10250)."""
    with open(MACHINE_LOCK, "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log("another session runs the real node: waiting for it")
            fcntl.flock(lock, fcntl.LOCK_EX)
        yield


#: the session's node: each test module that imports `real_node` registers a fixture of its
#: own (pytest keys fixtures by the module that names them), and a second node would wait
#: forever for the machine lock the first one holds
_session_node: RealNode | None = None


@pytest.fixture(scope="session")
def real_node(pytestconfig: pytest.Config) -> Iterator[RealNode]:
    """One real node (and its control plane) for the tests marked `node`."""
    global _session_node
    if _session_node is not None:
        yield _session_node  # started for another module's tests; stopped by its fixture
        return
    reason = cannot_run_containers()
    if reason:
        pytest.skip(f"no real node: {reason}")
    if find_go() is None:
        pytest.skip("Go is not installed: cannot build the kubelet")
    capture = pytestconfig.pluginmanager.getplugin("capturemanager")

    def log(msg: str) -> None:
        """Shown as it happens, past pytest's output capture (the set-up times belong in CI's log)."""
        ctx = capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext()
        with ctx:
            print(f"nfd e2e: {msg}", file=sys.stderr, flush=True)

    with machine_lock(log=log):
        try:
            node = start_node(log=log)
        except (BuildError, ImageError, hostpkgs.PackageError, NodeError, RuntimeError) as e:
            pytest.fail(f"cannot start the real node: {e}", pytrace=False)
        _session_node = node
        try:
            yield node
        finally:
            _session_node = None
            stop_node(node)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.e2e.node", description=__doc__.splitlines()[0])
    ap.add_argument("--start", action="store_true", help="also start the node once (then stop it)")
    ap.add_argument("--if-go", action="store_true", help="exit 0 with a note when Go is not installed")
    args = ap.parse_args(argv)
    reason = cannot_run_containers()
    if reason:
        print(f"no real node here (the node tests will be skipped): {reason}", file=sys.stderr)
        return 0
    if find_go() is None:
        print("Go is not installed: the node tests will be skipped", file=sys.stderr)
        return 0 if args.if_go else 1

    def log(m: str) -> None:
        print(m, file=sys.stderr, flush=True)

    try:
        if args.start:
            with machine_lock(log=log):
                stop_node(start_node(log=log))
            return 0
        t = time.monotonic()
        hostpkgs.ensure(PACKAGES, log=log)
        print(f"node packages ready in {time.monotonic() - t:.1f}s")
        t = time.monotonic()
        print(f"image: {ensure_image(log=log)} (ready in {time.monotonic() - t:.1f}s)")
        t = time.monotonic()
        for name, path in ensure_binaries(log=log).items():
            print(f"{name}: {path}")
        print(f"{', '.join(COMMANDS)} ready in {time.monotonic() - t:.1f}s")
    except (BuildError, ImageError, hostpkgs.PackageError, NodeError, RuntimeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
