from __future__ import annotations

from nfd.api import NODE_NAME_LABEL, WORKER_POD_UID_ANNOTATION
from nfd.nodestate.nodefeatures import compact_nodefeature, publish_metadata_changed, spec_changed


def nf(attrs, annotations=None):
    meta = {"name": "n1", "namespace": "nfd", "labels": {NODE_NAME_LABEL: "n1"}}
    if annotations:
        meta["annotations"] = annotations
    return compact_nodefeature({"metadata": meta, "spec": {"features": {"attributes": {
        k: {"elements": v} for k, v in attrs.items()}}}})


def test_change_detection():
    a = nf({"a.b": {"x": "1"}})
    b = nf({"a.b": {"x": "1"}})
    c = nf({"a.b": {"x": "2"}})
    assert not spec_changed(a, b) and spec_changed(a, c)
    d = nf({"a.b": {"x": "1"}}, annotations={WORKER_POD_UID_ANNOTATION: "new"})
    assert publish_metadata_changed(a, d) and not publish_metadata_changed(a, b)
