"""google/cel-spec's conformance tests ("simple" testdata) against our CEL compiler.

The corpus is not in this repository: it is read from ``<repo>/../shared/conformance/cel-spec/
cases.json`` (converted from cel-spec's textproto files; its README describes the format), and
the tests skip, saying why, when it is absent.

Scope: every case the corpus marks in scope, plus the out-of-scope cases whose reasons are all
features we now offer. ``FEATURES`` lists those features explicitly: each names the corpus
cases it covers and a probe expression; a feature counts as offered once its probe compiles,
so cases join the run by themselves when the library gains the function (optional types,
``cel.bind``, ``format``, the network extension, ...).

Each case compiles (checked, or unchecked where the case disables the checker, as cel-go's
unchecked mode), evaluates with the exact closures and with the generated fast path, and must
give the expected value (same CEL type), an error where one is expected (any error: messages
differ between implementations), or the expected static type.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from celhelp import same

from nfd.api.features import Features
from nfd.lang.cel.compiler import Compiler
from nfd.lang.cel.runtime import Act
from nfd.lang.cel.syntax import CelSyntaxError, parse
from nfd.lang.cel.types import fmt
from nfd.lang.cel.values import UInt, make_map

CORPUS = Path(__file__).resolve().parents[4].parent / "shared" / "conformance" / "cel-spec" / "cases.json"
STEP_BUDGET = 10**6


@dataclass(frozen=True)
class Feature:
    """A feature the corpus marks out of scope that we may offer: the reason it covers, which
    cases it covers (``applies``), and a probe that compiles once the feature exists."""

    reason: str
    applies: Callable[[dict[str, Any]], bool]
    probe: str


_EXT = "extension function not offered (not in docs/cel.md)"


def _in(file: str, *sections: str) -> Callable[[dict[str, Any]], bool]:
    return lambda c: c["file"] == file and (not sections or c["section"] in sections)


FEATURES = [
    Feature("optional types", lambda c: True, "optional.of(1).hasValue() && optional.none().orValue(2) == 2"),
    Feature(_EXT, _in("bindings_ext"), "cel.bind(x, 1, x + x) == 2"),
    Feature(_EXT, _in("string_ext", "format", "format_errors"), '"%d-%s".format([1, "a"]) == "1-a"'),
    Feature(_EXT, _in("string_ext", "quote"), 'strings.quote("a") == "\\"a\\""'),
    Feature(_EXT, _in("string_ext", "reverse"), '"ab".reverse() == "ba"'),
    Feature(_EXT, _in("network_ext"), 'ip("1.2.3.4").family() == 4 && cidr("10.0.0.0/8").prefixLength() == 8'),
    Feature(_EXT, _in("math_ext"), "math.greatest(1, 2) == 2 && math.abs(-1) == 1 && math.bitOr(1, 2) == 3"),
    Feature(_EXT, _in("encoders_ext"), 'base64.encode(b"a") == "YQ=="'),
    Feature("type() and type values", lambda c: True, "type(1) == int"),
    Feature("timestamps/durations", lambda c: True, 'duration("1s") < duration("2s")'),
]


# Kubernetes enables cel-go's ext.Strings version 2, whose format() predates cel-spec's: %f groups
# thousands and prints infinities as ∞, %e prints 1.0×10⁰⁰, %d/%f/%e refuse other number types,
# and list elements print with CEL quoting (checked against Kubernetes by test_k8s_library.py).
_K8S_FORMAT = "Kubernetes' string.format (ext.Strings v2)"

# Cases where we follow Kubernetes' CEL library on purpose, not cel-spec's extension of the same
# name; each must keep failing the corpus expectation (so the list stays true).
DEVIATIONS = {
    ("network_ext", "ipv4_equals_ipv6"): "Kubernetes' ip() refuses IPv4-mapped IPv6 addresses",
    ("network_ext", "ipv4_not_equals_ipv6"): "Kubernetes' ip() refuses IPv4-mapped IPv6 addresses",
    ("string_ext", 'scientific notation formatting clause'): _K8S_FORMAT,
    ("string_ext", 'default precision for fixed-point clause with int'): _K8S_FORMAT,
    ("string_ext", 'default precision for fixed-point clause with uint'): _K8S_FORMAT,
    ("string_ext", 'default precision for scientific notation'): _K8S_FORMAT,
    ("string_ext", 'default precision for scientific notation with int'): _K8S_FORMAT,
    ("string_ext", 'default precision for scientific notation with uint'): _K8S_FORMAT,
    ("string_ext", 'NaN support for scientific notation'): _K8S_FORMAT,
    ("string_ext", 'positive infinity support for scientific notation'): _K8S_FORMAT,
    ("string_ext", 'negative infinity support for scientific notation'): _K8S_FORMAT,
    ("string_ext", 'NaN support for decimal'): _K8S_FORMAT,
    ("string_ext", 'positive infinity support for decimal'): _K8S_FORMAT,
    ("string_ext", 'negative infinity support for decimal'): _K8S_FORMAT,
    ("string_ext", 'positive infinity support for fixed-point'): _K8S_FORMAT,
    ("string_ext", 'negative infinity support for fixed-point'): _K8S_FORMAT,
    ("string_ext", 'dyntype support for scientific notation'): _K8S_FORMAT,
    ("string_ext", 'dyntype NaN/infinity support'): _K8S_FORMAT,
    ("string_ext", 'dyntype support for lists'): _K8S_FORMAT,
    ("string_ext", 'scientific notation formatting clause in a string variable'): _K8S_FORMAT,
    ("string_ext", "map support (all key types)"): _K8S_FORMAT,
}


def _compiles(src: str) -> bool:
    try:
        Compiler().compile(parse(src))
    except CelSyntaxError:
        return False
    return True


@cache
def _offered() -> tuple[Feature, ...]:
    return tuple(f for f in FEATURES if _compiles(f.probe))


def in_scope(case: dict[str, Any]) -> bool:
    reasons = case.get("out_of_scope")
    if not reasons:
        return True
    offered = _offered()
    return all(any(f.reason == r and f.applies(case) for f in offered) for r in reasons)


# -- the corpus's tagged values and types --------------------------------------------------------


def value(v: dict[str, Any]) -> Any:
    """A tagged VALUE of cases.json as the runtime's Python value."""
    ((kind, x),) = v.items()
    if kind == "int":
        return int(x)
    if kind == "uint":
        return UInt(int(x))
    if kind == "double":
        if isinstance(x, str):
            return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf, "-0": -0.0}[x]
        return float(x)
    if kind == "string":
        return str(x)
    if kind == "bytes":
        return base64.b64decode(x)
    if kind == "bool":
        return bool(x)
    if kind == "null":
        return None
    if kind == "list":
        return [value(e) for e in x]
    if kind == "map":
        return make_map([(value(k), value(e)) for k, e in x])
    raise KeyError(f"value kind {kind!r} has no runtime form here")


def ctype(t: Any) -> Any:
    """A TYPE of cases.json as the checker's type."""
    if isinstance(t, list):
        if t[0] == "abstract" and t[1] == "optional_type":
            return ("optional", *(ctype(e) for e in t[2:]))
        return (t[0], *(ctype(e) for e in t[1:]))
    return t


# -- running one case ---------------------------------------------------------------------------


def run_case(case: dict[str, Any]) -> str | None:
    """None when the case passes, else what went wrong."""
    expr = case["expr"]
    expect = case["expect"]
    wants_error = "error" in expect
    declared = {d["name"]: ctype(d["ident"]) for d in case.get("type_env", ()) if "ident" in d}
    bindings = {k: value(v) for k, v in case.get("bindings", {}).items()}
    compiler = Compiler(declared=declared, checked=not case.get("disable_check", False))
    try:
        c = compiler.compile(parse(expr))
    except CelSyntaxError as e:
        return None if wants_error else f"compile error: {e}"
    if "deduced_type" in expect and c.t != ctype(expect["deduced_type"]):
        return f"static type {fmt(c.t)}, want {fmt(ctype(expect['deduced_type']))}"
    if case.get("check_only") or ("deduced_type" in expect and "value" not in expect):
        return None

    def act() -> Act:
        a = Act(Features(), {}, STEP_BUDGET)
        a.v.update(bindings)
        return a

    try:
        got, err = c.fn(act()), None
    except Exception as e:  # noqa: BLE001 - a CEL error is an outcome here
        got, err = None, e
    fast = compiler.source(c)
    if fast is None:
        return "the fast path did not build"
    try:
        quick = fast(act())
    except Exception:  # noqa: BLE001 - the fast path defers to the closures on any error
        pass
    else:
        if err is not None or not same(_plain(quick), _plain(got)):
            return f"fast path gave {quick!r}, exact closures {got!r} / {err!r}"
    if wants_error:
        return None if err is not None else f"got {got!r}, want an error ({expect['error']})"
    if err is not None:
        return f"error {type(err).__name__}: {err}"
    want = value(expect["value"]) if "value" in expect else True
    if not same(_plain(got), want):
        return f"got {got!r}, want {want!r}"
    if isinstance(want, float) and want == 0 and math.copysign(1, want) != math.copysign(1, got):
        return f"got {got!r}, want {want!r} (sign of zero)"
    return None


def _plain(v: Any) -> Any:
    """Flag sets and tuples compare as the lists they are in CEL."""
    if isinstance(v, set | frozenset):
        return sorted(v)
    if isinstance(v, tuple):
        return list(v)
    return v


# -- collection ---------------------------------------------------------------------------------


def _load() -> tuple[list[dict[str, Any]], str | None]:
    if not CORPUS.is_file():
        return [], f"cel-spec corpus not found at {CORPUS} (clone the repository next to a shared/ directory)"
    return json.loads(CORPUS.read_text())["cases"], None


CASES, SKIP_REASON = _load()
FILES = sorted({c["file"] for c in CASES})


@pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")
@pytest.mark.parametrize("file", FILES or ["(corpus absent)"])
def test_celspec_file(file: str) -> None:
    cases = [c for c in CASES if c["file"] == file and in_scope(c)]
    if not cases:
        pytest.skip(f"{file}: no case in scope (needs {sorted({c['out_of_scope'][0] for c in CASES if c['file'] == file})})")
    failures = []
    for case in cases:
        problem = run_case(case)
        deviation = DEVIATIONS.get((case["file"], case["name"]))
        if deviation is not None and problem is None:
            failures.append(f"{case['section']}/{case['name']}: listed as a deviation ({deviation}) but passes")
        elif problem is not None and deviation is None:
            failures.append(f"{case['section']}/{case['name']}: {case['expr']!r}: {problem}")
    assert not failures, f"{len(failures)} of {len(cases)} cases fail:\n" + "\n".join(failures)


@pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")
def test_scope_covers_the_corpus_in_scope_cases() -> None:
    """The run includes every case cases.json puts in scope (1119 at cel-spec 508bd98)."""
    marked = [c for c in CASES if "out_of_scope" not in c]
    assert len(marked) >= 1000
    assert all(in_scope(c) for c in marked)


def test_probes_tell_offered_features_apart() -> None:
    """A probe for something we do not offer fails to compile (so its cases stay out)."""
    assert _compiles("size([1]) == 1")
    assert not _compiles("no_such_function(1) == 2")
