"""Reading rendered charts: the object and field paths the every-key facts name.

Shared by the test (tests/e2e/test_deploy_values_keys.py) and by whoever re-derives the facts
from an upstream chart (NFD_UPSTREAM_CHART, see the test's docstring)."""

from __future__ import annotations

import re
from typing import Any

MISSING = object()


def index(objs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {f"{o['kind']}/{o['metadata']['name']}": o for o in objs}


def split_path(path: str) -> list[str | int]:
    """`a.b\\.c[0].d` -> ["a", "b.c", 0, "d"] (a backslash keeps a dot in a key)."""
    parts: list[str | int] = []
    for raw in re.split(r"(?<!\\)\.", path):
        m = re.fullmatch(r"(.*?)((?:\[\d+\])*)", raw)
        assert m
        parts.append(m.group(1).replace("\\.", "."))
        parts += [int(i) for i in re.findall(r"\[(\d+)\]", m.group(2))]
    return parts


def get(obj: Any, path: str) -> Any:
    cur = obj
    for p in split_path(path):
        if isinstance(p, int):
            if not isinstance(cur, list) or p >= len(cur):
                return MISSING
            cur = cur[p]
        else:
            if not isinstance(cur, dict) or p not in cur:
                return MISSING
            cur = cur[p]
    return cur


def feature_gates(args: list[str]) -> dict[str, str]:
    """-feature-gates flags, one per gate (upstream) or comma-joined (ours), as one map."""
    out: dict[str, str] = {}
    for a in args:
        if a.startswith("-feature-gates="):
            for kv in a.split("=", 1)[1].split(","):
                k, _, v = kv.partition("=")
                out[k] = v
    return out


def host_paths(volumes: list[dict[str, Any]]) -> list[str]:
    return [v["hostPath"]["path"] for v in volumes if "hostPath" in v]
