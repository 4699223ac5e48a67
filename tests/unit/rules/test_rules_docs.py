"""docs/rules.md's quick start and operator table work as written (the docs are the manual)."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from nfd.rules.engine import compile_rule
from nfd.rules.lint import rule_set_problems

DOC = Path(__file__).resolve().parents[3] / "docs" / "rules.md"


def _quick_start() -> str:
    text = DOC.read_text(encoding="utf-8")
    part = text[text.index("## Quick start"): text.index("## Operators")]
    return part


def _blocks(part: str, lang: str) -> list[str]:
    return [textwrap.dedent(b) for b in re.findall(rf"```{lang}\n(.*?)```", part, flags=re.S)]


def test_quick_start_rule_validates_and_dry_runs(tmp_path: Path) -> None:
    part = _quick_start()
    [rule] = _blocks(part, "yaml")
    (tmp_path / "rule.yaml").write_text(rule)
    nf = {"flags": {"cpu.cpuid": {"elements": {"AVX2": {}}}},
          "attributes": {"kernel.version": {"elements": {"major": "6"}},
                         "cpu.model": {"elements": {"vendor_id": "Intel", "family": "6"}}}}
    (tmp_path / "nf.yaml").write_text(yaml.safe_dump(nf))
    cmds = [line.strip() for b in _blocks(part, "sh") for line in b.splitlines() if line.strip()]
    assert cmds[0] == "nfd export features -o yaml > nf.yaml"
    run = {"nfd rules validate -f rule.yaml": 0, "nfd rules dryrun -f rule.yaml --nodefeature nf.yaml": 0}
    for cmd, want in run.items():
        assert cmd in cmds
        argv = [sys.executable, "-m", "nfd.cli", *cmd.split()[1:]]
        out = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert out.returncode == want, (cmd, out.stdout, out.stderr)
        if "dryrun" in cmd:
            labels = out.stdout.split("Labels:\n")[1].split("Annotations:")[0].split()
            assert labels == ["example.com/accelerator=true", "example.com/avx2-kernel=true",
                              "example.com/cpu-vendor_id=Intel"]
            assert "example.com/accelerators=1" in out.stdout
    # the kubectl steps parse with the flags shown (no cluster here)
    from nfd.cli.kubectl_nfd import build_parser

    test_cmd = next(c for c in cmds if c.startswith("kubectl nfd test"))
    args = build_parser().parse_args(test_cmd.split()[2:])
    assert args.all_nodes and args.show_nodes and args.rules == "rule.yaml"
    assert "kubectl apply -f rule.yaml" in cmds


def _operator_rows() -> list[tuple[str, str]]:
    text = DOC.read_text(encoding="utf-8")
    table = text[text.index("## Operators"):].split("\n\n")[2]
    rows = []
    for line in table.splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows.append((cells[0], cells[2].strip("`")))
    return rows


def test_operator_table_lists_every_operator() -> None:
    from nfd.rules.expression import VALID_OPS

    named = {op for first, _ in _operator_rows() for op in re.findall(r"`(\w+)`", first)}
    assert named == VALID_OPS - {""}


@pytest.mark.parametrize("op, example", _operator_rows())
def test_each_operator_example_is_a_valid_expression(op: str, example: str) -> None:
    exprs = yaml.safe_load("{" + example + "}")
    rule = compile_rule({"name": "x", "labels": {"example.com/x": "y"},
                         "matchFeatures": [{"feature": "some.feature", "matchExpressions": exprs}]})
    from nfd.rules.engine import CompiledRuleSet

    assert rule_set_problems(CompiledRuleSet(name="s", rules=[rule])) == [], example
