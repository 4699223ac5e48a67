"""The engine's public contract: parse/execute, limits, sandboxing and error shape."""

from __future__ import annotations

import copy

import pytest

from nfd.lang import gotemplate
from nfd.lang.gotemplate import MAX_TEMPLATE_SIZE, Template, TemplateError, parse

CPUID = {"cpu": {"cpuid": [{"Name": "AVX"}, {"Name": "SSE4"}]}}


def test_parse_returns_reusable_template() -> None:
    t = parse("{{ range .cpu.cpuid }}{{ .Name }}=true\n{{ end }}", name="rule")
    assert isinstance(t, Template)
    assert t.execute(CPUID) == "AVX=true\nSSE4=true\n"
    other = {"cpu": {"cpuid": [{"Name": "X"}]}}
    assert t.execute(other) == "X=true\n"
    assert t.execute(CPUID) == "AVX=true\nSSE4=true\n"


def test_execute_does_not_reparse(monkeypatch: pytest.MonkeyPatch) -> None:
    t = parse("{{ .a | upper }}")

    def boom(*a: object, **k: object) -> None:
        raise AssertionError("re-parsed")

    monkeypatch.setattr("nfd.lang.gotemplate.template.parse_trees", boom)
    monkeypatch.setattr("nfd.lang.gotemplate.lexer.lex", boom)
    assert t.execute({"a": "x"}) == "X"


def test_max_size_is_64kib_in_bytes() -> None:
    assert MAX_TEMPLATE_SIZE == 65536
    parse("a" * MAX_TEMPLATE_SIZE)
    with pytest.raises(TemplateError, match="65536"):
        parse("a" * (MAX_TEMPLATE_SIZE + 1))
    # 'é' is two bytes in UTF-8: 32769 of them exceed the limit though len() is 32769.
    with pytest.raises(TemplateError):
        parse("é" * (MAX_TEMPLATE_SIZE // 2 + 1))
    parse("é" * (MAX_TEMPLATE_SIZE // 2))


@pytest.mark.parametrize("fn", ["env", "expandenv", "getHostByName"])
def test_forbidden_functions_are_parse_errors(fn: str) -> None:
    with pytest.raises(TemplateError, match=f'function "{fn}" not defined'):
        parse('{{ ' + fn + ' "HOME" }}')


def test_unknown_function_is_parse_error() -> None:
    with pytest.raises(TemplateError, match=r'^template: r:1: function "nope" not defined$'):
        parse("{{ nope }}", name="r")


def test_syntax_error_names_line() -> None:
    with pytest.raises(TemplateError) as ei:
        parse("ok\nok\n{{ if .x }}")
    assert str(ei.value) == "template: :3: unexpected EOF"


def test_missing_key_is_an_error_with_position() -> None:
    t = parse("a=b\n{{ range .cpu.cpuid }}{{ .Value }}{{ end }}")
    with pytest.raises(TemplateError) as ei:
        t.execute(CPUID)
    msg = str(ei.value)
    assert msg == 'template: :2:25: executing "" at <.Value>: map has no entry for key "Value"'
    assert "\n" not in msg


def test_error_inside_define_names_that_template() -> None:
    t = parse('{{ define "inner" }}{{ .x }}{{ end }}{{ template "inner" . }}', name="outer")
    with pytest.raises(TemplateError, match=r'^template: outer:1:23: executing "inner" at <\.x>'):
        t.execute({})


def test_no_attribute_access_on_python_objects() -> None:
    t = parse("{{ .__class__ }}")
    with pytest.raises(TemplateError, match="map has no entry"):
        t.execute({})
    t = parse("{{ .s.__class__ }}{{ .s.upper }}")
    with pytest.raises(TemplateError, match="can't evaluate field __class__"):
        t.execute({"s": "x"})


def test_sandbox_function_map_has_no_host_access() -> None:
    from nfd.lang.gotemplate.funcmap import FUNCS

    for name in ("env", "expandenv", "getHostByName", "readFile", "exec", "include", "tpl"):
        assert name not in FUNCS


def test_data_is_not_mutated() -> None:
    data = {"l": ["b", "a"], "m": {"k": "v"}}
    before = copy.deepcopy(data)
    parse("{{ sortAlpha .l }}{{ reverse .l }}{{ append .l 1 }}{{ omit .m \"k\" }}").execute(data)
    assert data == before


def test_deep_nesting_is_an_error_not_a_crash() -> None:
    src = "{{ " + "(" * 5000 + "1" + ")" * 5000 + " }}"
    with pytest.raises(TemplateError):
        parse(src)


def test_recursive_template_is_bounded() -> None:
    t = parse('{{ define "r" }}x{{ template "r" . }}{{ end }}{{ template "r" . }}')
    with pytest.raises(TemplateError, match="maximum template depth"):
        t.execute({})


def test_unsupported_sprig_helpers_parse_but_fail_on_execute() -> None:
    t = parse("{{ if .x }}{{ genCA \"x\" 1 }}{{ end }}")
    assert t.execute({"x": False}) == ""
    with pytest.raises(TemplateError, match="not supported"):
        t.execute({"x": True})


def test_package_exports() -> None:
    assert set(gotemplate.__all__) == {
        "MAX_OUTPUT", "MAX_STEPS", "MAX_TEMPLATE_SIZE", "Template", "TemplateError", "parse",
        "TypedList", "TypedMap", "typed_list",
    }


def test_catastrophic_pattern_completes() -> None:
    # Exponential on a backtracking engine; linear on RE2.
    t = parse('{{ regexMatch "^(a+)+$" .s }}')
    assert t.execute({"s": "a" * 60 + "b"}) == "false"
    assert t.execute({"s": "a" * 60}) == "true"


def test_index_missing_key_gives_the_typed_zero_value() -> None:
    from nfd.lang.gotemplate.values import TypedMap

    elem = TypedMap({"vendor": "8086"}, go_type="nodefeaturerule.MatchedElement", zero="")
    t = parse('[{{ index . "device" }}]{{ typeOf . }}')
    assert t.execute(elem) == "[]nodefeaturerule.MatchedElement"
    assert parse('[{{ index . "device" }}]').execute({"vendor": "8086"}) == "[<no value>]"
    with pytest.raises(TemplateError, match="expected map"):
        parse('{{ hasKey . "vendor" }}').execute(elem)


def test_sprig_concat_nil_and_chunk_negative_as_go() -> None:
    """Found by the differential run against Go + Sprig v3.3.0: concat of nothing is a nil slice
    (toJson null, prints []); chunk with a negative size gives [] only when Sprig sizes zero chunks."""
    from nfd.lang.gotemplate import TemplateError, parse

    assert parse("{{ concat | toJson }}").execute({}) == "null"
    assert parse("{{ concat (list) (list) }}").execute({}) == "[]"
    assert parse("{{ concat (list 1) (list 2) | toJson }}").execute({}) == "[1,2]"
    assert parse("{{ chunk -7 (list 1 2 3) | toJson }}").execute({}) == "[]"
    for src in ("{{ chunk -7 (list) }}", "{{ chunk -1 (list 1 2 3) }}"):
        with pytest.raises(TemplateError, match="makeslice"):
            parse(src).execute({})
