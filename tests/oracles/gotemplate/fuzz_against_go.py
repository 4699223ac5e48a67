"""Differential fuzzing against Go (not a pytest module): random templates are run through the
Go oracle (oracle/README.md; `python3 tests/oracles/gotemplate/oracle_build.py` builds it and prints
its path) and through nfd.lang.gotemplate, and differences are printed.

    ORACLE=$(python3 tests/oracles/gotemplate/oracle_build.py)
    python tests/oracles/gotemplate/fuzz_against_go.py "$ORACLE" funcs 1 2000
    python tests/oracles/gotemplate/fuzz_against_go.py "$ORACLE" strings 1 3000
    python tests/oracles/gotemplate/fuzz_against_go.py "$ORACLE" syntax 1 1500
    python tests/oracles/gotemplate/fuzz_against_go.py "$ORACLE" garbage 1 3000
    python tests/oracles/gotemplate/fuzz_against_go.py "$ORACLE" urls 1 3000
    python tests/oracles/gotemplate/fuzz_against_go.py "$ORACLE" dates 1 3000

Cases found this way that matter go into golden_cases.py.
"""

# ruff: noqa: E501, E702, E701, E741, SIM108, UP031

from __future__ import annotations

import json
import pathlib
import random
import subprocess
import sys
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).parent))

from golden_cases import GEN  # noqa: E402

from nfd.lang.gotemplate import TemplateError, parse  # noqa: E402

F_FIELDS = [".s", ".e", ".n", ".neg", ".z", ".f", ".big", ".t", ".no", ".nil", ".l", ".nums", ".el", ".m", ".em", ".strmap", ".nested.a", ".ver", ".u", ".html", "."]
F_LITS = ['"abc"', '"A b-C_d"', '""', "1", "0", "-2", "2.5", "true", "false", "nil", "'x'", '"1.2.3"', '"a,b,,c"', '" x "', "3", "10", '"%d-%s"', '"%v"', '"^a"', '"[a-c]+"']
F_FUNCS = {  # name: arity (None = variadic 0..3)
    "upper": 1, "lower": 1, "title": 1, "trim": 1, "quote": None, "squote": None, "cat": None, "len": 1, "not": 1,
    "and": None, "or": None, "print": None, "printf": None, "eq": 2, "ne": 2, "lt": 2, "le": 2, "gt": 2, "ge": 2,
    "index": 2, "default": 2, "empty": 1, "coalesce": None, "ternary": 3, "list": None, "dict": None, "first": 1, "last": 1,
    "rest": 1, "initial": 1, "reverse": 1, "uniq": 1, "compact": 1, "has": 2, "without": 2, "join": 2, "sortAlpha": 1,
    "splitList": 2, "split": 2, "toString": 1, "toStrings": 1, "atoi": 1, "int": 1, "int64": 1, "float64": 1, "add": None,
    "add1": 1, "sub": 2, "mul": None, "div": 2, "mod": 2, "max": None, "min": None, "floor": 1, "ceil": 1, "round": 2,
    "toJson": 1, "toPrettyJson": 1, "toRawJson": 1, "typeOf": 1, "kindOf": 1, "kindIs": 2, "typeIs": 2, "deepEqual": 2,
    "b64enc": 1, "b64dec": 1, "sha256sum": 1, "trunc": 2, "substr": 3, "repeat": 2, "replace": 3, "contains": 2,
    "hasPrefix": 2, "hasSuffix": 2, "trimPrefix": 2, "trimSuffix": 2, "trimAll": 2, "nospace": 1, "initials": 1,
    "snakecase": 1, "camelcase": 1, "kebabcase": 1, "swapcase": 1, "untitle": 1, "abbrev": 2, "wrap": 2, "indent": 2,
    "nindent": 2, "plural": 3, "regexMatch": 2, "regexFind": 2, "regexFindAll": 3, "regexReplaceAll": 3, "regexSplit": 3,
    "keys": None, "values": 1, "hasKey": 2, "get": 2, "pick": 2, "omit": 2, "pluck": 2, "merge": 2, "slice": None,
    "concat": None, "append": 2, "prepend": 2, "chunk": 2, "until": 1, "untilStep": 3, "seq": None, "semver": 1,
    "semverCompare": 2, "html": None, "js": None, "urlquery": None, "base": 1, "dir": 1, "ext": 1, "clean": 1,
    "fromJson": 1, "toDecimal": 1, "maxf": None, "minf": None, "addf": None, "divf": 2, "mulf": None, "subf": 2,
}
def funcs_operand(rnd: random.Random, d: int) -> str:
    r = rnd.random()
    if d > 2 or r < 0.45: return rnd.choice(F_FIELDS)
    if r < 0.75: return rnd.choice(F_LITS)
    return "(" + funcs_call(rnd, d + 1) + ")"
def funcs_call(rnd: random.Random, d: int) -> str:
    name = rnd.choice(list(F_FUNCS))
    ar = F_FUNCS[name]
    if ar is None: ar = rnd.randint(0, 3)
    if rnd.random() < 0.1: ar += rnd.choice([-1, 1])
    return " ".join([name] + [funcs_operand(rnd, d) for _ in range(max(ar, 0))])
def funcs_pipeline(rnd: random.Random) -> str:
    p = funcs_call(rnd, 0)
    if rnd.random() < 0.3:
        name = rnd.choice([n for n, a in F_FUNCS.items() if a == 1])
        p += " | " + name
    return p
def funcs_template(rnd: random.Random) -> str:
    parts = []
    for _ in range(rnd.randint(1, 3)):
        r = rnd.random()
        if r < 0.6: parts.append("{{ " + funcs_pipeline(rnd) + " }}|")
        elif r < 0.75: parts.append("{{ if " + funcs_pipeline(rnd) + " }}Y{{ else }}N{{ end }}|")
        elif r < 0.9: parts.append("{{ range $i, $e := " + funcs_pipeline(rnd) + " }}{{ $i }}:{{ $e }},{{ end }}|")
        else: parts.append("{{ with " + funcs_pipeline(rnd) + " }}[{{ . }}]{{ end }}|")
    return "".join(parts)

ALPH = "aAbBzZ09_- .!éÉßǅ\t1xXyY"
def rs(rnd: random.Random, k: int = 8) -> str: return "".join(rnd.choice(ALPH) for _ in range(rnd.randint(0, k)))
FN1 = ["snakecase", "camelcase", "kebabcase", "swapcase", "title", "untitle", "upper", "lower", "trim", "initials", "nospace", "quote", "squote", "b64enc", "toJson"]
FN2I = ["trunc", "abbrev", "wrap", "indent", "repeat"]
def strings_cases(rnd: random.Random, n: int) -> list[tuple[str, Any]]:
    cases: list[tuple[str, Any]] = []
    for _ in range(n):
        r = rnd.random()
        s = rs(rnd)
        if r < 0.6:
            cases.append(("{{ %s .s }}" % rnd.choice(FN1), {"s": s}))
        elif r < 0.8:
            cases.append(("{{ %s %d .s }}" % (rnd.choice(FN2I), rnd.randint(0, 9)), {"s": s}))
        else:
            v = "%d.%d.%d" % (rnd.randint(0, 3), rnd.randint(0, 3), rnd.randint(0, 3)) + rnd.choice(["", "-alpha", "-0", "-rc.1", "+b"])
            op = rnd.choice(["", "=", "!=", ">", "<", ">=", "<=", "~", "^", "~>"])
            c = op + rnd.choice(["1", "1.2", "1.2.3", "0.2", "0.0.1", "1.x", "*", "2.1.x", "0", "1.2.3-beta"])
            if rnd.random() < 0.3:
                c += rnd.choice([", <3", " || 0.x", " - 2.5", " >1.1"])
            cases.append(("{{ semverCompare .c .v }}", {"c": c, "v": v}))
    return cases

NUMS = ["0", "1", "-1", "+2", "0x1f", "0X1F", "017", "0o17", "0b11", "1_000", "1.5", ".5", "1.", "1e3", "1E-2", "0x1p4", "'a'", "'\\n'", "'\\x41'", "08", "1e", "0x", "9223372036854775807", "9223372036854775808", "1i", "'ab'", "-0", "0.0"]
STRS = ['"a\\tb"', '"\\u00e9"', '"\\x41\\101"', '"q\\"q"', '`raw\\n`', '"bad\\q"', '""', '"%"', '"a\\\'"']
VERBS = ["%v", "%d", "%s", "%q", "%x", "%X", "%o", "%b", "%c", "%U", "%e", "%f", "%g", "%t", "%T", "%5d", "%-5s|", "%05.1f", "%+d", "% d", "%#x", "%#v", "%.2s", "%8.3e", "%*d", "%[2]v", "%!", "%", "%%", "%.0f", "%3c"]
S_FIELDS = [".s", ".n", ".f", ".l", ".m", ".t", ".nil", ".e", ".nums", ".big", ".neg"]
def syn_atom(rnd: random.Random) -> str:
    r = rnd.random()
    if r < 0.3: return rnd.choice(NUMS)
    if r < 0.45: return rnd.choice(STRS)
    if r < 0.8: return rnd.choice(S_FIELDS)
    if r < 0.9: return rnd.choice(["true", "false", "nil", ".", "$"])
    return "(" + syn_expr(rnd) + ")"
def syn_expr(rnd: random.Random) -> str:
    r = rnd.random()
    if r < 0.3: return syn_atom(rnd)
    if r < 0.55: return "printf " + '"' + "".join(rnd.choice(VERBS) for _ in range(rnd.randint(1, 3))) + '" ' + " ".join(syn_atom(rnd) for _ in range(rnd.randint(0, 3)))
    if r < 0.7: return rnd.choice(["eq", "ne", "lt", "le", "gt", "ge"]) + " " + syn_atom(rnd) + " " + syn_atom(rnd)
    if r < 0.8: return rnd.choice(["and", "or", "not", "len", "print", "println", "index", "slice", "html", "js", "urlquery"]) + " " + " ".join(syn_atom(rnd) for _ in range(rnd.randint(1, 3)))
    return syn_atom(rnd) + " | " + rnd.choice(["print", "len", "printf \"%v\"", "not", "html"])
def syn_lt(rnd: random.Random) -> str: return rnd.choice(["{{", "{{- ", "{{-"])
def syn_rt(rnd: random.Random) -> str: return rnd.choice(["}}", " -}}", "-}}"])
def syn_text(rnd: random.Random) -> str: return rnd.choice(["", " ", "x", " \n ", "\t", "a b", "\n"])
def syn_block(rnd: random.Random, d: int = 0) -> str:
    out = []
    for _ in range(rnd.randint(1, 3)):
        r = rnd.random()
        out.append(syn_text(rnd))
        if r < 0.35 or d > 2: out.append(syn_lt(rnd) + " " + syn_expr(rnd) + " " + syn_rt(rnd))
        elif r < 0.45: out.append(syn_lt(rnd) + " $v := " + syn_expr(rnd) + " " + syn_rt(rnd) + "{{ $v }}")
        elif r < 0.55: out.append(syn_lt(rnd) + " if " + syn_expr(rnd) + " " + syn_rt(rnd) + syn_block(rnd, d + 1) + rnd.choice(["", "{{ else }}" + syn_block(rnd, d + 1), "{{ else if " + syn_expr(rnd) + " }}" + syn_block(rnd, d + 1)]) + "{{ end }}")
        elif r < 0.65: out.append("{{ range $i, $x := " + syn_expr(rnd) + " }}" + syn_block(rnd, d + 1) + rnd.choice(["", "{{ break }}", "{{ continue }}"]) + rnd.choice(["", "{{ else }}E"]) + "{{ end }}")
        elif r < 0.72: out.append("{{ with " + syn_expr(rnd) + " }}" + syn_block(rnd, d + 1) + rnd.choice(["", "{{ else }}W", "{{ else with " + syn_expr(rnd) + " }}" + syn_block(rnd, d + 1)]) + "{{ end }}")
        elif r < 0.78: out.append("{{/* c */}}" if rnd.random() < 0.5 else "{{- /* c */ -}}")
        elif r < 0.84: out.append('{{ template "t" ' + syn_atom(rnd) + " }}")
        elif r < 0.88: out.append(rnd.choice(["{{ }}", "{{ end }}", "{{ (1 }}", "{{ $u }}", "{{ .a.1 }}", "{{ 1 | 2 }}", "{{ /* x */ }}", "{{ range }}", "{{ . . }}", "{{\n.s\n}}"]))
        else: out.append(syn_lt(rnd) + " " + syn_expr(rnd) + " " + syn_rt(rnd))
    out.append(syn_text(rnd))
    return "".join(out)
def syn_template(rnd: random.Random) -> str:
    t = syn_block(rnd)
    if rnd.random() < 0.4: t = '{{ define "t" }}<{{ . }}>{{ end }}' + t
    return t



GARBAGE = ["{{", "}}", "{{-", "-}}", " ", "\n", "(", ")", "|", "$", "$x", ":=", "=", ".", ".a", ".a.b", '"s"', "`r`", "'c'", "1", "-", "if", "else", "end", "range", "with", "define", "template", "block", "break", "continue", "nil", "true", "/*", "*/", ",", "print", "len", "and", "x", "\t", "0x", "1e", "\\", '"', "'", "`", "{{/*", "*/}}", "é", "\x00", "{", "}"]


def garbage_template(rnd: random.Random) -> str:
    return "".join(rnd.choice(GARBAGE) for _ in range(rnd.randint(1, 25)))


# urlParse/urlJoin: URLs glued from pieces that exercise net/url's rules (escapes, IP literals,
# ports, userinfo, opaque forms, control bytes), and dicts of such pieces for urlJoin.
URL_PARTS = ["http", "https", "x", "mailto", "HTTP", "", "://", "//", "/", ":", "@", "[", "]", "::1", "fe80::1", "%25", "%", "%zz", "%41", "%2F", "%C3%A9", "é", "?", "#", "a", "b", "1", "80", ".", "..", "*", "+", " ", "!", "'", "(", ")", ";", ",", "=", "&", "$", "~", "-", "_", "1.2.3.4", "::ffff:", "\\x01", "\\x7f", "%20", "%7F", "%80", "u:p", "<", ">", "{", "|"]
URL_KEYS = ["scheme", "host", "path", "query", "opaque", "fragment", "userinfo"]
def url_piece(rnd: random.Random, k: int) -> str: return '"' + "".join(rnd.choice(URL_PARTS) for _ in range(rnd.randint(0, k))) + '"'
def url_template(rnd: random.Random) -> str:
    r = rnd.random()
    if r < 0.5: return "{{ urlParse %s }}" % url_piece(rnd, 9)
    if r < 0.75: return "{{ urlJoin (urlParse %s) }}" % url_piece(rnd, 9)
    keys = rnd.sample(URL_KEYS, rnd.randint(1, 4))
    return "{{ urlJoin (dict %s) }}" % " ".join('"%s" %s' % (key, url_piece(rnd, 4)) for key in keys)

# toDate/mustToDate: layouts of 1-5 elements and values mostly fitting them (some out of
# range, some of another element), read back through String, GoString, Unix, AddDate, JSON.
DATE_ELEMS = {"2006": ["2024", "0000", "1999", "0100", "9999", "0004"], "06": ["24", "69", "68", "00", "-1", "+5"], "01": ["01", "12", "13", "00"], "1": ["1", "2", "12"],
              "Jan": ["Jan", "feb", "MAR"], "January": ["January", "february"], "02": ["01", "28", "29", "31", "00"], "2": ["1", "29", "31"], "_2": [" 1", "29"],
              "002": ["001", "059", "060", "061", "365", "366", "000"], "__2": ["  1", " 59", "366"], "15": ["00", "23", "24", "9"], "3": ["1", "12", "13"], "03": ["01", "12"],
              "04": ["00", "59", "60"], "4": ["0", "59"], "05": ["00", "59", "60"], "5": ["0", "7"], "PM": ["PM", "AM", "pm"], "pm": ["pm", "am"],
              "MST": ["UTC", "PST", "GMT+3", "GMT-5", "CEST", "GMT"], "-0700": ["+0530", "-0800", "+0000", "+2400"], "-07:00": ["+05:30", "-08:00"], "Z07:00": ["Z", "+01:00"],
              "Z0700": ["Z", "-0130"], "-07": ["+05", "-11"], ".000": [".123", ",456"], ".999": [".1", ".123456789", ""], "Mon": ["Mon", "sun"], "Monday": ["Monday", "friday"]}
DATE_SEPS = ["-", " ", ":", "T", "/", ""]
DATE_READS = ["{{ mustToDate %s %s }}", "{{ (mustToDate %s %s).GoString }}", "{{ (mustToDate %s %s).Unix }}", "{{ ((mustToDate %s %s).AddDate -1 13 40).String }}",
              "{{ mustToDate %s %s | toJson }}", '{{ mustToDate %s %s | date "2006-01-02 15:04:05.000 002 Mon MST -07:00" }}', "{{ toDate %s %s }}"]
def date_template(rnd: random.Random) -> str:
    layout = value = ""
    for elem in rnd.sample(list(DATE_ELEMS), rnd.randint(1, 5)):
        sep = rnd.choice(DATE_SEPS)
        layout += sep + elem
        value += sep + rnd.choice(DATE_ELEMS[rnd.choice(list(DATE_ELEMS))] if rnd.random() < 0.1 else DATE_ELEMS[elem])
    return rnd.choice(DATE_READS) % ('"%s"' % layout, '"%s"' % value)


def run(oracle: str, cases: list[tuple[str, Any]]) -> int:
    inp = "".join(json.dumps({"tpl": t, "data": d}) + "\n" for t, d in cases)
    lines = subprocess.run([oracle], input=inp, capture_output=True, text=True, check=True).stdout.splitlines()
    bad = 0
    for (tpl, data), line in zip(cases, lines, strict=True):
        res = json.loads(line)
        exp = {k: res[k] for k in ("out", "err", "perr") if k in res}
        if "err" in exp:
            exp.pop("out", None)
        if "panic" in exp.get("err", ""):
            continue
        got: dict[str, str]
        try:
            t = parse(tpl)
            try:
                got = {"out": t.execute(json.loads(json.dumps(data)))}
            except TemplateError as e:
                got = {"err": str(e)}
        except TemplateError as e:
            got = {"perr": str(e)}
        except Exception as e:  # an engine bug
            got = {"crash": repr(e)}
        if got != exp:
            bad += 1
            if bad <= 30:
                print(repr(tpl), json.dumps(data)[:200], "\n  go:", exp, "\n  py:", got)
    print("mismatches", bad, "of", len(cases))
    return 1 if bad else 0


def main() -> int:
    oracle, mode, seed, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    rnd = random.Random(seed)
    if mode == "funcs":
        cases: list[tuple[str, Any]] = [(funcs_template(rnd), GEN) for _ in range(n)]
    elif mode == "strings":
        cases = strings_cases(rnd, n)
    elif mode == "urls":
        cases = [(url_template(rnd), None) for _ in range(n)]
    elif mode == "dates":
        cases = [(date_template(rnd), None) for _ in range(n)]
    elif mode == "garbage":
        cases = [(garbage_template(rnd), {"a": {"b": 1}}) for _ in range(n)]
    else:
        cases = [(syn_template(rnd), GEN) for _ in range(n)]
    return run(oracle, cases)


if __name__ == "__main__":
    raise SystemExit(main())
