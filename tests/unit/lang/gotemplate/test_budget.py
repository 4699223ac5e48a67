"""The per-execution budget: steps and output size are capped; ordinary templates are unaffected."""

from __future__ import annotations

import pytest

from nfd.lang.gotemplate import MAX_OUTPUT, MAX_STEPS, TemplateError, parse
from nfd.lang.gotemplate.errors import FuncError

EXCEEDED = "template execution budget exceeded"


def run(src: str, data: object = None, **limits: int) -> str:
    return parse(src, name="t").execute(data or {}, **limits)


def fails(src: str, data: object = None, **limits: int) -> str:
    with pytest.raises(TemplateError) as e:
        run(src, data, **limits)
    msg = str(e.value)
    assert EXCEEDED in msg and "\n" not in msg
    return msg


def test_defaults() -> None:
    assert MAX_STEPS == 1_000_000
    assert MAX_OUTPUT == 1 << 20


def test_huge_until_fails_before_building_the_list() -> None:
    msg = fails("{{ range until 100000000 }}x{{ end }}")
    assert msg == (
        'template: t:1:9: executing "t" at <until 100000000>: error calling until: '
        f"{EXCEEDED} (list of 100000000 elements, limit 1000000)"
    )


def test_range_over_int_is_capped_by_steps() -> None:
    msg = fails("{{ range $i := 100000000 }}{{ end }}", max_steps=5000)
    assert msg == f'template: t:1:9: executing "t" at <$i := 100000000>: {EXCEEDED} (more than 5000 steps)'


def test_steps_count_iterations_and_the_actions_in_the_body() -> None:
    # 10 iterations of (1 + 2 actions) = 30 steps
    src = "{{ range until 10 }}{{ . }}{{ . }}{{ end }}"
    assert run(src, max_steps=100) == "".join(f"{i}{i}" for i in range(10))
    assert run(src, max_steps=30) != ""
    fails(src, max_steps=29)


def test_nested_ranges_multiply() -> None:
    src = "{{ range until 200 }}{{ range until 200 }}{{ end }}{{ end }}"
    assert run(src) == ""  # 40,000 inner iterations
    fails(src, max_steps=20_000)


def test_break_refunds_the_iterations_not_run() -> None:
    # 1000 iterations at 2 steps do not fit in 100: 50 run, the loop breaks after 4 and the
    # other 46 are refunded, which the second loop needs.
    src = "{{ range $i := 1000 }}{{ if eq $i 3 }}{{ break }}{{ end }}{{ end }}{{ range 90 }}{{ end }}ok"
    assert run(src, max_steps=100) == "ok"
    assert run("{{ range $i := 100000000 }}{{ if eq $i 3 }}{{ break }}{{ end }}{{ $i }}{{ end }}") == "012"
    data = {"m": {f"k{i:04d}": i for i in range(1000)}}
    src = '{{ range $k, $v := .m }}{{ if eq $k "k0003" }}{{ break }}{{ end }}{{ end }}{{ range 90 }}{{ end }}ok'
    assert run(src, data, max_steps=100) == "ok"


def test_map_values_are_read_before_the_body_runs() -> None:
    # as Go, whose walkRange iterates a fmtsort snapshot of keys and values
    src = '{{ range $k, $v := .m }}{{ $_ := unset $.m "b" }}{{ $k }}={{ $v }};{{ end }}'
    assert run(src, {"m": {"a": 1, "b": 2}}) == "a=1;b=2;"
    many = {f"k{i:04d}": i for i in range(1000)}  # batched: 256 // 5 pieces per iteration
    out = run(src.replace('"b"', '"k0999"'), {"m": dict(many)})
    assert out.endswith("k0999=999;") and out.count(";") == 1000


def test_template_calls_cost_steps() -> None:
    # t0 calls t1 twice, ..., t19 twice: 2**20 calls
    src = "".join(f'{{{{ define "t{i}" }}}}{{{{ template "t{i + 1}" }}}}{{{{ template "t{i + 1}" }}}}{{{{ end }}}}' for i in range(20))
    src += '{{ define "t20" }}{{ end }}{{ template "t0" }}'
    msg = fails(src, max_steps=10_000)
    assert "more than 10000 steps" in msg


def test_output_limit_is_exact() -> None:
    src = "{{ range until .n }}0123456789{{ end }}"
    assert len(run(src, {"n": 100}, max_output=1000)) == 1000
    msg = fails(src, {"n": 101}, max_output=1000)
    assert msg.endswith(f"{EXCEEDED} (output over 1000 characters)")


def test_output_limit_with_data_values_in_a_long_loop() -> None:
    data = {"l": ["x" * 1000] * 5000}  # 5 MB of output
    msg = fails("{{ range .l }}{{ . }}{{ end }}", data)
    assert msg.endswith(f"{EXCEEDED} (output over {MAX_OUTPUT} characters)")


def test_a_big_function_result_fails_when_printed() -> None:
    msg = fails('{{ $x := repeat 2000000 "x" }}{{ range until 3 }}{{ $x }}{{ end }}')
    assert "at <$x>" in msg and "output over" in msg
    # held in a variable without printing it, it is fine
    assert run('{{ $x := repeat 2000000 "x" }}{{ len $x }}') == "2000000"


@pytest.mark.parametrize(
    ("src", "func"),
    [
        ('{{ repeat 100000000 "x" }}', "repeat"),
        ('{{ $s := repeat 100000 "x" }}{{ join $s (until 1000) }}', "join"),
        ('{{ replace "" (repeat 10000 "y") (repeat 10000 "x") }}', "replace"),
        ('{{ replace "x" (repeat 10000 "y") (repeat 10000 "x") }}', "replace"),
        ('{{ indent 100000 (repeat 1000 "\\n") }}', "indent"),
        ('{{ nindent 100000 (repeat 1000 "\\n") }}', "nindent"),
        ('{{ wrapWith 1 (repeat 1000 "-") (repeat 10000 "x") }}', "wrapWith"),
        ('{{ regexReplaceAll "x{10}" (repeat 100000 "x") (repeat 100 "$0") }}', "regexReplaceAll"),
        ("{{ randAlphaNum 100000000 }}", "randAlphaNum"),
        ("{{ randBytes 100000000 }}", "randBytes"),
        ('{{ $s := repeat 1000000 "x" }}{{ print (list $s $s $s $s $s) }}', "print"),
        ('{{ $s := repeat 1000000 "x" }}{{ printf "%v" (list $s $s $s $s $s) }}', "printf"),
        ('{{ $s := repeat 1000000 "x" }}{{ toJson (list $s $s $s $s $s) }}', "toJson"),
        ("{{ len (until 2000000) }}", "until"),
        ("{{ len (untilStep 0 2000000 1) }}", "untilStep"),
        ("{{ seq 2000000 }}", "seq"),
        ("{{ len (uniq (until 100000)) }}", "uniq"),  # quadratic: 5e9 comparisons
    ],
)
def test_functions_refuse_to_build_huge_values(src: str, func: str) -> None:
    msg = fails(src)
    assert f"error calling {func}: {EXCEEDED} (" in msg


@pytest.mark.parametrize(
    ("src", "func"),
    [
        ('{{ $s := repeat 1000000 "a" }}{{ range until 1000 }}{{ $x := regexMatch "b" $s }}{{ end }}', "regexMatch"),
        ('{{ $s := repeat 100000 "a" }}{{ range until 1000 }}{{ $x := regexFindAll "b" $s -1 }}{{ end }}', "regexFindAll"),
        ('{{ $s := repeat 1000000 "a" }}{{ range until 1000 }}{{ $x := contains "b" $s }}{{ end }}', "contains"),
        ('{{ $s := repeat 10000 "é" }}{{ range until 1000 }}{{ $x := upper $s }}{{ end }}', "upper"),
        ("{{ $l := until 60000 }}{{ range until 1000 }}{{ $x := last $l }}{{ end }}", "last"),
        ("{{ $l := until 60000 }}{{ range until 1000 }}{{ $x := has 5 $l }}{{ end }}", "has"),
        ('{{ $l := until 6000 }}{{ range until 1000 }}{{ $x := printf "%v" $l }}{{ end }}', "printf"),
    ],
)
def test_functions_pay_for_big_arguments(src: str, func: str) -> None:
    # A big value reused in a loop: each call pays for what it reads. The loop and the values
    # built cost under 100,000 steps; the reading, over.
    msg = fails(src, max_steps=100_000)
    assert f"error calling {func}: {EXCEEDED} (more than 100000 steps)" in msg


def test_uniq_of_strings_is_linear() -> None:
    assert run('{{ len (uniq (splitList "," (repeat 200000 "a,"))) }}') == "2"
    assert run("{{ uniq (list 1 2 1 \"1\" 2.0 2) }}") == "[1 2 1 2]"


def test_appending_in_a_loop_pays_for_the_copies() -> None:
    # each append copies the list (as Sprig does): quadratic, so 200,000 appends do not fit
    src = '{{ $l := list }}{{ range until .n }}{{ $l = append $l "x" }}{{ end }}{{ len $l }}'
    assert run(src, {"n": 2000}) == "2000"
    assert "error calling append" in fails(src, {"n": 200_000})


def test_doubling_a_string_stops_at_the_value_limit() -> None:
    msg = fails('{{ $s := "x" }}{{ range until 40 }}{{ $s = print $s $s }}{{ end }}{{ len $s }}')
    assert "error calling print" in msg and "limit 4194304" in msg


def test_built_values_pay_steps() -> None:
    # each 64 KiB string costs 64 steps: 100 of them do not fit in 5,000 steps
    src = '{{ range until 100 }}{{ $x := repeat 65536 "x" }}{{ end }}'
    assert run(src) == ""
    assert "more than 5000 steps" in fails(src, max_steps=5000)


def test_limits_from_parse_and_execute() -> None:
    t = parse("{{ range .l }}x{{ end }}", max_output=10)
    data = {"l": list(range(50))}
    with pytest.raises(TemplateError, match="output over 10 characters"):
        t.execute(data)
    assert t.execute(data, max_output=50) == "x" * 50
    with pytest.raises(TemplateError, match="more than 20 steps"):
        t.execute(data, max_steps=20, max_output=100)


def test_each_execution_has_its_own_budget() -> None:
    t = parse("{{ range until 400 }}{{ . }}{{ end }}", max_steps=1000)
    for _ in range(5):  # 800 steps each; a shared budget would run out on the second
        assert t.execute({}).startswith("0123")


def test_functions_called_outside_an_execution_check_sizes_only() -> None:
    from nfd.lang.gotemplate.sprig_strings import repeat

    assert repeat(3, "ab") == "ababab"
    with pytest.raises(FuncError, match=EXCEEDED):
        repeat(10**8, "x")


def test_ordinary_big_templates_run() -> None:
    # 10,000 devices with a few actions each: well inside the budget
    data = {"d": [{"vendor": "10de", "device": f"{i:04x}"} for i in range(10_000)]}
    src = '{{ range .d }}{{ if eq .vendor "10de" }}nvidia-{{ .device }}=true\n{{ end }}{{ end }}'
    out = run(src, data)
    assert out.count("\n") == 10_000 and out.startswith("nvidia-0000=true\n")
