from nfd.api import DEFAULT_LABEL_NS
from nfd.rules.engine import add_ns


def add_ns_to_keys(labels: dict[str, str]) -> dict[str, str]:
    return add_ns(labels, DEFAULT_LABEL_NS)


def test_add_ns_to_keys_joins_like_go_path_join() -> None:
    # upstream builds names with path.Join: "" becomes the bare namespace (then validated)
    out = add_ns_to_keys({"": "a", "x": "b", "vendor.io/y": "c"})
    assert out == {"feature.node.kubernetes.io": "a", "feature.node.kubernetes.io/x": "b", "vendor.io/y": "c"}
    # an explicitly prefixed duplicate wins
    assert add_ns_to_keys({"x": "1", "feature.node.kubernetes.io/x": "2"}) == {"feature.node.kubernetes.io/x": "2"}
