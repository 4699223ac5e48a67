"""Single expressions: every operator, type and error case (cases from upstream's expression tests).

A case is (op, values, type, present, input, expected) where expected is True, False or ERR.
``present=False`` means the key is absent (upstream's ``valid=false``).
"""

from __future__ import annotations

import pytest

from nfd.lang.semver import parse_version
from nfd.rules.expression import Expr, RuleError, go_atoi

ERR = "error"

# evaluateMatchExpression(op, values, valid, input)
SINGLE = [
    ("", [], "", False, "", True),
    ("", [], "", False, "2", True),
    ("In", ["1"], "", False, "2", False),
    ("In", ["1"], "", True, "2", False),
    ("In", ["1", "2", "3"], "", False, "2", False),
    ("In", ["1", "2", "3"], "", True, "2", True),
    ("NotIn", ["2"], "", False, "2", False),
    ("NotIn", ["1"], "", True, "2", True),
    ("NotIn", ["1", "2", "3"], "", False, "2", False),
    ("NotIn", ["1", "2", "3"], "", True, "2", False),
    ("InRegexp", ["val-[0-9]$"], "", False, "val-1", False),
    ("InRegexp", ["val-[0-9]$"], "", True, "val-1", True),
    ("InRegexp", ["val-[0-9]$"], "", True, "val-12", False),
    ("InRegexp", ["val-[0-9]$", "al-[1-9]"], "", True, "val-12", True),
    ("Exists", [], "", False, "", False),
    ("Exists", [], "", True, "", True),
    ("DoesNotExist", [], "", False, "false", True),
    ("DoesNotExist", [], "", True, "false", False),
    ("Gt", ["2"], "", False, "3", False),
    ("Gt", ["2"], "", True, "2", False),
    ("Gt", ["2"], "", True, "3", True),
    ("Gt", ["-10"], "", True, "-3", True),
    ("Lt", ["2"], "", False, "1", False),
    ("Lt", ["2"], "", True, "2", False),
    ("Lt", ["-10"], "", True, "-3", False),
    ("Lt", ["2"], "", True, "1", True),
    ("GtLt", ["1", "10"], "", False, "1", False),
    ("GtLt", ["1", "10"], "", True, "1", False),
    ("GtLt", ["1", "10"], "", True, "10", False),
    ("GtLt", ["1", "10"], "", True, "2", True),
    ("IsTrue", [], "", False, "true", False),
    ("IsTrue", [], "", True, "true", True),
    ("IsTrue", [], "", True, "false", False),
    ("IsTrue", [], "", True, "True", False),
    ("IsFalse", [], "", False, "false", False),
    ("IsFalse", [], "", True, "false", True),
    ("IsFalse", [], "", True, "true", False),
    # error cases (the key is present)
    ("", ["1"], "", True, "val", ERR),
    ("In", [], "", True, "val", ERR),
    ("NotIn", [], "", True, "val", ERR),
    ("InRegexp", [], "", True, "val", ERR),
    ("InRegexp", ["("], "", True, "val", ERR),
    ("Exists", ["1"], "", True, "", ERR),
    ("DoesNotExist", ["1"], "", True, "", ERR),
    ("Gt", [], "", True, "1", ERR),
    ("Gt", ["1", "2"], "", True, "1", ERR),
    ("Gt", [""], "", True, "1", ERR),
    ("Gt", ["2"], "", True, "3a", ERR),
    ("Lt", [], "", True, "1", ERR),
    ("Lt", ["1", "2", "3"], "", True, "1", ERR),
    ("Lt", ["a"], "", True, "1", ERR),
    ("Lt", ["2"], "", True, "1.0", ERR),
    ("GtLt", [], "", True, "1", ERR),
    ("GtLt", ["1"], "", True, "1", ERR),
    ("GtLt", ["2", "1"], "", True, "1", ERR),
    ("GtLt", ["1", "1"], "", True, "1", ERR),
    ("GtLt", ["1", "2", "3"], "", True, "1", ERR),
    ("GtLt", ["a", "2"], "", True, "1", ERR),
    ("GtLt", ["1", "10"], "", True, "1.0", ERR),
    ("IsTrue", ["1"], "", True, "true", ERR),
    ("IsFalse", ["1", "2"], "", True, "false", ERR),
    ("non-existent-op", ["1"], "", True, "1", ERR),
    # an unknown operator or values on a presence operator fail even for a missing key ...
    ("Equals", ["1"], "", False, "", ERR),
    ("Exists", ["1"], "", False, "", ERR),
    # ... but value problems only fail when a value is compared
    ("In", [], "", False, "", False),
    ("Gt", ["x"], "", False, "", False),
    ("GtLt", ["2", "1"], "", False, "", False),
    ("InRegexp", ["("], "", False, "", False),
    ("Gt", ["1"], "semver", False, "", False),
    ("Gt", ["1"], "semver", True, "2", ERR),
    # type is ignored by non-numeric operators
    ("In", ["a"], "bogus", True, "a", True),
    # Atoi details: sign allowed, spaces and underscores not, int64 range
    ("Gt", ["+1"], "", True, "2", True),
    ("Gt", ["1"], "", True, " 2", ERR),
    ("Gt", ["1"], "", True, "1_0", ERR),
    ("Lt", ["9223372036854775807"], "", True, "9223372036854775806", True),
    ("Lt", ["9223372036854775808"], "", True, "1", ERR),
    ("Ge", ["2"], "", True, "2", True),
    ("Ge", ["2"], "", True, "1", False),
    ("Le", ["2"], "", True, "2", True),
    ("Le", ["2"], "", True, "3", False),
    ("GeLe", ["-10", "10"], "", True, "-10", True),
    ("GeLe", ["-10", "10"], "", True, "10", True),
    ("GeLe", ["-10", "10"], "", True, "11", False),
    ("GeLe", ["3", "3"], "", True, "3", ERR),
]

# evaluateMatchExpressionValues(op, values, type, key "foo", input map) -> result / error
V = [
    ("In", ["1", "2"], "", {"bar": "2"}, False),
    ("In", ["1", "2"], "", {"foo": "3"}, False),
    ("In", ["1", "2"], "", {"foo": "2"}, True),
    ("NotIn", ["1", "2"], "", {"bar": "2"}, False),
    ("NotIn", ["1", "2"], "", {"foo": "3"}, True),
    ("NotIn", ["1", "2"], "", {"foo": "2"}, False),
    ("InRegexp", ["1", "2"], "", {"bar": "2"}, False),
    ("InRegexp", ["1", "[0-8]"], "", {"foo": "9"}, False),
    ("InRegexp", ["1", "[0-8]"], "", {"foo": "2"}, True),
    ("Exists", [], "", {"bar": "1"}, False),
    ("Exists", [], "", {"foo": "1"}, True),
    ("DoesNotExist", [], "", {}, True),
    ("DoesNotExist", [], "", {"foo": "1"}, False),
    ("Gt", ["2"], "", {"bar": "3"}, False),
    ("Gt", ["2"], "", {"bar": "3", "foo": "2"}, False),
    ("Gt", ["2"], "", {"bar": "3", "foo": "3"}, True),
    ("Gt", ["2"], "", {"bar": "str", "foo": "str"}, ERR),
    ("Gt", ["2.0"], "", {"bar": "str", "foo": "3"}, ERR),
    ("Gt", ["2"], "version", {"bar": "3"}, False),
    ("Gt", ["2"], "version", {"foo": "2"}, False),
    ("Gt", ["2"], "version", {"foo": "3"}, True),
    ("Gt", ["2.0"], "version", {"foo": "2.0"}, False),
    ("Gt", ["2.0"], "version", {"foo": "2.1"}, True),
    ("Gt", ["2.0.1"], "version", {"foo": "2.0.1"}, False),
    ("Gt", ["2.0.1"], "version", {"foo": "2.0.2"}, True),
    ("Gt", ["2.0.1"], "version", {"foo": "str"}, ERR),
    ("Ge", ["2"], "", {"foo": "2"}, True),
    ("Ge", ["2"], "", {"foo": "1"}, False),
    ("Ge", ["2.0.1"], "version", {"foo": "2.0.1"}, True),
    ("Ge", ["2.0.1"], "version", {"foo": "2.0.2"}, True),
    ("Ge", ["2.0.1"], "version", {"foo": "2.0.0"}, False),
    ("Ge", ["2.0.1"], "version", {"foo": "str"}, ERR),
    ("Lt", ["2"], "", {"bar": "1"}, False),
    ("Lt", ["2"], "", {"foo": "2"}, False),
    ("Lt", ["2"], "", {"foo": "1"}, True),
    ("Lt", ["2.0"], "", {"foo": "1"}, ERR),
    ("Lt", ["2"], "version", {"foo": "1"}, True),
    ("Lt", ["2.0"], "version", {"foo": "1.9"}, True),
    ("Lt", ["2.0.1"], "version", {"foo": "2.0.1"}, False),
    ("Lt", ["2.0.1"], "version", {"foo": "2.0.0"}, True),
    ("Le", ["2"], "", {"foo": "1.0"}, ERR),
    ("Le", ["2"], "version", {"foo": "2"}, True),
    ("Le", ["2"], "version", {"foo": "3"}, False),
    ("Le", ["2.0"], "version", {"foo": "2.1"}, False),
    ("Le", ["2.0.1"], "version", {"foo": "2.0.2"}, False),
    ("GtLt", ["-10", "10"], "", {"foo": "11"}, False),
    ("GtLt", ["-10", "10"], "", {"foo": "-11"}, False),
    ("GtLt", ["-10", "10"], "", {"foo": "1"}, True),
    ("GtLt", ["-10", "10"], "", {"foo": "5.0"}, ERR),
    ("GtLt", ["1", "10"], "version", {"foo": "11"}, False),
    ("GtLt", ["1", "10"], "version", {"foo": "1"}, False),
    ("GtLt", ["1", "10"], "version", {"foo": "2"}, True),
    ("GtLt", ["1.0", "10.0"], "version", {"foo": "1.1"}, True),
    ("GtLt", ["1.0.1", "10.0.1"], "version", {"foo": "10.0.1"}, False),
    ("GtLt", ["1.0.1", "10.0.1"], "version", {"foo": "1.0.2"}, True),
    ("GtLt", ["1.0.1", "10.0.1"], "", {"foo": "str"}, ERR),
    # version mode does not check the order of the bounds
    ("GtLt", ["10", "1"], "version", {"foo": "5"}, False),
    ("GeLe", ["-10", "10"], "", {"foo": "10"}, True),
    ("GeLe", ["-10", "10"], "", {"foo": "-11"}, False),
    ("GeLe", ["-10", "10"], "", {"foo": "1.0"}, ERR),
    ("GeLe", ["1", "10"], "version", {"foo": "10"}, True),
    ("GeLe", ["1", "10"], "version", {"foo": "-11"}, ERR),
    ("GeLe", ["1", "10"], "version", {"foo": "1"}, True),
    ("GeLe", ["1", "10"], "version", {"foo": "0"}, False),
    ("GeLe", ["1.0", "10.0"], "version", {"foo": "10.0"}, True),
    ("GeLe", ["1.0.1", "10.0.1"], "version", {"foo": "10.0.2"}, False),
    ("GeLe", ["1.0.1", "10.0.1"], "version", {"foo": "str"}, ERR),
    # pre-release is dropped before comparing; v prefix and build metadata tolerated
    ("Ge", ["6.0.0"], "version", {"foo": "6.0.0-beta"}, True),
    ("Gt", ["6.0.0"], "version", {"foo": "6.0.0-rc1"}, False),
    ("Ge", ["5.15"], "version", {"foo": "5.15.0-91-generic"}, True),
    ("Lt", ["v2"], "version", {"foo": "v1.9.9+build.7"}, True),
    ("Gt", ["1"], "version", {"foo": "4.18.0-305.el8.x86_64"}, ERR),
    ("Gt", ["1"], "version", {"foo": "1.0.0-01"}, ERR),
    ("Gt", ["x"], "version", {"foo": "1"}, ERR),
    ("IsTrue", [], "", {}, False),
    ("IsTrue", [], "", {"foo": "1"}, False),
    ("IsTrue", [], "", {"foo": "true"}, True),
    ("IsFalse", [], "", {"foo": "true"}, False),
    ("IsFalse", [], "", {"foo": "false"}, True),
]

FLAG_OPS = [
    ("", [], None, True),
    ("Exists", [], set(), False),
    ("Exists", [], {"bar"}, False),
    ("Exists", [], {"bar", "foo"}, True),
    ("DoesNotExist", [], set(), True),
    ("DoesNotExist", [], {"bar"}, True),
    ("DoesNotExist", [], {"bar", "foo"}, False),
    # value operators never match a flag, and never error on one
    ("In", ["foo"], {"foo"}, False),
    ("NotIn", ["foo"], {"foo"}, False),
    ("InRegexp", ["foo"], {"foo"}, False),
    ("Gt", ["1"], {"foo"}, False),
    ("Lt", ["1"], {"foo"}, False),
    ("GtLt", ["1", "10"], {"foo"}, False),
    ("IsTrue", [], {"foo"}, False),
    ("IsFalse", [], {"foo"}, False),
    ("In", [], {"foo"}, False),
    ("Gt", ["x"], {"foo"}, False),
    ("Exists", ["x"], {"foo"}, ERR),
    ("Bogus", [], {"foo"}, ERR),
]


def _run(fn, *args):  # type: ignore[no-untyped-def]
    try:
        return fn(*args)
    except RuleError:
        return ERR


@pytest.mark.parametrize(("op", "values", "vtype", "present", "inp", "want"), SINGLE)
def test_single_expression(op, values, vtype, present, inp, want) -> None:  # type: ignore[no-untyped-def]
    e = Expr("k", op, values, vtype)
    assert _run(e.on_value, {"k": inp} if present else {}) == want


@pytest.mark.parametrize(("op", "values", "vtype", "inp", "want"), V)
def test_attribute_values(op, values, vtype, inp, want) -> None:  # type: ignore[no-untyped-def]
    e = Expr("foo", op, values, vtype)
    assert _run(e.on_value, inp) == want


@pytest.mark.parametrize(("op", "values", "keys", "want"), FLAG_OPS)
def test_flag_keys(op, values, keys, want) -> None:  # type: ignore[no-untyped-def]
    e = Expr("foo", op, values, "")
    assert _run(e.on_flag, keys is not None and "foo" in keys) == want


def test_errors_name_the_field_path() -> None:
    e = Expr("vendor", "Equals", ["1"], "", path="spec.rules[2].matchFeatures[0].matchExpressions.vendor")
    with pytest.raises(
        RuleError,
        match=r'^spec\.rules\[2\]\.matchFeatures\[0\]\.matchExpressions\.vendor\.op: unknown operator "Equals"',
    ):
        e.on_value({"vendor": "x"})
    assert e.problems == [("op", 'unknown operator "Equals"')]
    g = Expr("n", "Gt", ["1", "2"], "")
    assert g.problems and g.problems[0][0] == "value"
    t = Expr("n", "Gt", ["1"], "semver")
    assert t.problems and t.problems[0][0] == "type"


def test_match_name_semantics() -> None:
    # names are always "present": Exists matches any name, DoesNotExist none
    assert Expr("", "Exists", [], "").on_name("x") is True
    assert Expr("", "DoesNotExist", [], "").on_name("x") is False
    assert Expr("", "InRegexp", ["^AVX"], "").on_name("AVX512F") is True
    assert _run(Expr("", "Gt", ["1"], "").on_name, "abc") == ERR
    assert _run(Expr("", "In", [], "").on_name, "abc") == ERR


@pytest.mark.parametrize(
    ("s", "want"),
    [
        ("1", (1, 0, 0)),
        ("1.2", (1, 2, 0)),
        ("v1.2.3", (1, 2, 3)),
        ("01.02.03", (1, 2, 3)),
        ("1.2.3-alpha.1+b.2", (1, 2, 3)),
        ("5.15.0-91-generic", (5, 15, 0)),
        ("1.2.3.4", None),
        ("", None),
        ("-1", None),
        ("1.2.3-", None),
        ("1.2.3-01", None),
        ("1.2.3+", None),
        ("18446744073709551616", None),
        ("V1", None),
    ],
)
def test_parse_version(s: str, want: tuple[int, int, int] | None) -> None:
    assert parse_version(s) == want


@pytest.mark.parametrize(
    ("s", "want"),
    [("0", 0), ("-5", -5), ("+5", 5), ("007", 7), ("", None), ("1.0", None), ("٣", None), ("0x10", None)],
)
def test_go_atoi(s: str, want: int | None) -> None:
    assert go_atoi(s) == want
