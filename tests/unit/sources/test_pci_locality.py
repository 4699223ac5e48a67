"""Where a PCI device sits: ``numa_node`` and ``pcie_root`` on ``pci.device`` (ours, issue 47),
and the GPUDirect RDMA rule of docs/rules.md on the ``gpu-server`` fixture and variants of it."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from sources_help import fixture_root

from nfd.api.features import Features
from nfd.hostpaths import HostPaths
from nfd.rules.engine import compile_nodefeaturerule, process_rule_sets
from nfd.sources import registry
from nfd.sources.base import DiscoveryContext

ROOT = Path(__file__).resolve().parents[3]
PCI_DEVICES = "sys/bus/pci/devices"
GPU, NIC = ("10de", "0302"), ("15b3", "0207")


def pci(root: str, raw_config: Any = None) -> tuple[Features, dict[str, str], DiscoveryContext]:
    src = registry.get("pci")
    cfg = src.parse_config(raw_config, path="sources.pci")
    ctx = DiscoveryContext(paths=HostPaths.under(root), node_name="node-1")
    f = src.discover(ctx, cfg)
    return f, src.labels(f, cfg, ctx), ctx


def placement(f: Features) -> list[tuple[str, str, str | None, str | None]]:
    return sorted((d["vendor"], d["class"], d.get("numa_node"), d.get("pcie_root")) for d in f.instances["pci.device"])


def docs_rule() -> dict[str, Any]:
    """The GPUDirect RDMA example of docs/rules.md, as written there."""
    text = (ROOT / "docs" / "rules.md").read_text()
    for block in re.findall(r"```yaml\n(.*?)```", text, re.S):
        if "name: gpudirect-rdma-numa" in block:
            obj: dict[str, Any] = yaml.safe_load(block)
            return obj
    raise AssertionError("docs/rules.md has no gpudirect-rdma-numa example")


def copy_host(tmp_path: Path) -> str:
    root = tmp_path / "root"
    shutil.copytree(fixture_root("gpu-server"), root, symlinks=True)
    return str(root)


def set_numa(root: str, bdf: str, value: str) -> None:
    # the entry is a link into sys/devices: write through it, as the kernel's file is there
    Path(root, PCI_DEVICES, bdf, "numa_node").write_text(value + "\n")


def matches(rule: dict[str, Any], f: Features) -> bool:
    res = process_rule_sets([compile_nodefeaturerule(rule)], f, node_name="node-1")
    assert res.errors == []
    (result,) = res.results
    return result.matched


def test_gpu_server_devices_carry_numa_node_and_pcie_root() -> None:
    f, labels, ctx = pci(fixture_root("gpu-server"))
    assert placement(f) == [
        ("1022", "0600", "0", "pci0000:00"),
        ("10de", "0302", "0", "pci0000:15"),
        ("10de", "0302", "0", "pci0000:64"),
        ("10de", "0302", "1", "pci0000:c9"),
        ("10de", "0302", "1", "pci0000:e2"),
        ("15b3", "0207", "0", "pci0000:15"),
        ("1a03", "0300", "0", "pci0000:00"),
    ]
    assert ctx.warnings == []
    # the labels stay upstream's: the new attributes are features only, and naming them as
    # label fields is ignored as upstream ignores any name but its five
    assert labels == {"0300_1a03.present": "true", "0302_10de.present": "true"}
    _, labels2, _ = pci(fixture_root("gpu-server"), {"deviceLabelFields": ["numa_node", "pcie_root"]})
    assert labels2 == labels


def test_docs_rule_matches_where_gpu_and_nic_share_a_numa_node(tmp_path: Path) -> None:
    rule = docs_rule()
    f, _, _ = pci(fixture_root("gpu-server"))
    assert matches(rule, f)
    # the same host with the two node-0 GPUs on node 1: the NIC (node 0) has no GPU beside it
    root = copy_host(tmp_path)
    for bdf in ("0000:17:00.0", "0000:65:00.0"):
        set_numa(root, bdf, "1")
    f, _, _ = pci(root)
    assert {(d["vendor"], d.get("numa_node")) for d in f.instances["pci.device"] if d["vendor"] in ("10de", "15b3")} \
        == {("10de", "1"), ("15b3", "0")}
    assert not matches(rule, f)
    # ... and with the NIC moved to node 1 as well, it matches again
    set_numa(root, "0000:31:00.0", "1")
    f, _, _ = pci(root)
    assert matches(rule, f)


def test_no_numa_affinity_is_no_attribute_and_never_a_shared_node(tmp_path: Path) -> None:
    """-1 (NUMA_NO_NODE) on every device: ``numa_node`` is left out, so the GPU and the NIC do
    not count as on one node, and the rule neither matches nor fails."""
    root = copy_host(tmp_path)
    for bdf in os.listdir(os.path.join(root, PCI_DEVICES)):
        set_numa(root, bdf, "-1")
    f, _, ctx = pci(root)
    assert all("numa_node" not in d and "pcie_root" in d for d in f.instances["pci.device"])
    assert ctx.warnings == []
    assert not matches(docs_rule(), f)


def test_pcie_root_variant_of_the_docs_rule(tmp_path: Path) -> None:
    """The docs' rule with ``pcie_root`` for ``numa_node``: the ConnectX-6 and the first H100 are
    under one root complex (pci0000:15); moving the NIC's link to another root breaks the pair."""
    rule = yaml.safe_load(yaml.safe_dump(docs_rule()).replace("numa_node", "pcie_root"))
    f, _, _ = pci(fixture_root("gpu-server"))
    assert matches(rule, f)
    root = copy_host(tmp_path)
    link = os.path.join(root, PCI_DEVICES, "0000:31:00.0")
    os.unlink(link)
    os.symlink("../../../devices/pci0000:30/0000:30:01.1/0000:31:00.0", link)
    shutil.copytree(os.path.join(root, "sys/devices/pci0000:15/0000:15:03.1/0000:31:00.0"),
                    os.path.join(root, "sys/devices/pci0000:30/0000:30:01.1/0000:31:00.0"))
    f, _, _ = pci(root)
    assert ("15b3", "0207", "0", "pci0000:30") in placement(f)
    assert not matches(rule, f)


@pytest.mark.parametrize(("numa", "link", "want"), [
    ("3\n", "../../../devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0", {"numa_node": "3", "pcie_root": "pci0000:3a"}),
    # an Intel VMD domain hangs below its host root port: the root is still the first component
    ("0\n", "../../../devices/pci0000:00/0000:00:0e.0/pci10000:e0/10000:e0:06.0/0000:3b:00.0",
     {"numa_node": "0", "pcie_root": "pci0000:00"}),
    # Hyper-V's virtual PCI bus: no pci<domain>:<bus> root under /sys/devices
    ("0\n", "../../../devices/LNXSYSTM:00/LNXSYBUS:00/ACPI0004:00/VMBUS:00/abcd/pci3b00:00/3b00:00:00.0",
     {"numa_node": "0"}),
])
def test_locality_edge_cases(tmp_path: Path, numa: str, link: str, want: dict[str, str]) -> None:
    attrs = {"class": "0x030200", "vendor": "0x10de", "device": "0x2330", "subsystem_vendor": "0x10de",
             "subsystem_device": "0x16c1"}
    bdf = "0000:3b:00.0"
    where = tmp_path / "sys" / "devices" / link.split("devices/", 1)[1]
    (tmp_path / PCI_DEVICES).mkdir(parents=True)
    os.symlink(link, tmp_path / PCI_DEVICES / bdf)
    where.mkdir(parents=True)
    for k, v in attrs.items():
        (where / k).write_text(v + "\n")
    (where / "numa_node").write_text(numa)
    f, _, ctx = pci(str(tmp_path))
    (dev,) = f.instances["pci.device"]
    assert {k: dev[k] for k in ("numa_node", "pcie_root") if k in dev} == want
    assert ctx.warnings == []


def test_absolute_link_names_the_root(tmp_path: Path) -> None:
    """An absolute link names the host's /sys, mounted elsewhere here (``/host-sys``): the root
    is read from the link's text, never from this machine's /sys."""
    from nfd.sources.pci import pcie_root

    link = tmp_path / PCI_DEVICES / "0000:3b:00.0"
    link.parent.mkdir(parents=True)
    os.symlink("/sys/devices/pci0000:b2/0000:b2:00.0/0000:3b:00.0", link)
    ctx = DiscoveryContext(paths=HostPaths.under(str(tmp_path)), node_name="node-1")
    assert pcie_root(ctx, str(link)) == "pci0000:b2"
    os.unlink(link)
    os.symlink("/sys/devices/platform/soc/3b00.pcie", link)
    assert pcie_root(ctx, str(link)) is None


def test_numa_node_only_where_the_kernel_names_one(tmp_path: Path) -> None:
    """Plain directories (a copied tree: no root), numa_node 2, -1 (NUMA_NO_NODE), not an
    integer, and no file at all (a kernel without NUMA): only the first has the attribute."""
    attrs = {"class": "0x020000", "vendor": "0x8086", "subsystem_vendor": "0x8086", "subsystem_device": "0x0001"}
    for i, numa in enumerate(["2\n", "-1\n", "x\n", None]):
        d = tmp_path / PCI_DEVICES / f"0000:0{i}:00.0"
        d.mkdir(parents=True)
        for k, v in {**attrs, "device": f"0x000{i}"}.items():
            (d / k).write_text(v + "\n")
        if numa is not None:
            (d / "numa_node").write_text(numa)
    f, _, ctx = pci(str(tmp_path))
    assert [(d["device"], d.get("numa_node"), d.get("pcie_root")) for d in f.instances["pci.device"]] == [
        ("0000", "2", None), ("0001", None, None), ("0002", None, None), ("0003", None, None)]
    assert ctx.warnings == []
