"""Bounded YAML: depth, aliases and size are checked before PyYAML's recursive composers run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

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


# Below PyYAML's own limit (1000 flow levels in PyYAML 6.0.4, whose scanner reads a flow
# collection ahead before the parser hands out its first event), ours names the depth.
@pytest.mark.parametrize("text", ["[" * 500 + "]" * 500, "{a: " * 500 + "1" + "}" * 500, _block(3_000)],
                         ids=["flow-500", "flow-map-500", "block-3000"])
def test_deep_documents_are_named_errors(text: str) -> None:
    with pytest.raises(YamlLimitError, match=rf"^cfg: line \d+: nesting deeper than {MAX_DEPTH} levels$"):
        safeyaml.safe_load(text, source="cfg", max_bytes=1 << 30)


def _one_line(e: Exception) -> str:
    """What a caller prints: our limit's message, or a YAML error through error_text."""
    return str(e) if isinstance(e, YamlLimitError) else f"cfg: invalid YAML: {safeyaml.error_text(e)}"  # type: ignore[arg-type]


@pytest.mark.parametrize("text", ["[" * 30_000 + "]" * 30_000, "{a: " * 5_000 + "1" + "}" * 5_000],
                         ids=["flow-30000", "flow-map-5000"])
def test_very_deep_documents_are_refused_in_one_line(text: str) -> None:
    """Refused, not a crash, in one line naming the source and the line, in our words whichever
    limit is met first: ours, or the YAML library's own (PyYAML 6.0.4's libyaml stops a flow at
    1000 levels with "exceeded maximum nesting depth" before our count sees the events)."""
    for load in (safeyaml.safe_load, safeyaml.safe_load_all, safeyaml.check):
        with pytest.raises(YamlLimitError, match=rf"^cfg: line 1: nesting deeper than {MAX_DEPTH} levels$"):
            load(text, source="cfg", max_bytes=1 << 30)


def test_error_text_is_one_line_with_the_place() -> None:
    with pytest.raises(yaml.YAMLError) as ei:
        safeyaml.safe_load("a: 1\nb: [1, 2\n", source="x")
    text = safeyaml.error_text(ei.value)
    assert "\n" not in text and text.startswith("line 3, column 1: "), text


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
    # one line naming the file and the line (ours or the YAML library's limit, whichever is first)
    (line,) = out.stderr.strip().splitlines()
    assert f"{f}: " in line and "line 1" in line, line


# -- the one-pass loader: the loader's own result, faster ------------------------------------

_ROOT = Path(__file__).resolve().parents[3]
_TRICKY = [
    "a: 1\nb: 0x1f\nc: 0o17\nd: 1_000\ne: 1:30\nf: -.inf\ng: .nan\nh: 1e3\ni: yes\nj: Off\nk: ~\nl:\n",
    "'quoted': \"1\"\nplain: 2026-01-02\nts: 2001-12-14t21:59:43.10-05:00\nlit: |\n  x\n  y\nfold: >\n  a\n  b\n",
    "dup: 1\nother: x\ndup: 2\n",
    "1: one\n2.5: f\ntrue: t\nnull: n\n",
    "[1, [2, [3, {a: [4]}]], {}]\n",
    "---\n---\na: 1\n...\n--- 3\n",
    "",
    "# only a comment\n",
    "k: 'it''s'\nu: \"\\u00e9\\t\"\n",
    "- - - x\n  - y\n- z\n",
]
_FALLBACK = [
    "a: &x {b: 1}\nc: *x\n",  # anchors and aliases
    "base: &b {x: 1}\nd:\n  <<: *b\n  y: 2\n",  # merge key
    "a: !!str 1\nb: !!int '2'\nc: !!binary aGk=\n",  # explicit tags
    "? [a, b]\n: c\n",  # unhashable key: PyYAML's error
    "a: =\n",  # the value tag: PyYAML's error
]


def _loaders() -> list[Any]:
    from nfd.cli.rules import _loader

    return [yaml.CSafeLoader, _loader()]


def _pyyaml(text: str, loader: Any) -> Any:
    try:
        return ("ok", list(yaml.load_all(text, Loader=loader)))
    except yaml.YAMLError as e:
        return ("error", type(e))


def _ours(text: str, loader: Any) -> Any:
    try:
        return ("ok", safeyaml.safe_load_all(text, source="t", loader=loader, max_bytes=1 << 30))
    except yaml.YAMLError as e:
        return ("error", type(e))


def _same(a: Any, b: Any) -> bool:
    """Equal, with NaN equal to itself and bool/int told apart."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and a != a:
        return b != b
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _repo_yaml() -> list[Path]:
    out = subprocess.run(["git", "ls-files", "*.yaml", "*.yml"], cwd=_ROOT, capture_output=True, text=True)
    files = [_ROOT / f for f in out.stdout.split()]
    return [f for f in files if f.is_file() and "{{" not in f.read_text(encoding="utf-8", errors="replace")]


def test_one_pass_loader_gives_the_loaders_result_on_every_repo_yaml_file() -> None:
    files = _repo_yaml()
    assert len(files) > 30, "the repository's YAML files were not found"
    for f in files:
        text = f.read_text(encoding="utf-8")
        for loader in _loaders():
            assert _same(_ours(text, loader), _pyyaml(text, loader)), f"{f} with {loader.__name__}"


@pytest.mark.parametrize("text", _TRICKY + _FALLBACK)
def test_one_pass_loader_gives_the_loaders_result(text: str) -> None:
    for loader in _loaders():
        assert _same(_ours(text, loader), _pyyaml(text, loader)), loader.__name__
        single = list(yaml.load_all(text, Loader=loader)) if _pyyaml(text, loader)[0] == "ok" else None
        if single is not None and len(single) <= 1:
            assert _same(safeyaml.safe_load(text, source="t", loader=loader), single[0] if single else None)


def test_plain_documents_take_the_one_pass_path(monkeypatch: pytest.MonkeyPatch) -> None:
    # neither PyYAML's composer nor its pure-Python parser is used for an ordinary document
    # (the pure-Python event parser took 80% of validating a 6.5 MB rule file)
    def boom(*_a: Any, **_k: Any) -> Any:
        raise AssertionError("PyYAML's slow path was taken")

    monkeypatch.setattr(yaml, "load_all", boom)
    monkeypatch.setattr(yaml, "load", boom)
    monkeypatch.setattr(yaml.parser.Parser, "check_event", boom)
    text = "".join(f"k{i}: [{{a: {i}}}, '{i}', x]\n" for i in range(200))  # > MAX_DEPTH openers
    assert safeyaml.safe_load_all(text, source="x")[0]["k199"] == [{"a": 199}, "199", "x"]
    assert safeyaml.safe_load(text, source="x")["k0"] == [{"a": 0}, "0", "x"]
    with pytest.raises(YamlLimitError, match=rf"^cfg: line \d+: nesting deeper than {MAX_DEPTH} levels$"):
        safeyaml.safe_load_all("[" * 500 + "]" * 500, source="cfg")


def test_the_check_reads_events_with_libyaml(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*_a: Any, **_k: Any) -> Any:
        raise AssertionError("the pure-Python parser was used")

    monkeypatch.setattr(yaml.parser.Parser, "check_event", boom)
    safeyaml.check("a: [" + ", ".join(["{b: 1}"] * 200) + "]\n", source="x")


def test_repeated_short_strings_are_one_object() -> None:
    # 40,000 rules repeat "name", "matchExpressions", "InRegexp", "kernel.version": one object
    # each instead of 40,000 took a rule file's documents from 76 to 49 MB
    text = "".join(f"- {{op: InRegexp, feature: kernel.version, v{i}: '{'x' * 70}'}}\n" for i in range(3))
    docs = safeyaml.safe_load_all(text, source="x")[0]
    assert docs[0]["op"] is docs[1]["op"] is docs[2]["op"]
    assert next(iter(docs[0])) is next(iter(docs[2]))  # keys too
    assert docs[0]["v0"] == docs[1]["v1"] and docs[0]["v0"] is not docs[1]["v1"]  # long ones are left alone


def test_duplicate_keys_are_found_with_kubectls_wording() -> None:
    """PyYAML keeps the last value in silence; kubectl refuses the file. Both load paths (the
    fast one and PyYAML's, taken for anchors) report every repeated key with both lines."""
    from nfd.common.safeyaml import safe_load_all

    text = "a:\n  x: 1\n  x: 2\nb: {y: 1, y: 2}\n---\nc: 1\nc: 2\n"
    dups: list[Any] = []
    docs = safe_load_all(text, source="t", duplicates=dups)
    assert docs == [{"a": {"x": 2}, "b": {"y": 2}}, {"c": 2}]
    assert [str(d) for d in dups] == ['line 3: mapping key "x" already defined at line 2',
                                      'line 4: mapping key "y" already defined at line 4',
                                      'line 7: mapping key "c" already defined at line 6']
    anchored: list[Any] = []
    safe_load_all("a: &k {x: 1, x: 2}\nb: *k\n", source="t", duplicates=anchored)
    assert [str(d) for d in anchored] == ['line 1: mapping key "x" already defined at line 1']
    clean: list[Any] = []
    safe_load_all("a: 1\nb: {a: 1}\n", source="t", duplicates=clean)
    assert clean == []
