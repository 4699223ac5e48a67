"""plan_node_update: upstream's patch algorithm, ownership via bookkeeping annotations."""

from __future__ import annotations

from typing import Any

from nfd.nodestate import bookkeeping as bk
from nfd.nodestate.desired import Desired
from nfd.nodestate.nodeplan import NodeState, plan_node_update
from tests.support.fakeapi import merge_patch

NS = "feature.node.kubernetes.io"


def apply_json_patch(obj: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    """A tiny RFC 6902 applier (objects only) so tests check the resulting node, not op lists."""
    import copy

    out = copy.deepcopy(obj)
    for op in ops:
        parts = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
        parent = out
        for p in parts[:-1]:
            parent = parent[p]
        last = parts[-1]
        if op["op"] == "test":
            assert parent.get(last) == op["value"], f"test failed on {op['path']}"
        elif op["op"] == "add":
            parent[last] = op["value"]
        elif op["op"] == "replace":
            assert last in parent, f"replace of missing {op['path']}"
            parent[last] = op["value"]
        elif op["op"] == "remove":
            assert last in parent, f"remove of missing {op['path']}"
            del parent[last]
    return out


def node_obj(labels=None, annotations=None, capacity=None, allocatable=None, taints=None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "n1", "resourceVersion": "7"}
    if labels is not None:
        meta["labels"] = labels
    if annotations is not None:
        meta["annotations"] = annotations
    obj: dict[str, Any] = {"metadata": meta, "spec": {}, "status": {}}
    if capacity is not None:
        obj["status"]["capacity"] = capacity
    if allocatable is not None:
        obj["status"]["allocatable"] = allocatable
    if taints is not None:
        obj["spec"]["taints"] = taints
    return obj


def run(obj: dict[str, Any], desired: Desired, **kw: Any) -> tuple[dict[str, Any], Any]:
    """Apply the plan like the master does; returns the new node and the plan."""
    plan = plan_node_update(NodeState.from_obj(obj), desired, **kw)
    new = apply_json_patch(obj, plan.status_ops)
    new = apply_json_patch(new, plan.metadata_ops)
    if plan.taints_patch:
        tp = plan.taints_patch
        assert not plan.metadata_ops  # folded into the guarded merge patch
        assert tp["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"]
        new = merge_patch(new, tp)
        new["metadata"].setdefault("annotations", {})
    return new, plan


def test_add_labels_and_bookkeeping_on_fresh_node():
    obj = node_obj(labels={"kubernetes.io/hostname": "n1"})
    new, plan = run(obj, Desired(labels={f"{NS}/cpu-x": "true", "vendor.io/y": "1"}))
    assert new["metadata"]["labels"] == {"kubernetes.io/hostname": "n1", f"{NS}/cpu-x": "true", "vendor.io/y": "1"}
    # upstream format: sorted, default ns stripped
    assert new["metadata"]["annotations"] == {bk.FEATURE_LABELS: "cpu-x,vendor.io/y"}
    assert sorted(plan.changes.labels_added) == [f"{NS}/cpu-x", "vendor.io/y"]
    # idempotent: the second pass writes nothing
    _, plan2 = run(new, Desired(labels={f"{NS}/cpu-x": "true", "vendor.io/y": "1"}))
    assert plan2.noop


def test_missing_label_map_is_created_guarded_by_resource_version():
    obj = node_obj()
    plan = plan_node_update(NodeState.from_obj(obj), Desired(labels={f"{NS}/a": "1"}))
    assert plan.metadata_ops[0] == {"op": "test", "path": "/metadata/resourceVersion", "value": "7"}
    assert {"op": "add", "path": "/metadata/labels", "value": {f"{NS}/a": "1"}} in plan.metadata_ops
    # only one guard even though both maps are created
    assert sum(1 for o in plan.metadata_ops if o["op"] == "test") == 1
    new = apply_json_patch(obj, plan.metadata_ops)
    assert new["metadata"]["annotations"] == {bk.FEATURE_LABELS: "a"}


def test_stale_owned_label_removed_unowned_kept():
    obj = node_obj(
        labels={f"{NS}/old": "true", f"{NS}/keep": "1", "admin/label": "x", f"{NS}/handmade": "y"},
        annotations={bk.FEATURE_LABELS: "keep,old"},
    )
    new, plan = run(obj, Desired(labels={f"{NS}/keep": "1"}))
    assert new["metadata"]["labels"] == {f"{NS}/keep": "1", "admin/label": "x", f"{NS}/handmade": "y"}
    assert new["metadata"]["annotations"][bk.FEATURE_LABELS] == "keep"
    assert plan.changes.labels_removed == [f"{NS}/old"]


def test_owned_label_already_gone_is_not_removed_again():
    obj = node_obj(labels={"a": "b"}, annotations={bk.FEATURE_LABELS: "gone"})
    new, plan = run(obj, Desired())
    assert not any(o["op"] == "remove" and o["path"].startswith("/metadata/labels") for o in plan.metadata_ops)
    assert bk.FEATURE_LABELS not in new["metadata"]["annotations"]


def test_skip_removal_keeps_and_still_tracks_old_items():
    obj = node_obj(
        labels={f"{NS}/old": "true"},
        annotations={bk.FEATURE_LABELS: "old", bk.FEATURE_ANNOTATIONS: "note", f"{NS}/note": "v"},
        capacity={f"{NS}/res": "2"},
        allocatable={f"{NS}/res": "2"},
    )
    obj["metadata"]["annotations"][bk.EXTENDED_RESOURCES] = "res"
    obj["metadata"]["annotations"][bk.TAINTS] = "example.com/t=v:NoSchedule"
    obj["spec"]["taints"] = [{"key": "example.com/t", "value": "v", "effect": "NoSchedule"}]
    new, plan = run(obj, Desired(labels={f"{NS}/new": "1"}), skip_removal=True)
    assert new["metadata"]["labels"] == {f"{NS}/old": "true", f"{NS}/new": "1"}
    anns = new["metadata"]["annotations"]
    # ownership of kept items survives, so a later normal pass can remove them
    assert anns[bk.FEATURE_LABELS] == "new,old"
    assert anns[bk.FEATURE_ANNOTATIONS] == "note"
    assert anns[bk.EXTENDED_RESOURCES] == "res"
    assert anns[bk.TAINTS] == "example.com/t=v:NoSchedule"
    assert new["status"]["capacity"] == {f"{NS}/res": "2"}
    assert new["spec"]["taints"] == obj["spec"]["taints"]
    assert not plan.changes.removed_anything()
    # then a normal pass removes them
    new2, plan2 = run(new, Desired(labels={f"{NS}/new": "1"}))
    assert new2["metadata"]["labels"] == {f"{NS}/new": "1"}
    assert new2["status"]["capacity"] == {}
    assert new2["spec"]["taints"] == []
    assert bk.TAINTS not in new2["metadata"]["annotations"]
    assert f"{NS}/note" not in new2["metadata"]["annotations"]


def test_allow_overwrite_true_takes_over_unowned_value():
    obj = node_obj(labels={f"{NS}/x": "admin"})
    new, plan = run(obj, Desired(labels={f"{NS}/x": "nfd"}), allow_overwrite=True)
    assert new["metadata"]["labels"][f"{NS}/x"] == "nfd"
    assert new["metadata"]["annotations"][bk.FEATURE_LABELS] == "x"


def test_allow_overwrite_false_leaves_unowned_but_updates_owned():
    obj = node_obj(
        labels={f"{NS}/admin": "admin", f"{NS}/mine": "old"},
        annotations={bk.FEATURE_LABELS: "mine"},
    )
    desired = Desired(labels={f"{NS}/admin": "nfd", f"{NS}/mine": "new"})
    new, plan = run(obj, desired, allow_overwrite=False)
    assert new["metadata"]["labels"] == {f"{NS}/admin": "admin", f"{NS}/mine": "new"}
    # not taken over, so never recorded and never removed later
    assert new["metadata"]["annotations"][bk.FEATURE_LABELS] == "mine"
    assert plan.changes.not_taken_over == [f"{NS}/admin"]
    new2, _ = run(new, Desired(), allow_overwrite=False)
    assert new2["metadata"]["labels"] == {f"{NS}/admin": "admin"}


def test_feature_annotations_tracked_and_removed():
    obj = node_obj(labels={"a": "b"}, annotations={"other": "x"})
    new, _ = run(obj, Desired(annotations={f"{NS}/note": "hello", "vendor.io/a": "1"}))
    anns = new["metadata"]["annotations"]
    assert anns[f"{NS}/note"] == "hello"
    assert anns[bk.FEATURE_ANNOTATIONS] == "note,vendor.io/a"
    new2, plan2 = run(new, Desired(annotations={"vendor.io/a": "1"}))
    assert f"{NS}/note" not in new2["metadata"]["annotations"]
    assert new2["metadata"]["annotations"]["other"] == "x"
    assert plan2.changes.annotations_removed == [f"{NS}/note"]


def test_legacy_version_annotations_removed_on_normal_pass_only():
    anns = {bk.MASTER_VERSION: "v0.1", bk.WORKER_VERSION: "v0.1"}
    obj = node_obj(labels={"a": "b"}, annotations=dict(anns))
    new, _ = run(obj, Desired())
    assert new["metadata"]["annotations"] == {}
    _, plan = run(obj, Desired(), skip_removal=True)
    assert plan.noop


def test_instance_prefixes_bookkeeping_but_not_taints():
    obj = node_obj(labels={"a": "b"})
    new, _ = run(
        obj,
        Desired(labels={f"{NS}/x": "1"}, taints=[bk.Taint("example.com/t", "", "NoExecute")]),
        instance="blue",
    )
    anns = new["metadata"]["annotations"]
    assert anns["blue.nfd.node.kubernetes.io/feature-labels"] == "x"
    assert anns[bk.TAINTS] == "example.com/t:NoExecute"


def test_extended_resources_add_replace_remove():
    obj = node_obj(labels={"a": "b"}, capacity={"cpu": "4"}, allocatable={"cpu": "4"})
    new, plan = run(obj, Desired(extended_resources={f"{NS}/gpu": "2", "vendor.io/x": "1k"}))
    assert new["status"]["capacity"] == {"cpu": "4", f"{NS}/gpu": "2", "vendor.io/x": "1k"}
    assert new["status"]["allocatable"] == {"cpu": "4", f"{NS}/gpu": "2", "vendor.io/x": "1k"}
    assert new["metadata"]["annotations"][bk.EXTENDED_RESOURCES] == "gpu,vendor.io/x"
    # the API server canonicalises; an equal quantity is not re-patched
    new["status"]["capacity"]["vendor.io/x"] = "1000"
    _, plan = run(new, Desired(extended_resources={f"{NS}/gpu": "2", "vendor.io/x": "1k"}))
    assert plan.noop
    new2, plan = run(new, Desired(extended_resources={f"{NS}/gpu": "3"}))
    assert new2["status"]["capacity"] == {"cpu": "4", f"{NS}/gpu": "3"}
    assert new2["status"]["allocatable"] == {"cpu": "4", f"{NS}/gpu": "3"}
    assert sorted(plan.changes.resources_removed) == ["vendor.io/x"]


def test_extended_resources_on_node_without_status_maps():
    obj = node_obj(labels={"a": "b"})
    new, plan = run(obj, Desired(extended_resources={f"{NS}/gpu": "2"}))
    assert plan.status_ops[0]["op"] == "test"
    assert new["status"]["capacity"] == {f"{NS}/gpu": "2"}
    assert new["status"]["allocatable"] == {f"{NS}/gpu": "2"}


def test_unowned_extended_resource_not_removed():
    obj = node_obj(labels={"a": "b"}, capacity={"nvidia.com/gpu": "8"}, allocatable={"nvidia.com/gpu": "8"})
    _, plan = run(obj, Desired())
    assert plan.status_ops == []


def test_taints_added_updated_removed_with_annotation_in_one_patch():
    admin = {"key": "admin.io/t", "effect": "NoSchedule"}
    obj = node_obj(labels={"a": "b"}, taints=[admin])
    t1 = bk.Taint("example.com/a", "1", "NoSchedule")
    t2 = bk.Taint("example.com/b", "", "PreferNoSchedule")
    new, plan = run(obj, Desired(taints=[t1, t2]))
    assert new["spec"]["taints"] == [admin, t1.to_json(), t2.to_json()]
    # rule order, not sorted
    assert new["metadata"]["annotations"][bk.TAINTS] == "example.com/a=1:NoSchedule,example.com/b:PreferNoSchedule"
    assert plan.taints_patch is not None
    new["metadata"]["resourceVersion"] = "8"
    # value change replaces in place, removed taint goes, admin's stays
    t1b = bk.Taint("example.com/a", "2", "NoSchedule")
    new2, plan2 = run(new, Desired(taints=[t1b]))
    assert new2["spec"]["taints"] == [admin, t1b.to_json()]
    assert new2["metadata"]["annotations"][bk.TAINTS] == "example.com/a=2:NoSchedule"
    assert plan2.changes.taints_removed == ["example.com/b:PreferNoSchedule"]
    new2["metadata"]["resourceVersion"] = "9"
    new3, _ = run(new2, Desired())
    assert new3["spec"]["taints"] == [admin]
    assert bk.TAINTS not in new3["metadata"]["annotations"]


def test_taints_annotation_written_by_upstream_is_read():
    # upstream writes the annotation in a separate patch; a node where only it is missing gets it
    t = bk.Taint("example.com/a", "", "NoExecute")
    obj = node_obj(labels={"a": "b"}, taints=[t.to_json()])
    _, plan = run(obj, Desired(taints=[t]))
    assert plan.taints_patch is None
    assert {"op": "add", "path": "/metadata/annotations", "value": {bk.TAINTS: "example.com/a:NoExecute"}} in plan.metadata_ops


def test_label_keys_are_json_pointer_escaped():
    obj = node_obj(labels={"a": "b"})
    plan = plan_node_update(NodeState.from_obj(obj), Desired(labels={"vendor.io/x": "1"}))
    assert {"op": "add", "path": "/metadata/labels/vendor.io~1x", "value": "1"} in plan.metadata_ops


def test_plan_ops_as_one_strategic_merge_body() -> None:
    from nfd.nodestate.nodeplan import ops_to_strategic

    ops = [{"op": "test", "path": "/metadata/resourceVersion", "value": "5"},
           {"op": "add", "path": "/metadata/labels", "value": {"a/b": "1"}},
           {"op": "remove", "path": "/metadata/annotations/x~1y"},
           {"op": "replace", "path": "/metadata/annotations/z", "value": "2"},
           {"op": "add", "path": "/status/capacity/r~1s", "value": "3"}]
    assert ops_to_strategic(ops) == {
        "metadata": {"labels": {"a/b": "1"}, "annotations": {"x/y": None, "z": "2"}},
        "status": {"capacity": {"r/s": "3"}},
    }
