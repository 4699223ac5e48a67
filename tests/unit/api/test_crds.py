"""crds/: loader, generator in sync, and the schema details upstream compatibility rests on."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest
import yaml

from nfd.api.crds import crd_by_kind, crds_dir, load_crds, version_schema

UPSTREAM_OPS = ["In", "NotIn", "InRegexp", "Exists", "DoesNotExist", "Gt", "Ge", "Lt", "Le",
                "GtLt", "GeLe", "IsTrue", "IsFalse"]


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location("crds_generate", crds_dir() / "generate.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_load_crds_names_and_scopes() -> None:
    got = {c["metadata"]["name"]: (c["spec"]["scope"], [v["name"] for v in c["spec"]["versions"]])
           for c in load_crds()}
    assert got == {
        "nodefeatures.nfd.k8s-sigs.io": ("Namespaced", ["v1alpha1"]),
        "nodefeaturerules.nfd.k8s-sigs.io": ("Cluster", ["v1alpha1"]),
        "nodefeaturegroups.nfd.k8s-sigs.io": ("Namespaced", ["v1alpha1"]),
        "noderesourcetopologies.topology.node.k8s.io": ("Cluster", ["v1alpha1", "v1alpha2"]),
    }


def test_nrt_storage_version_is_v1alpha2() -> None:
    versions = {v["name"]: (v["served"], v["storage"])
                for v in crd_by_kind("NodeResourceTopology")["spec"]["versions"]}
    assert versions == {"v1alpha1": (True, False), "v1alpha2": (True, True)}


def test_generated_yaml_in_sync() -> None:
    gen = _generator()
    for name in gen.FILES:
        assert (crds_dir() / name).read_text() == gen.render(name), f"crds/{name} is stale: run crds/generate.py"
        chart, text = gen.chart_copy(name)  # a real file: a packaged or copied chart keeps it
        assert not chart.is_symlink() and chart.read_text() == text, f"{chart} is stale"
        copy = gen.KUSTOMIZE_COPIES.get(name)  # the kustomize bases' copies
        assert copy is None or copy.read_text() == gen.render(name), f"{copy} is stale"


def test_kustomization_lists_every_manifest() -> None:
    k = yaml.safe_load((crds_dir() / "kustomization.yaml").read_text())
    files = sorted(p.name for p in crds_dir().glob("*.yaml") if p.name != "kustomization.yaml")
    assert sorted(k["resources"]) == files


def _match_terms(rule_schema: dict[str, Any]) -> list[dict[str, Any]]:
    props = rule_schema["properties"]
    direct = props["matchFeatures"]["items"]
    any_elem = props["matchAny"]["items"]["properties"]["matchFeatures"]["items"]
    return [direct, any_elem]


@pytest.mark.parametrize(("kind", "path"), [("NodeFeatureRule", "rules"),
                                            ("NodeFeatureGroup", "featureGroupRules")])
def test_match_expression_schema(kind: str, path: str) -> None:
    rule = version_schema(kind, "v1alpha1")["properties"]["spec"]["properties"][path]["items"]
    assert rule["required"] == ["name"]
    cel = rule["properties"]["matchCEL"]
    assert (cel["type"], cel["items"]) == ("array", {"type": "string"})
    for term in _match_terms(rule):
        assert term["required"] == ["feature"]
        exprs = [term["properties"]["matchExpressions"]["additionalProperties"], term["properties"]["matchName"]]
        for expr in exprs:
            assert expr["required"] == ["op"]
            assert expr["properties"]["op"]["enum"] == UPSTREAM_OPS
            assert set(expr["properties"]) == {"op", "value", "type"}


def test_no_defaults_like_upstream() -> None:
    def walk(node: Any, where: str) -> None:
        if isinstance(node, dict):
            assert "default" not in node, where
            for k, v in node.items():
                walk(v, f"{where}.{k}")
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, f"{where}[{i}]")

    for crd in load_crds():
        walk(crd["spec"], crd["metadata"]["name"])


def test_schemas_are_structural() -> None:
    # Every schema node declares a type (or is an int-or-string), or the apiserver refuses it.
    def walk(node: dict[str, Any], where: str) -> None:
        assert "type" in node or node.get("x-kubernetes-int-or-string"), where
        for k, v in (node.get("properties") or {}).items():
            walk(v, f"{where}.{k}")
        for key in ("items", "additionalProperties"):
            if isinstance(node.get(key), dict):
                walk(node[key], f"{where}.{key}")

    for crd in load_crds():
        for v in crd["spec"]["versions"]:
            walk(v["schema"]["openAPIV3Schema"], f"{crd['metadata']['name']}/{v['name']}")


def test_rule_fields_match_upstream_plus_matchcel() -> None:
    rule = version_schema("NodeFeatureRule", "v1alpha1")["properties"]["spec"]["properties"]["rules"]["items"]
    assert set(rule["properties"]) == {
        "name", "labels", "labelsTemplate", "annotations", "vars", "varsTemplate", "taints",
        "extendedResources", "matchFeatures", "matchAny", "matchCEL"}
    taint = rule["properties"]["taints"]["items"]
    assert taint["required"] == ["effect", "key"]
    assert taint["properties"]["timeAdded"]["format"] == "date-time"


def test_nodefeature_requires_elements() -> None:
    features = version_schema("NodeFeature", "v1alpha1")["properties"]["spec"]["properties"]["features"]
    for kind in ("flags", "attributes", "instances"):
        assert features["properties"][kind]["additionalProperties"]["required"] == ["elements"]
    inst = features["properties"]["instances"]["additionalProperties"]["properties"]["elements"]["items"]
    assert inst["required"] == ["attributes"]


def test_nodefeaturegroup_status_subresource_and_map_list() -> None:
    crd = crd_by_kind("NodeFeatureGroup")
    v = crd["spec"]["versions"][0]
    assert v["subresources"] == {"status": {}}
    nodes = v["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]["nodes"]
    assert nodes["x-kubernetes-list-type"] == "map"
    assert nodes["x-kubernetes-list-map-keys"] == ["name"]


def test_load_crds_other_directory(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("kind: Kustomization\n---\n" + yaml.safe_dump(crd_by_kind("NodeFeature")))
    assert [c["spec"]["names"]["kind"] for c in load_crds(tmp_path)] == ["NodeFeature"]
    with pytest.raises(FileNotFoundError, match="nope"):
        load_crds(tmp_path / "nope")
    with pytest.raises(KeyError):
        crd_by_kind("Nope")
