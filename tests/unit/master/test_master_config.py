"""nfd-master.conf parsing: upstream keys, precedence, durations, errors naming the key."""

from __future__ import annotations

import pytest

from nfd.common.goflags import parse_feature_gates
from nfd.master.__main__ import build_parser, overrides_from
from nfd.master.config import (
    ConfigError,
    FlagOverrides,
    MasterConfig,
    load_config,
    parse_duration,
    selector_matches,
)


def test_defaults_are_upstreams():
    cfg, warnings = load_config(file_text=None)
    assert cfg == MasterConfig()
    assert (cfg.resync_period, cfg.nfd_api_parallelism, cfg.informer_page_size) == (3600.0, 10, 200)
    le = cfg.leader_election
    assert (le.lease_duration, le.renew_deadline, le.retry_period) == (15.0, 10.0, 2.0)
    assert cfg.restrictions.allow_overwrite is True
    assert warnings == []


def test_all_keys_parsed():
    text = """
noPublish: true
extraLabelNs: [a.io, b.io]
denyLabelNs: ["*.denied.io"]
labelWhiteList: "^cpu-"
enableTaints: true
resyncPeriod: 2h30m
nfdApiParallelism: 3
informerPageSize: 0
kubeApiQps: 25
kubeApiBurst: 50
leaderElection: {leaseDuration: 20s, renewDeadline: 15s, retryPeriod: 3s}
restrictions:
  nodeFeatureNamespaceSelector: {matchLabels: {team: a}}
  disableLabels: true
  disableExtendedResources: true
  disableAnnotations: true
  allowOverwrite: false
  denyNodeFeatureLabels: true
  disableTaints: true
klog: {v: "3"}
"""
    cfg, warnings = load_config(file_text=text, file_name="nfd-master.conf")
    assert cfg.no_publish and cfg.enable_taints
    assert cfg.extra_label_ns == {"a.io", "b.io"} and cfg.deny_label_ns == {"*.denied.io"}
    assert cfg.label_whitelist == "^cpu-"
    assert cfg.resync_period == 9000.0
    assert (cfg.nfd_api_parallelism, cfg.informer_page_size) == (3, 0)
    assert (cfg.kube_api_qps, cfg.kube_api_burst) == (25.0, 50)
    assert cfg.leader_election.lease_duration == 20.0
    r = cfg.restrictions
    assert r.node_feature_namespace_selector == {"matchLabels": {"team": "a"}}
    assert r.disable_labels and r.disable_extended_resources and r.disable_annotations
    assert not r.allow_overwrite and r.deny_node_feature_labels
    assert cfg.klog == {"v": "3"}
    # upstream's example config has restrictions.disableTaints, which does not exist
    assert warnings == ["nfd-master.conf: restrictions.disableTaints: unknown key ignored"]


def test_precedence_file_options_flags():
    cfg, _ = load_config(
        file_text="resyncPeriod: 1m\nenableTaints: false\nnfdApiParallelism: 2\n",
        options="enableTaints: true\nnfdApiParallelism: 4\n",
        overrides=FlagOverrides(nfd_api_parallelism=8),
    )
    assert cfg.resync_period == 60.0
    assert cfg.enable_taints is True
    assert cfg.nfd_api_parallelism == 8


@pytest.mark.parametrize(
    "text,needle",
    [
        ("nfdApiParallelism: 0", "nfdApiParallelism"),
        ("resyncPeriod: soon", "resyncPeriod"),
        ("enableTaints: yes please", "enableTaints"),
        ("labelWhiteList: '('", "labelWhiteList"),
        ("restrictions: {nodeFeatureNamespaceSelector: {matchExpressions: [{key: a, operator: Maybe}]}}", "operator"),
        ("leaderElection: {leaseDuration: 5s, renewDeadline: 10s}", "leaderElection"),
        ("[1, 2]", "mapping"),
        ("a: [", "invalid YAML"),
        ("enableTaints: " + "[" * 500 + "]" * 500, "nfd-master.conf: line 1: nesting deeper than 100 levels"),
        ("labelWhiteList: '\\C'", "invalid escape sequence"),
    ],
)
def test_invalid_config_is_one_clear_line(text, needle):
    with pytest.raises(ConfigError) as ei:
        load_config(file_text=text, file_name="nfd-master.conf")
    msg = str(ei.value)
    assert needle in msg and "\n" not in msg


def test_very_deep_config_is_one_line_naming_the_file_and_line():
    """Whichever limit is met first, ours or the YAML library's (PyYAML 6.0.4 stops flow
    nesting at 1000 levels itself), the refusal is one line naming the file and the line."""
    with pytest.raises(ConfigError) as ei:
        load_config(file_text="a: 1\nenableTaints: " + "[" * 3000 + "]" * 3000, file_name="nfd-master.conf")
    msg = str(ei.value)
    assert "\n" not in msg and msg.startswith("nfd-master.conf: ") and "line 2" in msg, msg


@pytest.mark.parametrize(
    "v,s", [("1h", 3600), ("90s", 90), ("1.5m", 90), ("300ms", 0.3), ("1h1m1s", 3661), (0, 0), ("0", 0), (2e9, 2)]
)
def test_durations(v, s):
    assert parse_duration(v, key="k") == pytest.approx(s)


def test_selector_matching():
    sel = {"matchLabels": {"a": "1"}, "matchExpressions": [{"key": "b", "operator": "NotIn", "values": ["x"]}]}
    assert selector_matches(sel, {"a": "1"})
    assert selector_matches(sel, {"a": "1", "b": "y"})
    assert not selector_matches(sel, {"a": "1", "b": "x"})
    assert not selector_matches(sel, {})
    assert selector_matches(None, {})


def test_flags_map_to_overrides():
    args = build_parser().parse_args(
        ["-no-publish", "-extra-label-ns=a.io,b.io", "--resync-period", "10m", "-enable-taints=false",
         "-nfd-api-parallelism", "5", "-kube-api-qps=10"]
    )
    o = overrides_from(args)
    assert o.no_publish is True and o.enable_taints is False
    assert o.extra_label_ns == {"a.io", "b.io"}
    assert o.resync_period == 600.0 and o.nfd_api_parallelism == 5 and o.kube_api_qps == 10.0
    assert overrides_from(build_parser().parse_args([])) == FlagOverrides()


def test_feature_gates():
    assert parse_feature_gates("NodeFeatureGroupAPI=true,DisableAutoPrefix=false") == {
        "NodeFeatureGroupAPI": True,
        "DisableAutoPrefix": False,
    }
    with pytest.raises(ValueError, match="unrecognized feature gate: Bogus"):
        parse_feature_gates("Bogus=true")
    with pytest.raises(ValueError, match="locked"):
        parse_feature_gates("NodeFeatureAPI=false")


def test_go_style_flags_accepted():
    a = build_parser().parse_args(
        ["-v=3", "-logtostderr", "-port", "8081", "--instance=blue", "-stderrthreshold=2", "-enable-leader-election"]
    )
    assert (a.v, a.port, a.instance, a.enable_leader_election) == (3, 8081, "blue", True)


def test_main_reports_bad_config_in_one_line(tmp_path, capsys):
    from nfd.master.__main__ import main

    conf = tmp_path / "nfd-master.conf"
    conf.write_text("nfdApiParallelism: -1\n")
    assert main([f"-config={conf}"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "nfdApiParallelism" in err
    assert main(["-instance=-bad-"]) == 2
    assert main(["-feature-gates=Nope=true"]) == 2
