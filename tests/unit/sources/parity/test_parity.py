"""Our feature sources against upstream's, case by case (host root x worker config).

``expected/<case>/`` holds what upstream's own sources produced on the same host root and config
(README.md says how); here ``nfd export`` runs in-process on that root and must produce the same
features and labels, minus what only the CPUID instruction decides (upstream cannot be given a
modelled CPU) and the labels docs/compatibility.md lists as deliberate differences.
"""

from __future__ import annotations

import gzip
import json
import os
import platform
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "fixtures", "sysfs"))

import build_edge  # noqa: E402
from parity_cases import (  # noqa: E402
    CASES,
    CONFIGS,
    DELIBERATE_EXTRA_LABELS,
    EXPECTED,
    FIXTURES,
    NODE_NAME,
    UPSTREAM_PCI,
    case_id,
    host_independent_features,
    host_independent_labels,
)

from nfd.cli.export import main as export_main  # noqa: E402
from nfd.hostpaths import HostPaths  # noqa: E402
from nfd.sources import registry  # noqa: E402
from nfd.sources.base import DiscoveryContext  # noqa: E402
from nfd.sources.cpuid import FixtureCpuid  # noqa: E402


@pytest.fixture(scope="module")
def edge_root(tmp_path_factory):
    return build_edge.build(str(tmp_path_factory.mktemp("edge") / "root"))


def _root(host: str, edge_root: str, tmp_path) -> str:
    if host == "edge-cases":
        return edge_root
    if host in build_edge.CPU_VARIANTS:
        return build_edge.build_cpu_variant(host, str(tmp_path / host))
    if host == "upstream-pci":
        if not os.path.isdir(UPSTREAM_PCI):
            pytest.skip(f"{UPSTREAM_PCI} not present")
        return UPSTREAM_PCI
    return os.path.join(FIXTURES, host, "root")


def _export(what: str, root: str, config: str | None, tmp_path) -> dict:
    out = tmp_path / f"{what}.json"
    argv = [what, "--sources", "all,-nvml", "--host-root", root, "--node-name", NODE_NAME,
            "-o", "json", "--path", str(out)]
    if config:
        argv += ["--config", os.path.join(CONFIGS, config + ".yaml")]
    assert export_main(argv) == 0
    return json.loads(out.read_text())


def _expected(case: str, what: str) -> dict:
    with open(os.path.join(EXPECTED, case, what + ".json"), encoding="utf-8") as f:
        return json.load(f)


def _diff(expected: dict, got: dict) -> list[str]:
    """Readable differences, one per feature (or label) name."""
    out = []
    for key in sorted(set(expected) | set(got)):
        if expected.get(key) != got.get(key):
            out.append(f"{key}: upstream={json.dumps(expected.get(key))[:300]} ours={json.dumps(got.get(key))[:300]}")
    return out


@pytest.mark.parametrize("host,config", CASES, ids=[case_id(h, c) for h, c in CASES])
def test_features_equal_upstream(host, config, edge_root, tmp_path):
    got = host_independent_features(_export("features", _root(host, edge_root, tmp_path), config, tmp_path), host)
    want = _expected(case_id(host, config), "features")
    problems = [f"{kind} {d}" for kind in ("flags", "attributes", "instances")
                for d in _diff(want[kind], got[kind])]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("host,config", CASES, ids=[case_id(h, c) for h, c in CASES])
def test_labels_equal_upstream(host, config, edge_root, tmp_path):
    got = host_independent_labels(_export("labels", _root(host, edge_root, tmp_path), config, tmp_path), host)
    want = dict(_expected(case_id(host, config), "labels"))
    extra = DELIBERATE_EXTRA_LABELS.get(host, {})
    if not config or config != "wl":
        want.update(extra)
    problems = _diff(want, got)
    assert not problems, "\n".join(problems)


def test_expected_data_covers_every_case():
    """A case without upstream data would silently test nothing."""
    for host, config in CASES:
        for what in ("features", "labels"):
            assert os.path.isfile(os.path.join(EXPECTED, case_id(host, config), what + ".json")), (host, config)


# --- this machine ---------------------------------------------------------------------------

NATIVE = os.path.join(EXPECTED, "native", "structure.json")


@pytest.mark.skipif(platform.machine() != "x86_64", reason="recorded on x86_64")
def test_native_structure_matches_upstream(tmp_path, monkeypatch):
    """On this machine type, the same feature names (and element names of the features whose
    keys do not depend on the hardware) as upstream's binary produced here."""
    with open(NATIVE, encoding="utf-8") as f:
        want = json.load(f)
    out = tmp_path / "f.json"
    assert export_main(["features", "--sources", "all,-nvml", "--node-name", NODE_NAME,
                        "-o", "json", "--path", str(out)]) == 0
    got = json.loads(out.read_text())
    present = {kind: set(got[kind]) for kind in ("flags", "attributes", "instances")}
    for kind in ("flags", "attributes", "instances"):
        # a host without e.g. a kernel config lacks that feature in both; only what we have
        # and upstream did not is a difference
        assert present[kind] - set(want["names"][kind]) == set(), kind
        for name in want["always"][kind]:
            assert name in present[kind], f"{kind} {name} missing"
    for name, keys in want["element_keys"].items():
        if name in got["attributes"]:
            assert sorted(got["attributes"][name]["elements"]) == keys, name


# --- CPUID decoding ---------------------------------------------------------------------------

def test_cpuid_decoding_equals_upstream_on_random_cpus(tmp_path):
    """Random CPUID answers (vendors, hypervisors, leaf ranges, bit densities) and what upstream's
    cpu source derived from them (klauspost/cpuid and its own RDT CPUID reads fed the same
    answers): flags, attributes, model, RDT, SGX/TDX; our decoder must agree on every one."""
    with gzip.open(os.path.join(EXPECTED, "cpuid-corpus.json.gz"), "rt", encoding="utf-8") as f:
        corpus = json.load(f)["cpus"]
    assert len(corpus) >= 100
    src = registry.get("cpu")
    cfg = src.parse_config(None, path="sources.cpu")
    problems = []
    for i, cpu in enumerate(corpus):
        ctx = DiscoveryContext(cpuid=FixtureCpuid.from_json(cpu["cpuid"]), arch="x86_64",
                               paths=HostPaths.under(str(tmp_path)))  # empty host: only CPUID decides
        feats = src.discover(ctx, cfg)
        flags = set(feats.flags.get("cpu.cpuid", set()))
        want = set(cpu["flags"])
        if flags != want:
            problems.append(f"cpu {i}: upstream-only {sorted(want - flags)}, ours-only {sorted(flags - want)}")
        if feats.attributes.get("cpu.cpuid") != cpu["attributes"]:
            problems.append(f"cpu {i}: attributes {feats.attributes.get('cpu.cpuid')} != {cpu['attributes']}")
        for name in ("model", "rdt", "security", "sst"):
            if feats.attributes.get(f"cpu.{name}") != cpu[name]:
                problems.append(f"cpu {i}: {name} {feats.attributes.get(f'cpu.{name}')} != {cpu[name]}")
    assert not problems, "\n".join(problems[:20])


# --- text parsers on random trees -------------------------------------------------------------

def test_text_parsers_equal_upstream_on_random_trees(tmp_path):
    """features.d (directives, expiry, odd keys and whitespace), os-release, kconfig and
    /proc/modules from seeded random trees, against upstream's reading of the same trees."""
    import text_corpus

    with gzip.open(os.path.join(EXPECTED, "text-corpus.json.gz"), "rt", encoding="utf-8") as f:
        corpus = json.load(f)
    assert len(corpus) >= 20
    cfg = tmp_path / "config.yaml"
    cfg.write_text(text_corpus.CONFIG)
    problems = []
    for seed, want in enumerate(corpus):
        root = text_corpus.build_tree(seed, str(tmp_path / f"t{seed}"))
        res = {}
        for what in ("features", "labels"):
            out = tmp_path / f"{what}.json"
            argv = [what, "--sources", "all,-nvml", "--host-root", root, "--node-name", NODE_NAME,
                    "--config", str(cfg), "-o", "json", "--path", str(out)]
            assert export_main(argv) == 0
            res[what] = json.loads(out.read_text())
        got = text_corpus.select(res["features"], res["labels"])
        for part in ("features", "labels"):
            problems += [f"tree {seed} {part} {d}" for d in _diff(want[part], got[part])]
    assert not problems, "\n".join(problems[:20])
