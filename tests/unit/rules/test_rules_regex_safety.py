"""One catastrophic-backtracking check for every Go-regexp user (InRegexp, CEL, templates)."""

from __future__ import annotations

import pytest

from nfd.rules.expression import Expr
from nfd.rules.goregex import compile_go, nested_repetition


@pytest.mark.parametrize(
    ("pattern", "risky"),
    [
        ("(a+)+$", True),
        ("(a|aa)+$", True),
        ("((a)+b)*", True),
        ("(x{2,3}){2}", True),
        ("(?:[a-z]+,)*end", True),
        ("(?:x*)*", True),
        ("^a*(?i)+$", True),  # legal in Go: the repeat applies to `a*`
        ("^03", False),
        ("nvidia|amd", False),
        ("(ab)+", False),
        ("(?:ab)+", False),  # "(?" opens a group; it is not a repeat
        ("(?P<x>a)+", False),
        ("((?i)a)+", False),
        ("a*?b+?", False),  # lazy markers are not repeats of repeats
        ("[(a+)]+", False),
        ("\\(a+\\)+", False),
        ("(a+){", False),  # a literal `{` in Go
        ("(?i)a100", False),
    ],
)
def test_nested_repetition(pattern: str, risky: bool) -> None:
    assert nested_repetition(pattern) is risky


def test_risky_patterns_run_on_re2_others_on_re() -> None:
    pytest.importorskip("re2")
    assert type(compile_go("(a+)+$")).__module__.startswith("re2")
    assert type(compile_go("^(ab)+$")).__module__ == "re"


def test_in_regexp_with_nested_repetition_terminates() -> None:
    pytest.importorskip("re2")
    e = Expr("k", "InRegexp", ["^(a+)+$"], "")
    # exponential for a backtracking engine (2**5000 paths); linear on RE2
    assert e.on_value({"k": "a" * 5000 + "b"}) is False
    assert e.on_value({"k": "a" * 5000}) is True


def test_all_users_share_the_check() -> None:
    pytest.importorskip("re2")
    from nfd.rules.celc.library import compile_regex
    from nfd.rules.gotemplate.goregex import compile_go as template_compile

    for compile_fn in (compile_regex, template_compile):
        assert type(compile_fn("(a|aa)+c")).__module__.startswith("re2")
        assert type(compile_fn("^a+c")).__module__ == "re"
