"""printf's directives as fmt.Sprintf reads them before the verb: flags, explicit argument
indexes, ``*`` widths and precisions, and the error notes for what is wrong with them.

The expected strings are Go 1.26's fmt.Sprintf with the same format and arguments.
"""

from __future__ import annotations

import pytest

from nfd.lang.gotemplate.fmt import _arg_index, sprintf

CASES = [
    ("%-05d|%+ d|%#x|% x", (7, 7, 255, 255), "7    |+7|0xff| ff"),
    ("%[2]d %[1]d", (1, 2), "2 1"),
    ("%[3]d %d", (1, 2, 3), "3 %!d(MISSING)"),
    ("%[2]*[1]d|", (12, 5), "   12|"),
    ("%-*d|%*d|", (4, 1, -4, 2), "1   |2   |"),
    ("%*d|", ("x", 1), "%!(BADWIDTH)1|"),
    ("%.*d|", (3, 7), "007|"),
    ("%.[2]*[1]f|", (3.14159, 2), "3.14|"),
    ("%.*f|", ("x", 1.5), "%!(BADPREC)1.500000|"),
    ("%.*s|", (-1, "abc"), "%!(BADPREC)abc|"),  # a negative precision: none, and the note
    ("%.*d|%.*f|", (-2, 7, -1, 1.5), "%!(BADPREC)7|%!(BADPREC)1.500000|"),
    ("%.f|%.3s|%8.3f|", (2.5, "abcdef", 3.14159), "2|abc|   3.142|"),
    ("%[0]d|%[4]d|%[x]d|", (1, 2), "%!d(BADINDEX)|%!d(BADINDEX)|%!d(BADINDEX)|"),
    ("%[1]d %d %d", (1, 2), "1 2 %!d(MISSING)"),
    ("%d %d", (1, 2, 3, "s"), "1 2%!(EXTRA int=3, string=s)"),
    ("%[2]d", (1, 2, 3), "2"),  # an explicit index: no EXTRA note
    ("abc%", (), "abc%!(NOVERB)"),
    ("%5", (1,), "%!(NOVERB)%!(EXTRA int=1)"),
    ("%d %[", (1,), "1 %!(NOVERB)"),
    ("%%|%5%|%d", (1,), "%|%|1"),
]


@pytest.mark.parametrize(("fmt", "args", "want"), CASES)
def test_directives_as_go_reads_them(fmt: str, args: tuple[object, ...], want: str) -> None:
    assert sprintf(fmt, *args) == want


def test_arg_index() -> None:
    # (position after it, the argument it selects, whether it is a good one)
    assert _arg_index("%[2]d", 1, 0, 3) == (4, 1, True)
    assert _arg_index("%d", 1, 5, 3) == (1, 5, True)  # no index: nothing read, argument kept
    assert _arg_index("%[4]d", 1, 0, 3) == (4, 0, False)  # past the arguments
    assert _arg_index("%[x]d", 1, 0, 3) == (4, 0, False)
    assert _arg_index("%[2", 1, 0, 3) == (3, 0, False)  # unclosed: to the end of the format
