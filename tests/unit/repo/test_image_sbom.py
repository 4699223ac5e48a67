"""The image's SBOM (deploy/image/sbom.cdx.json, copied into the image as /opt/nfd/sbom.cdx.json):
valid CycloneDX by the schema of cyclonedx-python-lib's validator, describing nfd, and its
components exactly the lock's distributions (name, version, purl, the lock's hashes), as
`cyclonedx-py requirements` makes them from the lock again. When this fails, run
scripts/update-image-lock.sh (docs/install.md)."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cyclonedx.schema import SchemaVersion
from cyclonedx.validation.json import JsonStrictValidator
from image_lock import LOCK, ROOT, SBOM, UPDATE_COMMAND, load_pyproject, parse_lock
from packaging.utils import canonicalize_name

Component = tuple[str, str, str, frozenset[str]]


def sbom_components(sbom: dict[str, Any]) -> set[Component]:
    """(name, version, purl, sha256 hashes) of each component; a component named twice counts once,
    so the caller also compares the counts."""
    out = set()
    for c in sbom.get("components", []):
        hashes = frozenset(f"sha256:{h['content']}" for ref in c.get("externalReferences", [])
                           if ref.get("type") == "distribution"
                           for h in ref.get("hashes", []) if h.get("alg") == "SHA-256")
        out.add((canonicalize_name(c["name"]), c.get("version", ""), c.get("purl", ""), hashes))
    return out


def lock_components(lock_text: str) -> set[Component]:
    return {(p.name, p.version, f"pkg:pypi/{p.name}@{p.version}", frozenset(p.hashes))
            for p in parse_lock(lock_text)}


def sbom_problems(sbom: dict[str, Any], lock_text: str) -> list[str]:
    """How the SBOM differs from the lock (and from nfd's own metadata), or []."""
    problems = []
    ours, locked = sbom_components(sbom), lock_components(lock_text)
    for name, version, purl, _ in sorted(ours - locked):
        problems.append(f"the SBOM's {name} {version} ({purl}) is not the lock's, or its hashes differ")
    for name, version, _, _ in sorted(locked - ours):
        problems.append(f"the lock's {name}=={version} is not in the SBOM as locked")
    if len(sbom.get("components", [])) != len(locked):
        problems.append(f"{len(sbom.get('components', []))} components for {len(locked)} locked distributions")
    project = load_pyproject()["project"]
    root = sbom.get("metadata", {}).get("component", {})
    if (root.get("name"), root.get("version")) != (project["name"], project["version"]):
        problems.append(f"the SBOM describes {root.get('name')} {root.get('version')}")
    if [lic.get("license", {}).get("id") for lic in root.get("licenses", [])] != [project["license"]]:
        problems.append(f"the SBOM's license of nfd is {root.get('licenses')}, not {project['license']}")
    return problems


def _committed() -> dict[str, Any]:
    return json.loads(SBOM.read_text())


def test_the_sbom_is_valid_cyclonedx() -> None:
    sbom = _committed()
    assert (sbom["bomFormat"], sbom["specVersion"]) == ("CycloneDX", "1.6")
    assert JsonStrictValidator(SchemaVersion.V1_6).validate_str(SBOM.read_text()) is None


def test_the_validator_refuses_an_invalid_sbom() -> None:
    sbom = _committed()
    sbom["components"][0]["type"] = "python-package"
    del sbom["components"][1]["name"]
    error = JsonStrictValidator(SchemaVersion.V1_6).validate_str(json.dumps(sbom))
    assert error is not None


def test_the_sbom_lists_exactly_the_locked_distributions() -> None:
    assert sbom_problems(_committed(), LOCK.read_text()) == [], f"run {UPDATE_COMMAND}"
    assert len(_committed()["components"]) == len(parse_lock(LOCK.read_text())) > 10


def _edit(sbom: dict[str, Any], case: str) -> None:
    comps = sbom["components"]
    if case == "a component left out":
        comps.pop()
    elif case == "another version":
        comps[0]["version"] = "0.0.1"
    elif case == "another purl":
        comps[0]["purl"] = comps[0]["purl"].replace("pkg:pypi/", "pkg:pypi/x")
    elif case == "a hash changed":
        comps[0]["externalReferences"][0]["hashes"][0]["content"] = "0" * 64
    elif case == "a component twice":
        comps.append(copy.deepcopy(comps[0]))
    elif case == "an unlocked component":
        comps.append({**copy.deepcopy(comps[0]), "name": "six", "version": "1.17.0", "purl": "pkg:pypi/six@1.17.0"})
    elif case == "another root component":
        sbom["metadata"]["component"]["version"] = "0.0.0"
    elif case == "another license":
        sbom["metadata"]["component"]["licenses"] = [{"license": {"id": "MIT"}}]


@pytest.mark.parametrize("case", ["a component left out", "another version", "another purl", "a hash changed",
                                  "a component twice", "an unlocked component", "another root component",
                                  "another license"])
def test_a_tampered_sbom_fails(case: str) -> None:
    sbom = _committed()
    _edit(sbom, case)
    assert sbom != _committed()
    assert sbom_problems(sbom, LOCK.read_text()) != []


def test_the_sbom_fails_a_changed_lock() -> None:
    text = re.sub(r"(?m)^pyyaml==\S+", "pyyaml==5.4.1", LOCK.read_text(), count=1)
    assert text != LOCK.read_text()
    assert sbom_problems(_committed(), text) != []


def test_cyclonedx_py_makes_the_same_components_from_the_lock(tmp_path: Path) -> None:
    """The committed SBOM is what the update command's tool makes of the lock (offline: it reads
    the requirements file and pyproject.toml only)."""
    out = tmp_path / "sbom.json"
    proc = subprocess.run([sys.executable, "-W", "ignore", "-m", "cyclonedx_py", "requirements",
                           "--pyproject", "pyproject.toml", "--output-reproducible", "--spec-version", "1.6",
                           "--no-validate", "-o", str(out), str(LOCK.relative_to(ROOT))],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    made = json.loads(out.read_text())
    assert sbom_components(made) == sbom_components(_committed())
    assert len(made["components"]) == len(_committed()["components"])
    assert made["metadata"]["component"] == _committed()["metadata"]["component"]
    assert sbom_problems(made, LOCK.read_text()) == []
