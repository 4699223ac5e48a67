"""Every Go-regexp user runs in linear time: InRegexp/matchName, CEL matches(), Sprig, labelWhiteList.

The patterns are the issue's and other classic backtracking traps; on Python's ``re`` most of
these pairs take seconds to hours. They run in a subprocess with a deadline, so a regression to
a backtracking engine fails the test instead of hanging the suite.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from nfd.lang.goregex import compile_go
from nfd.rules.expression import Expr

# (pattern, input): each takes > 1 s on a backtracking engine.
TRAPS = [
    ("a.*a.*a.*a.*b", "a" * 10_000),
    (".*.*=.*", "x" * 20_000),
    (r"^.*\..*/.*-.*$", "a." * 25_000),
    (r"\w*\s?\w*\s?\w*\s?\w*$", "a" * 64 + "!"),
    ("a.*a.*a.*a.*b", "a" * 200),
    ("(a+)+$", "a" * 5_000 + "b"),
    ("(a|aa)+c", "a" * 3_000),
    ("(x+x+)+y", "x" * 5_000),
    (r"^(\w+\s?)*$", "word " * 2_000 + "!"),
    ("(.*a){12}", "a" * 5_000),
    (r"^(([a-z])+.)+[A-Z]([a-z])+$", "aaaaaaaaaaaaaaaaaaaaaaaaaaaa!" * 300),
]

_SCRIPT = textwrap.dedent(
    """
    import json, sys, time
    from nfd.rules.expression import Expr
    from nfd.lang.cel.compiler import Compiler
    from nfd.lang import gotemplate
    from nfd.nodestate.outputpolicy import PolicyConfig
    traps = json.loads(sys.stdin.read())
    times = []
    for pattern, text in traps:
        t0 = time.perf_counter()
        e = Expr("k", "InRegexp", [pattern], "")
        e.on_value({"k": text})
        tpl = gotemplate.parse('{{ regexMatch .p .s }}{{ regexReplaceAll .p .s "x" | len }}{{ regexFindAll .p .s -1 | len }}')
        tpl.execute({"p": pattern, "s": text})
        PolicyConfig(label_whitelist=pattern)._whitelist_re.match_string(text)
        times.append(time.perf_counter() - t0)
    print(json.dumps(times))
    """
)


def test_backtracking_traps_finish_in_linear_time() -> None:
    try:
        out = subprocess.run(
            [sys.executable, "-c", _SCRIPT], input=json.dumps(TRAPS), capture_output=True, text=True, timeout=60
        )
    except subprocess.TimeoutExpired:
        pytest.fail("a Go regexp user backtracks: the traps did not finish in 60 s")
    assert out.returncode == 0, out.stderr
    times = json.loads(out.stdout)
    assert len(times) == len(TRAPS)


def test_cel_matches_on_traps() -> None:
    from tests.unit.lang.cel.celhelp import ours

    for pattern, text in TRAPS[:6]:
        expr = f"node.name.matches({json.dumps(pattern)})"
        assert ours(expr, node_name=text) is compile_go(pattern).match_string(text)


def test_in_regexp_with_nested_repetition_terminates() -> None:
    e = Expr("k", "InRegexp", ["^(a+)+$"], "")
    assert e.on_value({"k": "a" * 5000 + "b"}) is False
    assert e.on_value({"k": "a" * 5000}) is True


def test_all_users_share_one_compile() -> None:
    from nfd.lang.cel.library import compile_regex
    from nfd.lang.gotemplate.sprig_regex import compile_go as template_compile

    for compile_fn in (compile_regex, template_compile):
        assert compile_fn("(a|aa)+c") is compile_go("(a|aa)+c")
