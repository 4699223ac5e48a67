"""Realistic heavy NodeFeatures (~130 kB), as nfd-worker publishes them on large servers.

Upstream's #1802 reports ~130 kB per NodeFeature at the defaults: a distribution kernel's
complete ``kernel.config``, hundreds of PCI functions (CPU uncore devices, SR-IOV virtual
functions, GPUs, NVMe drives), the kernel's built-in and loaded modules, cpuid flags. This
module builds such a host as a host-root tree and runs the worker's own feature sources on it
(the same code as ``nfd export features --host-root``), so the content has exactly the
worker's format:

- the CPU (cpuid.json), os-release, NUMA and network files come from the repository's host
  fixtures (tests/fixtures/sysfs: gpu-server, sriov-host, kvm-guest, hybrid-cpu);
- ``kernel.config`` is the real kernel configuration captured in the kvm-guest fixture
  (~1,750 options), varied per profile (a few dozen options switched between y and m, the
  kernel release);
- ``kernel.enabledmodule``: the modules built into that kernel (one per built-in tristate
  option of the configuration) and the loaded ones (``/proc/modules``);
- ``pci.device``: a 2-socket server's inventory with real vendor/device IDs: the CPUs' uncore
  functions, root ports, the chipset, NVMe drives, NICs with their SR-IOV virtual functions,
  and per profile GPUs and NVSwitches (profile 0), E810 NICs with 64 VFs each (profile 1),
  an NVMe storage server (profile 2), a lab host with ~100 USB serial adapters and
  accelerators (profile 3); ``sriov_vfs`` scales the number of virtual functions (the size);
- ``usb.device``: the BMC's virtual devices and hubs, plus profile 3's USB devices.
"""

from __future__ import annotations

import gzip
import json
import random
import shutil
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "sysfs"
BASES = ("gpu-server", "sriov-host", "kvm-guest", "hybrid-cpu")
RELEASES = ("6.8.0-48-generic", "5.14.0-427.13.1.el9_4.x86_64", "6.8.0-51-generic", "6.1.0-27-amd64")

# (vendor, device, class, subsystem_vendor, subsystem_device)
AMD_UNCORE = [("1022", d, c, "1022", "0000") for d, c in (
    ("14a4", "0600"), ("14a5", "0806"), ("14a6", "0600"), ("14a7", "0604"), ("14ab", "0604"),
    ("14ad", "1300"), ("14ae", "1300"), ("14af", "1300"), ("14b0", "0600"), ("14b1", "0600"),
    ("14b2", "0600"), ("14b3", "0600"), ("14b4", "0600"), ("14b5", "0600"), ("14b6", "0600"),
    ("14b7", "0600"), ("14ac", "1300"), ("14dc", "1080"), ("14a8", "1300"), ("14a9", "1080"))]
INTEL_UNCORE = [("8086", d, c, "8086", "0000") for d, c in (
    ("09a2", "0880"), ("09a4", "0880"), ("09a3", "0880"), ("0998", "0600"), ("347a", "0604"),
    ("344c", "0880"), ("344d", "0880"), ("344e", "0880"), ("344f", "0880"), ("3450", "0880"),
    ("3451", "0880"), ("3452", "0880"), ("3455", "0880"), ("3440", "0880"), ("3441", "0880"),
    ("3442", "0880"), ("3443", "0880"), ("3445", "0880"), ("3446", "0880"), ("3447", "0880"),
    ("3448", "0880"), ("3449", "0880"), ("344a", "1101"), ("344b", "0880"), ("3456", "0880"),
    ("3457", "0880"), ("3458", "0880"), ("3459", "0880"), ("345a", "0880"), ("345b", "0880"),
    ("345c", "0880"), ("345d", "0880"), ("3460", "0880"), ("3461", "0880"), ("3462", "0880"),
    ("3463", "0880"), ("3464", "0880"), ("3465", "0880"), ("3466", "0880"), ("3467", "0880"),
    ("3468", "0880"), ("3469", "0880"), ("346a", "0880"), ("346b", "0880"), ("346c", "0880"),
    ("346d", "0880"), ("346e", "0880"), ("346f", "0880"), ("3470", "0880"), ("3471", "0880"),
    ("3472", "0880"), ("3473", "1101"), ("3474", "1101"), ("3475", "0880"), ("3476", "0880"))]
INTEL_PCH = [("8086", d, c, "15d9", "1c48") for d, c in (
    ("a1c8", "0601"), ("a1a0", "0580"), ("a1a1", "0c80"), ("a1a2", "0580"), ("a1a4", "0c80"),
    ("a1af", "0c03"), ("a1b1", "1180"), ("a1ba", "0780"), ("a1bc", "0101"), ("a1d2", "0106"),
    ("a1e7", "0604"), ("a1ed", "ff00"), ("a1d0", "0580"), ("a1f8", "0c05"), ("a1a3", "0c05"))]
ASPEED = [("1a03", "1150", "0604", "1a03", "1150"), ("1a03", "2000", "0300", "15d9", "1c48")]
NVME = [("144d", "a80a", "0108", "144d", "a801"), ("8086", "0b60", "0108", "8086", "8008"),
        ("1344", "51c3", "0108", "1344", "2b00")]


def _pf_vf(pf: tuple[str, str, str, str, str], vf_device: str, vfs: int) -> list[tuple[str, str, str, str, str, int]]:
    out = [(*pf, vfs)]
    out += [(pf[0], vf_device, pf[2], pf[3], pf[4], -1)] * vfs
    return out


def inventory(p: int, *, sriov_vfs: int) -> list[tuple[str, str, str, str, str, int]]:
    """PCI functions of profile ``p``: (vendor, device, class, subsystem vendor, subsystem device,
    sriov_totalvfs: -1 for none)."""
    dev: list[tuple[str, str, str, str, str, int]] = []
    uncore = AMD_UNCORE if p == 0 else INTEL_UNCORE
    for _socket in range(2):
        dev += [(*d, -1) for d in uncore] * (2 if p == 0 else 1)
    dev += [(*d, -1) for d in ([] if p == 0 else INTEL_PCH) + ASPEED]
    if p == 0:  # 8-GPU HGX server
        dev += [("10de", "2330", "0302", "10de", "16c1", -1)] * 8
        dev += [("10de", "22a3", "0680", "10de", "1796", -1)] * 4
        dev += [("1000", "c030", "0604", "1000", "100b", -1)] * 16  # PCIe switches
        dev += [("15b3", "1021", "0207", "15b3", "0041", -1)] * 8  # ConnectX-7 InfiniBand
        for _ in range(2):
            dev += _pf_vf(("15b3", "101d", "0200", "15b3", "0042"), "101e", sriov_vfs // 2)
        dev += [(*NVME[0], -1)] * 8
    elif p == 1:  # NFV host: E810 NICs with VFs
        for _ in range(4):
            dev += _pf_vf(("8086", "1593", "0200", "8086", "0002"), "1889", sriov_vfs)
        dev += [(*NVME[1], -1)] * 2
        dev += [("8086", "0d58", "0b40", "8086", "0000", -1)] * 2  # QAT
    elif p == 2:  # storage server
        dev += [(*NVME[2], -1)] * 24
        dev += [("1000", "c010", "0604", "1000", "a064", -1)] * 6
        for _ in range(2):
            dev += _pf_vf(("15b3", "101b", "0200", "15b3", "0007"), "101c", sriov_vfs // 2)
    else:  # lab / edge host: a few NICs, its USB devices below
        dev += _pf_vf(("8086", "1572", "0200", "8086", "0006"), "154c", sriov_vfs // 4)
        dev += [(*NVME[0], -1)] * 4
        dev += [("1b21", "2142", "0c03", "1b21", "2142", -1)] * 8  # USB 3.1 host controllers
    return dev


# (vendor, product, device class, interface classes)
USB_BMC = [("1d6b", "0002", "09", []), ("1d6b", "0003", "09", []), ("046b", "ff01", "09", []),
           ("046b", "ff10", "00", ["03", "03"]), ("046b", "ff20", "00", ["08"]), ("046b", "ffb0", "00", ["02", "0a"])]
USB_LAB = [("0403", "6001", "00", ["ff"]), ("067b", "2303", "00", ["ff"]), ("10c4", "ea60", "00", ["ff"]),
           ("18d1", "9302", "00", ["ff"]), ("1a6e", "089a", "00", ["ff"]), ("2109", "2817", "09", []),
           ("0bda", "8153", "00", ["ff"]), ("03e7", "2485", "00", ["ff"])]


def usb_devices(p: int) -> list[tuple[str, str, str, list[str]]]:
    out = list(USB_BMC)
    if p == 3:
        rnd = random.Random(3)
        out += [rnd.choice(USB_LAB) for _ in range(110)]
    return out


def _w(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def build_host(p: int, root: Path, *, sriov_vfs: int) -> None:
    """Host root of profile ``p`` under ``root`` (which must not exist)."""
    shutil.copytree(FIXTURES / BASES[p] / "root", root, symlinks=True)
    rel = RELEASES[p]
    for old in ("proc/config.gz",):
        (root / old).unlink(missing_ok=True)
    shutil.rmtree(root / "boot", ignore_errors=True)
    shutil.rmtree(root / "sys" / "bus" / "pci" / "devices", ignore_errors=True)
    shutil.rmtree(root / "sys" / "bus" / "usb" / "devices", ignore_errors=True)
    _w(root, "proc/sys/kernel/osrelease", rel + "\n")
    # the real kernel configuration of the kvm-guest capture, varied per profile
    with gzip.open(FIXTURES / "kvm-guest" / "root" / "proc" / "config.gz", "rt") as f:
        lines = f.read().splitlines()
    rnd = random.Random(1000 + p)
    out, builtin, modules = [], [], []
    for line in lines:
        if line.startswith("CONFIG_") and line.endswith("=y") and rnd.random() < 0.03 * (p + 1):
            line = line[:-1] + "m"
        out.append(line)
        if line.startswith("CONFIG_") and (line.endswith("=y") or line.endswith("=m")):
            mod = line[7:-2].lower()
            (builtin if line.endswith("=y") else modules).append(mod)
    out.append(f'CONFIG_LOCALVERSION="-{rel.split("-", 1)[1]}"')
    with gzip.open(root / "proc" / "config.gz", "wt") as f:
        f.write("\n".join(out) + "\n")
    _w(root, f"lib/modules/{rel}/modules.builtin", "".join(f"kernel/{m}/{m}.ko\n" for m in builtin))
    loaded = modules + ["nvme", "nvme_core", "xfs", "overlay", "br_netfilter", "nf_conntrack", "ip_tables",
                        "x_tables", "bonding", "tls", "vfio_pci", "vfio_iommu_type1", "irdma", "ice", "mlx5_core",
                        "mlx5_ib", "ib_core", "ib_uverbs", "rdma_cm", "nvidia", "nvidia_uvm", "nvidia_modeset"][:12 + 4 * p]
    _w(root, "proc/modules", "".join(f"{m} 16384 0 - Live 0x0000000000000000\n" for m in loaded))
    # PCI
    for i, (ven, devid, cls, sven, sdev, vfs) in enumerate(inventory(p, sriov_vfs=sriov_vfs)):
        d = f"sys/bus/pci/devices/0000:{i // 32:02x}:{(i % 32):02x}.0"
        _w(root, f"{d}/vendor", f"0x{ven}\n")
        _w(root, f"{d}/device", f"0x{devid}\n")
        _w(root, f"{d}/class", f"0x{cls}00\n")
        _w(root, f"{d}/subsystem_vendor", f"0x{sven}\n")
        _w(root, f"{d}/subsystem_device", f"0x{sdev}\n")
        _w(root, f"{d}/iommu_group/type", "DMA-FQ\n" if p != 1 else "identity\n")
        if vfs >= 0:
            _w(root, f"{d}/sriov_totalvfs", f"{vfs}\n")
    # USB
    for i, (ven, prod, cls, intfs) in enumerate(usb_devices(p)):
        d = f"sys/bus/usb/devices/{1 + i // 100}-{1 + i % 100}"
        _w(root, f"{d}/idVendor", f"{ven}\n")
        _w(root, f"{d}/idProduct", f"{prod}\n")
        _w(root, f"{d}/bDeviceClass", f"{cls}\n")
        _w(root, f"{d}/serial", f"{rnd.getrandbits(48):012X}\n")
        for j, ic in enumerate(intfs):
            _w(root, f"{d}/{1 + i // 100}-{1 + i % 100}:1.{j}/bInterfaceClass", f"{ic}\n")


def discover_host(root: Path) -> tuple[dict[str, Any], dict[str, str]]:
    """(features as NodeFeature spec.features, worker labels) of a host root, by the worker's sources."""
    import logging

    from nfd.hostpaths import HostPaths
    from nfd.sources import registry
    from nfd.sources.base import DiscoveryContext
    from nfd.sources.discovery import compute_labels, discover, parse_source_configs

    logging.getLogger("nfd.sources").setLevel(logging.CRITICAL)  # the fixtures lack a few files
    configs = parse_source_configs(None)
    ctx = DiscoveryContext(paths=HostPaths.detect(str(root)), node_name="x")
    feats = discover(ctx, registry.resolve(["all"], kind="feature"), configs).merged()
    labels = compute_labels(feats, registry.resolve(["all"], kind="label"), configs, ctx, whitelist=None)
    return feats.to_json(), dict(labels)


_CACHE: dict[tuple[int, int], tuple[dict[str, Any], dict[str, str]]] = {}


def profile(p: int, *, sriov_vfs: int) -> tuple[dict[str, Any], dict[str, str]]:
    key = (p, sriov_vfs)
    if key not in _CACHE:
        with tempfile.TemporaryDirectory(prefix="nfd-heavy-host-") as tmp:
            _CACHE[key] = _build_and_discover(p, Path(tmp) / "root", sriov_vfs)
    return _CACHE[key]


def _build_and_discover(p: int, root: Path, sriov_vfs: int) -> tuple[dict[str, Any], dict[str, str]]:
    build_host(p, root, sriov_vfs=sriov_vfs)
    return discover_host(root)


def size_kb(p: int, *, sriov_vfs: int) -> float:
    feats, labels = profile(p, sriov_vfs=sriov_vfs)
    return len(json.dumps({"features": feats, "labels": labels}, separators=(",", ":"))) / 1024


def vfs_for(target_kb: float, profiles: int) -> int:
    """The number of SR-IOV VFs that brings the profiles' mean size nearest ``target_kb`` (the size
    grows linearly with the VFs: two probes, then the one build used)."""
    lo, hi = 0, 128
    s_lo = sum(size_kb(p, sriov_vfs=lo) for p in range(profiles)) / profiles
    s_hi = sum(size_kb(p, sriov_vfs=hi) for p in range(profiles)) / profiles
    per_vf = (s_hi - s_lo) / (hi - lo)
    return max(0, round((target_kb - s_lo) / per_vf)) if per_vf > 0 else 0


if __name__ == "__main__":
    import sys

    sys.path.insert(0, str(REPO))
    vfs = vfs_for(float(sys.argv[1]) if len(sys.argv) > 1 else 130.0, 4)
    for p in range(4):
        feats, labels = profile(p, sriov_vfs=vfs)
        parts = {f"{g}/{k}": (len(json.dumps(v, separators=(",", ":"))) // 1024, len(v["elements"]))
                 for g in feats for k, v in feats[g].items() if len(json.dumps(v)) > 2048}
        print(f"profile {p} ({BASES[p]}, {vfs} VFs): {size_kb(p, sriov_vfs=vfs):.0f} kB, {len(labels)} labels; "
              f"kB/elements: {parts}")
