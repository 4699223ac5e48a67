"""A term's match result and matched elements (what templates see), from upstream's
TestMatchMulti / TestMatchNamesMulti tables."""

from __future__ import annotations

from typing import Any

import pytest

from nfd.rules.expression import Expr, RuleError, Term

ERR = "error"


def ex(op: str, *values: str) -> dict[str, Any]:
    return {"op": op, "value": list(values)}


def _term(mes: dict[str, dict[str, Any]] | None, name: dict[str, Any] | None = None) -> Term:
    exprs = None if mes is None else [Expr(k, e["op"], e.get("value", []), "") for k, e in mes.items()]
    n = None if name is None else Expr("", name["op"], name.get("value", []), "")
    return Term("d.f", exprs, n)


def _run(t: Term, keys: Any, values: Any, insts: Any) -> tuple[Any, list[dict[str, str]]]:
    out: list[dict[str, str]] = []
    try:
        ok, _ = t.evaluate(None if keys is None else set(keys), values, insts, out)
    except RuleError:
        return ERR, out
    return ok, out


MULTI = [
    ({}, None, None, None, False, []),
    ({}, [], {}, [], True, []),
    ({}, None, {}, None, True, []),
    ({}, None, None, [], False, []),
    ({}, None, None, [{}], True, [{}]),
    ({}, None, {"foo": "bar"}, None, True, []),
    ({"foo": ex("DoesNotExist"), "bar": ex("Exists")}, ["bar", "baz", "buzz"], None, None, True, [{"Name": "bar"}, {"Name": "foo"}]),
    ({"foo": ex("DoesNotExist"), "bar": ex("Exists")}, ["foo", "bar", "baz"], None, None, False, []),
    ({"foo": ex("Exists", "val")}, ["bar", "baz", "buzz"], None, None, ERR, []),
    (
        {"foo": ex("Exists"), "bar": ex("In", "val", "wal"), "baz": ex("Gt", "10")},
        None, {"foo": "1", "bar": "val", "baz": "123", "buzz": "light"}, None,
        True, [{"Name": "bar", "Value": "val"}, {"Name": "baz", "Value": "123"}, {"Name": "foo", "Value": "1"}],
    ),
    ({"foo": ex("Exists"), "bar": ex("In", "val", "wal"), "baz": ex("Gt", "10")}, None, {"bar": "val"}, None, False, []),
    ({"bar": ex("In")}, None, {"foo": "1", "bar": "val"}, None, ERR, []),
    ({"foo": ex("Exists"), "bar": ex("Lt", "10")}, None, None, [{"foo": "1"}, {"foo": "2", "bar": "1"}], True, [{"foo": "2", "bar": "1"}]),
    ({"foo": ex("Exists"), "baz": ex("Lt", "10")}, None, None, [{"foo": "1"}, {"bar": "1"}], False, []),
    ({"foo": ex("In")}, None, None, [{"foo": "1"}, {"foo": "2", "bar": "1"}], ERR, []),
    (
        {"foo": ex("In", "1"), "baz": ex("Exists")},
        ["bar", "baz", "qux"], {"foo": "1", "bar": "2", "quux": "3"}, None,
        True, [{"Name": "baz"}, {"Name": "foo", "Value": "1"}],
    ),
    (
        {"foo": ex("In", "1"), "bar": ex("Exists")},
        ["bar", "baz", "qux"], {"foo": "1", "bar": "2", "quux": "3"}, None,
        True, [{"Name": "bar"}, {"Name": "bar", "Value": "2"}, {"Name": "foo", "Value": "1"}],
    ),
    ({"bar": ex("NotIn", "1", "3")}, ["bar", "baz", "qux"], {"foo": "1", "bar": "2", "quux": "3"}, None, True, [{"Name": "bar", "Value": "2"}]),
    ({"bar": ex("NotIn", "2")}, ["bar", "baz", "qux"], {"foo": "1", "bar": "2", "quux": "3"}, None, False, []),
    ({"xyzzy": ex("DoesNotExist")}, ["bar", "baz", "qux"], {"foo": "1", "bar": "2", "quux": "3"}, None, True, [{"Name": "xyzzy"}, {"Name": "xyzzy", "Value": ""}]),
    ({"quux": ex("DoesNotExist")}, ["bar", "baz", "qux"], {"foo": "1", "bar": "2", "quux": "3"}, None, False, []),
    (
        {"foo": ex("In", "1"), "bar": ex("Exists")},
        ["bar", "baz", "qux"], {"foo": "1", "bar": "2", "quux": "3"}, [{"foo": "1", "bar": "2"}, {"foo": "10", "bar": "20"}],
        True, [{"Name": "bar"}, {"Name": "bar", "Value": "2"}, {"Name": "foo", "Value": "1"}, {"bar": "2", "foo": "1"}],
    ),
]


@pytest.mark.parametrize(("mes", "keys", "values", "insts", "want", "elems"), MULTI)
def test_match_multi(mes: Any, keys: Any, values: Any, insts: Any, want: Any, elems: Any) -> None:
    ok, out = _run(_term(mes), keys, values, insts)
    assert ok == want
    if want != ERR:
        assert out == elems
    # without element collection (no templates) the verdict is the same
    t = _term(mes)
    try:
        fast = t.evaluate(None if keys is None else set(keys), values, insts, None)[0]
    except RuleError:
        fast = ERR
    assert fast == want


NAMES = [
    (ex(""), None, None, None, False, []),
    (ex(""), [], None, None, False, []),
    (ex(""), None, {}, None, False, []),
    (ex(""), None, None, [], False, []),
    (ex("Exists"), ["key1", "key2"], None, None, True, [{"Name": "key1"}, {"Name": "key2"}]),
    (ex("DoesNotExist"), ["key1", "key2"], None, None, False, []),
    (ex("In"), ["key1", "key2"], None, None, ERR, []),
    (ex("In", "key1"), None, {"key1": "val1", "key2": "val2"}, None, True, [{"Name": "key1", "Value": "val1"}]),
    (ex("In", "key3"), None, {"key1": "val1", "key2": "val2"}, None, False, []),
    (ex("In", "foo"), None, None, [{"foo": "1"}, {"bar": "2"}, {"foo": "3", "baz": "4"}], True, [{"foo": "1"}, {"foo": "3", "baz": "4"}]),
    (ex("In", "foo"), None, None, [{"bar": "1"}, {"baz": "2"}], False, []),
    (ex("In"), None, None, [{"bar": "1"}], ERR, []),
    (
        ex("In", "key2"), ["key1", "key2"], {"key1": "val1", "key2": "val2"},
        [{"key1": "1"}, {"key1": "2"}, {"key1": "3", "key2": "4"}],
        True, [{"Name": "key2"}, {"Name": "key2", "Value": "val2"}, {"key1": "3", "key2": "4"}],
    ),
]


@pytest.mark.parametrize(("me", "keys", "values", "insts", "want", "elems"), NAMES)
def test_match_names_multi(me: Any, keys: Any, values: Any, insts: Any, want: Any, elems: Any) -> None:
    ok, out = _run(_term(None, me), keys, values, insts)
    assert ok == want
    if want != ERR:
        assert out == elems
