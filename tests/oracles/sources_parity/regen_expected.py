#!/usr/bin/env python3
"""Refresh ``expected/`` by running upstream's feature sources on every case
(see tests/unit/sources/parity/README.md).

    python3 tests/oracles/sources_parity/regen_expected.py --driver BIN --prefix-dir DIR

BIN is ``upstream-driver/main.go`` built inside an upstream checkout with its host path prefix
(and the few unprefixed /proc and custom.d paths) pointing at DIR; each host root is copied to
DIR, without ``cpuid.json``, before BIN runs. Not a test: it needs that binary.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

# parity_cases (the cases and where expected/ lives) is beside the test it feeds
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "unit", "sources", "parity"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "fixtures", "sysfs"))

import build_edge  # noqa: E402
from parity_cases import (  # noqa: E402
    CASES,
    CONFIGS,
    EXPECTED,
    FIXTURES,
    MODELLED_X86,
    NODE_NAME,
    UPSTREAM_PCI,
    case_id,
    host_independent_features,
    host_independent_labels,
)


def host_root(host: str, scratch: str) -> str:
    if host == "edge-cases":
        return build_edge.build(os.path.join(scratch, "edge-cases"))
    if host in build_edge.CPU_VARIANTS:
        return build_edge.build_cpu_variant(host, os.path.join(scratch, host))
    if host == "upstream-pci":
        return UPSTREAM_PCI
    return os.path.join(FIXTURES, host, "root")


def run_driver(driver: str, what: str, config: str | None, cpuid_json: str | None) -> dict:
    cmd = [driver, "-what", what] + (["-config", config] if config else [])
    env = {**os.environ, "NODE_NAME": NODE_NAME}
    env.pop("NFD_CPUID_JSON", None)
    if cpuid_json:
        env["NFD_CPUID_JSON"] = cpuid_json  # the driver mocks klauspost/cpuid with it
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out)


def dump(path: str, obj: dict) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=1, sort_keys=True)
        f.write("\n")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--driver", required=True)
    ap.add_argument("--prefix-dir", required=True)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        for host, config in CASES:
            shutil.rmtree(args.prefix_dir, ignore_errors=True)
            root = host_root(host, scratch)
            shutil.copytree(root, args.prefix_dir, symlinks=True)
            cpuid_json = os.path.join(root, "cpuid.json") if host in MODELLED_X86 else None
            if os.path.exists(os.path.join(args.prefix_dir, "cpuid.json")):
                os.remove(os.path.join(args.prefix_dir, "cpuid.json"))
            cfg = os.path.join(CONFIGS, config + ".yaml") if config else None
            out = os.path.join(EXPECTED, case_id(host, config))
            feats = run_driver(args.driver, "features", cfg, cpuid_json)
            labels = run_driver(args.driver, "labels", cfg, cpuid_json)
            dump(os.path.join(out, "features.json"), host_independent_features(feats, host))
            dump(os.path.join(out, "labels.json"), host_independent_labels(labels, host))
            print("wrote", out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
