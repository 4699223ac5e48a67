"""``nfd rules validate|dryrun`` end to end, on the customization guide's examples."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from nfd.cli.rules import main

NODEFEATURE = """
apiVersion: nfd.k8s-sigs.io/v1alpha1
kind: NodeFeature
metadata:
  name: node-1
  namespace: node-feature-discovery
  labels: {nfd.node.kubernetes.io/node-name: node-1}
spec:
  labels:
    from-nodefeature: "yes"
    my-sample-feature: overridden-by-rule
  features:
    flags:
      cpu.cpuid: {elements: {AVX512F: {}, AESNI: {}, AVX: {}, ADX: {}}}
      kernel.loadedmodule: {elements: {dummy: {}, e1000: {}, my-driver-module: {}}}
    attributes:
      kernel.config: {elements: {X86: "y", LSM: "apparmor"}}
      kernel.version: {elements: {major: "5", minor: "15", full: "5.15.0-91-generic"}}
      system.osrelease: {elements: {ID: ubuntu, NAME: Ubuntu, VERSION_ID.major: "22"}}
    instances:
      pci.device:
        elements:
          - attributes: {vendor: "8086", class: "0200", device: "1572"}
          - attributes: {vendor: "0fff", class: "0200", device: "1234"}
          - attributes: {vendor: "0fff", class: "0300", device: "abcd"}
"""


def nfr(name: str, rules: str) -> str:
    return (
        f"apiVersion: nfd.k8s-sigs.io/v1alpha1\nkind: NodeFeatureRule\nmetadata:\n  name: {name}\nspec:\n  rules:\n"
        + textwrap.indent(textwrap.dedent(rules).strip("\n"), "    ")
        + "\n"
    )


def dryrun(
    tmp_path: Path, capsys: Any, rules: str, *extra: str, raw: bool = False, full: bool = False
) -> tuple[int, dict[str, Any]]:
    rp = tmp_path / "rules.yaml"
    rp.write_text(rules)
    np_ = tmp_path / "nf.yaml"
    np_.write_text(NODEFEATURE)
    args = ["dryrun", "-f", str(rp), "--nodefeature", str(np_), "-o", "json", *extra]
    if raw:
        args.append("--raw")
    rc = main(args)
    out = json.loads(capsys.readouterr().out)
    if not full:  # what nfd-master writes, and the errors; the rest is checked by its own tests
        out = {k: v for k, v in out.items() if k in ("labels", "annotations", "vars", "taints",
                                                      "extendedResources", "errors")}
    return rc, out


FNK = "feature.node.kubernetes.io/"


def test_sample_rule_object(tmp_path: Path, capsys: Any) -> None:
    rules = nfr(
        "my-sample-rule-object",
        """
        - name: "my sample rule"
          labels:
            "feature.node.kubernetes.io/my-sample-feature": "true"
          matchFeatures:
            - feature: kernel.loadedmodule
              matchExpressions:
                dummy: {op: Exists}
            - feature: kernel.config
              matchExpressions:
                X86: {op: In, value: ["y"]}
        """,
    )
    rc, out = dryrun(tmp_path, capsys, rules)
    assert rc == 0
    assert out == {
        "labels": {FNK + "from-nodefeature": "yes", FNK + "my-sample-feature": "true"},
        "annotations": {},
        "vars": {},
        "taints": [],
        "extendedResources": {},
        "errors": [],
    }
    rc, out = dryrun(tmp_path, capsys, rules, raw=True)
    assert out["labels"] == {FNK + "my-sample-feature": "true"}


def test_feature_rule_reference_example(tmp_path: Path, capsys: Any) -> None:
    rules = nfr(
        "ref",
        """
        - name: "my feature rule"
          labels:
            "feature.node.kubernetes.io/my-special-feature": "my-value"
          matchFeatures:
            - feature: cpu.cpuid
              matchExpressions:
                AVX512F: {op: Exists}
            - feature: kernel.version
              matchExpressions:
                major: {op: In, value: ["5"]}
                minor: {op: Gt, value: ["1"]}
            - feature: pci.device
              matchExpressions:
                vendor: {op: In, value: ["8086"]}
                class: {op: In, value: ["0200"]}
        """,
    )
    rc, out = dryrun(tmp_path, capsys, rules, raw=True)
    assert (rc, out["labels"]) == (0, {FNK + "my-special-feature": "my-value"})


def test_dynamic_label_values_annotations_and_extended_resources(tmp_path: Path, capsys: Any) -> None:
    rules = nfr(
        "dyn",
        """
        - name: "my dynamic label value rule"
          labels:
            feature.node.kubernetes.io/linux-lsm-enabled: "@kernel.config.LSM"
            feature.node.kubernetes.io/custom-label: "customlabel"
        - name: "annotation-example"
          annotations:
            feature.node.kubernetes.io/defaul-ns-annotation: "foo"
            custom.vendor.io/feature: "baz"
          matchFeatures:
            - feature: kernel.version
              matchExpressions:
                major: {op: Exists}
        - name: "my extended resource rule"
          extendedResources:
            vendor.io/dynamic: "@kernel.version.major"
            vendor.io/static: "123"
          matchFeatures:
            - feature: kernel.version
              matchExpressions:
                major: {op: Exists}
        """,
    )
    rc, out = dryrun(tmp_path, capsys, rules)
    assert rc == 0
    assert out["labels"][FNK + "linux-lsm-enabled"] == "apparmor"
    assert out["labels"][FNK + "custom-label"] == "customlabel"
    assert out["annotations"] == {FNK + "defaul-ns-annotation": "foo", "custom.vendor.io/feature": "baz"}
    assert out["extendedResources"] == {"vendor.io/dynamic": "5", "vendor.io/static": "123"}
    _, raw = dryrun(tmp_path, capsys, rules, raw=True)
    assert raw["labels"][FNK + "linux-lsm-enabled"] == "@kernel.config.LSM"
    assert raw["extendedResources"]["vendor.io/dynamic"] == "@kernel.version.major"


TAINTS = nfr(
    "taints",
    """
    - name: "my sample taint rule"
      taints:
        - effect: PreferNoSchedule
          key: "feature.node.kubernetes.io/special-node"
          value: "true"
        - effect: NoExecute
          key: "feature.node.kubernetes.io/dedicated-node"
      matchFeatures:
        - feature: kernel.loadedmodule
          matchExpressions:
            dummy: {op: Exists}
        - feature: kernel.config
          matchExpressions:
            X86: {op: In, value: ["y"]}
    """,
)


def test_taints_need_enable_taints(tmp_path: Path, capsys: Any) -> None:
    want = [
        {"key": "feature.node.kubernetes.io/special-node", "value": "true", "effect": "PreferNoSchedule"},
        {"key": "feature.node.kubernetes.io/dedicated-node", "value": "", "effect": "NoExecute"},
    ]
    assert dryrun(tmp_path, capsys, TAINTS)[1]["taints"] == []
    assert dryrun(tmp_path, capsys, TAINTS, "--enable-taints")[1]["taints"] == want
    assert dryrun(tmp_path, capsys, TAINTS, raw=True)[1]["taints"] == want


def test_match_any(tmp_path: Path, capsys: Any) -> None:
    body = """
    - name: any
      labels: {any: "true"}
      matchAny:
        - matchFeatures:
            - feature: kernel.loadedmodule
              matchExpressions:
                kmod-1: {op: Exists}
            - feature: pci.device
              matchExpressions:
                vendor: {op: In, value: ["0eee"]}
                class: {op: In, value: ["0200"]}
        - matchFeatures:
            - feature: kernel.loadedmodule
              matchExpressions:
                KMOD: {op: Exists}
            - feature: pci.device
              matchExpressions:
                vendor: {op: In, value: ["0fff"]}
                class: {op: In, value: ["0200"]}
    """
    assert dryrun(tmp_path, capsys, nfr("a", body.replace("KMOD", "kmod-2")), raw=True)[1]["labels"] == {}
    assert dryrun(tmp_path, capsys, nfr("a", body.replace("KMOD", "e1000")), raw=True)[1]["labels"] == {
        "any": "true"
    }


def test_templates_from_the_guide(tmp_path: Path, capsys: Any) -> None:
    rules = nfr(
        "tpl",
        """
        - name: pci-template
          labelsTemplate: |
            {{ range .pci.device }}vendor-{{ .class }}-{{ .device }}.present=true
            {{ end }}
          matchFeatures:
            - feature: pci.device
              matchExpressions:
                class: {op: InRegexp, value: ["^02"]}
                vendor: {op: In, value: ["0fff"]}
        - name: osrelease-as-written
          labelsTemplate: |
            {{ range .system.osRelease }}system-{{ .Name }}={{ .Value }}
            {{ end }}
          matchFeatures:
            - feature: system.osRelease
              matchExpressions:
                ID: {op: Exists}
                VERSION_ID.major: {op: Exists}
        """,
    )
    rc, out = dryrun(tmp_path, capsys, rules, raw=True)
    assert rc == 0, out["errors"]
    assert out["labels"] == {
        "vendor-0200-1234.present": "true",
        "system-ID": "ubuntu",
        "system-VERSION_ID.major": "22",
    }


def _sprig_has(*names: str) -> bool:
    from nfd.lang.gotemplate import TemplateError, parse

    try:
        for n in names:
            parse("{{ " + n + " }}")
    except TemplateError as e:
        return "not defined" not in str(e)
    return True


@pytest.mark.skipif(
    not _sprig_has("first", "trim", "substr"),
    reason="Sprig first/trim/substr not in nfd.lang.gotemplate yet",
)
def test_sprig_template_from_the_guide(tmp_path: Path, capsys: Any) -> None:
    rules = nfr(
        "tpl",
        """
        - name: count-template
          labelsTemplate: |
            num-intel-network-controllers={{ .pci.device | len }}
            first-intel-network-controllers={{ (.pci.device | first).class | trim | substr 0 63 }}
          matchFeatures:
            - feature: pci.device
              matchExpressions:
                vendor: {op: In, value: ["8086"]}
                class: {op: In, value: ["0200"]}
        """,
    )
    rc, out = dryrun(tmp_path, capsys, rules, raw=True)
    assert rc == 0, out["errors"]
    assert out["labels"] == {"num-intel-network-controllers": "1", "first-intel-network-controllers": "0200"}


def test_guide_mistakes_are_rule_errors_not_crashes(tmp_path: Path, capsys: Any) -> None:
    rules = nfr(
        "mistakes",
        """
        - name: list-instead-of-expression
          labels: {x: "1"}
          matchFeatures:
            - feature: pci.device
              matchExpressions:
                vendor: ["0fff"]
        - name: lowercase-template-key
          labelsTemplate: |
            {{ range .system.osrelease }}system-{{ .Name }}={{ .Value }}
            {{ end }}
          matchFeatures:
            - feature: system.osRelease
              matchExpressions:
                ID: {op: Exists}
        - name: values-typo
          labels: {typo: "1"}
          matchFeatures:
            - feature: system.osrelease
              matchExpressions:
                NAME: {op: InRegexp, values: ["^openSUSE"]}
        - name: shorthand-terms
          labels: {short: "1"}
          matchFeatures:
            - pci.device:
                vendor: "0fff"
        - name: still-runs
          labels: {ok: "1"}
        """,
    )
    rc, out = dryrun(tmp_path, capsys, rules, raw=True)
    assert rc == 1
    # the unknown fields first (kubectl apply refuses them: values, the shorthand's feature key),
    # then the rules that fail on the node
    assert [e["rule"] for e in out["errors"]] == [
        "values-typo",
        "shorthand-terms",
        "list-instead-of-expression",
        "lowercase-template-key",
        "values-typo",
    ]
    assert out["errors"][0]["message"].endswith(
        "spec.rules[2].matchFeatures[0].matchExpressions.NAME.values: unknown field; did you mean value?")
    assert "spec.rules[0].matchFeatures[0].matchExpressions.vendor" in out["errors"][2]["message"]
    assert out["labels"] == {"ok": "1"}


def test_backreferences_across_objects_in_name_order(tmp_path: Path, capsys: Any) -> None:
    later = nfr(
        "b-high-level",
        """
        - name: "my high level feature rule"
          labels:
            high-level-feature: "true"
          matchFeatures:
            - feature: rule.matched
              matchExpressions:
                kernel-feature: {op: IsTrue}
                nolabel-feature: {op: IsTrue}
        """,
    )
    earlier = nfr(
        "a-base",
        """
        - name: "my kernel label rule"
          labels:
            kernel-feature: "true"
          matchFeatures:
            - feature: kernel.version
              matchExpressions:
                major: {op: Gt, value: ["4"]}
        - name: "my var rule"
          vars:
            nolabel-feature: "true"
          matchFeatures:
            - feature: cpu.cpuid
              matchExpressions:
                AVX512F: {op: Exists}
            - feature: pci.device
              matchExpressions:
                vendor: {op: In, value: ["0fff"]}
                device: {op: In, value: ["1234", "1235"]}
        """,
    )
    # the later object comes first in the file; objects still run sorted by name
    rc, out = dryrun(tmp_path, capsys, later + "---\n" + earlier)
    assert rc == 0
    assert out["labels"][FNK + "high-level-feature"] == "true"
    assert out["labels"][FNK + "kernel-feature"] == "true"
    assert out["vars"] == {"nolabel-feature": "true"}
    assert FNK + "nolabel-feature" not in out["labels"]


def test_text_output_explains_rules(tmp_path: Path, capsys: Any) -> None:
    rp = tmp_path / "r.yaml"
    rp.write_text(
        nfr(
            "t",
            """
            - name: yes-rule
              labels: {a: "1", "kubernetes.io/bad": "x"}
            - name: no-rule
              labels: {b: "1"}
              matchFeatures:
                - feature: cpu.cpuid
                  matchExpressions: {SSE9: {op: Exists}}
            - name: err-rule
              matchFeatures:
                - feature: cpu.cpuid
                  matchExpressions: {AVX: {op: Equals}}
            """,
        )
    )
    np_ = tmp_path / "nf.yaml"
    np_.write_text(NODEFEATURE)
    rc = main(["dryrun", "-f", str(rp), "--nodefeature", str(np_)])
    text = capsys.readouterr().out
    assert rc == 1
    assert "feature.node.kubernetes.io/a=1" in text
    assert "t/yes-rule: matched" in text
    assert 't/no-rule: not matched: matchFeatures[0] (cpu.cpuid): expression "SSE9"' in text
    assert (
        't/err-rule: ERROR: spec.rules[2].matchFeatures[0].matchExpressions.AVX.op: unknown operator "Equals"'
        in text
    )
    assert "label kubernetes.io/bad" in text


def test_policy_flags(tmp_path: Path, capsys: Any) -> None:
    rules = nfr("p", '- name: r\n  labels: {"vendor.io/x": "1", "other.io/y": "2", "zz": "3"}')
    _, out = dryrun(tmp_path, capsys, rules, "--deny-label-ns", "*.io", "--extra-label-ns", "vendor.io")
    assert "vendor.io/x" in out["labels"] and "other.io/y" not in out["labels"]
    _, out = dryrun(tmp_path, capsys, rules, "--label-whitelist", "^z")
    assert list(out["labels"]) == [FNK + "zz"]
    _, out = dryrun(tmp_path, capsys, rules, "--disable-auto-prefix")
    assert "zz" in out["labels"] and "from-nodefeature" in out["labels"]
    conf = tmp_path / "master.conf"
    conf.write_text("restrictions:\n  disableLabels: true\n")
    _, out = dryrun(tmp_path, capsys, rules, "--config", str(conf))
    assert out["labels"] == {}


# -- exit status 2 and validate ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("rules", "nf", "msg"),
    [
        ("a: [unclosed", NODEFEATURE, "not valid YAML"),
        ("kind: ConfigMap\n", NODEFEATURE, "not a NodeFeatureRule"),
        (nfr("x", "- name: a"), "kind: NodeFeatureRule\n", "no NodeFeature object"),
        (nfr("x", "- name: a"), "kind: Pod\n", "not a NodeFeature"),
        (nfr("x", "- name: a"), "", "no NodeFeature"),
        (nfr("x", "- name: a"), "kind: NodeFeature\nspec: {features: {flags: x}}\n", "spec.features.flags"),
    ],
)
def test_dryrun_file_errors_exit_2(tmp_path: Path, capsys: Any, rules: str, nf: str, msg: str) -> None:
    rp, np_ = tmp_path / "r.yaml", tmp_path / "nf.yaml"
    rp.write_text(rules)
    np_.write_text(nf)
    assert main(["dryrun", "-f", str(rp), "--nodefeature", str(np_)]) == 2
    err = capsys.readouterr().err
    assert msg in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_dryrun_missing_file(tmp_path: Path, capsys: Any) -> None:
    assert (
        main(["dryrun", "-f", str(tmp_path / "nope.yaml"), "--nodefeature", str(tmp_path / "nf.yaml")]) == 2
    )
    assert "cannot read" in capsys.readouterr().err


def test_malformed_spec_is_an_error_entry(tmp_path: Path, capsys: Any) -> None:
    rules = "kind: NodeFeatureRule\nmetadata: {name: broken}\nspec: {rules: {}}\n---\n" + nfr(
        "ok", "- name: fine\n  labels: {a: b}"
    )
    rc, out = dryrun(tmp_path, capsys, rules, raw=True)
    assert rc == 1 and out["labels"] == {"a": "b"} and out["errors"][0]["rule"] == "broken"


def test_validate(tmp_path: Path, capsys: Any) -> None:
    good = tmp_path / "good.yaml"
    good.write_text(
        TAINTS + "---\n" + nfr("x", "- name: a\n  labels: {a: b}\n  extendedResources: {e: '@a.b.c'}")
    )
    assert main(["validate", "-f", str(good)]) == 0
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        nfr(
            "my-rules",
            """
            - name: r0
            - name: r1
            - name: r2
              labels: {"kubernetes.io/x": "1", "y": "not valid"}
              annotations: {"nfd.node.kubernetes.io/a": "b"}
              extendedResources: {e: "lots"}
              taints: [{key: "unprefixed", effect: NoSchedule}, {key: "a.io/t", effect: Sometimes}]
              labelsTemplate: "{{ env \\"HOME\\" }}"
              matchFeatures:
                - feature: pci.device
                  matchExpressions:
                    vendor: {op: Equals, value: ["8086"]}
                    class: {op: In}
                    rev: {op: Gt, value: ["x"]}
                    id: {op: InRegexp, value: ["("]}
                    ver: {op: Gt, value: ["1"], type: semver}
                - feature: nodot
            """,
        )
    )
    assert main(["validate", "-f", str(good), "-f", str(bad)]) == 1
    out = capsys.readouterr().out
    pre = f"{bad}: NodeFeatureRule 'my-rules': spec.rules[2]."
    for tail in [
        'matchFeatures[0].matchExpressions.vendor.op: unknown operator "Equals"',
        "matchFeatures[0].matchExpressions.class.value: ",
        "matchFeatures[0].matchExpressions.rev.value: ",
        "matchFeatures[0].matchExpressions.id.value[0]: error parsing regexp: missing closing ): `(`",
        "matchFeatures[0].matchExpressions.ver.type: ",
        "matchFeatures[1].feature: ",
        "labelsTemplate: ",
        "labels.kubernetes.io/x: namespace is not allowed",
        "labels.y: invalid value",
        "annotations.nfd.node.kubernetes.io/a: namespace is not allowed",
        "extendedResources.e: invalid value",
        "taints[0]: unprefixed keys are not allowed",
        "taints[1]: invalid taint effect",
    ]:
        assert pre + tail in out, tail
    # good.yaml has no problem (its NoExecute taint gets upstream's note, a warning)
    assert not [line for line in out.splitlines() if line.startswith(str(good)) and ": warning: " not in line]


def test_validate_refuses_wrong_or_missing_api_version(tmp_path: Path, capsys: Any) -> None:
    p = tmp_path / "f.yaml"
    body = nfr("x", '- name: r\n  labels: {a: "1"}')
    for api, msg in [("nfd.k8s-sigs.io/v1beta9", "apiVersion: must be 'nfd.k8s-sigs.io/v1alpha1', got "
                      "'nfd.k8s-sigs.io/v1beta9'"), (None, "apiVersion: required")]:
        text = body.replace("nfd.k8s-sigs.io/v1alpha1", api) if api else body.split("\n", 1)[1]
        p.write_text(text)
        assert main(["validate", "-f", str(p)]) == 1
        assert capsys.readouterr().out == f"{p}: NodeFeatureRule 'x': {msg}\n1 problem(s) found\n"


# a document of another kind is a problem named in it (as kubectl-nfd validate says), exit 1
@pytest.mark.parametrize(("content", "rc"), [("a: [x", 2), ("kind: Pod\n", 1), ("", 2)])
def test_validate_bad_files(tmp_path: Path, capsys: Any, content: str, rc: int) -> None:
    p = tmp_path / "f.yaml"
    p.write_text(content)
    assert main(["validate", "-f", str(p)]) == rc
    assert "Traceback" not in capsys.readouterr().err


def test_cli_does_not_import_kubernetes_client(tmp_path: Path) -> None:
    rp, np_ = tmp_path / "r.yaml", tmp_path / "nf.yaml"
    rp.write_text(TAINTS)
    np_.write_text(NODEFEATURE)
    code = (
        "import sys; from nfd.cli import main; rc = main(['rules', 'dryrun', '-f', sys.argv[1], '--nodefeature', sys.argv[2], '-o', 'json']);"
        "assert 'kubernetes' not in sys.modules, 'kubernetes imported'; sys.exit(rc)"
    )
    p = subprocess.run(
        [sys.executable, "-c", code, str(rp), str(np_)], capture_output=True, text=True, timeout=120
    )
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["labels"][FNK + "from-nodefeature"] == "yes"


def test_dryrun_accepts_exported_features(tmp_path: Path, capsys: Any) -> None:
    rp, fp = tmp_path / "r.yaml", tmp_path / "features.json"
    rp.write_text(
        nfr(
            "x",
            """
            - name: any
              labels: {avx: "true"}
              matchAny:
                - matchFeatures: [{feature: cpu.cpuid, matchExpressions: {SSE9: {op: Exists}}}]
                - matchFeatures: [{feature: cpu.cpuid, matchExpressions: {AVX: {op: Exists}}}]
            - name: none
              labels: {never: "true"}
              matchAny:
                - matchFeatures: [{feature: cpu.cpuid, matchExpressions: {SSE9: {op: Exists}}}]
            """,
        )
    )
    fp.write_text(
        json.dumps({"flags": {"cpu.cpuid": {"elements": {"AVX": {}}}}, "attributes": {}, "instances": {}})
    )
    assert main(["dryrun", "-f", str(rp), "--nodefeature", str(fp)]) == 0
    text = capsys.readouterr().out
    assert "feature.node.kubernetes.io/avx=true" in text
    assert (
        'x/none: not matched: matchAny: no element matched ([0] matchFeatures[0] (cpu.cpuid): expression "SSE9"'
        in text
    )


def test_dryrun_one_file_with_rules_and_nodefeature(tmp_path: Path, capsys: Any) -> None:
    p = tmp_path / "both.yaml"
    p.write_text(nfr("x", '- name: r\n  labels: {a: "1"}') + "---\n" + NODEFEATURE)
    assert main(["dryrun", "-f", str(p), "--nodefeature", str(p), "-o", "json", "--raw"]) == 0
    assert json.loads(capsys.readouterr().out)["labels"] == {"a": "1"}
    # a NodeFeature alone is no rules file
    nf = tmp_path / "nf.yaml"
    nf.write_text(NODEFEATURE)
    assert main(["dryrun", "-f", str(nf), "--nodefeature", str(nf)]) == 2
    assert "no NodeFeatureRule or NodeFeatureGroup object found" in capsys.readouterr().err


def test_validate_reports_unknown_fields(tmp_path: Path, capsys: Any) -> None:
    p = tmp_path / "typos.yaml"
    typos = (
        nfr(
            "typos",
            """
            - name: r
              labels: {a: "1"}
              matchFeature:
                - feature: cpu.cpuid
              matchAny:
                - matchFeatures:
                    - feature: system.osrelease
                      matchExpressions:
                        NAME: {op: InRegexp, values: ["^openSUSE"]}
                      matchNames: {op: Exists}
              taints: [{key: a.io/t, effect: NoSchedule, valu: x}]
            """,
        )
    )
    p.write_text(typos)
    assert main(["validate", "-f", str(p)]) == 1
    out = capsys.readouterr().out
    head = f"{p}: NodeFeatureRule 'typos': "
    # errors, as kubectl apply's strict field validation refuses them, each with the nearest name
    for line in [
        "spec.rules[0].matchFeature: unknown field; did you mean matchFeatures?",
        "spec.rules[0].matchAny[0].matchFeatures[0].matchExpressions.NAME.values: unknown field; did you mean value?",
        "spec.rules[0].matchAny[0].matchFeatures[0].matchNames: unknown field; did you mean matchName?",
        "spec.rules[0].taints[0].valu: unknown field; did you mean value?",
    ]:
        assert f"{head}{line}\n" in out, line
    # an unknown field alone is an error too; a rule whose only match term is misspelt says that
    # it matches every node as written
    p.write_text(nfr("typo", '- name: r\n  labels: {a: "1"}\n  matchFeature: [{feature: cpu.cpuid}]'))
    assert main(["validate", "-f", str(p)]) == 1
    assert capsys.readouterr().out == (
        f"{p}: NodeFeatureRule 'typo': spec.rules[0].matchFeature: unknown field; did you mean matchFeatures? "
        "(as written, the rule has no match term and matches every node)\n1 problem(s) found\n")
    # a field far from every valid one lists them
    p.write_text(nfr("far", '- name: r\n  labels: {a: "1"}\n  zzz: 1\n  matchCEL: ["true"]'))
    assert main(["validate", "-f", str(p)]) == 1
    assert "spec.rules[0].zzz: unknown field (valid here: annotations, extendedResources, labels" in capsys.readouterr().out
    p.write_text(typos)
    # the engine itself ignores unknown fields, like upstream's decoder; dryrun names them as errors
    nf = tmp_path / "nf.yaml"
    nf.write_text(NODEFEATURE)
    assert main(["dryrun", "-f", str(p), "--nodefeature", str(nf), "--raw", "-o", "json"]) == 1
    cap = capsys.readouterr()
    out = json.loads(cap.out)
    assert [e["rule"] for e in out["errors"]] == ["r"] * 5  # 4 unknown fields, InRegexp without values
    assert out["errors"][0]["message"] == f"{head}spec.rules[0].matchFeature: unknown field; did you mean matchFeatures?"
    assert f"error: {head}spec.rules[0].matchFeature: unknown field; did you mean matchFeatures?\n" in cap.err
    # a rule whose only fault is an unknown field fails the dry run too (exit 1)
    p.write_text(nfr("typo", '- name: r\n  labels: {a: "1"}\n  matchFeature: [{feature: cpu.cpuid}]'))
    assert main(["dryrun", "-f", str(p), "--nodefeature", str(nf)]) == 1
