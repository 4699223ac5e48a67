from nfd.master.nodeupdater import _metadata_applied


def test_metadata_applied_checks_every_label_and_annotation_op() -> None:
    obj = {"metadata": {"labels": {"feature.node.kubernetes.io/a": "1"}, "annotations": {"x": "y"}}}
    ops = [
        {"op": "test", "path": "/metadata/resourceVersion", "value": "5"},
        {"op": "add", "path": "/metadata/labels/feature.node.kubernetes.io~1a", "value": "1"},
        {"op": "remove", "path": "/metadata/labels/feature.node.kubernetes.io~1gone"},
        {"op": "add", "path": "/metadata/annotations", "value": {"x": "y"}},
    ]
    assert _metadata_applied(obj, ops)
    # a server that ignored the metadata part of a nodes/status patch
    assert not _metadata_applied({"metadata": {}}, ops)
    assert not _metadata_applied(
        {"metadata": {"labels": {"feature.node.kubernetes.io/a": "1", "feature.node.kubernetes.io/gone": "t"},
                      "annotations": {"x": "y"}}}, ops)
