"""The worker's labels are validated by the same functions as the master's and the CLIs'
(Kubernetes' IsQualifiedName / IsValidLabelValue, nfd.api.validation): a trailing newline is
no valid name or value (Go's regexp ``$`` without ``(?m)`` matches only at the end of text)."""

from __future__ import annotations

import pytest

from nfd.api.validation import is_qualified_name, is_valid_label_value, validate_label
from nfd.sources.base import DiscoveryContext
from nfd.sources.discovery import compute_labels, discover

CASES = ["", "abc", "a.b-c_d", "abc\n", "\nabc", "a\nb", "abc ", "-abc", "abc-", "a" * 63, "a" * 64, "é"]


def _fake(labels: dict[str, str]) -> dict[str, dict[str, object]]:
    return {"fake": {"labels": labels, "flagFeatures": [], "attributeFeatures": {}, "instanceFeatures": []}}


@pytest.mark.parametrize("value", CASES)
def test_worker_keeps_a_value_exactly_when_the_master_would(value: str) -> None:
    ctx = DiscoveryContext()
    cfg = _fake({"v": value})
    labels = compute_labels(discover(ctx, ["fake"], cfg).merged(), ["fake"], cfg, ctx)
    kept = "feature.node.kubernetes.io/fake-v" in labels
    assert kept == is_valid_label_value(value)
    assert kept == (validate_label("feature.node.kubernetes.io/fake-v", value) is None)


def test_trailing_newline_is_refused_in_names_and_values() -> None:
    assert not is_valid_label_value("abc\n")
    assert not is_qualified_name("example.com/abc\n")
    ctx = DiscoveryContext()
    cfg = _fake({"ok": "yes", "nl": "abc\n", "name\n": "yes", "example.com/x\n": "1"})
    labels = compute_labels(discover(ctx, ["fake"], cfg).merged(), ["fake"], cfg, ctx)
    assert labels == {"feature.node.kubernetes.io/fake-ok": "yes"}
