"""CEL map keys: ``true`` and ``1`` are two keys though Python's dict would merge them.

The same behaviour is checked against Kubernetes' CEL by test_k8s_library.py (MAP_KEY_CASES);
these run without Go. ``ours`` evaluates with the exact closures and the fast path.
"""

from __future__ import annotations

import pytest
from celhelp import ERROR, ours

from nfd.lang.cel import CelSyntaxError
from nfd.lang.cel.compiler import Compiler
from nfd.lang.cel.syntax import parse
from nfd.lang.cel.values import MISSING, CelError, KeyedMap, UInt, make_map


@pytest.mark.parametrize(
    ("expr", "want"),
    [
        ("{true: 1, 1: 2}.size()", 2),
        ("{false: 'f', 0: 'z', 0.0 == 0.0: 't'}.size()", 3),
        ("{true: 1, 1: 2}[true]", 1),
        ("{true: 1, 1: 2}[1]", 2),
        ("{true: 1, 1: 2}[1u]", 2),
        ("{true: 1, 1: 2}[1.0]", 2),
        ("{false: 1, 0u: 2}[0]", 2),
        ("{false: 1, 0u: 2}[false]", 1),
        ("{1: 'a', 2u: 'b'}[2]", "b"),
        ("{1: 'a', 2u: 'b'}[1u]", "a"),
        ("{1: 'a', 2u: 'b'}[2.5]", ERROR),
        ("{true: 'a'}[dyn(1)]", ERROR),
        ("{1: 'a'}[dyn(true)]", ERROR),
        ("dyn(true) in {1: 'a'}", False),
        ("dyn(1) in {true: 'a'}", False),
        ("dyn(1u) in {true: 1, 1: 2}", True),
        ("{true: 1, 1: 2} == {1: 2, true: 1}", True),
        ("{true: 1, 1: 2} == {1u: 2, true: 1}", True),
        ("{true: 1, 1: 2} == {1: 1, true: 2}", False),
        ("{true: 1} == dyn({1: 1})", False),
        ("{true: 1, 1: 2}.exists(k, k == 1u)", True),
        ("{true: 1, 1: 2}.exists_one(k, k == 1)", True),
        ("{true: 1, 1: 2}.map(k, k).size()", 2),
        ("{true: 1, 1: 2}.filter(k, k == 1)", [1]),
        ("{1: 'a', true: 'b'}.transformMap(k, v, v + 'x').size()", 2),
        ("{1: 'a', true: 'b'}.transformMap(k, v, v + 'x')[true]", "bx"),
        ("[true, false].map(b, {b: 1, b ? 1 : 0: 2}).map(m, m.size())", [2, 2]),
        ("{true: 1, ?1: optional.of(2)}.size()", 2),
        ("{true: 1, 1: 2}[?1].value()", 2),
        ("{true: {1: 'x'}, 1: {true: 'y'}}[true][1] + {true: {1: 'x'}, 1: {true: 'y'}}[1][true]", "xy"),
        ("'%s'.format([{1: 'x', 2u: 'y', true: 'z'}])", '{1:"x", 2:"y", true:"z"}'),
        ("{'a': 1, 'b': 2}['b']", 2),
    ],
)
def test_bool_and_number_keys_stay_apart(expr: str, want: object) -> None:
    got = ours(expr)
    assert got == want and type(got) is type(want), f"{expr}: {got!r}"


@pytest.mark.parametrize(
    ("expr", "pos"),
    [
        ("{0: 1, 0u: 2}.size() == 2", "1:8"),  # cel-spec: 0 and 0u are the same key under CEL equality
        ("{1: 'a', true: 'b', true: 'c'}.size() == 2", "1:21"),
        ("{'a': 1, 'a': 2}.size() == 1", "1:10"),
    ],
)
def test_a_repeated_constant_key_is_a_compile_error_at_its_position(expr: str, pos: str) -> None:
    with pytest.raises(CelSyntaxError, match="duplicate map key") as ei:
        Compiler().compile(parse(expr))
    assert str(ei.value).startswith(pos)


def test_a_repeated_key_found_at_run_time_is_an_error() -> None:
    assert ours("[1].map(x, {x: 1, uint(x): 2}).size()") == ERROR
    assert ours("[true].map(x, {x: 1, x ? 1 : 0: 2})[0].size()") == 2


def test_string_and_single_type_maps_stay_plain_dicts() -> None:
    """Feature maps and most literals: plain dicts, so their lookups stay dict lookups."""
    assert type(make_map([("a", 1), ("b", 2)])) is dict
    assert type(make_map([(1, "a"), ("x", "b")])) is dict
    assert type(make_map([(UInt(1), "a"), (UInt(2), "b")])) is dict
    assert type(make_map([(1, "a"), (UInt(2), "b")])) is KeyedMap
    assert type(make_map([(True, "a")])) is KeyedMap  # plain dicts never hold a bool key
    assert type(ours("{'a': 1}.transformMap(k, v, v + 1)")) is dict


def test_keyed_map_reads_as_a_map_of_its_cel_keys() -> None:
    m = make_map([(True, "t"), (1, "i"), (UInt(2), "u"), ("s", "x")])
    assert isinstance(m, KeyedMap) and len(m) == 4
    assert [(type(k), k) for k in m] == [(bool, True), (int, 1), (UInt, 2), (str, "s")]
    assert m.items() == [(True, "t"), (1, "i"), (UInt(2), "u"), ("s", "x")]
    assert m[True] == "t" and m[1] == "i" and m[UInt(1)] == "i" and m[2] == "u" and m[2.0] == "u"
    assert m.find(False) is MISSING and m.find(0) is MISSING and m.find(1.5) is MISSING and m.find(None) is MISSING
    assert True in m and "s" in m and 3 not in m and [1] not in m
    with pytest.raises(KeyError):
        m[3]
    assert m.get(3, "d") == "d"
    assert m == make_map([("s", "x"), (UInt(2), "u"), (1, "i"), (True, "t")])
    assert m != make_map([(True, "t"), (1, "i")])
    assert m.copy() == m and type(m.copy()) is KeyedMap
    assert repr(make_map([(True, 1), (1, 2)])) == "{True: 1, 1: 2}"


def test_map_keys_must_be_int_uint_bool_or_string() -> None:
    with pytest.raises(CelError, match="unsupported map key type double"):
        make_map([(1.0, "a")])
    with pytest.raises(CelError, match="unsupported map key type null_type"):
        make_map([(True, 1), (None, "a")])
    assert ours("{dyn(1.5): 'a'}.size()") == ERROR
    with pytest.raises(CelSyntaxError, match="map keys must be int, uint, string or bool"):
        Compiler().compile(parse("{1.0: 'a'}"))
