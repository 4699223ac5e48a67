from nfd.master.nodefeatures import add_ns_to_keys


def test_add_ns_to_keys_joins_like_go_path_join() -> None:
    # upstream builds names with path.Join: "" becomes the bare namespace (then validated)
    out = add_ns_to_keys({"": "a", "x": "b", "vendor.io/y": "c"})
    assert out == {"feature.node.kubernetes.io": "a", "feature.node.kubernetes.io/x": "b", "vendor.io/y": "c"}
    # an explicitly prefixed duplicate wins
    assert add_ns_to_keys({"x": "1", "feature.node.kubernetes.io/x": "2"}) == {"feature.node.kubernetes.io/x": "2"}
