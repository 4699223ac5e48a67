"""Config keys match fields as Go's JSON decoder matches them (exact first, then case-insensitive)."""

from __future__ import annotations

from nfd.common.gokeys import canonical_keys
from nfd.master.config import load_config
from nfd.worker.config import build_config


def test_canonical_keys_exact_then_folded_later_wins() -> None:
    fields = ("labelWhiteList", "sleepInterval")
    assert canonical_keys({"labelwhitelist": "a", "other": 1}, fields) == {"labelWhiteList": "a", "other": 1}
    assert canonical_keys({"labelWhiteList": "a", "LABELWHITELIST": "b"}, fields) == {"labelWhiteList": "b"}
    assert canonical_keys({"LabelWhitelist": "b", "labelWhiteList": "a"}, fields) == {"labelWhiteList": "a"}
    # Go's simple folding takes the Kelvin sign for k and the long s for s
    assert canonical_keys({"\u017fleepInterval": "1s"}, fields) == {"sleepInterval": "1s"}
    assert canonical_keys({"sleep_interval": "1s"}, fields) == {"sleep_interval": "1s"}  # not a fold


def test_master_config_keys_any_case() -> None:
    cfg, warnings = load_config(
        file_text="labelWhitelist: '^gpu'\nextralabelns: [x.io]\nENABLETAINTS: true\n"
                  "leaderelection: {LeaseDuration: 20s}\nRestrictions: {allowoverwrite: false}\nbogus: 1\n",
        file_name="nfd-master.conf")
    assert cfg.label_whitelist == "^gpu" and cfg.extra_label_ns == {"x.io"} and cfg.enable_taints
    assert cfg.leader_election.lease_duration == 20 and cfg.restrictions.allow_overwrite is False
    assert warnings == ["nfd-master.conf: bogus: unknown key ignored"]


def test_worker_config_keys_any_case() -> None:
    cfg = build_config({
        "CORE": {"sleepinterval": "7s", "labelwhitelist": "^cpu", "featuresources": ["cpu"]},
        "Sources": {"pci": {"deviceclasswhitelist": ["02"]}, "cpu": {"CPUID": {"attributewhitelist": ["AVX"]}}},
    })
    assert cfg.sleep_interval == 7 and cfg.feature_sources == ["cpu"]
    assert cfg.label_whitelist is not None and cfg.label_whitelist.match_string("cpu-x")
    assert cfg.source_configs["pci"]["deviceClassWhitelist"] == ["02"]
    assert cfg.source_configs["cpu"]["cpuid"]["attributeWhitelist"] == ["AVX"]


def test_custom_rule_fields_any_case() -> None:
    from nfd.api.features import Features
    from nfd.rules.engine import evaluate_rule
    from nfd.sources.custom import compile_custom_rules

    (rule,) = compile_custom_rules([{
        "NAME": "r", "Labels": {"x": "y"},
        "matchfeatures": [{"Feature": "kernel.version", "MATCHEXPRESSIONS": {"major": {"OP": "In", "Value": ["6"]}}}],
    }], path="sources.custom", strict=False)
    f = Features()
    f.add_attributes("kernel.version", {"major": "6"})
    res = evaluate_rule(rule, f)
    assert res.matched and res.output.labels == {"x": "y"}
