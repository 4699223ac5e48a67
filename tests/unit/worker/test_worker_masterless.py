"""Masterless mode's worker surface: flag, config key, and clear errors for bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from nfd.worker.config import build_config
from nfd.worker.daemon import Worker
from nfd.worker.flags import parse_flags
from nfd.worker.masterless import NodeUpdateConfigError, load_master_config


def test_flag_and_config_key() -> None:
    f = parse_flags(["-enable-node-update", "-master-config=/x/nfd-master.conf", "-instance=blue"])
    assert f.enable_node_update is True and f.master_config == "/x/nfd-master.conf" and f.instance == "blue"
    assert parse_flags([]).enable_node_update is None
    assert build_config({"core": {"enableNodeUpdate": True}}).enable_node_update is True
    assert build_config({}).enable_node_update is False
    with pytest.raises(ValueError, match=r"core\.enableNodeUpdate: must be a boolean"):
        build_config({"core": {"enableNodeUpdate": "yes"}})


def test_flag_overrides_config(tmp_path: Path) -> None:
    w = Worker(parse_flags(["-enable-node-update=false", f"-config={tmp_path}/none"]), env={"NODE_NAME": "n"})
    w.reload_config()
    assert w.cfg.enable_node_update is False
    w = Worker(parse_flags(["-enable-node-update", f"-config={tmp_path}/none"]), env={"NODE_NAME": "n"})
    w.reload_config()
    assert w.cfg.enable_node_update is True


def test_bad_instance_and_gates_refused_at_start(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="invalid -instance"):
        Worker(parse_flags(["-instance=-bad-"]), env={"NODE_NAME": "n"})
    with pytest.raises(SystemExit) as e:  # refused by the flag parser, as upstream's featuregate.Set
        parse_flags(["-feature-gates=Nope=true"])
    assert e.value.code == 2
    assert parse_flags(["-feature-gates=DisableAutoPrefix=true"]).feature_gates == {"DisableAutoPrefix": True}


def test_master_config_errors_name_the_field(tmp_path: Path) -> None:
    p = tmp_path / "nfd-master.conf"
    p.write_text("enableTaints: maybe\n")
    with pytest.raises(NodeUpdateConfigError, match="enableTaints"):
        load_master_config(str(p))
    p.write_text("extraLabelNs: [vendor.io]\nenableTaints: true\n")
    cfg, _ = load_master_config(str(p))
    assert cfg.enable_taints and "vendor.io" in cfg.extra_label_ns
    cfg, text = load_master_config(str(tmp_path / "missing.conf"))
    assert text is None and not cfg.enable_taints


def test_spread_flag_and_config_key(tmp_path: Path) -> None:
    assert build_config({}).node_update_spread == 1.0
    assert build_config({"core": {"nodeUpdateSpread": "45s"}}).node_update_spread == 45.0
    assert build_config({"core": {"nodeUpdateSpread": "0"}}).node_update_spread == 0.0
    with pytest.raises(ValueError, match=r"core\.nodeUpdateSpread: must be between 0 and 3600s, got 7200s"):
        build_config({"core": {"nodeUpdateSpread": "2h"}})
    with pytest.raises(ValueError, match=r"core\.nodeUpdateSpread"):
        build_config({"core": {"nodeUpdateSpread": "soon"}})
    assert parse_flags(["-node-update-spread=1m30s"]).node_update_spread == 90.0
    assert parse_flags([]).node_update_spread is None
    conf = tmp_path / "nfd-worker.conf"
    conf.write_text("core:\n  nodeUpdateSpread: 20s\n")
    w = Worker(parse_flags([f"-config={conf}"]), env={"NODE_NAME": "n"})
    w.reload_config()
    assert w.cfg.node_update_spread == 20.0
    w = Worker(parse_flags([f"-config={conf}", "-node-update-spread=5s"]), env={"NODE_NAME": "n"})
    w.reload_config()
    assert w.cfg.node_update_spread == 5.0
    with pytest.raises(ValueError, match="-node-update-spread: must be between 0 and 3600s"):
        Worker(parse_flags(["-node-update-spread=2h"]), env={"NODE_NAME": "n"})


def test_spread_reaches_the_node_updater_and_follows_a_reload(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio
    from types import SimpleNamespace

    from nfd.worker.masterless import MasterlessNode

    class _NoApi:
        limiter = None

    async def no_publisher() -> None:
        return None

    monkeypatch.setattr(MasterlessNode, "start", lambda self: None)  # no API here: built, not run
    conf = tmp_path / "nfd-worker.conf"
    conf.write_text("core:\n  enableNodeUpdate: true\n  nodeUpdateSpread: 30s\n")
    w = Worker(parse_flags([f"-config={conf}", f"-master-config={tmp_path}/none"]), env={"NODE_NAME": "n"})
    w.reload_config()
    w.api = _NoApi()
    w.publisher = SimpleNamespace(namespace="nfd")
    monkeypatch.setattr(w, "_ensure_publisher", no_publisher)
    asyncio.run(w.sync_node_updater())
    assert isinstance(w.node_updater, MasterlessNode) and w.node_updater.core.opts.spread_s == 30.0
    conf.write_text("core:\n  enableNodeUpdate: true\n  nodeUpdateSpread: 2m\n")
    w.reload_config()
    asyncio.run(w.sync_node_updater())
    assert w.node_updater.spread_s == 120.0 and w.node_updater.core.opts.spread_s == 120.0
