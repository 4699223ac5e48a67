"""nfd on arm64 (Grace: GB200/GH200 trays) under qemu-user, beside upstream's arm64 nfd-worker.

The project's image is built for linux/arm64 from the Dockerfile (tests/e2e/image.py) and its
root unpacked; upstream's v0.17.3 nfd-worker is built for linux/arm64 as upstream's image has
it (tests/e2e/tools.py). Both run chrooted in that root under qemu-user-static through
binfmt_misc, as the DaemonSet runs them: the host's directories at /host-* (this machine's, or
the GB200 fixture tree's), one-shot without publishing. Each run's CPU is qemu's (QEMU_CPU):
the HWCAPs both read from the auxiliary vector and the MIDR both read with `mrs`.

What this proves: the image's Python and its aarch64 wheels run on arm64; nfd-worker and
`nfd export labels` give upstream's labels there, from the same HWCAPs; the GB200 tree gives the
same labels on arm64 as on x86-64. What it does not: anything about real Grace hardware (qemu's
CPUs are not Neoverse V2; timings under emulation mean nothing).
"""

from __future__ import annotations

import copy
import json
import struct
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nfd.sources.cpu import ARM64_HWCAP, ARM64_HWCAP2
from tests.e2e import arm64, emulation, hostpkgs
from tests.e2e.build import BuildError
from tests.e2e.harness import REPO_ROOT, KubeCluster, write_kubeconfig
from tests.e2e.image import ImageError

pytestmark = pytest.mark.slow

GB200 = REPO_ROOT / "tests" / "fixtures" / "gb200" / "root"
PREFIX = "feature.node.kubernetes.io/"
#: labels one side has and the other not, with the reason (docs/compatibility.md, "arm64")
VERSION_ONLY = {
    # upstream's HEAD (76e6cc8), which nfd follows, labels the hypervisor; v0.17.3 does not
    # (klauspost/cpuid detects none on arm64: "none")
    PREFIX + "cpu-model.hypervisor": "none",
}
#: qemu 7.2's CPUs (`qemu-aarch64-static -cpu help`) run here: `max` (every feature qemu has,
#: MIDR implementer 0), a server core, and an SVE core without SVE2
CPUS = ("max", "neoverse-n1", "a64fx")


def _log(msg: str) -> None:
    print(f"nfd e2e: {msg}", file=sys.__stderr__, flush=True)


@pytest.fixture(scope="module")
def root() -> Path:
    reason = arm64.missing_reason()
    if reason:
        pytest.skip(reason)
    try:
        emulation.ensure_binfmt(log=_log)
        return arm64.ensure_root(log=_log)
    except (ImageError, hostpkgs.PackageError, emulation.EmulationError) as e:
        pytest.fail(f"cannot make the arm64 image's root: {e}", pytrace=False)


@pytest.fixture(scope="module")
def upstream() -> Path:
    if arm64.missing_reason():
        pytest.skip(arm64.missing_reason() or "")
    try:
        return arm64.ensure_upstream(log=_log)
    except (BuildError, hostpkgs.PackageError) as e:
        pytest.fail(f"cannot build upstream's arm64 nfd-worker: {e}", pytrace=False)


@pytest.fixture(scope="module")
def kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    p = tmp_path_factory.mktemp("arm64") / "nowhere.kubeconfig"
    p.write_text(arm64.KUBECONFIG)
    yield p


class Runner:
    """Runs commands in the arm64 root with one host tree at /host-* and one emulated CPU."""

    def __init__(self, root: Path, host_root: Path, cpu: str, upstream: Path, kubeconfig: Path) -> None:
        self.root, self.cpu = root, cpu
        self.binds = [*emulation.daemonset_binds(host_root), (str(upstream), arm64.UPSTREAM_IN_ROOT),
                      (str(kubeconfig), arm64.KUBECONFIG_IN_ROOT)]
        self.times: dict[str, float] = {}

    def run(self, what: str, argv: list[str], *, binds: list[tuple[str, str]] | None = None,
            stdout_only: bool = False, env: dict[str, str] | None = None, host_network: bool = False) -> str:
        env = dict(arm64.IMAGE_ENV, QEMU_CPU=self.cpu, **(env or {}))
        start = time.monotonic()
        proc = emulation.run_in_root(self.root, argv, binds=self.binds + (binds or []), env=env,
                                     host_network=host_network)
        self.times[what] = time.monotonic() - start
        assert proc.returncode == 0, f"{what} under qemu ({self.cpu}): exit {proc.returncode}\n{proc.stderr[-4000:]}"
        return proc.stdout if stdout_only else proc.stdout + proc.stderr

    def ours(self, *args: str) -> dict[str, str]:
        return arm64.parse_klog_labels(self.run("nfd-worker", ["nfd-worker", "-oneshot", "-no-publish", "-v", "1",
                                                               *args]))

    def export(self) -> dict[str, str]:
        out = self.run("nfd export labels", ["nfd", "export", "labels"], stdout_only=True)
        return dict(line.split("=", 1) for line in out.splitlines())

    def upstream(self, config: str = "/nonexistent.conf") -> dict[str, str]:
        return arm64.parse_klog_labels(self.run("upstream nfd-worker", [
            arm64.UPSTREAM_IN_ROOT, "-oneshot", "-no-publish", "-v", "1", "-kubeconfig", arm64.KUBECONFIG_IN_ROOT,
            "-config", config]))

    def hwcaps(self) -> set[str]:
        """The flag names of the emulated CPU's AT_HWCAP/AT_HWCAP2, read by a third program."""
        out = self.run("auxv", ["python3", "-c", "import sys; sys.stdout.write(open('/proc/self/auxv','rb').read().hex())"])
        data = bytes.fromhex(out.strip())
        caps = dict(struct.iter_unpack("<QQ", data[: len(data) // 16 * 16]))
        hwcap, hwcap2 = caps.get(16, 0), caps.get(26, 0)
        assert hwcap, f"no AT_HWCAP in the emulated auxv: {caps}"
        return {n for i, n in enumerate(ARM64_HWCAP) if hwcap >> i & 1} | {
            n for i, n in enumerate(ARM64_HWCAP2) if hwcap2 >> i & 1}


def _compare(ours: dict[str, str], theirs: dict[str, str]) -> None:
    """Every label upstream's worker gives, ours gives with its value; ours has only VERSION_ONLY more."""
    missing = {k: v for k, v in theirs.items() if ours.get(k) != v}
    extra = {k: v for k, v in ours.items() if k not in theirs and VERSION_ONLY.get(k) != v}
    assert not missing and not extra, f"labels differ: upstream's not ours {missing}; ours only {extra}"


def _cpuid_flags(labels: dict[str, str]) -> set[str]:
    return {k.removeprefix(PREFIX + "cpu-cpuid.") for k in labels if k.startswith(PREFIX + "cpu-cpuid.")}


def test_image_is_arm64(root: Path) -> None:
    """The image's interpreter and the compiled modules of its wheels are aarch64 ELF files."""
    def machine(p: Path) -> int:
        return int(struct.unpack_from("<H", p.read_bytes()[:20], 18)[0])

    archive = root.with_name("nfd-" + root.name.removeprefix("rootfs-") + ".tar")
    with tarfile.open(archive) as tar:
        manifest = json.load(tar.extractfile("manifest.json"))  # type: ignore[arg-type]
        config = json.load(tar.extractfile(manifest[0]["Config"]))  # type: ignore[arg-type]
    assert (config["os"], config["architecture"]) == ("linux", "arm64")
    pythons = [p for p in (root / "usr/bin").glob("python3.[0-9]*") if p.is_file() and not p.is_symlink()]
    assert pythons and all(machine(p) == 0xB7 for p in pythons), pythons
    exts = list((root / "opt/nfd/lib").glob("python3*/site-packages/**/*.so"))
    names = {p.name.split(".")[0] for p in exts}
    assert {"_re2", "orjson", "_message"} <= names, sorted(names)  # google-re2, orjson, protobuf's upb
    bad = [str(p.relative_to(root)) for p in exts if machine(p) != 0xB7]
    assert not bad, f"not aarch64: {bad}"


def test_upstream_arm64_build_is_probed(upstream: Path, tmp_path: Path) -> None:
    """The cross build is upstream's arm64 worker with cgo: the probe passes on it and refuses
    the same binary without the cgo cpu source's HWCAP reader."""
    from tests.e2e.tools import ARM64_CPUID_PROBE, MODULES, probe_cross_build

    module = next(m for m in MODULES if m.name == "upstream-nfd-image-arm64")
    probe_cross_build(module, upstream)
    data = upstream.read_bytes()
    assert data[:20][18] == 0xB7 and b"-extldflags=-static" in data
    stripped = tmp_path / "nfd-worker"
    stripped.write_bytes(data.replace(ARM64_CPUID_PROBE, b"x" * len(ARM64_CPUID_PROBE)))
    with pytest.raises(BuildError, match="the arm64 cpu source"):
        probe_cross_build(module, stripped)


@pytest.mark.parametrize("argv", [["nfd-master", "-h"], ["nfd-gc", "-h"], ["nfd-topology-updater", "-h"],
                                  ["kubectl-nfd", "--help"], ["nfd", "compat", "--help"]], ids=lambda a: a[0])
def test_entry_points_start(root: Path, argv: list[str]) -> None:
    """The image's other entry points import everything they load at start, on arm64."""
    proc = emulation.run_in_root(root, argv, env=arm64.IMAGE_ENV, timeout=120)
    assert proc.returncode == 0 and "usage" in (proc.stdout + proc.stderr).lower(), proc.stderr[-2000:]


@pytest.mark.parametrize("cpu", CPUS)
def test_worker_on_this_host_matches_upstream(root: Path, upstream: Path, kubeconfig: Path, cpu: str) -> None:
    """This machine's /sys, /proc, /boot, /etc/os-release and /lib at /host-*: nfd-worker's and
    `nfd export labels`' labels are upstream's, and the CPU flags are the emulated CPU's HWCAPs."""
    r = Runner(root, Path("/"), cpu, upstream, kubeconfig)
    ours, theirs, exported, caps = r.ours(), r.upstream(), r.export(), r.hwcaps()
    _log(f"arm64 ({cpu}) on this host: {len(ours)} labels ours, {len(theirs)} upstream's; "
         + ", ".join(f"{k} {v:.1f}s" for k, v in r.times.items()))
    _compare(ours, theirs)
    assert exported == ours
    assert _cpuid_flags(ours) == caps and caps
    assert ours[PREFIX + "kernel-version.full"] == Path("/proc/sys/kernel/osrelease").read_text().strip()


def test_worker_on_gb200_tree_matches_upstream(root: Path, upstream: Path, kubeconfig: Path) -> None:
    """The GB200 fixture tree at /host-* (its sysfs, boot config, os-release, kernel release):
    the same labels as upstream's worker gives there."""
    r = Runner(root, GB200, "neoverse-n1", upstream, kubeconfig)
    ours, theirs = r.ours(), r.upstream()
    _log(f"arm64 on the GB200 tree: {len(ours)} labels ours, {len(theirs)} upstream's; "
         + ", ".join(f"{k} {v:.1f}s" for k, v in r.times.items()))
    _compare(ours, theirs)
    assert ours[PREFIX + "kernel-version.full"] == "6.8.0-1021-nvidia-64k"
    assert ours[PREFIX + "cpu-model.vendor_id"] == "ARM"  # neoverse-n1's MIDR, read with mrs by both


def test_export_host_root_gb200_same_on_arm64_and_x86(root: Path, upstream: Path, kubeconfig: Path) -> None:
    """`nfd export labels --host-root` of the GB200 tree (its cpuid.json: Neoverse V2's HWCAPs)
    prints the same labels under emulation as natively on this x86-64 machine."""
    r = Runner(root, Path("/nonexistent"), "max", upstream, kubeconfig)
    arm = r.run("nfd export labels --host-root", ["nfd", "export", "labels", "--host-root", "/gb200"],
                binds=[(str(GB200), "/gb200")], stdout_only=True)
    native = subprocess.run([sys.executable, "-m", "nfd.cli", "export", "labels", "--host-root", str(GB200)],
                            capture_output=True, text=True, check=True, timeout=120).stdout
    arm_labels = sorted(arm.splitlines())
    assert arm_labels == sorted(native.splitlines()) and len(arm_labels) > 50
    assert {PREFIX + "cpu-cpuid.SVE2=true", PREFIX + "cpu-cpuid.BTI=true"} <= set(arm_labels)
    assert PREFIX + "cpu-cpuid.SM4=true" not in arm_labels  # not a Neoverse V2 HWCAP


#: RE2 (google-re2's aarch64 wheel) on both sides: the label whitelist and an InRegexp rule
REGEXP_CONFIG = r"""
core:
  labelWhiteList: '^(cpu-cpuid\.(SVE.*|ASIMD.*)|kernel-version\..*|re2-.*)$'
sources:
  custom:
    - name: re2 rule
      labels: {re2-kernel: "true"}
      matchFeatures:
        - feature: kernel.version
          matchExpressions:
            major: {op: InRegexp, value: ["^[0-9]+$"]}
        - feature: cpu.cpuid
          matchExpressions:
            SVE2: {op: Exists}
"""


def test_worker_config_with_regexps_matches_upstream(root: Path, upstream: Path, kubeconfig: Path,
                                                     tmp_path: Path) -> None:
    """A worker config whose label whitelist and custom rule are Go regexps: the same labels."""
    conf = tmp_path / "nfd-worker.conf"
    conf.write_text(REGEXP_CONFIG)
    r = Runner(root, Path("/"), "max", upstream, kubeconfig)
    r.binds.append((str(conf), "/etc/kubernetes/node-feature-discovery/nfd-worker.conf"))
    ours, theirs = r.ours(), r.upstream("/etc/kubernetes/node-feature-discovery/nfd-worker.conf")
    _log(f"arm64 with a regexp config: {len(ours)} labels ours, {len(theirs)} upstream's")
    _compare(ours, theirs)
    assert ours["re2-kernel"] == "true" and PREFIX + "cpu-cpuid.SVE2" in ours
    assert not [k for k in ours if k.startswith(PREFIX + "cpu-model.") or k.startswith(PREFIX + "cpu-cpuid.AES")]


def test_worker_publishes_the_nodefeature_upstream_publishes(root: Path, upstream: Path, kubeconfig: Path,
                                                              kube: KubeCluster, namespace: str,
                                                              tmp_path: Path) -> None:
    """Publishing from arm64 to the test kube-apiserver (TLS, HTTP/2 client, orjson, all from
    the image's aarch64 wheels and Debian's arm64 Python): each worker's one-shot NodeFeature
    carries the labels and the features the other's does (less v0.17.3's version gap)."""
    kc = Path(write_kubeconfig(tmp_path / "admin.kubeconfig", server=kube.server, ca_file="/etc/nfd-test/ca.crt",
                               token=kube.admin_token, user="admin"))
    r = Runner(root, Path("/"), "neoverse-n1", upstream, kubeconfig)
    r.binds += [(kube.ca_file, "/etc/nfd-test/ca.crt"), (str(kc), "/etc/nfd-test/admin.kubeconfig")]
    names = {"ours": kube.unique_name("arm64-ours"), "upstream": kube.unique_name("arm64-upstream")}
    env = {"KUBERNETES_NAMESPACE": namespace}
    r.run("nfd-worker publishing", ["nfd-worker", "-oneshot", "-kubeconfig", "/etc/nfd-test/admin.kubeconfig"],
          env={**env, "NODE_NAME": names["ours"]}, host_network=True)
    r.run("upstream publishing", [arm64.UPSTREAM_IN_ROOT, "-oneshot", "-kubeconfig", "/etc/nfd-test/admin.kubeconfig",
                                  "-config", "/nonexistent.conf"], env={**env, "NODE_NAME": names["upstream"]},
          host_network=True)
    nf = {k: kube.get(f"/apis/nfd.k8s-sigs.io/v1alpha1/namespaces/{namespace}/nodefeatures/{n}")
          for k, n in names.items()}
    _log(f"arm64 NodeFeatures: {len(nf['ours']['spec']['labels'])} labels ours, "
         f"{len(nf['upstream']['spec']['labels'])} upstream's; " + ", ".join(f"{k} {v:.1f}s" for k, v in r.times.items()))
    for k, n in names.items():
        assert nf[k]["metadata"]["labels"]["nfd.node.kubernetes.io/node-name"] == n
    _compare(nf["ours"]["spec"]["labels"], nf["upstream"]["spec"]["labels"])
    ours, theirs = (_v0173_features(nf[k]["spec"]["features"]) for k in names)
    assert ours == theirs
    assert "ASIMD" in ours["flags"]["cpu.cpuid"]["elements"]


def _v0173_features(features: dict[str, Any]) -> dict[str, Any]:
    """The features less what v0.17.3 does not have and upstream's HEAD (76e6cc8, which nfd
    follows; tests/unit/sources/parity) has: the kernel.kvm and memory.hugepages attributes,
    cpu.model's hypervisor, network devices' mtu; and less the node name itself and the two
    attributes only nfd's pci.device carries (numa_node, pcie_root: docs/compatibility.md)."""
    out = copy.deepcopy(features)
    for name in ("kernel.kvm", "memory.hugepages"):
        out["attributes"].pop(name, None)
    out["attributes"]["cpu.model"]["elements"].pop("hypervisor", None)
    out["attributes"]["system.name"]["elements"].pop("nodename", None)
    for name in ("network.device", "network.virtual"):
        for inst in out["instances"].get(name, {}).get("elements", []):
            inst["attributes"].pop("mtu", None)
    for inst in out["instances"].get("pci.device", {}).get("elements", []):
        for attr in ("numa_node", "pcie_root"):
            inst["attributes"].pop(attr, None)
    return out
