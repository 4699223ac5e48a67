"""The nfd-master flags the worker's masterless mode shares: ``-instance`` and ``-feature-gates``.

Kept outside ``nfd.master`` so a worker can check them at start (in every mode, as nfd-master
does) without importing the master, its pipeline or the rules engine's languages.
"""

from __future__ import annotations

import argparse
import re

from nfd.common.goflags import parse_bool

INSTANCE_RE = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
FEATURE_GATES = ("NodeFeatureAPI", "NodeFeatureGroupAPI", "DisableAutoPrefix", "DRAResourceSlices")


def parse_feature_gates(value: str) -> dict[str, bool]:
    """``-feature-gates=A=true,B=false`` -> {A: True, B: False}; raises ValueError naming the gate."""
    gates: dict[str, bool] = {}
    for part in value.split(","):
        part = part.strip()
        if not part:
            continue
        name, _, val = part.partition("=")
        if name not in FEATURE_GATES:
            raise ValueError(f"-feature-gates: unknown feature gate {name!r}")
        try:
            gates[name] = parse_bool(val or "true")
        except argparse.ArgumentTypeError:
            raise ValueError(f"-feature-gates: invalid value for {name}: {val!r}") from None
        if name == "NodeFeatureAPI" and not gates[name]:
            raise ValueError("-feature-gates: NodeFeatureAPI is locked to true")
    return gates
