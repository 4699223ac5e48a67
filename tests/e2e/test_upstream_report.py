"""tests/e2e/upstream.py's reading of the suite's report and of docs/compatibility.md (no cluster)."""

from __future__ import annotations

from pathlib import Path

from tests.e2e import upstream

JUNIT = """<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="4" failures="1">
  <testsuite name="E2E Suite" tests="4">
    <testcase name="[SynchronizedBeforeSuite]" status="passed"></testcase>
    <testcase name="[It] [k8s-sigs/node-feature-discovery] Node Feature Discovery should a [nfd-all]" status="passed"></testcase>
    <testcase name="[It] [k8s-sigs/node-feature-discovery] NFD GC with gc disabled should b [nfd-all]" status="failed">
      <failure message="timed out">x</failure></testcase>
    <testcase name="[It] [k8s-sigs/node-feature-discovery] Node Feature Discovery should c [nfd-all]" status="skipped">
      <skipped message="skipped"></skipped></testcase>
  </testsuite>
</testsuites>
"""


def test_report_counts_specs_only(tmp_path: Path) -> None:
    (tmp_path / "junit.xml").write_text(JUNIT)
    res = upstream.parse_junit(tmp_path / "junit.xml")
    assert (len(res.passed), len(res.failed), len(res.skipped)) == (1, 1, 1)
    assert res.line("v0.17.3") == "upstream e2e v0.17.3: 1 passed, 1 failed, 1 skipped"
    assert res.failed == ["[k8s-sigs/node-feature-discovery] NFD GC with gc disabled should b [nfd-all]"]


def test_a_failure_is_allowed_only_when_the_doc_lists_it(tmp_path: Path) -> None:
    doc = tmp_path / "compat.md"
    doc.write_text(f"# x\n\n{upstream.SECTION}\n\n| spec | reason |\n|---|---|\n"
                   "| `with gc disabled` | ordering race |\n\n## Next\n\n| `should c` | elsewhere |\n")
    listed = upstream.listed_failures(doc)
    assert listed == ["with gc disabled"]
    failed = ["NFD GC with gc disabled should b", "Node Feature Discovery should c"]
    assert upstream.unlisted(failed, listed) == ["Node Feature Discovery should c"]


def test_the_projects_doc_lists_its_allowed_failures() -> None:
    """Every row of the section names a spec fragment (an empty list would allow nothing)."""
    text = upstream.COMPATIBILITY_DOC.read_text()
    assert upstream.SECTION in text
    for fragment in upstream.listed_failures():
        assert len(fragment) > 10, fragment


def test_e2e_config_expects_this_machines_values() -> None:
    cfg = upstream.e2e_config("nfd-e2e-node", ["feature.node.kubernetes.io/cpu-cpuid.AVX",
                                               "feature.node.kubernetes.io/kernel-version.major"], ["a"],
                              {"feature.node.kubernetes.io/cpu-cpuid.AVX": "true",
                               "feature.node.kubernetes.io/cpu-cpuid.SSE4": "true"})
    (node,) = cfg["defaultFeatures"]["nodes"]
    assert node["nodeNameRegexp"] == "^nfd\\-e2e\\-node$"
    import platform

    assert node["expectedLabelValues"]["feature.node.kubernetes.io/kernel-version.major"] == \
        platform.release().split(".")[0]
    # whitelisted and on the host: expected; not whitelisted: not named
    assert "feature.node.kubernetes.io/cpu-cpuid.AVX" in node["expectedLabelKeys"]
    assert "feature.node.kubernetes.io/cpu-cpuid.SSE4" not in node["expectedLabelKeys"]
