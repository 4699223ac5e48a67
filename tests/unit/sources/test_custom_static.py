"""The custom source's static rules without the rule engine (``static_labels``, the default
config's path) give what the engine gives for them, feature set by feature set."""

from __future__ import annotations

import itertools

import pytest

from nfd.api.features import Features
from nfd.rules.engine import evaluate_rule
from nfd.sources.base import DiscoveryContext
from nfd.sources.custom import SOURCE, static_labels, static_rules

_PCI = [None, [], [{"vendor": "15b3"}], [{"vendor": "8086"}, {"vendor": "15b3", "device": "1"}],
        [{"vendor": "15B3"}], [{"device": "15b3"}], [{"vendor": "15b3 "}]]
_MODULES = [None, set(), {"ib_uverbs"}, {"rdma_ucm"}, {"ib_uverbs", "rdma_ucm"}, {"ib_uverbs", "rdma_ucm", "x"}]
_OTHER = [
    {},
    # the same names as other feature kinds: the matcher's union of flags and attributes applies
    {"flags": {"pci.device": {"vendor"}}},
    {"attributes": {"pci.device": {"vendor": "15b3"}}},
    {"attributes": {"kernel.loadedmodule": {"ib_uverbs": "", "rdma_ucm": "1"}}},
    {"instances": {"kernel.loadedmodule": [{"ib_uverbs": "y", "rdma_ucm": "y"}]}},
    {"attributes": {"rule.matched": {"rdma.capable": "false"}}},
]


def _features(pci: list[dict[str, str]] | None, modules: set[str] | None, other: dict) -> Features:
    f = Features(flags={k: set(v) for k, v in other.get("flags", {}).items()},
                 attributes={k: dict(v) for k, v in other.get("attributes", {}).items()},
                 instances={k: [dict(i) for i in v] for k, v in other.get("instances", {}).items()})
    if pci is not None:
        f.instances.setdefault("pci.device", []).extend(pci)
    if modules is not None:
        f.flags.setdefault("kernel.loadedmodule", set()).update(modules)
    return f


def _engine_labels(features: Features) -> dict[str, str]:
    out: dict[str, str] = {}
    for rule in static_rules():
        res = evaluate_rule(rule, features)
        assert res.error is None
        if res.matched:
            out.update(res.output.labels)
    return out


CASES = list(itertools.product(range(len(_PCI)), range(len(_MODULES)), range(len(_OTHER))))


@pytest.mark.parametrize(("p", "m", "o"), CASES)
def test_static_labels_equal_the_engines(p: int, m: int, o: int) -> None:
    f = _features(_PCI[p], _MODULES[m], _OTHER[o])
    assert static_labels(f) == _engine_labels(f)


def test_both_labels_and_neither() -> None:
    both = _features([{"vendor": "15b3"}], {"ib_uverbs", "rdma_ucm"}, {})
    assert static_labels(both) == {"rdma.capable": "true", "rdma.available": "true"}
    assert static_labels(Features()) == {}


def test_source_uses_the_engine_when_config_has_rules(tmp_path) -> None:
    """With rules of the config, static ones run first in the engine and feed rule.matched."""
    from nfd.hostpaths import HostPaths

    ctx = DiscoveryContext(paths=HostPaths(root=str(tmp_path), config_dir=str(tmp_path)))
    cfg = SOURCE.parse_config([{"name": "r", "labels": {"followed": "yes"},
                                "matchFeatures": [{"feature": "rule.matched",
                                                   "matchExpressions": {"rdma.capable": {"op": "IsTrue"}}}]}],
                              path="sources.custom")
    f = _features([{"vendor": "15b3"}], None, {})
    assert SOURCE.labels(f, cfg, ctx) == {"rdma.capable": "true", "followed": "yes"}
    assert SOURCE.labels(f, SOURCE.default_config(), ctx) == {"rdma.capable": "true"}
