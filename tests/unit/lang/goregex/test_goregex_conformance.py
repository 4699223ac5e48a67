"""nfd's Go regexps against Go's regexp package itself, case by case.

The ground truth is recorded at test time by tests/tools/goregex, built with the installed Go
(tests/support/goregex_truth.py): every pattern and input of Go's own regexp test tables
(re2-search.txt, re2-exhaustive.txt.bz2, basic.dat, nullsubexpr.dat, repetition.dat and the
string literals of regexp/syntax/parse_test.go), the dialect corners below and a seeded set of
generated patterns. For each pattern: compile succeeds or fails alike, with Go's error text;
MatchString agrees on every input; FindStringSubmatchIndex, FindAllStringSubmatchIndex,
ReplaceAllString and Split (what the Sprig functions use) agree where recorded.
"""

from __future__ import annotations

import random
from collections import Counter
from functools import lru_cache
from typing import Any

import pytest

from nfd.lang.goregex import GoRegexError, all_matches, compile_go, replace_all, split
from tests.support.goregex_truth import truth

REPL_TEMPLATE = "<$0|${1}|$2x|${n}|$$>"  # tests/tools/goregex's ReplTemplate
PROBES = [
    "", "a", "aa", "A", "k", "K", "\u212a", "σ", "Σ", "ς", "ab", "a\nb", "\n", "é", "xé", "x", "ß",
    "ẞ", "İ", "ı", "i", "I", "ǅ", "ǆ", "Ǆ", "ſ", "s", "S", "1", "_", " ", "\v", "\x00", "日", "ア",
    "\U0001F600", "\ud7ff", "\ufffd", "\U000e0001", "\u0378", "\U0010FFFF", "\U000F0000", "A\u0300",
    "αβγ", "{", "}", "a{00}", "a{01}", "aé", "éa", "ab\n", "ǈ", "\u1e9e", "a\u0080b", "é\u0080",
]

# Where Go's dialect and C++ RE2's (or Python's) part ways, and Go's limits.
CORNERS = [
    r"a{00}", r"a{01}", r"a{0}", r"a{1,01}", r"a{,3}", r"a{2,1}", r"a{1001}", r"a{1000}",
    r"a{99999999}", r"a{100000000}", r"(a{100}){11}", r"(a{100}){10}", r"((a{10}){10}){10}",
    r"((a{10}){10}){11}", r"(a{2}){501}", r"(a{3}){333}", r"(a{3}){334}", r"(?:a{0}){1000}",
    r"(a*){1000}", r"(a{2,}){500}", r"(a{0,}){1000}x{2}", r"(?i)k", r"(?i)σ", r"(?i)[[:^lower:]]",
    r"(?i)[^k]", r"\_", r"(?P<n>a)(?P<n>b)", r"(?<n>a)", r"(?)", r"(?i-i)a", r"(?-)a", r"(?i-)a",
    r"(?i", r"(?P=n)", r"(?P>n)", r"(?<>a)", r"(?P<n!>a)", r"(?P<ñ>a)", r"(?P<", r"(?<",
    r"\p{l}", r"\p{greek}", r"\p{Cn}", r"\p{Assigned}", r"\p{Uppercase_Letter}", r"\Pn", r"\pn",
    r"\p{LC}", r"\p{ASCII}", r"\p{Any}", r"\p{any}", r"\p{L&}", r"\p{Latn}", r"\p{Letter}",
    r"\p{Cs}", r"\p{Co}", r"\p{C}", r"\P{C}", r"\p{^Greek}", r"\P{^Greek}", r"[\p{Greek}a]",
    r"[^\P{Lu}]", r"\p{Zzzz}", r"\p{Common}", r"\p{Inherited}", r"\p{Braille}", r"\p{Kawi}",
    r"\p{Nag_Mundari}", r"\p{Sunuwar}", r"\p{ Greek }", r"\p{Is_Greek}", r"\p{Gc=Lu}",
    r"\p{White_Space}", r"[\p{Cn}a]", r"[^\p{Cn}a]", r"[^\P{C}]", r"[\P{Any}]", r"[^\P{Any}]",
    r"\P{Any}", r"(?i)\p{Lu}", r"(?i)\P{Lu}", r"(?i)[^\p{Ll}]", r"(?i)\p{Greek}", r"(?i)\p{ascii}",
    r"(?i)[\p{LC}]", r"[\p{Assigned}]", r"\p{Other}", r"\p{Unassigned}", r"\p{cntrl}",
    r"\C", r"\Z", r"\z", r"\Q", r"\Qab", r"\Qa\E*", r"[\Q]\E]", r"\8", r"\0", r"\01", r"\012",
    r"\0123", r"\1", r"\18", r"\x{110000}", r"\x{}", r"\x1", r"\x", r"\x{10FFFF}", r"\x{41",
    r"\xg1", r"[a-\d]", r"[\d-z]", r"[z-a]", r"[]a]", r"[^]a]", r"[]", r"[^]", r"[[:foo:]]",
    r"[[:alpha:]-z]", r"[a-[:alpha:]]", r"a**", r"a*?*", r"a*+", r"a++", r"a??", r"a{2}{3}",
    r"a{2}*", r"(?:a*)*", r"(a*)+", r"x{1001,}", r"x{2}{,3}", r"\Q\E*", r"(?i)\Q\E*", r"(|a)*",
    r"()", r"(?:)", r"(", r")", r"a)", r"(a", r"a|*", r"|", r"^*", r"$*", r"\b*", r"(?m)^*",
    r"(?s).", r"(?U)a+", r"(?U)a+?", r"(?sm-U:.)", r"(?i)(?-i)a", r"a(?i)*", r"a(?U)*",
    r"a*(?i)+", r"a*(?i)*", r"\pL", r"\p{L}", r"\PL", r"[\PL]", r"[\p]", r"\p", r"\p{", r"\p{L",
    r"\pX", r"\e", r"\cA", r"\N{DIGIT}", r"\R", r"\h", r"\K", r"\G", r"\X", r"(?#x)", r"(?=a)",
    r"(?!a)", r"(?<=a)", r"(?<!a)", r"(?>a)", r"(?|a)", r"(?x)a b", r"(?u)a", r"(?a)a",
    r"[[:word:]]", r"[[:^word:]]", r"[[=a=]]", r"[[.a.]]", r"\x{0041}", r"\v", r"[\v]", r"\s",
    r"[\s]", r"\S", r"[\S]", r"\W", r"(?i)\W", r"(?i)[^\W]", "\u212a", "(?i)\u212a", r"(?i)ǅ",
    r"(?i)ß", r"(?i)ſ", r"(?i)[a-z]", r"(?i)[k-k]", r"x\Bé", r"\B", r"é\B", "a*\\B", r"\B\B",
    r"(?i)İ", r"(?i)ı", r"(?i)i", r"a$", r"a\z", r"(?m)a$", r"^$", r"(?m)^$", r".", r"[^a]",
    "(" * 999 + "a" + ")" * 999, "(" * 1000 + "a" + ")" * 1000, "(?:" * 3000 + "a" + ")" * 3000,
    "(?:(" * 500 + "a" + "))" * 500, "(?:a*" * 600 + ")" * 600, "(a|" * 999 + "b" + ")" * 999,
    "(a|" * 1000 + "b" + ")" * 1000, "((a)b)" * 3, "(ab" * 999 + ")" * 999, "(ab" * 1000 + ")" * 1000,
    r"\pL{1000}", r"(\pL{1000}){1000}", r".{1000}" * 3, r"(.{1000}){3}", "(?:x{1000}y{1000})" * 1700,
    "a" * 5000, "[a-z]{1000}" * 4000,
]
CORNERS += [r"\p{" + n + "}" for n in ["lu", "LU", "Lu", "lowercase", "letter", "Lowercase_Letter", "Titlecase_Letter", "Cased_Letter", "Modifier_Letter", "Other_Letter", "Mark", "Combining_Mark", "Nonspacing_Mark", "Spacing_Mark", "Enclosing_Mark", "Number", "Decimal_Number", "digit", "Letter_Number", "Other_Number", "Punctuation", "punct", "Connector_Punctuation", "Dash_Punctuation", "Open_Punctuation", "Close_Punctuation", "Initial_Punctuation", "Final_Punctuation", "Other_Punctuation", "Symbol", "Math_Symbol", "Currency_Symbol", "Modifier_Symbol", "Other_Symbol", "Separator", "Space_Separator", "Line_Separator", "Paragraph_Separator", "Control", "Format", "Surrogate", "Private_Use", "assigned", "Han", "hani", "Hiragana", "Old_Italic", "olditalic", "Greek", "GREEK", "grek", "Arabic", "Cyrillic", "Latin", "Zyyy", "Zinh", "Katakana_Or_Hiragana", "Nko", "SignWriting", "Signwriting", "Hangul", "Devanagari", "Ethiopic"]]

_ATOMS = [
    "a", "b", "é", "K", "k", "σ", ".", "\\d", "\\w", "\\s", "\\W", "\\pL", "\\p{Greek}", "\\PN",
    "[a-c]", "[^a]", "[[:alpha:]]", "[\\d\\pL]", "[^\\n]", "\\b", "\\B", "^", "$", "\\A", "\\z",
    "\\x{e9}", "\\101", "\\Qa.\\E", "\\.", "\\_", "{", "}", "[é-ü]", "\\p{Lu}", "[\\P{Ll}x]",
]
_REPEATS = ["*", "+", "?", "*?", "+?", "??", "{2}", "{1,3}", "{0,}", "{2,}", "{0}", "{,2}", "{01}", "**"]
_ALPHABET = ["", "a", "b", "ab", "ba", "aab", "é", "aé", "Ké", "\u212a", "σς", "x.y", "1a_", "a\nb", " a ", "éé", "AbC"]


def _generated(n: int, seed: int = 14) -> list[tuple[str, list[str]]]:
    rnd = random.Random(seed)

    def expr(depth: int) -> str:
        parts = []
        for _ in range(rnd.randint(1, 4)):
            r = rnd.random()
            if r < 0.55 or depth > 3:
                item = rnd.choice(_ATOMS)
            elif r < 0.7:
                item = "(" + expr(depth + 1) + ")"
            elif r < 0.8:
                item = "(?:" + expr(depth + 1) + "|" + expr(depth + 1) + ")"
            elif r < 0.9:
                item = "(?" + rnd.choice(["i", "s", "m", "U", "i-s", "-i", "im"]) + ":" + expr(depth + 1) + ")"
            else:
                item = "(?" + rnd.choice(["i", "s", "U", "-i"]) + ")"
            if rnd.random() < 0.35:
                item += rnd.choice(_REPEATS)
            parts.append(item)
        return "".join(parts)

    return [(expr(0), _ALPHABET) for _ in range(n)]


@lru_cache(maxsize=1)
def _truth() -> tuple[str, list[dict[str, Any]]] | str:
    extra = [(p, PROBES) for p in CORNERS] + _generated(4000)
    return truth(extra, corpus=True)


def _records() -> list[dict[str, Any]]:
    got = _truth()
    if isinstance(got, str):
        pytest.skip(got)
    return got[1]


def _check(r: dict[str, Any]) -> list[str]:
    """The disagreements for one record, worded for a failure message."""
    p = r["p"]
    short = p if len(p) < 80 else f"{p[:40]}...({len(p)} chars)"
    try:
        rx = compile_go(p)
    except GoRegexError as e:
        if not r["err"]:
            return [f"{r['src']}: {short!r}: Go compiles it, nfd: {e}"]
        if str(e) != r["err"]:
            return [f"{r['src']}: {short!r}: error text: Go {r['err']!r}, nfd {str(e)!r}"]
        return []
    if r["err"]:
        return [f"{r['src']}: {short!r}: Go refuses it ({r['err']}), nfd compiles it"]
    out = []
    for k, (s, m) in enumerate(zip(r["in"], r["m"], strict=True)):
        if rx.match_string(s) != (m == "1"):
            out.append(f"{r['src']}: {short!r} on {s!r}: Go MatchString {m == '1'}")
        if "idx" in r:
            want = r["idx"][k]
            got = rx.find_submatch_index(s.encode())
            if got != want:
                out.append(f"{r['src']}: {short!r} on {s!r}: FindStringSubmatchIndex Go {want}, nfd {got}")
        if "all" in r:
            b = s.encode()
            for what, want, got in (
                ("FindAllStringSubmatchIndex", r["all"][k] or [], all_matches(rx, b, -1)),
                ("ReplaceAllString", r["rep"][k], replace_all(rx, s, REPL_TEMPLATE, literal=False)),
                ("Split(-1)", r["split"][k], split(rx, s, -1)),
                ("Split(2)", r["split2"][k], split(rx, s, 2)),
            ):
                if got != want:
                    out.append(f"{r['src']}: {short!r} on {s!r}: {what} Go {want!r}, nfd {got!r}")
    return out


@pytest.mark.parametrize(
    "source",
    ["re2-search.txt", "re2-exhaustive.txt", "basic.dat", "nullsubexpr.dat", "repetition.dat", "parse_test.go", "extra"],
)
def test_agrees_with_go(source: str) -> None:
    records = [r for r in _records() if r["src"] == source]
    assert records, f"no {source} cases recorded (is $GOROOT/src/regexp/testdata there?)"
    problems: list[str] = []
    pairs = 0
    for r in records:
        pairs += len(r["in"])
        problems.extend(_check(r))
    kinds = Counter(x.split(": ", 2)[-1].split(" ")[0] for x in problems)
    assert not problems, f"{len(problems)} disagreements in {len(records)} patterns ({pairs} inputs) {dict(kinds)}:\n" + "\n".join(problems[:40])


def test_agrees_with_go_over_the_reduced_alphabet(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every recorded pattern with a Unicode class, compiled with the alphabet reduction forced
    on (nfd uses it only when its classes repeat 16 times or more: ``^\\pL{1000}$``)."""
    from nfd.lang.goregex import regexp

    monkeypatch.setattr(regexp, "REDUCE_AT", 0)
    compile_go.cache_clear()
    try:
        records = [r for r in _records() if "\\p" in r["p"] or "\\P" in r["p"]]
        assert len(records) > 50
        reduced = sum(1 for r in records if not r["err"] and regexp.parse(r["p"]).reduced is not None)
        assert reduced > 20, "the reduction was not used"
        problems = [x for r in records for x in _check(r)]
    finally:
        compile_go.cache_clear()
    assert not problems, f"{len(problems)} disagreements:\n" + "\n".join(problems[:40])
