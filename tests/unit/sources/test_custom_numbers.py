"""A YAML number in a custom rule's value list reads as Go's FormatFloat(v, 'f', -1, 64) of it."""

from __future__ import annotations

import math

import pytest

from nfd.sources.custom import _scalar


@pytest.mark.parametrize(("v", "text"), [(1.5, "1.5"), (2.0, "2"), (1e-7, "0.0000001"), (1e22, "10000000000000000000000"),
                                         (1e300, "1" + "0" * 300), (-0.0, "-0"), (math.inf, "+Inf"), (math.nan, "NaN")])
def test_floats_read_as_go_formats_them(v: float, text: str) -> None:
    assert _scalar(v, "x") == text
