"""Validators (cases from upstream's validate_test.go and apimachinery) and resource.Quantity."""

from __future__ import annotations

from decimal import Decimal

import pytest

from nfd.api.quantity import QuantityError, is_quantity, parse_quantity
from nfd.api.validation import (
    ERR_EMPTY_TAINT_EFFECT,
    ERR_INVALID_TAINT_EFFECT,
    ERR_NS_NOT_ALLOWED,
    ERR_UNPREFIXED,
    is_qualified_name,
    is_valid_label_value,
    validate_annotation,
    validate_extended_resource,
    validate_label,
    validate_taint,
)


@pytest.mark.parametrize(
    ("key", "value", "want"),
    [
        ("feature.node.kubernetes.io/label", "true", None),
        ("vendor.io/label", "true", None),
        ("invalid-key:", "true", 'invalid label key "invalid-key:": '),
        ("kubernetes.io/label", "true", ERR_NS_NOT_ALLOWED),
        ("sub.kubernetes.io/label", "true", ERR_NS_NOT_ALLOWED),
        ("nfd.node.kubernetes.io/label", "true", ERR_NS_NOT_ALLOWED),
        ("profile.node.kubernetes.io/label", "true", None),
        ("sub.feature.node.kubernetes.io/label", "true", None),
        ("sub.profile.node.kubernetes.io/label", "true", None),
        ("xfeature.node.kubernetes.io/label", "true", ERR_NS_NOT_ALLOWED),
        ("denied-key", "true", ERR_UNPREFIXED),
        ("feature.node.kubernetes.io/label", "invalid value", 'invalid value "invalid value": '),
        ("feature.node.kubernetes.io/label", "", None),
        ("feature.node.kubernetes.io/label", "a" * 63, None),
        ("feature.node.kubernetes.io/label", "a" * 64, "invalid value"),
        ("feature.node.kubernetes.io/" + "a" * 64, "x", "invalid label key"),
        ("Vendor.io/label", "x", "invalid label key"),
        ("vendor.io/", "x", "invalid label key"),
        ("/label", "x", "invalid label key"),
        ("a/b/c", "x", "invalid label key"),
    ],
)
def test_label(key: str, value: str, want: str | None) -> None:
    got = validate_label(key, value)
    if want in (None, ERR_NS_NOT_ALLOWED, ERR_UNPREFIXED):
        assert got is want
    else:
        assert got is not None and got.startswith(want)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("key", "value", "want"),
    [
        ("feature.node.kubernetes.io/feature", "true", None),
        ("_invalid-key_", "true", 'invalid annotation key "_invalid-key_":'),
        ("denied-key", "true", ERR_UNPREFIXED),
        ("feature.node.kubernetes.io/feature", "\x00" * 1100, "invalid value: too long:"),
        ("feature.node.kubernetes.io/feature", "x" * 1024, None),
        ("kubernetes.io/denied", "true", ERR_NS_NOT_ALLOWED),
        ("profile.node.kubernetes.io/x", "true", ERR_NS_NOT_ALLOWED),
        ("vendor.io/x", "any value at all", None),
    ],
)
def test_annotation(key: str, value: str, want: str | None) -> None:
    got = validate_annotation(key, value)
    if want in (None, ERR_NS_NOT_ALLOWED, ERR_UNPREFIXED):
        assert got is want
    else:
        assert got is not None and got.startswith(want)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("key", "effect", "want"),
    [
        ("feature.node.kubernetes.io/taint", "NoSchedule", None),
        ("vendor.io/taint", "NoExecute", None),
        ("vendor.io/taint", "PreferNoSchedule", None),
        ("invalid-key", "NoSchedule", ERR_UNPREFIXED),
        ("invalid.kubernetes.io/invalid-key", "NoSchedule", ERR_NS_NOT_ALLOWED),
        ("feature.node.kubernetes.io/taint", "", ERR_EMPTY_TAINT_EFFECT),
        ("feature.node.kubernetes.io/taint", "invalid-effect",
         f'{ERR_INVALID_TAINT_EFFECT} "invalid-effect": must be one of NoSchedule, PreferNoSchedule, NoExecute'),
        # no qualified-name check on taint keys upstream
        ("vendor.io/Not A Name", "NoSchedule", None),
    ],
)
def test_taint(key: str, effect: str, want: str | None) -> None:
    assert validate_taint(key, "true", effect) == want


@pytest.mark.parametrize(
    ("key", "value", "want"),
    [
        ("feature.node.kubernetes.io/extended-resource", "123", None),
        ("invalid-name~", "123", 'invalid name "invalid-name~": '),
        ("denied-key", "123", ERR_UNPREFIXED),
        ("feature.node.kubernetes.io/extended-resource", "invalid value", 'invalid value "invalid value": '),
        ("kubernetes.io/x", "1", ERR_NS_NOT_ALLOWED),
        ("vendor.io/gpu", "1.5Gi", None),
    ],
)
def test_extended_resource(key: str, value: str, want: str | None) -> None:
    got = validate_extended_resource(key, value)
    if want in (None, ERR_NS_NOT_ALLOWED, ERR_UNPREFIXED):
        assert got is want
    else:
        assert got is not None and got.startswith(want)  # type: ignore[arg-type]


def test_simple_predicates() -> None:
    assert is_qualified_name("a.b/c-d_e.f")
    assert not is_qualified_name("-a")
    assert is_valid_label_value("")
    assert not is_valid_label_value("a\n")
    assert not is_valid_label_value("a ")


@pytest.mark.parametrize(
    ("s", "amount"),
    [
        ("0", "0"),
        ("1", "1"),
        ("100m", "0.1"),
        ("1k", "1000"),
        ("1Ki", "1024"),
        ("1.5Gi", str(int(1.5 * 2**30))),
        ("-2M", "-2000000"),
        ("+3", "3"),
        ("1e3", "1000"),
        ("1E-3", "0.001"),
        ("12n", "0.000000012"),
        ("5u", "0.000005"),
        ("2E", "2000000000000000000"),
        ("1.", "1"),
        (".5", "0.5"),
        ("000123", "123"),
        ("-", "0"),
        ("Ti", "0"),  # no digits, but small enough for the int64 fast path
        ("E18", "0"),
        (".", "0"),
    ],
)
def test_quantity_valid(s: str, amount: str) -> None:
    assert parse_quantity(s).amount == Decimal(amount)


@pytest.mark.parametrize(
    "s", ["", "abc", "1K", "1 k", "1KiB", "1e", "1.2.3", "1Mi1", "--1", "1e1.5", " 1", "0x10", "١"]
)
def test_quantity_invalid(s: str) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(s)
    assert not is_quantity(s)


def test_quantity_value_rounds_up() -> None:
    assert parse_quantity("100m").value() == 1
    assert parse_quantity("1.5").value() == 2
    assert parse_quantity("2Ki").value() == 2048
    assert parse_quantity("-2n").milli_value() == -1  # away from zero, like Go
