"""Development-time conformance run against google/cel-spec's "simple" test files.

Not collected by pytest (the spec files are not in this repository). Run::

    python tests/unit/lang/cel/celspec_conformance.py /path/to/cel-spec [file-stem ...]

For every test that needs only what nfd supports (no protobuf messages, declared variables,
containers or check-only cases), it compiles the expression, evaluates it with the exact
closures and the fast path, and compares with the expected value or error. Expressions our type
checker rejects count as accepted when the test expects an error or disables checking.
"""

from __future__ import annotations

import math
import re
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[4]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from celhelp import same  # noqa: E402

from nfd.api.features import Features  # noqa: E402
from nfd.lang.cel.compiler import Compiler  # noqa: E402
from nfd.lang.cel.runtime import Act  # noqa: E402
from nfd.lang.cel.syntax import CelSyntaxError, parse  # noqa: E402
from nfd.lang.cel.values import UInt, make_map  # noqa: E402

DEFAULT_FILES = ["basic", "logic", "comparisons", "conversions", "fp_math", "integer_math", "lists",
                 "macros", "macros2", "string", "string_ext", "parse", "plumbing", "fields"]
_TOKEN = re.compile(r'\s+|#[^\n]*|"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|[{}:\[\],<>]|[^\s{}:\[\],<>]+')
_ESC = {"n": 10, "t": 9, "r": 13, "\\": 92, '"': 34, "'": 39, "a": 7, "b": 8, "f": 12, "v": 11, "?": 63, "`": 96}

Msg = list[tuple[str, Any]]


def _tokens(text: str) -> Iterator[str]:
    for m in _TOKEN.finditer(text):
        t = m.group(0)
        if not t.isspace() and not t.startswith("#"):
            yield t


def _unquote(token: str) -> bytes:
    """A protobuf text-format string literal to bytes."""
    body, out, i = token[1:-1], bytearray(), 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out += c.encode()
            i += 1
            continue
        e = body[i + 1]
        if e in "01234567":
            out.append(int(body[i + 1:i + 4], 8))
            i += 4
        elif e == "x":
            out.append(int(body[i + 2:i + 4], 16))
            i += 4
        elif e in "uU":
            width = 4 if e == "u" else 8
            out += chr(int(body[i + 2:i + 2 + width], 16)).encode()
            i += 2 + width
        else:
            out.append(_ESC[e])
            i += 2
    return bytes(out)


def _message(it: Iterator[str]) -> Msg:
    out: Msg = []
    for key in it:
        if key in ("}", ">"):
            return out
        t = next(it)
        if t == ":":
            t = next(it)
        if t in ("{", "<"):
            out.append((key, _message(it)))
        elif t == "[":
            for v in it:
                if v == "]":
                    break
                if v != ",":
                    out.append((key, _message(it) if v == "{" else v))
        else:
            out.append((key, t))
    return out


def _get(msg: Msg, key: str) -> list[Any]:
    return [v for k, v in msg if k == key]


def _value(msg: Msg) -> Any:
    kind, x = msg[0]
    if kind == "int64_value":
        return int(x)
    if kind == "uint64_value":
        return UInt(int(x))
    if kind == "double_value":
        low = x.lower()
        if "inf" in low:
            return -math.inf if low.startswith("-") else math.inf
        return math.nan if "nan" in low else float(x)
    if kind == "string_value":
        return _unquote(x).decode()
    if kind == "bytes_value":
        return _unquote(x)
    if kind == "bool_value":
        return x == "true"
    if kind == "null_value":
        return None
    if kind == "list_value":
        return [_value(e) for e in _get(x, "values")]
    if kind == "map_value":
        return make_map([(_value(_get(e, "key")[0]), _value(_get(e, "value")[0])) for e in _get(x, "entries")])
    raise KeyError(kind)


def run(files: list[Path]) -> tuple[Counter[str], list[str]]:
    stats: Counter[str] = Counter()
    problems: list[str] = []
    for path in files:
        top = _message(iter([*_tokens(path.read_text()), "}"]))
        for section in _get(top, "section"):
            for t in _get(section, "test"):
                name = f"{path.stem}/{_get(section, 'name')[0]}/{_get(t, 'name')[0]}"
                expr = _unquote(_get(t, "expr")[0]).decode()
                if any(_get(t, k) for k in ("bindings", "type_env", "container", "check_only", "typed_result")):
                    stats["skipped: needs an environment"] += 1
                    continue
                want_error = bool(_get(t, "eval_error"))
                try:
                    values = _get(t, "value")
                    want = _value(values[0]) if values else True  # the spec's default expectation
                except KeyError:
                    stats["skipped: value type"] += 1
                    continue
                try:
                    compiler = Compiler()
                    c = compiler.compile(parse(expr))
                except CelSyntaxError as e:
                    if want_error or _get(t, "disable_check") == ["true"]:
                        stats["rejected by the checker (accepted)"] += 1
                        problems.append(f"checker-rejected {name}: {expr!r}: {e}")
                    else:
                        stats["unsupported"] += 1
                        problems.append(f"unsupported {name}: {e}")
                    continue
                try:
                    got, err = c.fn(Act(Features(), {}, 10**6)), None
                except Exception as e:
                    got, err = None, e
                fast = compiler.source(c)
                if fast is not None:
                    try:
                        quick = fast(Act(Features(), {}, 10**6))
                    except Exception:
                        pass  # the fast path defers to the closures on any error
                    else:
                        if err is not None or not same(quick, got):
                            stats["FAST PATH MISMATCH"] += 1
                            problems.append(f"fast path {name}: {quick!r} vs exact {got!r} / {err}")
                if want_error:
                    ok = err is not None
                else:
                    got_list = sorted(got) if isinstance(got, set | frozenset) else got
                    ok = err is None and same(got_list, want)
                stats["pass" if ok else "FAIL"] += 1
                if not ok:
                    problems.append(f"FAIL {name}: {expr!r}: got {got!r} / {err}, want {'error' if want_error else want!r}")
    return stats, problems


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    testdata = Path(argv[0]) / "tests" / "simple" / "testdata"
    stems = argv[1:] or DEFAULT_FILES
    stats, problems = run([testdata / f"{s}.textproto" for s in stems])
    for line in problems:
        print(line)
    print(dict(stats))
    return 1 if stats["FAIL"] or stats["FAST PATH MISMATCH"] else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
