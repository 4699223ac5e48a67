from __future__ import annotations

import pytest

from nfd.worker.config import build_config, load_config_file, parse_duration, strip_features
from nfd.worker.flags import parse_flags


@pytest.mark.parametrize("text,seconds", [("60s", 60), ("1m30s", 90), ("500ms", 0.5), ("0", 0), ("1h", 3600),
                                           ("1.5s", 1.5), ("-1s", -1), (5_000_000_000, 5)])
def test_durations(text, seconds):
    assert parse_duration(text, path="x") == pytest.approx(seconds)


@pytest.mark.parametrize("bad", ["60", "1x", "s", "", True, [1]])
def test_bad_durations(bad):
    with pytest.raises(ValueError, match="x"):
        parse_duration(bad, path="x")


def test_defaults():
    cfg = build_config({})
    assert cfg.sleep_interval == 60 and cfg.feature_sources == ["all"] and cfg.label_sources == ["all"]
    assert cfg.owner_refs == ["pod", "ds"] and cfg.label_whitelist is None and not cfg.no_publish


def test_full_config():
    cfg = build_config({
        "core": {"sleepInterval": "10s", "featureSources": ["all", "-usb"], "labelSources": ["cpu"],
                 "sources": ["pci", "kernel"], "labelWhiteList": "^cpu-", "noPublish": True,
                 "noPublishFeatures": ["kernel.config", "pci.*"], "ownerRefs": ["ds", "node"], "klog": {"v": 3}},
        "sources": {"pci": {"deviceLabelFields": ["vendor"]}, "cpu": {"cpuid": {"attributeWhitelist": ["AVX"]}},
                    "unknown": {"x": 1}},
    })
    assert cfg.sleep_interval == 10
    assert cfg.label_sources == ["pci", "kernel"]  # deprecated core.sources wins
    assert cfg.label_whitelist.match_string("cpu-cpuid.AVX") and not cfg.label_whitelist.match_string("pci-x")
    assert cfg.owner_refs == ["node", "ds"]
    assert cfg.source_configs["pci"]["deviceLabelFields"] == ["vendor"]
    assert cfg.source_configs["cpu"]["cpuid"]["attributeWhitelist"] == ["AVX"]
    assert cfg.source_configs["cpu"]["cpuid"]["attributeBlacklist"]  # defaults kept for unset keys
    assert "unknown" not in cfg.source_configs


@pytest.mark.parametrize("doc,field", [
    ({"core": {"sleepInterval": "soon"}}, "core.sleepInterval"),
    ({"core": {"labelWhiteList": "("}}, "core.labelWhiteList"),
    ({"core": {"ownerRefs": ["pod", "pod"]}}, "core.ownerRefs"),
    ({"core": {"ownerRefs": ["cluster"]}}, "core.ownerRefs"),
    ({"core": {"noPublish": "yes"}}, "core.noPublish"),
    ({"core": []}, "core"),
    ({"sources": {"usb": {"deviceClassWhitelist": {"a": 1}}}}, "sources.usb.deviceClassWhitelist"),
    ({"sources": {"custom": [{"name": "r", "matchFeatures": [{"feature": "x.y", "matchExpressions": {"a": {"op": "Nope"}}}]}]}},
     "sources.custom[0]"),
])
def test_invalid_config_names_file_and_field(doc, field):
    with pytest.raises(ValueError) as e:
        build_config(doc, source="/etc/nfd-worker.conf")
    assert str(e.value).startswith("/etc/nfd-worker.conf: ") and field in str(e.value)


def test_no_owner_refs_wins():
    assert build_config({"core": {"ownerRefs": ["node"], "noOwnerRefs": True}}).owner_refs == []


def test_load_file_and_options(tmp_path):
    p = tmp_path / "nfd-worker.conf"
    p.write_text("core:\n  sleepInterval: 5s\n  noPublish: true\nsources:\n  pci:\n    deviceClassWhitelist: ['02']\n")
    cfg = load_config_file(str(p), '{"core": {"sleepInterval": "7s"}, "sources": {"pci": {"deviceLabelFields": ["device"]}}}')
    assert cfg.sleep_interval == 7 and cfg.no_publish
    assert cfg.source_configs["pci"] == {"deviceClassWhitelist": ["02"], "deviceLabelFields": ["device"]}
    assert load_config_file(str(tmp_path / "missing.conf")).sleep_interval == 60
    p.write_text("core: [unclosed\n")
    with pytest.raises(ValueError, match="nfd-worker.conf: invalid YAML"):
        load_config_file(str(p))
    p.write_bytes(b"\x00\x01binary")
    with pytest.raises(ValueError, match="nfd-worker.conf"):
        load_config_file(str(p))


def test_strip_features():
    from nfd.api.features import Features

    f = Features()
    f.add_flags("kernel.loadedmodule", ["a"])
    f.add_attributes("kernel.config", {"A": "y"})
    f.add_instances("pci.device", [{"class": "0300"}])
    out = strip_features(f, ["kernel.config", "pci.*"])
    assert set(out.flags) == {"kernel.loadedmodule"} and out.attributes == {} and out.instances == {}
    assert "kernel.config" in f.attributes  # input untouched


def test_flags_go_and_gnu_forms():
    fl = parse_flags(["-oneshot", "--no-publish", "-config=/c.conf", "-port", "9000", "--feature-sources=cpu,pci",
                      "-label-sources=", "-owner-refs", "node", "-v=2", "-logtostderr"])
    assert fl.oneshot and fl.no_publish and fl.config == "/c.conf" and fl.port == 9000
    assert fl.feature_sources == ["cpu", "pci"] and fl.label_sources == [] and fl.owner_refs == ["node"]
    assert fl.verbosity == 2
    fl = parse_flags(["-oneshot=false", "-no-publish=true"])
    assert not fl.oneshot and fl.no_publish and fl.label_sources is None and fl.feature_sources is None
    with pytest.raises(SystemExit):
        parse_flags(["positional"])


def test_deep_config_is_a_named_error_not_a_crash(tmp_path):
    # was a RecursionError at start and on live reload (a DaemonSet crash-loop)
    p = tmp_path / "nfd-worker.conf"
    # below the YAML library's own limit (1000 flow levels in PyYAML 6.0.4): ours, by name
    p.write_text("core:\n  x: " + "[" * 500 + "]" * 500 + "\n")
    with pytest.raises(ValueError, match=r"nfd-worker.conf: line 2: nesting deeper than 100 levels"):
        load_config_file(str(p))
    with pytest.raises(ValueError, match=r"-options: line 1: nesting deeper than 100 levels"):
        load_config_file("", options="{a: " * 500 + "1" + "}" * 500)
    # far deeper: whichever limit is met first, one line naming the input and the line
    p.write_text("core:\n  x: " + "[" * 5000 + "]" * 5000 + "\n")
    for path, options, source, line in ((str(p), None, str(p), "line 2"),
                                        ("", "{a: " * 3000 + "1" + "}" * 3000, "-options", "line 1")):
        with pytest.raises(ValueError) as ei:
            load_config_file(path, options=options)
        msg = str(ei.value)
        assert "\n" not in msg and msg.startswith(f"{source}: ") and line in msg, msg
