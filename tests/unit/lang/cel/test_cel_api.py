"""The matchCEL interface the rule engine uses: compile errors, variables, runtime errors, limits."""

from __future__ import annotations

import pytest

from nfd.api.errors import ValidationError
from nfd.api.features import Features
from nfd.lang.cel import MAX_AST_NODES, MAX_DEPTH, MAX_SOURCE_CHARS
from nfd.rules.cel import CelEvalError, compile_expressions


def _features() -> Features:
    f = Features()
    f.add_flags("cpu.cpuid", ["AVX", "AVX2", "AVX512F"])
    f.add_attributes("kernel.version", {"full": "5.15.0-91-generic", "major": "5", "minor": "15", "revision": "0"})
    f.add_attributes("rule.matched", {"gpu": "true"})
    f.add_instances(
        "pci.device",
        [
            {"class": "0600", "vendor": "8086", "device": "a70d"},
            {"class": "0302", "vendor": "10de", "device": "20b5", "sriov_totalvfs": "0"},
            {"class": "0200", "vendor": "15b3", "device": "101d", "sriov_totalvfs": "16"},
        ],
    )
    return f


def _eval(expr: str, f: Features | None = None, node: str = "node-1") -> tuple[bool, str | None]:
    return compile_expressions([expr], path="p").evaluate(f if f is not None else _features(), node_name=node)


# -- compile-time errors --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expr", "pos", "fragment"),
    [
        ("node.name ==", "1:11", "unexpected end"),
        ("gpu == true", "1:1", "undeclared reference to 'gpu'"),
        ('attributes["kernel.version"]["major"] >= 5', "1:39", "no matching overload for '>=' applied to (string, int)"),
        ('flags["cpu.cpuid"].exists(f, f.startsWith(1))', "1:32", "no matching overload for 'startsWith'"),
        ("node.name.frobnicate()", "1:11", "undeclared reference to method 'frobnicate'"),
        ('instances["pci.device"].size()', "1:", "must evaluate to bool, not int"),
        ('version("five") > version("4")', "1:1", "invalid version 'five'"),
        ('quantity("1 Gi") > quantity("1")', "1:1", "invalid quantity"),
        ('node.name.matches("(?<=x)y")', "1:19", "invalid regular expression"),
        ('true &&\n  instances["pci.device"].exists(d, d.vendor == 0x10de)', "2:46", "'=='"),
        ('{"a": 1, "a": 2}.size() == 2', "1:10", "duplicate map key"),
        ("{true: 1, false: 2, true: 3}.size() == 3", "1:21", "duplicate map key"),  # keyword literal positions
        ("x.all(y, true)", "1:1", "undeclared reference to 'x'"),
        ("[1].all(y, y)", "1:12", "needs a bool predicate"),
        ("[1].all(i, i, true)", "1:12", "two different variable names"),
        ("[1].transformList(i, true)", "1:5", "takes two variable names"),
        ("'ab'.exists(i, v, true)", "1:6", "applies to lists and maps, not string"),
        ("9223372036854775808 > 0", "1:1", "out of range"),
        ("type(1) == int", "1:1", "not supported"),
        ("has(node)", "1:1", "has() takes a field selection"),
        ("Msg{a: 1}", "1:", "not supported"),
    ],
)
def test_compile_errors_name_the_expression_and_position(expr: str, pos: str, fragment: str) -> None:
    with pytest.raises(ValidationError) as ei:
        compile_expressions(["true", expr], path="spec.rules[3].matchCEL")
    e = ei.value
    assert e.path == "spec.rules[3].matchCEL[1]"
    assert e.message.startswith(pos), e.message
    assert fragment in e.message


@pytest.mark.parametrize("bad", ["", "   ", None, 5])
def test_empty_or_non_string_expression_is_rejected(bad: object) -> None:
    with pytest.raises(ValidationError) as ei:
        compile_expressions([bad], path="m")  # type: ignore[list-item]
    assert ei.value.path == "m[0]"


def test_size_limits() -> None:
    long_expr = " || ".join(["node.name == 'x'"] * 1000)
    assert len(long_expr) > MAX_SOURCE_CHARS
    with pytest.raises(ValidationError, match="longer than"):
        compile_expressions([long_expr], path="m")
    many_nodes = "[" + ", ".join(["1"] * MAX_AST_NODES) + "].size() > 0"
    with pytest.raises(ValidationError, match="nodes, more than the limit"):
        compile_expressions([many_nodes], path="m")
    with pytest.raises(ValidationError, match="nested"):
        compile_expressions(["[" * (MAX_DEPTH + 5) + "1" + "]" * (MAX_DEPTH + 5) + " == []"], path="m")
    # parentheses add no AST depth, and a long || chain within the depth limit compiles
    assert compile_expressions(["(" * 80 + "true" + ")" * 80], path="m").evaluate(Features(), node_name="n")[0]
    chain = " || ".join(f"node.name == 'n{i}'" for i in range(MAX_DEPTH - 5))
    assert compile_expressions([chain], path="m").evaluate(Features(), node_name="n7") == (True, None)


# -- variables ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expr", "want"),
    [
        ('instances["pci.device"].exists(d, d.vendor == "10de" && d.class.startsWith("03"))', True),
        ('instances["pci.device"].exists(d, d.vendor == "1002")', False),
        ('"AVX512F" in flags["cpu.cpuid"]', True),
        ('"AMX" in flags["cpu.cpuid"]', False),
        ('flags["cpu.cpuid"].exists(f, f.startsWith("AVX5"))', True),
        ('flags["cpu.cpuid"].size() == 3', True),
        ('flags["cpu.cpuid"].map(f, f.lowerAscii())[0] == "avx"', True),  # sets iterate sorted in map()
        ('attributes["kernel.version"]["major"] == "5"', True),
        ('int(attributes["kernel.version"]["minor"]) >= 10', True),
        ('attributes["rule.matched"]["gpu"] == "true"', True),
        ('"kernel.version" in attributes && !("usb.device" in instances)', True),
        # a feature set the node lacks reads as empty, like upstream's "missing feature: no match"
        ('instances["usb.device"].exists(d, d.vendor == "046d")', False),
        ('instances["usb.device"].all(d, d.vendor == "046d")', True),
        ('flags["kernel.loadedmodule"].size() == 0', True),
        ('attributes["system.osrelease"].size() == 0', True),
        ('node.name == "node-1"', True),
        ('has(node.name) && node.name.endsWith("-1")', True),
        ("attributes.exists(k, k == 'kernel.version')", True),
        ('attributes["rule.matched"].exists(k, v, k == "gpu" && v == "true")', True),
        ('instances["pci.device"].exists(i, d, i == 1 && d.vendor == "10de")', True),
        ('flags["cpu.cpuid"].transformList(i, f, f.lowerAscii())[0] == "avx"', True),
    ],
)
def test_variables(expr: str, want: bool) -> None:
    assert _eval(expr) == ((True, None) if want else (False, expr))


def test_first_false_expression_is_reported_and_later_ones_not_run() -> None:
    m = compile_expressions(
        ['node.name != ""', '"AMX" in flags["cpu.cpuid"]', 'attributes["kernel.version"]["nope"] == "x"'],
        path="spec.rules[0].matchCEL",
    )
    assert m.evaluate(_features(), node_name="n") == (False, '"AMX" in flags["cpu.cpuid"]')
    assert len(m) == 3
    assert m.sources[1] == '"AMX" in flags["cpu.cpuid"]'


def test_runtime_error_raises_cel_eval_error_naming_the_expression() -> None:
    m = compile_expressions(['node.name != ""', 'attributes["kernel.version"]["nope"] == "x"'], path="r.matchCEL")
    with pytest.raises(CelEvalError) as ei:
        m.evaluate(_features(), node_name="n")
    assert "r.matchCEL[1]" in str(ei.value) and "no such key: 'nope'" in str(ei.value)


def test_integer_parsing_fails_like_upstream_gt() -> None:
    # upstream `Gt` on a non-integer value is an error that fails the rule, not a false match
    with pytest.raises(CelEvalError, match="cannot convert '5.15.0-91-generic' to int"):
        _eval('int(attributes["kernel.version"]["full"]) > 4')


def test_error_absorbed_by_and_or() -> None:
    assert _eval('"nope" in attributes["kernel.version"] && attributes["kernel.version"]["nope"] == "x"') == (
        False,
        '"nope" in attributes["kernel.version"] && attributes["kernel.version"]["nope"] == "x"',
    )
    assert _eval('attributes["kernel.version"]["nope"] == "x" || node.name == "node-1"') == (True, None)
    # exists() absorbs an error on one instance when another instance matches
    expr = 'instances["pci.device"].exists(d, int(d.sriov_totalvfs) > 8)'
    assert _eval(expr) == (True, None)
    with pytest.raises(CelEvalError):
        _eval('instances["pci.device"].exists(d, int(d.sriov_totalvfs) > 100)')


def test_step_limit_stops_runaway_expressions_and_resets_per_expression() -> None:
    f = Features()
    f.add_flags("big.set", [f"f{i}" for i in range(200)])
    expr = 'flags["big.set"].all(a, flags["big.set"].exists(b, b == a))'  # ~20,000 steps
    assert compile_expressions([expr], path="m").evaluate(f, node_name="n") == (True, None)
    limited = compile_expressions([expr], path="m", step_limit=5_000)
    with pytest.raises(CelEvalError, match="exceeded the limit of 5000 steps"):
        limited.evaluate(f, node_name="n")
    cheap = 'flags["big.set"].exists(b, b == "f150")'  # charges the set's size, 200, per expression
    m = compile_expressions([cheap] * 5, path="m", step_limit=200)
    assert m.evaluate(f, node_name="n") == (True, None)
    with pytest.raises(CelEvalError, match="exceeded"):
        compile_expressions([cheap], path="m", step_limit=199).evaluate(f, node_name="n")


def test_step_limit_is_not_absorbed_by_or() -> None:
    f = Features()
    f.add_flags("big.set", [f"f{i}" for i in range(100)])
    expr = 'flags["big.set"].all(a, flags["big.set"].exists(b, b == a)) || true'
    with pytest.raises(CelEvalError, match="exceeded"):
        compile_expressions([expr], path="m", step_limit=1_000).evaluate(f, node_name="n")


def test_compiled_matcher_is_reusable_across_nodes() -> None:
    m = compile_expressions(['instances["pci.device"].exists(d, d.vendor == "10de")'], path="m")
    gpu = _features()
    plain = Features()
    plain.add_instances("pci.device", [{"class": "0600", "vendor": "8086"}])
    assert [m.evaluate(x, node_name="n")[0] for x in (gpu, plain, gpu, Features())] == [True, False, True, False]


@pytest.mark.parametrize(
    "expr",
    [
        # each step doubles a string: the size of what + builds is charged, not only iterations
        "[node.name].map(t, t + t)" + ".map(t, t + t)" * 60 + ".size() > 0",
        "dyn([node.name]).map(t, dyn(t) + t)" + ".map(t, t + dyn(t))" * 60 + ".size() > 0",
        "node.name" + '.replace("a", node.name + node.name)' * 30 + ' == ""',
        "[[node.name]].map(l, l + l)" + ".map(l, l + l)" * 60 + ".size() > 0",
        '[node.name].map(t, [t, t, t, t].join(t))' + '.map(t, [t, t, t, t].join(t))' * 30 + ".size() > 0",
    ],
)
def test_values_that_grow_exponentially_hit_the_step_limit(expr: str) -> None:
    with pytest.raises(CelEvalError, match="exceeded the limit"):
        compile_expressions([expr], path="m").evaluate(Features(), node_name="aaaaaaaa")


def test_constant_that_grows_exponentially_is_a_compile_error() -> None:
    expr = '"aaaaaaaaaa"' + '.replace("a", "aaaaaaaaaa")' * 30 + ' == ""'
    with pytest.raises(ValidationError, match="constant expression is too large"):
        compile_expressions([expr], path="m")


def test_ordinary_concatenation_is_cheap() -> None:
    m = compile_expressions(['node.name + "-x" == "n-x" && ["a"] + ["b"] == ["a", "b"]'], path="m", step_limit=10)
    assert m.evaluate(Features(), node_name="n") == (True, None)
