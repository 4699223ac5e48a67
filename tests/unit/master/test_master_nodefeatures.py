from __future__ import annotations

from nfd.api import NODE_NAME_LABEL, WORKER_POD_UID_ANNOTATION
from nfd.master.nodefeatures import (
    compact_nodefeature,
    merge_node_features,
    publish_metadata_changed,
    spec_changed,
)


def nf(name, ns, node, *, attrs=None, labels=None, instances=None, annotations=None, spec=None):
    meta = {"name": name, "namespace": ns, "labels": {NODE_NAME_LABEL: node}, "resourceVersion": "1",
            "managedFields": [{"x": 1}]}
    if annotations:
        meta["annotations"] = annotations
    if spec is None:
        spec = {"features": {"attributes": {k: {"elements": v} for k, v in (attrs or {}).items()},
                             "instances": {k: {"elements": [{"attributes": a} for a in v]}
                                           for k, v in (instances or {}).items()}},
                "labels": labels or {}}
    return compact_nodefeature({"metadata": meta, "spec": spec})


def test_compact_keeps_identity_drops_bulk():
    e = nf("n1", "nfd", "n1", attrs={"a.b": {"x": "1"}}, annotations={WORKER_POD_UID_ANNOTATION: "u", "other": "z"})
    assert "managedFields" not in e["metadata"]
    assert e["metadata"]["annotations"] == {WORKER_POD_UID_ANNOTATION: "u"}
    assert "spec" not in e and isinstance(e["specZ"], bytes)


def test_change_detection():
    a = nf("n1", "nfd", "n1", attrs={"a.b": {"x": "1"}})
    b = nf("n1", "nfd", "n1", attrs={"a.b": {"x": "1"}})
    c = nf("n1", "nfd", "n1", attrs={"a.b": {"x": "2"}})
    assert not spec_changed(a, b) and spec_changed(a, c)
    d = nf("n1", "nfd", "n1", attrs={"a.b": {"x": "1"}}, annotations={WORKER_POD_UID_ANNOTATION: "new"})
    assert publish_metadata_changed(a, d) and not publish_metadata_changed(a, b)


def test_merge_order_own_namespace_first_then_name_then_namespace():
    objs = [
        nf("a-third", "vendor", "n1", attrs={"x.y": {"k": "vendor"}}, labels={"l": "vendor"},
           instances={"pci.device": [{"v": "2"}]}),
        nf("n1", "nfd", "n1", attrs={"x.y": {"k": "worker", "w": "1"}}, labels={"l": "worker", "vendor.io/p": "1"},
           instances={"pci.device": [{"v": "1"}]}),
        nf("a-third", "other", "n1", attrs={"x.y": {"k": "other"}}),
    ]
    m = merge_node_features(objs, node_name="n1", master_namespace="nfd")
    # nfd/n1, then a-third in "other", then a-third in "vendor": the last wins
    assert m.sources == ["nfd/n1", "other/a-third", "vendor/a-third"]
    assert m.features.attributes["x.y"] == {"k": "vendor", "w": "1"}
    assert m.features.instances["pci.device"] == [{"v": "1"}, {"v": "2"}]
    assert m.labels == {"feature.node.kubernetes.io/l": "vendor", "vendor.io/p": "1"}
    assert m.found and m.has_features


def test_deny_third_party_labels_and_namespace_selection():
    objs = [
        nf("n1", "nfd", "n1", labels={"mine": "1"}),
        nf("gpu", "nfd", "n1", labels={"gpu": "1"}),  # third party: name differs
        nf("n1", "vendor", "n1", labels={"v": "1"}),  # third party: namespace differs
    ]
    m = merge_node_features(objs, node_name="n1", master_namespace="nfd", deny_third_party_labels=True)
    assert m.labels == {"feature.node.kubernetes.io/mine": "1"}
    m = merge_node_features(objs, node_name="n1", master_namespace="nfd", namespace_selected=lambda ns: ns == "vendor")
    assert m.sources == ["vendor/n1"] and m.found


def test_prefixed_duplicate_wins_and_empty_objects():
    m = merge_node_features(
        [nf("n1", "nfd", "n1", labels={"x": "plain", "feature.node.kubernetes.io/x": "prefixed"})],
        node_name="n1", master_namespace="nfd",
    )
    assert m.labels == {"feature.node.kubernetes.io/x": "prefixed"}
    empty = merge_node_features([nf("n1", "nfd", "n1")], node_name="n1", master_namespace="nfd")
    assert empty.found and not empty.has_features
    none = merge_node_features([], node_name="n1", master_namespace="nfd")
    assert not none.found and not none.has_features


def test_malformed_object_skipped_others_kept():
    bad = nf("bad", "nfd", "n1", spec={"features": {"attributes": {"a.b": {"elements": {"k": {"nested": 1}}}}}})
    good = nf("n1", "nfd", "n1", labels={"ok": "1"})
    m = merge_node_features([bad, good], node_name="n1", master_namespace="nfd")
    assert m.sources == ["nfd/n1"]
    assert len(m.errors) == 1 and "nfd/bad" in m.errors[0]
    assert m.labels == {"feature.node.kubernetes.io/ok": "1"}
