"""Bounded YAML: depth, aliases and size are checked before PyYAML's recursive composers run."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

from nfd.common import safeyaml
from nfd.common.safeyaml import MAX_ALIASES, MAX_DEPTH, YamlLimitError


def _block(depth: int) -> str:
    return "".join("  " * i + "k:\n" for i in range(depth)) + "  " * depth + "v: 1\n"


def test_ordinary_documents_load() -> None:
    assert safeyaml.safe_load("a: [1, {b: c}]\n", source="x") == {"a": [1, {"b": "c"}]}
    assert safeyaml.safe_load_all("a: 1\n---\nb: 2\n", source="x") == [{"a": 1}, {"b": 2}]
    assert safeyaml.safe_load(_block(MAX_DEPTH - 1), source="x")


@pytest.mark.parametrize("text", ["[" * 30_000 + "]" * 30_000, "{a: " * 5_000 + "1" + "}" * 5_000, _block(3_000)],
                         ids=["flow-30000", "flow-map-5000", "block-3000"])
def test_deep_documents_are_named_errors(text: str) -> None:
    with pytest.raises(YamlLimitError, match=rf"^cfg: line \d+: nesting deeper than {MAX_DEPTH} levels$"):
        safeyaml.safe_load(text, source="cfg", max_bytes=1 << 30)


def test_alias_bomb_is_refused() -> None:
    text = "a: &a [x]\nb: [" + ", ".join(["*a"] * (MAX_ALIASES + 1)) + "]\n"
    with pytest.raises(YamlLimitError, match="aliases"):
        safeyaml.safe_load(text, source="bomb")


def test_size_limit() -> None:
    with pytest.raises(YamlLimitError, match="more than the limit of 10"):
        safeyaml.safe_load("a: 12345678901", source="s", max_bytes=10)


def test_yaml_errors_stay_yaml_errors() -> None:
    with pytest.raises(yaml.YAMLError):
        safeyaml.safe_load("a: [", source="x")


def test_nfd_rules_does_not_crash_on_30000_levels(tmp_path) -> None:
    # PyYAML's C composer overflowed the stack here (exit -11)
    f = tmp_path / "deep.yaml"
    f.write_text("[" * 30_000 + "]" * 30_000)
    out = subprocess.run([sys.executable, "-m", "nfd.cli", "rules", "validate", "-f", str(f)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2, out.stderr
    assert f"{f}: line 1: nesting deeper than {MAX_DEPTH} levels" in out.stderr
