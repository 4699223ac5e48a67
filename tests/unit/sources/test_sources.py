"""Per-source semantics on small scratch trees, bad input, and the labels pipeline."""

from __future__ import annotations

import gzip
import logging
import os
from datetime import UTC, datetime

import pytest

from nfd.api.errors import ValidationError
from nfd.api.features import Features
from nfd.hostpaths import HostPaths
from nfd.lang.goregex import compile_go
from nfd.sources import registry
from nfd.sources.base import DiscoveryContext
from nfd.sources.discovery import compute_labels, discover, parse_source_configs
from nfd.sources.kernel import parse_version
from nfd.sources.local import parse_feature_file
from nfd.sources.memory import quantity_kib


def ctx_for(root: str) -> DiscoveryContext:
    return DiscoveryContext(paths=HostPaths.under(root), node_name="n1")


def run(name: str, root: str, raw_config=None):
    src = registry.get(name)
    cfg = src.parse_config(raw_config, path=f"sources.{name}")
    ctx = ctx_for(root)
    f = src.discover(ctx, cfg)
    return f, src.labels(f, cfg, ctx), ctx


# --- kernel ---------------------------------------------------------------------------------

@pytest.mark.parametrize("raw,expected", [
    ("5.15.0-105-generic", ("5.15.0-105-generic", "5", "15", "0")),
    ("6.8.0-rc3+", ("6.8.0-rc3", "6", "8", "0")),
    ("4", ("4", "4", "", "")),
    ("3.10", ("3.10", "3", "10", "")),
    ("weird kernel!", ("weird_kernel", None, None, None)),  # upstream: only "full" when unparsable
    ("6.1.2.3", ("6.1.2.3", None, None, None)),
])
def test_kernel_version(raw, expected):
    v = parse_version(raw)
    assert (v["full"], v.get("major"), v.get("minor"), v.get("revision")) == expected


def test_kconfig_search_order_and_gzip(tree):
    tree("proc/sys/kernel/osrelease", "6.1.0\n")
    tree("boot/config-6.1.0", "CONFIG_PREEMPT=y\n")
    root = tree("usr/src/linux-6.1.0/.config", "CONFIG_NO_HZ=m\nCONFIG_CMDLINE=\"quiet splash\"\n")
    f, labels, _ = run("kernel", root)
    assert f.attributes["kernel.config"] == {"NO_HZ": "m", "CMDLINE": "quiet splash"}  # earlier location wins
    assert labels["config.NO_HZ"] == "true" and "config.PREEMPT" not in labels
    with gzip.open(os.path.join(root, "proc/config.gz"), "wb") as g:
        g.write(b"CONFIG_NO_HZ_FULL=y\n")
    f, labels, _ = run("kernel", root, {"configOpts": ["NO_HZ_FULL", "CMDLINE"]})
    assert f.attributes["kernel.config"] == {"NO_HZ_FULL": "y"}
    assert labels["config.NO_HZ_FULL"] == "true"
    f, _, _ = run("kernel", root, {"kconfigFile": os.path.join(root, "boot/config-6.1.0")})
    assert f.attributes["kernel.config"] == {"PREEMPT": "y"}


@pytest.mark.parametrize("name", ["proc/config.gz", "boot/config-6.1.0"])
def test_kconfig_read_each_pass_parsed_once_per_content(tree, monkeypatch, name):
    """A daemon reads the kernel config on every pass; the same bytes are not parsed again, new
    bytes are, and each pass gets its own dict."""
    from nfd.sources import kernel

    tree("proc/sys/kernel/osrelease", "6.1.0\n")
    root = tree.root

    def write(text: str) -> None:
        path = os.path.join(root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if name.endswith(".gz"):
            with gzip.open(path, "wb") as g:
                g.write(text.encode())
        else:
            with open(path, "w") as fh:
                fh.write(text)

    parsed: list[str] = []
    real = kernel.parse_kconfig
    monkeypatch.setattr(kernel, "parse_kconfig", lambda text: parsed.append(text) or real(text))
    write("CONFIG_A=y\n")
    f1, _, _ = run("kernel", root)
    f2, _, _ = run("kernel", root)
    assert f1.attributes["kernel.config"] == f2.attributes["kernel.config"] == {"A": "y"}
    assert len(parsed) == 1
    f2.attributes["kernel.config"]["B"] = "x"  # a caller's change stays its own
    write("CONFIG_A=m\nCONFIG_C=\"q\"\n")
    f3, _, _ = run("kernel", root)
    assert f3.attributes["kernel.config"] == {"A": "m", "C": "q"}
    assert len(parsed) == 2
    assert run("kernel", root)[0].attributes["kernel.config"] == {"A": "m", "C": "q"}
    assert len(parsed) == 2


def test_corrupt_config_gz_falls_through_with_warning(tree):
    tree("proc/sys/kernel/osrelease", "6.1.0\n")
    tree("proc/config.gz", b"\x1f\x8b\x08garbage")
    root = tree("boot/config-6.1.0", "CONFIG_NO_HZ=y\n")
    f, _, ctx = run("kernel", root)
    assert f.attributes["kernel.config"] == {"NO_HZ": "y"}
    assert any("config.gz" in w for w in ctx.warnings)


def test_kernel_missing_everything_is_not_fatal(tree):
    f, labels, ctx = run("kernel", tree.root)
    assert "kernel.version" not in f.attributes and labels == {}
    assert any("osrelease" in w for w in ctx.warnings)


def test_kernel_without_proc_modules_logs_upstreams_line(tree, caplog):
    """Upstream logs ``"failed to get loaded kernel modules" err=...`` when /proc/modules cannot
    be read; the loaded-module features are gone, enabledmodule keeps the built-in ones."""
    root = tree("proc/sys/kernel/osrelease", "6.1.0\n")
    tree("lib/modules/6.1.0/modules.builtin", "kernel/fs/ext4/ext4.ko\n")
    with caplog.at_level(logging.INFO):
        f, _, _ = run("kernel", root)
    lines = [r.getMessage() for r in caplog.records if "kernel modules" in r.getMessage()]
    assert lines == ['"failed to get loaded kernel modules" err="failed to read file '
                     f'{root}/proc/modules: open {root}/proc/modules: no such file or directory"']
    assert "kernel.loadedmodule" not in f.flags and f.flags["kernel.enabledmodule"] == {"ext4"}
    tree("proc/modules", "nvidia 1 0 - Live 0x0\n")
    caplog.clear()
    with caplog.at_level(logging.INFO):
        f, _, _ = run("kernel", root)
    assert not [r for r in caplog.records if "kernel modules" in r.getMessage()]
    assert f.flags["kernel.loadedmodule"] == {"nvidia"}


# --- memory ---------------------------------------------------------------------------------

@pytest.mark.parametrize("kib,q", [(2048, "2Mi"), (1048576, "1Gi"), (64, "64Ki"), (16777216, "16Gi"), (3000, "3000Ki")])
def test_hugepage_quantity(kib, q):
    assert quantity_kib(kib) == q


def test_swap_header_only_and_entries(tree):
    root = tree("proc/swaps", "Filename Type Size Used Priority\n\n")
    f, labels, _ = run("memory", root)
    assert f.attributes["memory.swap"] == {"enabled": "false"} and "swap" not in labels
    tree("proc/swaps", "Filename Type Size Used Priority\n/swapfile file 10 0 -2\n")
    f, labels, _ = run("memory", root)
    assert labels["swap"] == "true"


def test_hugepages_bad_value_warns(tree):
    root = tree("sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages", "lots\n")
    tree("sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages", "")
    f, _, ctx = run("memory", root)
    assert f.attributes["memory.hugepages"] == {"hugepages-2Mi": "lots", "hugepages-1Gi": "", "enabled": "false"}
    assert any("nr_hugepages" in w and "lots" in w for w in ctx.warnings)
    f, _, _ = run("memory", "/nonexistent-host-root")
    assert f.attributes["memory.hugepages"] == {"enabled": "false"}


# --- pci / usb / network / storage bad input ----------------------------------------------------

def _pci(tree, bdf: str, **attrs):
    for k, v in attrs.items():
        root = tree(f"sys/bus/pci/devices/{bdf}/{k}", v)
    return root


def test_pci_binary_truncated_and_empty_files(tree):
    full = {"class": "0x030000\n", "vendor": "0x10de\n", "device": "0x2330\n", "subsystem_vendor": "0x10de\n",
            "subsystem_device": "0x16c1\n"}
    _pci(tree, "0000:01:00.0", **full)
    _pci(tree, "0000:02:00.0", **dict(full, vendor=b"\x00\xff\x00"))  # binary: device skipped
    _pci(tree, "0000:03:00.0", **dict(full, **{"class": "0x03"}))  # truncated class: kept as-is
    root = _pci(tree, "0000:04:00.0", **dict(full, device=""))  # empty value: present but empty
    f, labels, ctx = run("pci", root)
    bdfs = [d["device"] for d in f.instances["pci.device"]]
    assert bdfs == ["2330", "2330", ""]
    assert any("0000:02:00.0/vendor" in w and "binary" in w for w in ctx.warnings)
    assert labels == {"0300_10de.present": "true", "03_10de.present": "true"}


def test_pci_huge_file_is_capped(tree):
    root = _pci(tree, "0000:01:00.0", **{"class": "0x0300" + "0" * 10000, "vendor": "0x8086", "device": "0x1",
                                        "subsystem_vendor": "0x1", "subsystem_device": "0x1"})
    f, _, ctx = run("pci", root)
    assert f.instances["pci.device"][0]["class"] == "0300"
    assert any("larger than" in w for w in ctx.warnings)


def test_pci_missing_directory_is_a_source_error(tree):
    with pytest.raises(OSError, match="bus/pci/devices"):
        run("pci", tree.root)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files regardless of mode")
def test_unreadable_file_warns(tree):
    root = tree("etc/os-release", "ID=x\n")
    os.chmod(os.path.join(root, "etc/os-release"), 0)
    f, _, ctx = run("system", root)
    assert "system.osrelease" not in f.attributes
    assert any("os-release" in w for w in ctx.warnings)


def test_network_sriov_labels_and_garbage(tree):
    tree("sys/class/net/eth0/device/sriov_totalvfs", "8\n")
    tree("sys/class/net/eth0/device/sriov_numvfs", "zero\n")
    root = tree("sys/class/net/eth0/mtu", "1500\n")
    f, labels, ctx = run("network", root)
    assert labels == {"sriov.capable": "true"}
    assert any("sriov_numvfs" in w for w in ctx.warnings)


def test_storage_and_system(tree):
    tree("sys/block/sda/queue/rotational", "1\n")
    tree("sys/block/nvme0n1/queue/rotational", "0\n")
    root = tree("etc/os-release", "ID=\"centos\"\nVERSION_ID='8.10.2'\nBAD LINE\n=x\nNAME=\n")
    f, labels, _ = run("storage", root)
    assert labels == {"nonrotationaldisk": "true"}
    f, labels, _ = run("system", root)
    assert f.attributes["system.osrelease"] == {"ID": "centos", "VERSION_ID": "8.10.2",
                                                "VERSION_ID.major": "8", "VERSION_ID.minor": "10"}
    assert labels == {"os_release.ID": "centos", "os_release.VERSION_ID": "8.10.2",
                      "os_release.VERSION_ID.major": "8", "os_release.VERSION_ID.minor": "10"}
    assert "system.dmiid" not in f.attributes


def test_usb_label_fields_canonical_order_and_fallback(tree):
    for k, v in (("bDeviceClass", "ff"), ("idVendor", "0bda"), ("idProduct", "8153"), ("serial", "ABC")):
        root = tree(f"sys/bus/usb/devices/2-1/{k}", v + "\n")
    _, labels, _ = run("usb", root, {"deviceLabelFields": ["serial", "vendor"]})
    assert labels == {"0bda_ABC.present": "true"}
    _, labels, _ = run("usb", root, {"deviceLabelFields": ["bogus"]})
    assert labels == {"ff_0bda_8153.present": "true"}


# --- local (features.d) -----------------------------------------------------------------------

NOW = datetime(2030, 1, 1, tzinfo=UTC)


def parse(text: str):
    ctx = DiscoveryContext()
    feats, labels = parse_feature_file(ctx, text, "f", now=NOW)
    return feats, labels, ctx.warnings


def test_local_directives():
    feats, labels, warns = parse(
        "a\nb=2\n  c = 3 \n# comment\n# +no-label\nd=4\n# +no-feature\ne=5\nf=6\n"
        "# +expiry-time=2029-12-31T23:59:59Z\nold=1\n# +expiry-time=2031-01-01T00:00:00+02:00\nnew=1\n"
        "# +bogus\n# +expiry-time=yesterday\nstill=1\n"
    )
    assert labels == {"a": "true", "b": "2", "c ": " 3", "e": "5", "f": "6", "new": "1", "still": "1"}
    assert feats == {"a": "true", "b": "2", "c ": " 3", "d": "4", "f": "6", "new": "1", "still": "1"}
    assert any("bogus" in w for w in warns) and any("expiry-time" in w for w in warns)


def test_local_no_label_deletes_earlier_key_in_same_file():
    _, labels, _ = parse("k=1\n# +no-label\nk=2\n")
    assert labels == {}


def test_local_garbage_lines_and_files(tree):
    d = "etc/kubernetes/node-feature-discovery/features.d/"
    tree(d + "10-good", "x=1\n=nokey\nbell\x07=1\ny=2\n")
    tree(d + "20-override", "x=override\n")
    tree(d + ".hidden", "hidden=1\n")
    tree(d + "30-binary", b"a=1\x00\x01\x02")
    root = tree(d + "40-big", "z=1\n" * 20000)
    os.makedirs(os.path.join(root, d, "subdir"))
    f, labels, ctx = run("local", root)
    # as upstream, odd keys stay in the features; only label validation drops them
    assert labels == {"x": "override", "y": "2", "": "nokey", "bell\x07": "1"}
    assert f.attributes["local.feature"] == labels
    published = compute_labels(f, ["local"], {}, ctx_for(root))
    assert published == {"x": "override", "y": "2"}
    assert any("30-binary" in w for w in ctx.warnings) and any("40-big" in w for w in ctx.warnings)


def test_local_missing_dir_is_empty(tree):
    f, labels, _ = run("local", tree.root)
    assert labels == {} and f.attributes == {"local.feature": {}, "local.label": {}}


def test_binary_and_non_utf8_files_warn_the_same_in_hostfs_and_local(tree):
    """A NUL byte refuses the file, bytes that are not UTF-8 are replaced: the feature files of
    ``local`` and the host files every other source reads decode alike (one decode_text)."""
    from nfd.sources.hostfs import read_text

    d = "etc/kubernetes/node-feature-discovery/features.d/"
    tree(d + "a-latin1", b"k=caf\xe9\n")
    root = tree(d + "b-binary", b"x=1\x00")
    f, labels, ctx = run("local", root)
    assert labels == {"k": "caf\ufffd"}
    assert ctx.warnings == [f"{os.path.join(root, d, 'a-latin1')}: not valid UTF-8, undecodable bytes replaced",
                            f"{os.path.join(root, d, 'b-binary')}: binary content, feature file skipped"]
    ctx = ctx_for(root)
    assert read_text(ctx, os.path.join(root, d, "a-latin1")) == "k=caf\ufffd\n"
    assert read_text(ctx, os.path.join(root, d, "b-binary")) is None
    assert ctx.warnings == [f"{os.path.join(root, d, 'a-latin1')}: not valid UTF-8, undecodable bytes replaced",
                            f"{os.path.join(root, d, 'b-binary')}: binary content, ignored"]


# --- custom -------------------------------------------------------------------------------------

def test_custom_shorthands_backrefs_and_dropins(tree):
    d = "etc/kubernetes/node-feature-discovery/custom.d/"
    tree(d + "a.yaml", "- name: dropin\n  labels: {dropin: 'yes'}\n  matchFeatures:\n"
                       "    - feature: rule.matched\n      matchExpressions: {first: 'on'}\n")
    tree(d + "sub/b.yaml", "- name: bad\n  taints: []\n")  # unknown field: whole file skipped
    tree(d + ".dot.yaml", "- not: [valid\n")
    root = tree(d + "c.yaml", ": : :\n")
    src = registry.get("custom")
    cfg = src.parse_config([
        {"name": "first", "labels": {"first": "on"}, "vars": {"v": "1"},
         "matchFeatures": [{"feature": "kernel.loadedmodule", "matchExpressions": ["e1000e"]}]},
        {"name": "second", "labels": {"second": "on"},
         "matchFeatures": [{"feature": "rule.matched", "matchExpressions": {"v": 1}},
                           {"feature": "kernel.version", "matchExpressions": {"major": {"op": "Gt", "value": 4}}}]},
        {"name": "nomatch", "labels": {"never": "x"},
         "matchFeatures": [{"feature": "pci.device", "matchExpressions": {"vendor": ["dead", "beef"]}}]},
    ], path="sources.custom")
    feats = Features()
    feats.add_flags("kernel.loadedmodule", ["e1000e", "ib_uverbs", "rdma_ucm"])
    feats.add_attributes("kernel.version", {"major": "6"})
    ctx = ctx_for(root)
    labels = src.labels(feats, cfg, ctx)
    assert labels == {"rdma.available": "true", "first": "on", "second": "on", "dropin": "yes"}
    assert "rule.matched" not in feats.attributes  # caller's features untouched
    assert any("sub/b.yaml" in w for w in ctx.warnings) and any("c.yaml" in w for w in ctx.warnings)


def test_custom_invalid_rule_is_a_config_error():
    src = registry.get("custom")
    with pytest.raises(ValidationError, match=r"sources.custom\[0\]"):
        src.parse_config([{"name": "x", "matchFeatures": [{"feature": "a.b", "matchExpressions": {"k": {"op": "Ge"}}}]}],
                         path="sources.custom")
    with pytest.raises(ValidationError, match="sources.custom"):
        src.parse_config({"not": "a list"}, path="sources.custom")


# --- registry, configs and the labels pipeline -----------------------------------------------------

def test_resolve_source_lists(caplog):
    assert "fake" not in registry.resolve(["all"], kind="feature")
    assert "custom" not in registry.resolve(["all"], kind="feature")
    assert "custom" in registry.resolve(["all"], kind="label")
    assert registry.resolve(["all", "-cpu", "-nvml"], kind="feature") == [
        "kernel", "local", "memory", "network", "pci", "storage", "system", "usb"]
    with caplog.at_level(logging.WARNING):
        assert registry.resolve(["fake", "nosuch", "pci"], kind="feature") == ["fake", "pci"]
    assert "nosuch" in caplog.text
    assert registry.resolve([], kind="label") == []


def test_parse_source_configs_errors_name_the_field():
    with pytest.raises(ValidationError, match=r"sources.pci.deviceClassWhitelist"):
        parse_source_configs({"pci": {"deviceClassWhitelist": "03"}})
    with pytest.raises(ValidationError, match=r"sources.kernel.kconfigFile"):
        parse_source_configs({"kernel": {"kconfigFile": 5}})
    cfgs = parse_source_configs({"nosuch": {}, "pci": {"deviceClassWhitelist": [3, "0b40"]}})
    assert cfgs["pci"]["deviceClassWhitelist"] == ["3", "0b40"]
    assert cfgs["pci"]["deviceLabelFields"] == ["class", "vendor"]


def test_labels_priority_prefix_validation_and_whitelist(tree):
    root = tree("etc/kubernetes/node-feature-discovery/features.d/f",
                "fake-fakefeature1=from-local\nexample.com/x=1\nbad key=1\nlong=" + "v" * 64 + "\n")
    ctx = ctx_for(root)
    fake = {"fake": {"labels": {"fakefeature1": "from-fake", "ok": "yes", "nope": "a b"},
                     "flagFeatures": [], "attributeFeatures": {}, "instanceFeatures": []}}
    feats = discover(ctx, ["fake", "local"], fake).merged()
    labels = compute_labels(feats, ["fake", "local"], fake, ctx)
    assert labels == {
        "feature.node.kubernetes.io/fake-fakefeature1": "from-fake",
        "feature.node.kubernetes.io/fake-ok": "yes",
        "fake-fakefeature1": "from-local",
        "example.com/x": "1",
    }
    wl = compute_labels(feats, ["fake", "local"], fake, ctx, whitelist=compile_go(r"^fake-fake|^x$"))
    assert wl == {"feature.node.kubernetes.io/fake-fakefeature1": "from-fake", "fake-fakefeature1": "from-local",
                  "example.com/x": "1"}


def test_failing_source_keeps_last_good(monkeypatch):
    ctx = DiscoveryContext()
    first = discover(ctx, ["fake"], {})
    assert first.errors == {} and "fake.flag" in first.by_source["fake"].flags
    src = registry.get("fake")
    monkeypatch.setattr(src, "discover", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("flaky")))
    second = discover(ctx, ["fake"], {}, last_good=first.by_source)
    assert second.errors == {"fake": "RuntimeError: flaky"}
    assert second.merged().to_json() == first.merged().to_json()
    assert discover(ctx, ["fake"], {}).merged().is_empty()


def test_source_cannot_publish_foreign_keys(monkeypatch):
    src = registry.get("fake")

    def rogue(ctx, config):
        f = Features()
        f.add_flags("fake.ok", ["a"])
        f.add_flags("cpu.cpuid", ["EVIL"])
        return f

    monkeypatch.setattr(src, "discover", rogue)
    res = discover(DiscoveryContext(), ["fake"], {})
    assert set(res.merged().flags) == {"fake.ok"}


def test_fake_source_defaults():
    f, labels, _ = run("fake", "/nonexistent")
    assert f.flags["fake.flag"] == {"flag_1", "flag_2", "flag_3"}
    assert f.attributes["fake.attribute"] == {"attr_1": "true", "attr_2": "false", "attr_3": "10"}
    assert [i["name"] for i in f.instances["fake.instance"]] == ["instance_1", "instance_2", "instance_3"]
    assert labels == {"fakefeature1": "true", "fakefeature2": "true", "fakefeature3": "true"}


def test_hostpaths_layouts(tmp_path):
    hp = HostPaths.under(str(tmp_path))
    assert hp.sys("bus/pci") == f"{tmp_path}/sys/bus/pci"
    assert hp.features_d() == f"{tmp_path}/etc/kubernetes/node-feature-discovery/features.d"
    (tmp_path / "host-sys").mkdir()
    (tmp_path / "host-etc").mkdir()
    pre = HostPaths.detect(env={"NFD_HOST_PREFIX": f"{tmp_path}/host-"})
    assert pre.sys("block") == f"{tmp_path}/host-sys/block"
    assert pre.etc("os-release") == f"{tmp_path}/host-etc/os-release"
    assert pre.proc("swaps") == "/proc/swaps"  # /host-proc not mounted: the container's own
    assert pre.features_d() == "/etc/kubernetes/node-feature-discovery/features.d"
    # The DaemonSet mounts only /host-proc/swaps: the rest of /proc stays the container's own
    # (kernel version, kernel config), as upstream reads it.
    (tmp_path / "host-proc").mkdir()
    (tmp_path / "host-proc" / "swaps").write_text("Filename Type Size Used Priority\n")
    pre = HostPaths.detect(env={"NFD_HOST_PREFIX": f"{tmp_path}/host-"})
    assert pre.proc("swaps") == f"{tmp_path}/host-proc/swaps"
    assert pre.proc("sys/kernel/osrelease") == "/proc/sys/kernel/osrelease"
    assert pre.proc("config.gz") == "/proc/config.gz"
    # a whole procfs at /host-proc: all of /proc is read there
    (tmp_path / "host-proc" / "sys").mkdir()
    pre = HostPaths.detect(env={"NFD_HOST_PREFIX": f"{tmp_path}/host-"})
    assert pre.proc("sys/kernel/osrelease") == f"{tmp_path}/host-proc/sys/kernel/osrelease"
    assert HostPaths.detect(env={"NFD_HOST_ROOT": str(tmp_path)}).root == str(tmp_path)
    assert HostPaths.detect("/x", env={"NFD_HOST_ROOT": "/y"}).root == "/x"


def test_permission_denied_warns_and_discovery_goes_on(tree, monkeypatch):
    import builtins

    root = tree("etc/os-release", "ID=x\n")
    tree("sys/devices/virtual/dmi/id/sys_vendor", "Acme\n")
    denied = os.path.join(root, "etc/os-release")
    real_open = builtins.open

    def fake_open(path, *a, **k):
        if str(path) == denied:
            raise PermissionError(13, "Permission denied", path)
        return real_open(path, *a, **k)

    monkeypatch.setattr(builtins, "open", fake_open)
    f, _, ctx = run("system", root)
    assert "system.osrelease" not in f.attributes
    assert f.attributes["system.dmiid"] == {"sys_vendor": "Acme"}
    assert any(denied in w and "Permission denied" in w for w in ctx.warnings)


def test_export_does_not_import_cluster_libraries():
    import subprocess
    import sys

    code = ("import sys, io, contextlib\nfrom nfd.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()) as out:\n    rc = main(['export', 'labels'])\n"
            "assert rc == 0 and 'feature.node.kubernetes.io/' in out.getvalue()\n"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('kubernetes', 'aiohttp', 'nfd.k8s'))\n"
            "bad += [m for m in sys.modules if m.startswith('nfd.k8s')]\n"
            "assert not bad, bad\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_custom_rule_with_match_cel(tree):
    root = tree("etc/hostname", "h\n")
    src = registry.get("custom")
    cfg = src.parse_config([
        {"name": "gpu", "labels": {"nvidia-gpu": "true"},
         "matchCEL": ['instances["pci.device"].exists(d, d.vendor == "10de")']},
        {"name": "no-gpu", "labels": {"amd-gpu": "true"},
         "matchCEL": ['instances["pci.device"].exists(d, d.vendor == "1002")']},
    ], path="sources.custom")
    feats = Features()
    feats.add_instances("pci.device", [{"vendor": "10de", "class": "0302"}])
    labels = src.labels(feats, cfg, ctx_for(root))
    assert labels.get("nvidia-gpu") == "true" and "amd-gpu" not in labels
    with pytest.raises(ValidationError, match=r"sources.custom\[0\].matchCEL\[0\]"):
        src.parse_config([{"name": "x", "matchCEL": ["flags["]}], path="sources.custom")


def test_custom_deep_file_costs_only_that_file(tree):
    d = "etc/kubernetes/node-feature-discovery/custom.d/"
    tree(d + "good.yaml", "- name: good\n  labels: {good: 'yes'}\n  matchFeatures:\n"
                          "    - feature: kernel.loadedmodule\n      matchExpressions: [e1000e]\n")
    root = tree(d + "deep.yaml", "- name: deep\n  labels: " + "{a: " * 3000 + "1" + "}" * 3000 + "\n")
    src = registry.get("custom")
    cfg = src.parse_config([], path="sources.custom")
    feats = Features()
    feats.add_flags("kernel.loadedmodule", ["e1000e"])
    ctx = ctx_for(root)
    labels = src.labels(feats, cfg, ctx)
    assert labels.get("good") == "yes"
    assert any("deep.yaml" in w and "nesting deeper than 100 levels" in w for w in ctx.warnings), ctx.warnings


def test_read_bytes_reads_on_after_a_short_read(tmp_path):
    """A file that comes in several reads (procfs) is read whole, up to the limit, as a buffered
    reader would: here a FIFO whose writer sends three chunks."""
    import threading
    import time

    from nfd.sources.hostfs import read_bytes

    fifo = str(tmp_path / "fifo")
    os.mkfifo(fifo)

    def writer(chunks: list[bytes]) -> None:
        try:
            with open(fifo, "wb", buffering=0) as w:
                for c in chunks:
                    w.write(c)
                    time.sleep(0.05)
        except BrokenPipeError:  # the reader stopped at its limit
            pass

    ctx = DiscoveryContext()
    t = threading.Thread(target=writer, args=([b"abc\n", b"def\n", b"ghi\n"],))
    t.start()
    assert read_bytes(ctx, fifo) == b"abc\ndef\nghi\n"
    t.join()
    t = threading.Thread(target=writer, args=([b"abc\n", b"def\n", b"ghi\n"],))
    t.start()
    assert read_bytes(ctx, fifo, limit=6) == b"abc\nde"
    t.join()
    assert any("larger than 6 bytes" in w for w in ctx.warnings)
