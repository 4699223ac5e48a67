"""Go RE2 patterns on Python re: same matches, same rejections."""

from __future__ import annotations

import pytest

from nfd.rules.goregex import GoRegexError, compile_go


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
    assert (compile_go(pattern).search(text) is not None) is want


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
