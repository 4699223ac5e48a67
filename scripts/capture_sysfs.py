#!/usr/bin/env python3
"""Capture the host files nfd's feature sources read into a small fixture tree.

    python3 scripts/capture_sysfs.py OUT_DIR [--source-root /]

Copies only the files the sources read (a few hundred at most), as plain files and directories
(sysfs symlinks are resolved, so the tree is portable), plus ``cpuid.json`` with the CPUID leaves
the cpu source decodes. Identifiers are scrubbed: DMI serials/UUIDs/asset tags, USB serial
numbers, APIC ids in CPUID, hostnames; MAC addresses and other per-device ids are never read.
"""

from __future__ import annotations

import argparse
import glob
import gzip
import json
import os
import platform
import sys

SCRUB = "scrubbed"
DMI_SCRUB = {"board_asset_tag", "chassis_asset_tag", "product_serial", "product_uuid", "board_serial",
             "chassis_serial"}

# glob patterns of host files to copy, relative to the root
PATTERNS = [
    "sys/bus/pci/devices/*/class", "sys/bus/pci/devices/*/vendor", "sys/bus/pci/devices/*/device",
    "sys/bus/pci/devices/*/subsystem_vendor", "sys/bus/pci/devices/*/subsystem_device",
    "sys/bus/pci/devices/*/sriov_totalvfs", "sys/bus/pci/devices/*/sriov_numvfs",
    "sys/bus/pci/devices/*/iommu_group/type", "sys/bus/pci/devices/*/iommu/intel-iommu/version",
    "sys/bus/cpu/devices/*/topology/thread_siblings_list", "sys/bus/cpu/devices/*/topology/physical_package_id",
    "sys/bus/cpu/devices/*/cpufreq/base_frequency",
    "sys/devices/system/cpu/cpuidle/current_driver", "sys/module/intel_idle/parameters/max_cstate",
    "sys/devices/system/cpu/intel_pstate/status", "sys/devices/system/cpu/intel_pstate/no_turbo",
    "sys/devices/system/cpu/cpufreq/policy*/affected_cpus", "sys/devices/system/cpu/cpufreq/policy*/scaling_governor",
    "sys/devices/system/cpu/cpu0/regs/identification/midr_el1",
    "sys/devices/cpu_atom/cpus", "sys/devices/cpu_core/cpus",
    "sys/module/kvm_intel/parameters/tdx", "sys/module/kvm_amd/parameters/sev*",
    "sys/fs/cgroup/misc.capacity", "sys/fs/selinux/enforce", "sys/fs/resctrl/info/L3/num_closids",
    "sys/kernel/mm/hugepages/*/nr_hugepages",
    "sys/bus/nd/devices/*/devtype", "sys/bus/nd/devices/*/mode",
    "sys/class/net/*/operstate", "sys/class/net/*/speed", "sys/class/net/*/mtu",
    "sys/class/net/*/device/sriov_numvfs", "sys/class/net/*/device/sriov_totalvfs",
    "sys/block/*/queue/rotational", "sys/block/*/queue/dax", "sys/block/*/queue/nr_zones",
    "sys/block/*/queue/zoned",
    "sys/bus/usb/devices/*/bDeviceClass", "sys/bus/usb/devices/*/idVendor", "sys/bus/usb/devices/*/idProduct",
    "sys/bus/usb/devices/*/serial", "sys/bus/usb/devices/*/*/bInterfaceClass",
    "sys/devices/virtual/dmi/id/*",
    "proc/sys/kernel/osrelease", "proc/modules", "proc/swaps",
    "etc/os-release",
]
# directories whose mere existence matters
DIRS = ["sys/bus/node/devices/*", "sys/class/net/*/device", "sys/devices/virtual/misc/kvm", "sys/fs",
        "sys/devices/system/cpu/cpuidle", "sys/devices/system/cpu/intel_pstate", "sys/bus/nd/devices/*"]


def _copy(src_root: str, out: str, rel: str) -> None:
    src = os.path.join(src_root, rel)
    if not os.path.isfile(src):
        return
    try:
        with open(src, "rb") as f:
            data = f.read(1 << 20)
    except OSError:
        return  # write-only or unreadable attributes are skipped
    name = os.path.basename(rel)
    if rel.startswith("sys/devices/virtual/dmi/id/") and name in DMI_SCRUB:
        data = SCRUB.encode() + b"\n"
    elif rel.startswith("sys/devices/virtual/dmi/id/") and name in ("modalias", "uevent"):
        return
    elif rel.startswith("sys/bus/usb/devices/") and name == "serial":
        data = SCRUB.encode() + b"\n"
    dst = os.path.join(out, rel)
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    with open(dst, "wb") as f:
        f.write(data)


def _scrub_cpuid(dump: dict) -> dict:
    leaves = dump["leaves"]
    if "0x1:0" in leaves:
        leaves["0x1:0"][1] &= 0x00FFFFFF  # initial APIC id
    for key in ("0xb:0", "0xb:1", "0x8000001e:0"):
        if key in leaves:
            leaves[key][3] = 0  # x2APIC id
    return dump


def capture(src_root: str, out: str) -> int:
    count = 0
    for pattern in PATTERNS:
        for path in sorted(glob.glob(os.path.join(glob.escape(src_root), pattern))):
            _copy(src_root, out, os.path.relpath(path, src_root))
            count += 1
    for pattern in DIRS:
        for path in sorted(glob.glob(os.path.join(glob.escape(src_root), pattern))):
            if os.path.isdir(path):
                os.makedirs(os.path.join(out, os.path.relpath(path, src_root)), exist_ok=True)
    osrelease_path = os.path.join(src_root, "proc/sys/kernel/osrelease")
    ver = ""
    if os.path.exists(osrelease_path):
        with open(osrelease_path) as f:
            ver = f.read().strip()
    # kernel config: keep it compressed, as /proc/config.gz
    for rel in ("proc/config.gz", f"boot/config-{ver}"):
        src = os.path.join(src_root, rel)
        if os.path.isfile(src):
            with gzip.open(src) if rel.endswith(".gz") else open(src, "rb") as fin:
                raw = fin.read()
            os.makedirs(os.path.join(out, "proc"), exist_ok=True)
            with gzip.GzipFile(os.path.join(out, "proc/config.gz"), "wb", mtime=0) as fout:
                fout.write(raw)
            break
    builtin = os.path.join(src_root, f"lib/modules/{ver}/modules.builtin")
    if ver and os.path.isfile(builtin):
        _copy(src_root, out, os.path.relpath(builtin, src_root))
    if src_root == "/" and platform.machine() in ("x86_64", "AMD64"):
        sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
        from nfd.sources import cpuid

        dump = _scrub_cpuid(cpuid.dump_leaves(cpuid.native()))
        with open(os.path.join(out, "cpuid.json"), "w") as f:
            json.dump(dump, f, indent=1, sort_keys=True)
            f.write("\n")
    return count


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out")
    p.add_argument("--source-root", default="/")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    n = capture(args.source_root, args.out)
    files = sum(len(f) for _, _, f in os.walk(args.out))
    print(f"captured {files} files ({n} matched) into {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
