"""Dynamic values ``@domain.feature.element`` (cases from upstream's TestGetDynamicValue)."""

from __future__ import annotations

import pytest

from nfd.api.features import Features
from nfd.rules.dynamic import dynamic_value, resolve_value

LSM = Features(attributes={"test.feature": {"LSM": "123"}})


@pytest.mark.parametrize(
    ("value", "features", "want"),
    [
        ("@test.feature.LSM", LSM, "123"),
        ("@invalid", Features(), None),
        ("@test.feature.LSM", Features(), None),
        ("@test.feature.missing", LSM, None),
        ("@test.feature.a.b.c", Features(attributes={"test.feature": {"a.b.c": "dots"}}), "dots"),
        ("@cpu.cpuid.AVX", Features(flags={"cpu.cpuid": {"AVX"}}), None),  # flags are not supported
    ],
)
def test_dynamic_value(value: str, features: Features, want: str | None) -> None:
    assert dynamic_value(value, features)[0] == want


def test_resolve_value_passes_static_values_and_resolves_dynamic_ones() -> None:
    """The one resolution the master's policy and ``kubectl nfd dryrun/test`` share."""
    assert resolve_value("plain", LSM) == ("plain", None)
    assert resolve_value("", Features()) == ("", None)
    assert resolve_value("@test.feature.LSM", LSM) == ("123", None)
    assert resolve_value("@test.feature.missing", LSM) == (None, "element missing not found on feature test.feature")
