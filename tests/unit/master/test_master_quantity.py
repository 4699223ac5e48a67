from fractions import Fraction

import pytest

from nfd.api.quantity import quantity_fraction as parse_quantity
from nfd.api.quantity import same_quantity


@pytest.mark.parametrize(
    "s,v",
    [("1", 1), ("1k", 1000), ("1Ki", 1024), ("500m", Fraction(1, 2)), ("1e3", 1000), ("1.5G", 1_500_000_000)],
)
def test_parse(s, v):
    assert parse_quantity(s) == v


def test_same_quantity():
    assert same_quantity("1k", "1000")
    assert not same_quantity("1k", "1Ki")
    assert not same_quantity("x", "y")
    with pytest.raises(ValueError):
        parse_quantity("1kb")


def test_same_quantity_trims_and_compares_exactly():
    assert same_quantity(" 2 ", "2000m")
    assert not same_quantity("1", "1001m")
