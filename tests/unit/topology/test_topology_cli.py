"""nfd-topology-updater and nfd-gc command lines: flags, defaults, exit codes."""

from __future__ import annotations

import pytest

from nfd.gc import __main__ as gc_main
from nfd.hostpaths import HostPaths
from nfd.topology_updater import __main__ as tu_main


def test_updater_flag_defaults_follow_host_paths() -> None:
    ns = tu_main.build_parser(HostPaths.with_prefix("/nonexistent-")).parse_go([])
    assert ns.sleep_interval == 60 and ns.watch_namespace == "*" and ns.port == 8080
    assert ns.pods_fingerprint is True and ns.oneshot is False and ns.no_publish is False
    assert ns.podresources_socket == "/var/lib/kubelet/pod-resources/kubelet.sock"
    assert ns.kubelet_state_dir == "/var/lib/kubelet"
    assert ns.config == "/etc/kubernetes/node-feature-discovery/nfd-topology-updater.conf"
    under = tu_main.build_parser(HostPaths.under("/h")).parse_go([])
    assert under.podresources_socket == "/h/var/lib/kubelet/pod-resources/kubelet.sock"


def test_updater_flags_as_upstream_spells_them() -> None:
    ns = tu_main.build_parser(HostPaths()).parse_go(
        [
            "-sleep-interval=3s",
            "-pods-fingerprint=false",
            "-kubelet-state-dir=",
            "-watch-namespace",
            "team",
            "-oneshot",
        ]
    )
    assert (ns.sleep_interval, ns.pods_fingerprint, ns.kubelet_state_dir, ns.watch_namespace, ns.oneshot) == (
        3.0,
        False,
        "",
        "team",
        True,
    )


def test_updater_exit_codes(monkeypatch, capsys) -> None:
    assert tu_main.main(["-version"]) == 0
    assert "nfd-topology-updater" in capsys.readouterr().out
    monkeypatch.delenv("NODE_NAME", raising=False)
    assert tu_main.main([]) == 1
    monkeypatch.setenv("NODE_NAME", "n1")
    monkeypatch.delenv("NODE_ADDRESS", raising=False)
    assert tu_main.main([]) == 1
    assert "NODE_ADDRESS" in capsys.readouterr().err
    assert tu_main.main(["-kubelet-config-uri=ftp://x/configz"]) == 1
    with pytest.raises(SystemExit) as e:
        tu_main.main(["extra-arg"])
    assert e.value.code == 2


def test_updater_bad_config_file_exits_with_message(monkeypatch, tmp_path, caplog) -> None:
    monkeypatch.setenv("NODE_NAME", "n1")
    conf = tmp_path / "c.conf"
    conf.write_text("excludeList: 5\n")
    assert tu_main.main(["-kubelet-config-uri=file:///k.yaml", f"-config={conf}"]) == 1
    assert str(conf) in caplog.text


def test_gc_flags_and_exit_codes(capsys) -> None:
    ns = gc_main.build_parser().parse_go([])
    assert (ns.gc_interval, ns.list_size, ns.port) == (3600.0, 200, 8080)
    ns = gc_main.build_parser().parse_go(["-gc-interval=10m", "-list-size=0"])
    assert (ns.gc_interval, ns.list_size) == (600.0, 0)
    assert gc_main.main(["-version"]) == 0
    assert "nfd-gc" in capsys.readouterr().out
    assert gc_main.main(["-gc-interval=0s"]) == 2
