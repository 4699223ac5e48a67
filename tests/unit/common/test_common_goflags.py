from __future__ import annotations

import argparse

import pytest

from nfd.common.goduration import parse_go_duration
from nfd.common.goflags import GoFlagParser, parse_bool


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("0", 0.0), ("-0", 0.0), ("60s", 60.0), ("1h30m", 5400.0), ("1.5h", 5400.0), ("500ms", 0.5),
     ("2us", 2e-6), ("2µs", 2e-6), ("2μs", 2e-6), ("-1m", -60.0), ("+.5s", 0.5), (" 3s ", 3.0), ("1h1s", 3601.0)],
)
def test_go_durations(text: str, seconds: float) -> None:
    assert parse_go_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "5", "s", "1d", "1h-5m", "--1s", "+", "1.s5", "1 s"])
def test_invalid_go_durations(text: str) -> None:
    with pytest.raises(ValueError, match="invalid duration"):
        parse_go_duration(text)


def test_bools() -> None:
    assert [parse_bool(t) for t in ("1", "t", "TRUE", "0", "f", "False")] == [True, True, True, False, False, False]
    with pytest.raises(argparse.ArgumentTypeError):
        parse_bool("yes")


def test_parser_options() -> None:
    p = GoFlagParser("x")
    assert p.parse_go([]).v == 0 and p.parse_go(["-logtostderr=false"]).logtostderr is False
    p = GoFlagParser("x", verbosity_default=None, klog=False)
    p.add_bool("flag", default=None)
    assert p.parse_go([]).v is None and p.parse_go(["--flag"]).flag is True
    with pytest.raises(SystemExit) as e:
        p.parse_go(["-logtostderr"])
    assert e.value.code == 2
