"""Every fixture host: labels equal the hand-written expectations, and key features are right."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from sources_help import FIXTURES, MODELS, UPSTREAM_PCI, fixture_ctx, fixture_root

from nfd.sources import registry
from nfd.sources.discovery import compute_labels, discover

NO_NVML = ["all", "-nvml"]


def _labels(name: str) -> dict[str, str]:
    ctx = fixture_ctx(name)
    feats = discover(ctx, registry.resolve(NO_NVML, kind="feature"), {}).merged()
    return compute_labels(feats, registry.resolve(NO_NVML, kind="label"), {}, ctx)


def _features(name: str, sources: list[str] | None = None):
    ctx = fixture_ctx(name)
    return discover(ctx, sources or registry.resolve(NO_NVML, kind="feature"), {}).merged()


def _expected(name: str) -> dict[str, str]:
    out = {}
    with open(os.path.join(FIXTURES, name, "expected-labels.txt")) as f:
        for line in f:
            k, _, v = line.rstrip("\n").partition("=")
            out[k] = v
    return out


@pytest.mark.parametrize("name", MODELS)
def test_labels_match_expected(name):
    assert _labels(name) == _expected(name)


def test_export_labels_cli_on_fixture():
    out = subprocess.run(
        [sys.executable, "-m", "nfd.cli", "export", "labels", "--sources", "all,-nvml",
         "--host-root", fixture_root("gpu-server")],
        capture_output=True, text=True, check=True,
    ).stdout
    assert dict(line.split("=", 1) for line in out.splitlines()) == _expected("gpu-server")
    keys = [line.split("=", 1)[0] for line in out.splitlines()]
    assert keys == sorted(keys)


def test_export_features_json_shape():
    out = subprocess.run(
        [sys.executable, "-m", "nfd.cli", "export", "features", "--sources", "memory,kernel",
         "--host-root", fixture_root("hugepages-nvdimm"), "-o", "json"],
        capture_output=True, text=True, check=True,
    ).stdout
    obj = json.loads(out)
    assert set(obj) == {"flags", "attributes", "instances"}
    assert obj["attributes"]["memory.hugepages"]["elements"] == {
        "enabled": "true", "hugepages-2Mi": "1024", "hugepages-1Gi": "4"}
    assert obj["flags"]["kernel.loadedmodule"]["elements"] == {"nd_pmem": {}, "dax_pmem": {}, "device_dax": {}}
    names = [i["attributes"]["name"] for i in obj["instances"]["memory.nv"]["elements"]]
    assert names == ["dax1.0", "namespace0.0", "ndbus0", "region0"]
    assert not any(k.startswith(("cpu.", "pci.")) for kind in obj.values() for k in kind)


def test_export_features_yaml():
    import yaml

    out = subprocess.run(
        [sys.executable, "-m", "nfd.cli", "export", "features", "--sources", "system",
         "--host-root", fixture_root("arm-host"), "-o", "yaml", "--node-name", "n9"],
        capture_output=True, text=True, check=True,
    ).stdout
    obj = yaml.safe_load(out)
    assert obj["attributes"]["system.name"]["elements"] == {"nodename": "n9"}
    assert obj["attributes"]["system.osrelease"]["elements"]["VERSION_ID.major"] == "12"


def test_gpu_server_features():
    f = _features("gpu-server")
    assert f.attributes["memory.numa"] == {"is_numa": "true", "node_count": "2"}
    assert f.attributes["cpu.topology"] == {"hardware_multithreading": "true", "socket_count": "2"}
    sec = f.attributes["cpu.security"]
    assert sec["sev.asids"] == "509" and sec["sev.encrypted_state_ids"] == "10"
    assert "sev.snp.enabled" not in sec
    gpus = [d for d in f.instances["pci.device"] if d["vendor"] == "10de"]
    assert len(gpus) == 4 and all(d["class"] == "0302" and d["iommu_group/type"] == "DMA-FQ" for d in gpus)
    assert f.attributes["local.label"] == {"vendor.example.com/rack": "r12"}
    assert f.attributes["local.feature"] == {"vendor.example.com/rack": "r12", "internal.key": "1"}
    assert {"ext4", "nvme-core", "nvidia", "ib_uverbs"} <= f.flags["kernel.enabledmodule"]
    assert f.flags["kernel.loadedmodule"] == {"nvidia_uvm", "nvidia", "mlx5_ib", "ib_uverbs", "rdma_ucm", "mlx5_core"}
    cfg = f.attributes["kernel.config"]
    assert cfg["LOCALVERSION"] == "" and cfg["DEFAULT_HOSTNAME"] == "(none)" and cfg["MLX5_CORE"] == "m"
    assert "PREEMPT" not in cfg
    assert f.attributes["kernel.kvm"] == {"enabled": "true"}
    assert f.attributes["kernel.selinux"] == {"enabled": "false"}
    assert f.attributes["memory.swap"] == {"enabled": "false"}
    assert f.instances["memory.nv"] == []
    assert f.attributes["cpu.cstate"] == {}
    assert f.attributes["system.dmiid"] == {"sys_vendor": "Supermicro", "product_name": "AS -8125GS-TNHR"}
    assert f.attributes["system.name"] == {"nodename": "node-1"}
    net = f.instances["network.device"]
    assert net == [{"name": "ibp49s0", "operstate": "up", "speed": "200000", "mtu": "4092",
                    "sriov_totalvfs": "8", "sriov_numvfs": "0"}]
    assert f.instances["network.virtual"] == [{"name": "lo", "operstate": "unknown", "mtu": "65536"}]


def test_hybrid_cpu_features():
    f = _features("hybrid-cpu")
    assert {"HYBRID_CPU", "X86_64_V3", "AVXVNNI"} <= f.flags["cpu.cpuid"]
    assert "X86_64_V4" not in f.flags["cpu.cpuid"] and "AVX512F" not in f.flags["cpu.cpuid"]
    assert f.attributes["cpu.pstate"] == {"status": "active", "turbo": "true", "scaling_governor": "powersave"}
    assert f.attributes["cpu.sst"] == {}  # base 3200 MHz is not above the nominal 3200 MHz
    usb = f.instances["usb.device"]
    logitech = [d for d in usb if d["vendor"] == "046d"]
    assert [d["class"] for d in logitech] == ["03", "03", "fe"]  # one per interface, duplicates kept
    assert all(d["serial"] == "scrubbed" for d in logitech)
    assert f.attributes["kernel.version"]["full"] == "6.8.0-rc3"
    assert "kernel.enabledmodule" not in f.flags  # no modules.builtin on this host


def test_sriov_host_features():
    f = _features("sriov-host")
    names = [d["name"] for d in f.instances["network.device"]]
    assert names == ["ens1f0", "ens1f0v0", "ens1f1"]
    assert "bonding_masters" not in [d["name"] for d in f.instances["network.virtual"]]
    pf = [d for d in f.instances["pci.device"] if d.get("sriov_numvfs")]
    assert pf == [] or all("sriov_totalvfs" in d for d in pf)
    assert {d["device"] for d in f.instances["pci.device"] if "sriov_totalvfs" in d} == {"1593", "4940"}


def test_arm_host_features():
    f = _features("arm-host", ["cpu"])
    assert f.attributes["cpu.model"] == {"vendor_id": "ARM", "family": "63", "id": "53441", "hypervisor": "none"}
    assert "X86_64_V1" not in f.flags["cpu.cpuid"] and "SVE" not in f.flags["cpu.cpuid"]
    assert f.attributes["cpu.rdt"] == {}


def test_kvm_guest_capture_matches_this_machine_if_same():
    """The capture is of a KVM guest: spot-check what the capture must hold."""
    f = _features("kvm-guest")
    assert f.attributes["cpu.model"]["hypervisor"] == "kvm"
    assert "HYPERVISOR" in f.flags["cpu.cpuid"]
    assert f.attributes["kernel.version"]["major"] == "6"
    assert f.attributes["system.osrelease"]["ID"] == "debian"


# --- upstream's own PCI fixture ----------------------------------------------------------------

upstream = pytest.mark.skipif(not os.path.isdir(UPSTREAM_PCI), reason="upstream PCI fixture not present")


@upstream
def test_upstream_pci_fixture_via_cli():
    out = subprocess.run(
        [sys.executable, "-m", "nfd.cli", "export", "features", "--sources", "pci", "--host-root", UPSTREAM_PCI,
         "-o", "json"],
        capture_output=True, text=True, check=True,
    ).stdout
    devs = [e["attributes"] for e in json.loads(out)["instances"]["pci.device"]["elements"]]
    assert len(devs) == 10
    for d in devs:
        assert {"class", "vendor", "device", "subsystem_vendor", "subsystem_device"} <= set(d)
        assert len(d["class"]) == 4
        assert not any(v.startswith("0x") or v != v.strip() for v in d.values())
    out = subprocess.run(
        [sys.executable, "-m", "nfd.cli", "export", "labels", "--sources", "pci", "--host-root", UPSTREAM_PCI],
        capture_output=True, text=True, check=True,
    ).stdout
    assert out.splitlines() == [
        "feature.node.kubernetes.io/pci-0300_1a03.present=true",
        "feature.node.kubernetes.io/pci-0b40_8086.present=true",
        "feature.node.kubernetes.io/pci-0b40_8086.sriov.capable=true",
    ]


@upstream
def test_upstream_pci_fixture_custom_config():
    from nfd.hostpaths import HostPaths
    from nfd.sources.base import DiscoveryContext

    src = registry.get("pci")
    ctx = DiscoveryContext(paths=HostPaths.under(UPSTREAM_PCI))
    cfg = src.parse_config({"deviceClassWhitelist": ["0c"], "deviceLabelFields": ["foo", "class"]}, path="sources.pci")
    f = src.discover(ctx, cfg)
    assert src.labels(f, cfg, ctx) == {"0c80.present": "true"}
    assert any("0000:00:1f.2" in w and "incomplete" in w for w in ctx.warnings)


def test_export_with_worker_config(tmp_path):
    conf = tmp_path / "nfd-worker.conf"
    conf.write_text("core:\n  labelWhiteList: '^(pci|usb)-'\nsources:\n  pci:\n    deviceLabelFields: [vendor, device]\n"
                    "  usb:\n    deviceClassWhitelist: ['03']\n")
    out = subprocess.run(
        [sys.executable, "-m", "nfd.cli", "export", "labels", "--sources", "pci,usb", "-o", "json",
         "--host-root", fixture_root("hybrid-cpu"), "--config", str(conf)],
        capture_output=True, text=True, check=True,
    ).stdout
    assert json.loads(out) == {
        "feature.node.kubernetes.io/pci-8086_4680.present": "true",
        "feature.node.kubernetes.io/usb-03_046d_c52b.present": "true",
    }
    conf.write_text("sources:\n  pci:\n    deviceLabelFields: vendor\n")
    bad = subprocess.run(
        [sys.executable, "-m", "nfd.cli", "export", "labels", "--host-root", fixture_root("hybrid-cpu"),
         "--config", str(conf)], capture_output=True, text=True,
    )
    assert bad.returncode == 2 and "sources.pci.deviceLabelFields" in bad.stderr
