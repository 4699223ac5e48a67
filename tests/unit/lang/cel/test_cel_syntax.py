"""The CEL parser: AST shapes (optional syntax, backtick names), cel-go's parse rules, errors."""

from __future__ import annotations

import pytest

from nfd.api.features import Features
from nfd.lang.cel import CelSyntaxError, compile_program
from nfd.lang.cel.syntax import MAX_NESTING, Call, Ident, Index, ListLit, Lit, MapLit, Select, parse
from nfd.lang.cel.values import UInt
from nfd.rules.cel import compile_expressions


def test_optional_syntax_shapes() -> None:
    s = parse("a.?b")
    assert isinstance(s, Select) and s.optional and s.field == "b" and isinstance(s.operand, Ident)
    assert parse("a.b") == Select((1, 3), Ident((1, 1), "a"), "b", False)
    i = parse("a[?k]")
    assert isinstance(i, Index) and i.optional and i.index == Ident((1, 4), "k")
    assert not parse("a[k]").optional  # type: ignore[attr-defined]
    lst = parse("[a, ?b, c, ?d,]")
    assert isinstance(lst, ListLit) and lst.optional_indices == (1, 3) and len(lst.items) == 4
    m = parse("{?'k': v, 'x': 1}")
    assert isinstance(m, MapLit) and m.optional_indices == (0,) and len(m.entries) == 2
    # `.?` then a call is not a method call: the '(' is unexpected
    with pytest.raises(CelSyntaxError, match="unexpected '\\('"):
        parse("a.?b()")


def test_backtick_field_names() -> None:
    s = parse("{'foo.txt': 32}.`foo.txt`")
    assert isinstance(s, Select) and s.field == "foo.txt"
    h = parse("has(m.`content-type`)")
    assert isinstance(h, Call) and h.name == "has" and h.args[0] == Select((1, 7), Ident((1, 5), "m"), "content-type")
    assert parse("a.`b/c d_1`").field == "b/c d_1"  # type: ignore[attr-defined]
    assert parse("a.`in`").field == "in"  # type: ignore[attr-defined]
    for bad in ("`a`", "a.`b`()", "a.``", "a.`b@c`", "a.`b"):
        with pytest.raises(CelSyntaxError):
            parse(bad)


def test_backtick_names_select_feature_attributes_with_dots() -> None:
    f = Features()
    f.add_attributes("kernel.config", {"NO_HZ.FULL": "y"})
    m = compile_expressions(['attributes["kernel.config"].`NO_HZ.FULL` == "y"'], path="p")
    assert m.evaluate(f, node_name="n") == (True, None)
    assert compile_program("has(attributes.`kernel.config`)").fn is not None


def test_reserved_words_are_field_and_method_names_only() -> None:
    assert parse("{'as': 1}.as").field == "as"  # type: ignore[attr-defined]
    call = parse("a.while()")
    assert isinstance(call, Call) and call.name == "while" and call.target == Ident((1, 1), "a")
    for word in ("as", "if", "let", "while", "namespace"):
        with pytest.raises(CelSyntaxError, match=f"reserved identifier: {word}"):
            parse(f"{word} + 1")
        with pytest.raises(CelSyntaxError, match="reserved identifier"):
            parse(f"{word}(1)")
    with pytest.raises(CelSyntaxError):
        parse("a.in")  # `in` is an operator, not a name


def test_cel_go_parse_rules() -> None:
    # even runs of ! and - vanish, odd runs are one operator
    assert parse("!!true") == Lit((1, 3), True)
    assert parse("!!!x") == Call((1, 1), "!_", None, [Ident((1, 4), "x")])
    assert parse("--x") == Ident((1, 3), "x")
    # a '-' before a number is its sign: the int64 minimum is a literal
    assert parse("-9223372036854775808") == Lit((1, 1), -9223372036854775808)
    assert parse("1 -1") == Call((1, 3), "_-_", None, [Lit((1, 1), 1), Lit((1, 4), 1)])
    assert parse("-x") == Call((1, 1), "-_", None, [Ident((1, 2), "x")])
    # && and || chains are balanced trees
    t = parse("a || b || c || d")
    assert isinstance(t, Call) and t.name == "_||_" and all(isinstance(x, Call) for x in t.args)
    # precedence: * over +, + over <, < over &&, && over ||, ?: lowest and right-associative
    t = parse("a || b && c < d + e * f ? x : y ? 1 : 2")
    assert isinstance(t, Call) and t.name == "_?_:_"
    assert isinstance(t.args[2], Call) and t.args[2].name == "_?_:_"
    cond = t.args[0]
    assert isinstance(cond, Call) and cond.name == "_||_"
    conj = cond.args[1]
    assert isinstance(conj, Call) and conj.name == "_&&_"
    rel = conj.args[1]
    assert isinstance(rel, Call) and rel.name == "_<_"
    add = rel.args[1]
    assert isinstance(add, Call) and add.name == "_+_" and isinstance(add.args[1], Call) and add.args[1].name == "_*_"
    # a leading dot names the root namespace; trailing commas in literals, not in calls
    assert parse(".x") == Ident((1, 2), "x")
    assert parse("[1, 2,]") == ListLit((1, 1), [Lit((1, 2), 1), Lit((1, 5), 2)])
    assert parse("{1: 2,}") == MapLit((1, 1), [(Lit((1, 2), 1), Lit((1, 5), 2))])
    with pytest.raises(CelSyntaxError):
        parse("f(1,)")


def test_literals() -> None:
    assert parse("0x1F").value == 31  # type: ignore[attr-defined]
    assert parse("0x1Fu").value == UInt(31)  # type: ignore[attr-defined]
    assert type(parse("18446744073709551615u").value) is UInt  # type: ignore[attr-defined]
    assert parse(".5").value == 0.5  # type: ignore[attr-defined]
    assert parse("1e3").value == 1000.0  # type: ignore[attr-defined]
    assert parse(r"'\x41\101\u0041\U00000041\`\?'").value == "AAAA`?"  # type: ignore[attr-defined]
    assert parse(r"b'\xff\377é'").value == b"\xff\xff\xc3\xa9"  # type: ignore[attr-defined]
    assert parse(r"r'\n' + R'''\t'''").args[0].value == "\\n"  # type: ignore[attr-defined]
    assert parse("'''a\nb'''").value == "a\nb"  # type: ignore[attr-defined]
    assert parse("null").value is None  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("src", "pos", "fragment"),
    [
        ("node.name ==", "1:11", "unexpected end of expression"),
        ("1 +\n  * 2", "2:3", "unexpected '*'"),
        ("a = b", "1:3", "unexpected character '='"),
        ("'abc", "1:1", "unterminated string literal"),
        ("'a\nb'", "1:1", "unterminated string literal"),
        (r"'\q'", "1:1", "invalid escape sequence \\q"),
        (r"'\xZZ'", "1:1", "invalid escape sequence \\x"),
        (r"'\uD800'", "1:1", "invalid unicode escape"),
        (r"b'\u0041'", "1:1", "unicode escape"),
        ("x + 1e400", "1:5", "invalid double literal"),
        ("9223372036854775808", "1:1", "integer literal out of range"),
        ("-9223372036854775809", "1:1", "integer literal out of range"),
        ("18446744073709551616u", "1:1", "unsigned integer literal out of range"),
        ("a.b.Msg{x: 1}", "1:5", "message construction"),
        ("Msg{}", "1:1", "message construction"),
        ("[1, 2", "1:5", "unexpected end"),
        ("f(1 2)", "1:5", "unexpected '2'"),
        ("a.1", "1:2", "unexpected"),
        ("// only a comment", "1:18", "unexpected end"),
    ],
)
def test_syntax_errors_name_the_position(src: str, pos: str, fragment: str) -> None:
    with pytest.raises(CelSyntaxError) as ei:
        parse(src)
    assert str(ei.value).startswith(pos + ":"), str(ei.value)
    assert fragment in str(ei.value)


def test_nesting_limit_is_an_error_not_a_crash() -> None:
    parse("(" * 100 + "1" + ")" * 100)
    for deep in ("(" * (MAX_NESTING + 1) + "1" + ")" * (MAX_NESTING + 1),
                 "[" * 5000 + "]" * 5000,
                 "f(" * 3000 + ")" * 3000,
                 "true ? 1 : " * 400 + "2"):
        with pytest.raises(CelSyntaxError, match="nested"):
            parse(deep)
    # long flat chains are not nesting
    parse(" || ".join(["x"] * 2000))
    parse("a" + ".b" * 2000)


def test_whitespace_and_comments() -> None:
    assert parse(" \t\f\r\n1 // c\n+ // d\r\n2 ") == Call((3, 1), "_+_", None, [Lit((2, 1), 1), Lit((4, 1), 2)])
