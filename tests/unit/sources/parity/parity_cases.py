"""The differential cases: host roots x worker configs, and what is host-dependent.

Shared by the test and by ``tests/oracles/sources_parity/regen_expected.py`` (which runs upstream's binary to refresh the
expected data), so both always agree on the case list and the filtering.
"""

from __future__ import annotations

import os
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
EXPECTED = os.path.join(HERE, "expected")
CONFIGS = os.path.join(HERE, "configs")
FIXTURES = os.path.abspath(os.path.join(HERE, "..", "..", "..", "fixtures", "sysfs"))
# shared conformance data, beside the repository (read at test time, never copied in)
UPSTREAM_PCI = os.path.abspath(os.path.join(HERE, "..", "..", "..", "..", "..", "shared", "fixtures", "upstream-pci", "rootfs-1"))
NODE_NAME = "parity-node"

MODELS = ["arm-host", "gpu-server", "hugepages-nvdimm", "hybrid-cpu", "kvm-guest", "sriov-host"]

#: (host, config or None)
CASES: list[tuple[str, str | None]] = (
    [(h, None) for h in [*MODELS, "edge-cases", "upstream-pci", "cpu-a", "cpu-b", "cpu-c", "cpu-d"]]
    + [("gpu-server", "pci1"), ("sriov-host", "pci1"), ("edge-cases", "pci1"),
       ("sriov-host", "pci2"), ("edge-cases", "pci2"), ("gpu-server", "pci3"), ("edge-cases", "pci4"),
       ("hybrid-cpu", "usb1"), ("edge-cases", "usb1"), ("edge-cases", "usb2"),
       ("gpu-server", "kernel1"), ("edge-cases", "kernel1"), ("gpu-server", "kernel2"),
       ("edge-cases", "custom1"), ("edge-cases", "scalars"),
       ("gpu-server", "wl"), ("edge-cases", "wl"), ("edge-cases", "wl2"),
       ("gpu-server", "cpu1"), ("sriov-host", "cpu1"), ("hybrid-cpu", "cpu2")]
)

#: x86 hosts whose cpuid.json was fed to upstream's CPUID library (klauspost/cpuid, with its
#: CPUID/XGETBV calls replaced by the fixture's answers), so their CPUID features are compared too
MODELLED_X86 = {"gpu-server", "hybrid-cpu", "sriov-host", "hugepages-nvdimm"}

#: features that come from the CPUID instruction: on other roots upstream reports the CPU it runs on
HOST_FEATURES = {("flags", "cpu.cpuid"), ("attributes", "cpu.cpuid"), ("attributes", "cpu.model")}
HOST_LABEL_PREFIXES = ("feature.node.kubernetes.io/cpu-cpuid.", "feature.node.kubernetes.io/cpu-model.")

#: labels we publish on purpose where upstream does not (docs/compatibility.md: hybrid CPUs)
DELIBERATE_EXTRA_LABELS = {
    "hybrid-cpu": {"feature.node.kubernetes.io/cpu-cpu_atom": "true",
                   "feature.node.kubernetes.io/cpu-cpu_core": "true"},
    "cpu-a": {"feature.node.kubernetes.io/cpu-cpu_atom": "true"},
}


#: pci.device attributes we add where sysfs has them (docs/compatibility.md: locality); upstream
#: reads neither, so they are compared by tests/unit/sources/test_pci_locality.py instead
DELIBERATE_EXTRA_PCI_ATTRIBUTES = ("numa_node", "pcie_root")


def case_id(host: str, config: str | None) -> str:
    return f"{host}@{config}" if config else host


def host_independent_features(obj: dict[str, Any], host: str) -> dict[str, Any]:
    out = {kind: dict(obj.get(kind) or {}) for kind in ("flags", "attributes", "instances")}
    pci = out["instances"].get("pci.device")
    if pci:
        out["instances"]["pci.device"] = {**pci, "elements": [
            {**e, "attributes": {k: v for k, v in e["attributes"].items() if k not in DELIBERATE_EXTRA_PCI_ATTRIBUTES}}
            for e in pci["elements"]]}
    if host not in MODELLED_X86:
        for kind, name in HOST_FEATURES:
            out[kind].pop(name, None)
    return out


def host_independent_labels(labels: dict[str, str], host: str) -> dict[str, str]:
    if host in MODELLED_X86:
        return dict(labels)
    return {k: v for k, v in labels.items() if not k.startswith(HOST_LABEL_PREFIXES)}
