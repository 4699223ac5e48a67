from __future__ import annotations

import pytest

from nfd.nodestate import bookkeeping as bk


def test_encode_names_sorted_and_default_ns_stripped():
    names = {"feature.node.kubernetes.io/z", "vendor.io/a", "feature.node.kubernetes.io/b"}
    assert bk.encode_names(names) == "b,vendor.io/a,z"


def test_decode_names_restores_default_ns():
    assert bk.decode_names("b,vendor.io/a") == ["feature.node.kubernetes.io/b", "vendor.io/a"]
    assert bk.decode_names("") == []
    assert bk.decode_names(None) == []


def test_taint_strings_round_trip():
    ts = [bk.Taint("a.io/x", "v", "NoSchedule"), bk.Taint("a.io/y", "", "NoExecute")]
    s = bk.encode_taints(ts)
    assert s == "a.io/x=v:NoSchedule,a.io/y:NoExecute"
    assert bk.decode_taints(s) == ts


@pytest.mark.parametrize("bad", ["a.io/x", "a.io/x=v:Sometimes", ":NoSchedule"])
def test_bad_taint_spec_rejected(bad):
    with pytest.raises(bk.TaintSpecError):
        bk.decode_taints(bad)


def test_instance_annotation():
    assert bk.instance_annotation(bk.FEATURE_LABELS, "") == "nfd.node.kubernetes.io/feature-labels"
    assert bk.instance_annotation(bk.FEATURE_LABELS, "x") == "x.nfd.node.kubernetes.io/feature-labels"
