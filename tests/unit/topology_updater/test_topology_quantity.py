from __future__ import annotations

import pytest

from nfd.api.noderesourcetopology import binary_si, decimal_si, parse_int_quantity
from nfd.api.quantity import quantity_fraction as parse_quantity


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0, "0"),
        (4, "4"),
        (1000, "1k"),
        (1500, "1500"),
        (2_000_000, "2M"),
        (17179869184, "17179869184"),
        (3 * 10**9, "3G"),
    ],
)
def test_decimal_si_matches_go_canonical_form(value: int, text: str) -> None:
    assert decimal_si(value) == text
    assert parse_int_quantity(text) == value


def test_binary_si() -> None:
    assert binary_si(2048 * 1024) == "2Mi"
    assert binary_si(1 << 30) == "1Gi"
    assert binary_si(64 * 1024) == "64Ki"
    assert binary_si(1000) == "1000"


def test_parse_quantity() -> None:
    assert parse_quantity("500m") * 2 == 1
    assert parse_quantity("1.5Gi") == 1610612736
    assert parse_quantity("1e3") == 1000
    assert parse_quantity("2") == 2
    with pytest.raises(ValueError):
        parse_quantity("two")


def test_parse_quantity_numbers_and_upstream_grammar() -> None:
    assert parse_quantity(3) == 3
    assert parse_quantity("1E-3") * 1000 == 1
    with pytest.raises(ValueError):
        parse_quantity("1K")  # upstream: K is not a suffix
