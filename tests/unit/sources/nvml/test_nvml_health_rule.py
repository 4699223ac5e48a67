"""The shipped NodeFeatureRule deploy/nodefeaturerule/nvidia-gpu-health, through the rule engine
and the master's policy: healthy/unhealthy GPU counts as labels, one NoSchedule taint with the
most severe reason while a GPU is unhealthy, none when the evidence is gone (issue 47)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from nfd.hostpaths import HostPaths
from nfd.nodestate.outputpolicy import PolicyConfig, apply_policy
from nfd.rules.engine import compile_nodefeaturerule, iter_process_rule_sets, run_to_end
from nfd.sources.base import DiscoveryContext
from nfd.sources.nvml.source import NvmlSource
from tests.unit.sources.nvml.nvml_help import make_fake

ROOT = Path(__file__).resolve().parents[4]
RULE = ROOT / "deploy" / "nodefeaturerule" / "nvidia-gpu-health" / "nvidia-gpu-health.yaml"


def node(fake: Any, src: NvmlSource, cfg: dict[str, Any], *, taints: bool = True) -> tuple[dict[str, str], list[Any]]:
    features = src.discover(DiscoveryContext(paths=HostPaths.detect()), cfg)
    rules = [compile_nodefeaturerule(yaml.safe_load(RULE.read_text()))]
    res = run_to_end(iter_process_rule_sets(rules, features, node_name="n1"))
    assert res.errors == []
    pol = apply_policy(nodefeature_labels={}, rule_output=res.master_output, features=res.features,
                       config=PolicyConfig(enable_taints=taints))
    assert pol.rejected == [] or not taints
    return pol.labels, pol.taints


def health_source(profile: str) -> tuple[Any, NvmlSource, dict[str, Any]]:
    fake = make_fake(profile)
    src = NvmlSource(backend=fake, host=fake.host)
    return fake, src, src.parse_config({"health": {"xidEvents": False}}, path="sources.nvml")


def test_taint_with_the_reason_while_unhealthy_and_gone_with_the_evidence() -> None:
    fake, src, cfg = health_source("h100x8-unhealthy")
    labels, taints = node(fake, src, cfg)
    assert labels == {"nvidia.com/gpu.healthy.count": "3", "nvidia.com/gpu.unhealthy.count": "5"}
    assert taints == [{"key": "nvidia.com/gpu.unhealthy", "value": "row-remap-failed", "effect": "NoSchedule"}]
    fake.set_health(4, remappedRows={})  # GPU 4 replaced/reset: the next reason is the taint's value
    assert node(fake, src, cfg)[1][0]["value"] == "ecc-uncorrected"
    for i in (1, 2, 3, 6):
        fake.set_health(i, eccUncorrectedVolatile=0, retiredPagesPending=False, remappedRows={}, nvlinks=[1] * 18)
    labels, taints = node(fake, src, cfg)
    assert labels == {"nvidia.com/gpu.healthy.count": "8", "nvidia.com/gpu.unhealthy.count": "0"}
    assert taints == []


def test_healthy_node_and_no_taint_without_enable_taints() -> None:
    fake, src, cfg = health_source("h100x8")
    assert node(fake, src, cfg) == ({"nvidia.com/gpu.healthy.count": "8", "nvidia.com/gpu.unhealthy.count": "0"}, [])
    fake, src, cfg = health_source("h100x8-unhealthy")
    assert node(fake, src, cfg, taints=False)[1] == []


def test_every_reason_has_its_taint_rule() -> None:
    from nfd.sources.nvml.health import UNHEALTHY_REASONS

    doc = yaml.safe_load(RULE.read_text())
    values = [t["value"] for r in doc["spec"]["rules"] for t in r.get("taints") or []]
    assert values == list(UNHEALTHY_REASONS)


def test_shipped_as_the_other_deploy_pieces_name_it() -> None:
    chart = ROOT / "deploy" / "helm" / "node-feature-discovery"
    assert (chart / "files" / RULE.name).read_bytes() == RULE.read_bytes()
    tmpl = (chart / "templates" / "nodefeaturerules.yaml").read_text()
    assert f'.Files.Get "files/{RULE.name}"' in tmpl and "nvidiaGpuHealth" in tmpl
    values = yaml.safe_load((chart / "values.yaml").read_text())
    assert values["nodeFeatureRules"]["nvidiaGpuHealth"] is False
    comp_dir = ROOT / "deploy" / "components" / "nvidia-gpu-health"
    comp = yaml.safe_load((comp_dir / "kustomization.yaml").read_text())
    (res,) = comp["resources"]
    assert comp["kind"] == "Component" and (comp_dir / res).resolve() == RULE.parent
    assert yaml.safe_load((RULE.parent / "kustomization.yaml").read_text())["resources"] == [RULE.name]
