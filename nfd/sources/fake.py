"""Upstream's ``fake`` source: fixed, configurable features and labels for tests; off by default."""

from __future__ import annotations

from typing import Any

from nfd.api.features import Features
from nfd.sources.base import DiscoveryContext, FeatureSource


class FakeSource(FeatureSource):
    name = "fake"
    features = ("fake.flag", "fake.attribute", "fake.instance")

    @property
    def enabled_by_default(self) -> bool:
        return False

    def default_config(self) -> dict[str, Any]:
        return {
            "labels": {"fakefeature1": "true", "fakefeature2": "true", "fakefeature3": "true"},
            "flagFeatures": ["flag_1", "flag_2", "flag_3"],
            "attributeFeatures": {"attr_1": "true", "attr_2": "false", "attr_3": "10"},
            "instanceFeatures": [
                {"name": "instance_1", "attr_1": "true", "attr_2": "false", "attr_3": "10", "attr_4": "foobar"},
                {"name": "instance_2", "attr_1": "true", "attr_2": "true", "attr_3": "100"},
                {"name": "instance_3"},
            ],
        }

    def discover(self, ctx: DiscoveryContext, config: dict[str, Any]) -> Features:
        f = Features()
        f.add_flags("fake.flag", (str(x) for x in config["flagFeatures"]))
        f.add_attributes("fake.attribute", {str(k): _s(v) for k, v in config["attributeFeatures"].items()})
        f.add_instances(
            "fake.instance",
            [{str(k): _s(v) for k, v in i.items()} for i in config["instanceFeatures"] if isinstance(i, dict)],
        )
        return f

    def labels(self, features: Features, config: dict[str, Any], ctx: DiscoveryContext) -> dict[str, str]:
        return {str(k): _s(v) for k, v in config["labels"].items()}


def _s(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


SOURCE = FakeSource()
