"""Go regexps on RE2: the same matches and rejections as Go (the whole tables: test_goregex_conformance)."""

from __future__ import annotations

import pytest

from nfd.lang.goregex import GoRegexError, compile_go


@pytest.mark.parametrize(
    ("pattern", "text", "want"),
    [
        ("val-[0-9]$", "val-1", True),
        ("val-[0-9]$", "val-1\n", False),  # Go's $ is end of text
        ("(?m)^b$", "a\nb\nc", True),
        ("^foo", "xfoo", False),
        ("foo", "xfooy", True),  # unanchored
        ("a\\z", "a", True),
        ("(?i)intel", "GenuineIntel", True),
        ("a(?i)b|c", "AB", False),
        ("a(?i)b|c", "aB", True),
        ("a(?i)b|c", "C", True),
        ("(?i:a)b", "Ab", True),
        ("(?i:a)b", "AB", False),
        ("x{,3}", "x{,3}", True),  # not a repeat in Go
        ("x{,3}", "xxx", False),
        ("x{2}", "xx", True),
        ("(?P<v>[0-9]+)", "v12", True),
        ("(?<v>[0-9]+)", "v12", True),
        ("[[:alpha:]]+$", "abc", True),
        ("^[[:digit:]]+$", "12a", False),
        ("^[[:xdigit:]_]+$", "0aF_", True),
        ("\\Qa.b\\E", "axb", False),
        ("\\Qa.b\\E", "a.b", True),
        ("\\x{41}", "A", True),
        ("\\x41\\101", "AA", True),
        ("^\\d+$", "١٢", False),  # \d is ASCII-only in Go
        ("^\\w+$", "é", False),
        ("^\\s$", "\v", False),  # Go's \s excludes \v
        ("^\\s$", "\t", True),
        ("^\\pL+$", "ver", True),  # Unicode classes run on RE2, as in Go
        ("^\\pL+$", "v1", False),
        ("\\p{Greek}", "xβ", True),
        ("^\\PN+$", "abc", True),
        ("^\\PN+$", "a1", False),
        ("(?s)a.b", "a\nb", True),
        ("a.b", "a\nb", False),
        ("(?U)a+", "aaa", True),
        ("^[^]a]+$", "bcd", True),
        ("^[]a]+$", "]a", True),
        ("^[a-]+$", "a-a", True),
        ("\\.", "a.b", True),
        ("^*a", "a", True),
        ("\\bfoo\\b", "a foo b", True),
        ("^(a|b)*$", "abba", True),
        ("^[\\d-]+$", "1-2", True),
        ("^\\A*a", "a", True),  # Go repeats empty-width assertions
        ("^a(?i)*$", "aaa", True),  # a repeat after a flag group applies to the atom before it
        ("^a(?i)*$", "AA", False),
        ("^a*(?i)+$", "aa", True),
        ("\\B", "", True),  # Go's \B matches in an empty string, Python's does not
        ("^\\Q.*\\E+$", ".**", True),
        ("^[[:^alpha:]]+$", "12_é", True),
        ("^[[:^alpha:]]+$", "1a", False),
        ("^[\\S]$", "\v", True),  # Go's \s has no \v, so \S includes it
        ("^[\\S]$", " ", False),
        ("^[\\D]$", "5", False),
        ("^[^\\D]$", "5", True),
    ],
)
def test_matches_like_go(pattern: str, text: str, want: bool) -> None:
    assert compile_go(pattern).match_string(text) is want


@pytest.mark.parametrize(
    "pattern",
    [
        "(",
        ")",
        "a)",
        "[a",
        "[z-a]",
        "a**",
        "a*+",
        "a++",
        "*a",
        "+",
        "(?=a)",
        "(?!a)",
        "(?<=a)b",
        "(?#comment)",
        "(?P=n)",
        "\\1",
        "(a)\\1",
        "\\Z",
        "\\G",
        "\\e",
        "ab\\E",
        "a{1001}",
        "a{2,1}",
        "\\p{Nope}",  # unknown Unicode class
        "(?P<>a)",
        "(?i-)a",
        "(?x)a",
        "\\x{110000}",
        "[[:nope:]]",
    ],
)
def test_rejects_like_go(pattern: str) -> None:
    with pytest.raises(GoRegexError):
        compile_go(pattern)


def test_cached() -> None:
    assert compile_go("^abc$") is compile_go("^abc$")


# Recorded from Go 1.26's regexp.Compile + MatchString (tests/tools/goregex); each of these
# disagreed with the old translation to Python's re.
GO_ANSWERS = [
    ("a{00}", "a{00}", True), ("a{00}", "", False), ("a{01}", "a{01}", True), ("a{01}", "a", False),
    ("(?i)k", "\u212a", True), ("(?i)σ", "Σ", True), ("(?i)σ", "ς", True),
    ("(?i)[[:^lower:]]", "A", False), ("(?i)[[:^lower:]]", "1", True), ("(?i)[[:^lower:]]", "\u212a", False),
    ("(?i)[[:^lower:]]", "ſ", False), ("\\_", "_", True), ("(?P<n>a)(?P<n>b)", "ab", True), ("(?)", "", True),
    ("(?i-i)a", "A", False), ("(?i-i)a", "a", True), ("\\p{l}", "x", True), ("\\p{greek}", "β", True),
    ("\\p{Cn}", "\u0378", True), ("\\p{Cn}", "a", False), ("\\p{Assigned}", "a", True),
    ("\\p{Assigned}", "\u0378", False), ("\\p{Uppercase_Letter}", "A", True),
    ("\\p{Uppercase_Letter}", "a", False), ("\\Pn", "1", False), ("\\Pn", "a", True),
    ("^gpu\\z", "gpu", True), ("^gpu\\z", "gpu\n", False), ("\\pL+", "é", True),
    ("(" * 999 + "a" + ")" * 999, "a", True),
]


@pytest.mark.parametrize(("pattern", "text", "want"), GO_ANSWERS, ids=lambda v: v[:20] if isinstance(v, str) else v)
def test_go_dialect_corners(pattern: str, text: str, want: bool) -> None:
    assert compile_go(pattern).match_string(text) is want


@pytest.mark.parametrize(
    ("pattern", "error"),
    [
        ("(a{100}){11}", "error parsing regexp: invalid repeat count: `{11}`"),
        ("(" * 1000 + "a" + ")" * 1000, "error parsing regexp: expression nests too deeply: `" + "(" * 1000 + "a" + ")" * 1000 + "`"),
        ("\\C", "error parsing regexp: invalid escape sequence: `\\C`"),
        ("(?P<ñ>a)", "error parsing regexp: invalid named capture: `(?P<ñ>`"),
        ("\\p{Old_Italic}", "error parsing regexp: invalid character class range: `\\p{Old_Italic}`"),
    ],
    ids=lambda v: v[:20],
)
def test_go_refusals_word_for_word(pattern: str, error: str) -> None:
    with pytest.raises(GoRegexError) as e:
        compile_go(pattern)
    assert str(e.value) == error


def test_deep_nesting_is_not_a_traceback() -> None:
    # the old recursive translation raised RecursionError past ~494 groups
    assert compile_go("(?:" * 20_000 + "a" + ")" * 20_000).match_string("a")
    with pytest.raises(GoRegexError, match="nests too deeply"):
        compile_go("(" * 20_000 + "a" + ")" * 20_000)


def test_lone_surrogate_is_matched_as_replacement_character() -> None:
    assert compile_go("^\\x{fffd}$").match_string("\ud800")
    assert compile_go("^.$").match_string("\udfff")


def test_compile_builds_one_re2_program_and_the_capturing_one_on_demand(monkeypatch: pytest.MonkeyPatch) -> None:
    # C++ RE2 spends ~0.5 ms on each program holding \pL (Go: 0.02 ms); validation and
    # match_string need the capture-free program only.
    from nfd.lang.goregex import regexp

    built: list[bytes] = []
    real = regexp._re2.RE2

    class Counting:
        def __new__(cls, text: bytes, options: object) -> object:
            built.append(text)
            return real(text, options)

        Anchor = real.Anchor

    monkeypatch.setattr(regexp._re2, "RE2", Counting)
    rx = regexp.GoRegexp(r"^\pL+$")
    assert len(built) == 1 and rx.match_string("é") and not rx.match_string("1")
    assert rx.find_submatch_index("éa".encode()) == [0, 3]
    assert len(built) == 1  # no groups: the same program serves both
    grouped = regexp.GoRegexp(r"(\pL)(\d)")
    assert len(built) == 2 and grouped.match_string("a1")
    assert grouped.find_submatch_index(b"xa1") == [1, 3, 1, 2, 2, 3]
    assert grouped.find_submatch_index(b"b2") == [0, 2, 0, 1, 1, 2]
    assert len(built) == 3  # the capturing program, once
    nb = regexp.GoRegexp(r"\Ba")  # \B's wrapper holds a group: its own capturing program
    assert nb.find_submatch_index(b"ba") == [1, 2]
    assert len(built) == 5


def test_repeated_unicode_classes_compile_over_a_reduced_alphabet(monkeypatch: pytest.MonkeyPatch) -> None:
    # Go keeps \pL as one instruction; C++ RE2 built ~1,200 per copy, 1,000 copies for
    # ^\pL{1000}$ (half a second). Over the reduced alphabet each copy is a few ranges.
    from nfd.lang.goregex import regexp

    built: list[bytes] = []
    real = regexp._re2.RE2

    class Counting:
        def __new__(cls, text: bytes, options: object) -> object:
            built.append(text)
            return real(text, options)

        Anchor = real.Anchor

    regexp._class_set("\\p{L}")  # the class's table, read off RE2 once per process
    monkeypatch.setattr(regexp._re2, "RE2", Counting)
    rx = regexp.GoRegexp(r"^\pL{1000}$")
    assert len(built) == 1 and b"\\p{" not in built[0] and len(built[0]) < 200
    assert rx.match_string("é" * 1000) and rx.match_string("ab" * 500) and rx.match_string("日" * 1000)
    assert not rx.match_string("é" * 999 + "1") and not rx.match_string("é" * 999)
    assert not rx.match_string("é" * 999 + "\ud800")  # a lone surrogate reads as U+FFFD, not a letter
    # capturing calls use C++ RE2's own program, with byte offsets of the real text
    assert regexp.GoRegexp(r"(\pL{16})").find_submatch_index(("é" * 16).encode()) == [0, 32, 0, 32]
    # anything else that tells non-ASCII characters apart keeps the plain program
    for p in (r"(?i)\pL{20}", r"é\pL{20}", r"[à-ÿ\pN]{20}", r"\x{100}\pL{20}"):
        assert regexp.parse(p).reduced is None, p
    assert regexp.parse(r"\pL").reduced is None  # one copy: RE2's own program is cheaper


@pytest.mark.parametrize("pattern", [
    r"^\pL{20}$", r"\pL+\d", r"^[\pL\pN_-]{3,20}$", r"(\p{Greek}|\P{L}){3}", r"[^\pL]{2}",
    r"\p{Han}\pP", r"\p{Lu}\p{Ll}", r"\PN\PN", r"\bx\pL", r"\B\pL", r"(?s).\pM",
    r"[\p{Cyrillic}\p{Latin}]{2}", r"\p{C}\p{Cn}", r"\p{Lc}\p{Assigned}", r"[\P{Any}\pS]",
    r"^\p{Ascii}+\pZ", r"\W\pL", r"[^\W\pL]", r"\p{Nd}\s\p{Sc}",
])
def test_reduced_alphabet_matches_as_the_plain_program(pattern: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import random

    from nfd.lang.goregex import regexp

    plain = regexp.GoRegexp(pattern) if regexp.parse(pattern).reduced is None else None
    monkeypatch.setattr(regexp, "REDUCE_AT", 10**9)
    plain = plain or regexp.GoRegexp(pattern)
    monkeypatch.setattr(regexp, "REDUCE_AT", 0)
    reduced = regexp.GoRegexp(pattern)
    assert reduced._tr is not None and plain._tr is None
    rnd = random.Random(pattern)
    pool = [chr(c) for c in [*range(0x20, 0x7F), 0xE9, 0x3B1, 0x391, 0x416, 0x4E2D, 0x65E5, 0x300, 0x20AC,
                             0xA0, 0x80, 0x81, 0x2028, 0xFFFD, 0x1F600, 0xE000, 0x10FFFF, 0x378, 0x661,
                             0x212A, 0x17F, 0x1C5, 0xD800]]
    for _ in range(2000):
        s = "".join(rnd.choice(pool) for _ in range(rnd.randint(0, 6)))
        assert reduced.match_string(s) == plain.match_string(s), repr(s)
