"""The one NodeFeature merge (nfd-master, masterless mode, ``nfd rules``, ``kubectl nfd``)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from nfd.api import NODE_NAME_LABEL, WORKER_POD_UID_ANNOTATION
from nfd.nodestate.nodefeatures import compact_nodefeature, merge_node_features


def raw(name, ns, node, *, attrs=None, labels=None, instances=None, annotations=None, spec=None):
    meta = {"name": name, "namespace": ns, "labels": {NODE_NAME_LABEL: node}, "resourceVersion": "1",
            "managedFields": [{"x": 1}]}
    if annotations:
        meta["annotations"] = annotations
    if spec is None:
        spec = {"features": {"attributes": {k: {"elements": v} for k, v in (attrs or {}).items()},
                             "instances": {k: {"elements": [{"attributes": a} for a in v]}
                                           for k, v in (instances or {}).items()}},
                "labels": labels or {}}
    return {"metadata": meta, "spec": spec}


def nf(*args, **kwargs):
    """The informer's compacted cache entry of ``raw(...)``."""
    return compact_nodefeature(raw(*args, **kwargs))


def test_compact_keeps_identity_drops_bulk():
    e = nf("n1", "nfd", "n1", attrs={"a.b": {"x": "1"}}, annotations={WORKER_POD_UID_ANNOTATION: "u", "other": "z"})
    assert "managedFields" not in e["metadata"]
    assert e["metadata"]["annotations"] == {WORKER_POD_UID_ANNOTATION: "u"}
    assert "spec" not in e and isinstance(e["specZ"], bytes)


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


@pytest.mark.parametrize("form", [raw, nf], ids=["plain objects", "cache entries"])
def test_plain_objects_and_cache_entries_merge_alike(form):
    """``nfd rules`` and ``kubectl nfd`` pass the objects as read, the master its cache entries."""
    objs = [
        form("b-vendor", "other", "node-1", attrs={"x.y": {"k": "b"}}, labels={"l": "vendor-b"},
             instances={"i.j": [{"k": "b"}]}),
        form("node-1", "nfd", "node-1", attrs={"x.y": {"k": "worker"}}, labels={"l": "worker", "w": "1"},
             instances={"i.j": [{"k": "worker"}]}),
        form("a-vendor", "other", "node-1", attrs={"x.y": {"k": "a"}}, labels={"l": "vendor-a"},
             instances={"i.j": [{"k": "a"}]}),
        form("a-vendor", "aaa", "node-1", attrs={"x.y": {"k": "aaa"}}, labels={"l": "vendor-aaa"},
             instances={"i.j": [{"k": "aaa"}]}),
    ]
    m = merge_node_features(objs, node_name="node-1", master_namespace="nfd")
    assert m.features.attributes["x.y"]["k"] == "b"
    assert [i["k"] for i in m.features.instances["i.j"]] == ["worker", "aaa", "a", "b"]
    assert m.labels == {"feature.node.kubernetes.io/l": "vendor-b", "feature.node.kubernetes.io/w": "1"}
    m = merge_node_features(objs, node_name="node-1", master_namespace="nfd", deny_third_party_labels=True)
    assert m.labels == {"feature.node.kubernetes.io/l": "worker", "feature.node.kubernetes.io/w": "1"}
    m = merge_node_features(objs, node_name="node-1", master_namespace="nfd", auto_prefix=False)
    assert m.labels == {"l": "vendor-b", "w": "1"}
    if form is raw:  # the inputs are not modified
        assert objs[1]["spec"]["features"]["attributes"]["x.y"]["elements"] == {"k": "worker"}


def test_missing_or_null_namespace_is_the_empty_namespace():
    """A file's objects often have no namespace: null and missing both count as "" (own namespace
    when the master namespace is "", so not third party)."""
    a = raw("n1", None, "n1", labels={"a": "1"})
    b = raw("n1", "", "n1", labels={"b": "1"})
    del b["metadata"]["namespace"]
    m = merge_node_features([a, b], node_name="n1", master_namespace="", deny_third_party_labels=True)
    assert m.sources == ["/n1", "/n1"]
    assert m.labels == {"feature.node.kubernetes.io/a": "1", "feature.node.kubernetes.io/b": "1"}


def test_nfd_rules_dryrun_does_not_import_the_master(tmp_path):
    """``nfd rules`` merges with the library function, without loading nfd-master's modules."""
    rules = tmp_path / "r.yaml"
    rules.write_text("apiVersion: nfd.k8s-sigs.io/v1alpha1\nkind: NodeFeatureRule\nmetadata: {name: r}\n"
                     "spec:\n  rules:\n  - name: r\n    labels: {x: \"1\"}\n")
    feats = tmp_path / "nf.yaml"
    feats.write_text("apiVersion: nfd.k8s-sigs.io/v1alpha1\nkind: NodeFeature\nmetadata: {name: n1}\n"
                     "spec: {labels: {w: \"1\"}}\n")
    code = ("import sys\nfrom nfd.cli.rules import main\nrc = main(['dryrun', '--nodefeature', sys.argv[2], '-f', sys.argv[1]])\n"
            "print(sorted(m for m in sys.modules if m.startswith('nfd.master')))\nsys.exit(rc)")
    out = subprocess.run([sys.executable, "-c", code, str(rules), str(feats)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "feature.node.kubernetes.io/w" in out.stdout and "feature.node.kubernetes.io/x" in out.stdout
    assert out.stdout.rstrip().endswith("[]")


def test_a_spec_with_bad_features_and_labels_names_the_features_in_both_readers():
    """One spec parser: the merge (master) and NodeFeature.from_json (nfd rules) name the same field."""
    from nfd.api.errors import ValidationError
    from nfd.api.nodefeature import NodeFeature

    spec = {"features": "x", "labels": ["a"]}
    m = merge_node_features([raw("n1", "nfd", "n1", spec=spec)], node_name="n1", master_namespace="nfd")
    assert m.errors == ["NodeFeature nfd/n1: spec.features: must be an object; object skipped"]
    with pytest.raises(ValidationError) as ei:
        NodeFeature.from_json({"kind": "NodeFeature", "metadata": {"name": "n1"}, "spec": spec})
    assert ei.value.path == "spec.features"
