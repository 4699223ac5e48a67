"""The image's lock, deploy/image/requirements.txt, read as pip reads it, and what it must hold.

The lock is written by scripts/update-image-lock.sh (uv pip compile --universal --generate-hashes):
one requirement per distribution, ``name==version`` with an optional environment marker, its
``--hash`` options on continuation lines, then uv's ``# via`` comment naming what requires it
(another locked distribution, ``nfd (pyproject.toml)`` or ``-r deploy/image/requirements.in``).
``lock_problems`` says, in words, everything that makes the lock unfit for the image.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[3]
LOCK = ROOT / "deploy" / "image" / "requirements.txt"
LOCK_IN = ROOT / "deploy" / "image" / "requirements.in"
SBOM = ROOT / "deploy" / "image" / "sbom.cdx.json"
UPDATE_COMMAND = "scripts/update-image-lock.sh"

#: what uv's ``# via`` comments call the two inputs of the lock
VIA_PYPROJECT = "nfd (pyproject.toml)"
VIA_LOCK_IN = "-r deploy/image/requirements.in"


def _environment(machine: str, python: str) -> dict[str, str]:
    return {"implementation_name": "cpython", "implementation_version": python, "os_name": "posix",
            "platform_machine": machine, "platform_python_implementation": "CPython", "platform_release": "",
            "platform_system": "Linux", "platform_version": "", "python_full_version": python,
            "python_version": python.rsplit(".", 1)[0], "sys_platform": "linux"}


#: where the image runs the lock: CPython 3.11 on Linux (Debian 12's 3.11.2, python:3.11-slim's later
#: 3.11 releases), built for linux/amd64 and linux/arm64
IMAGE_ENVIRONMENTS = [_environment(machine, python)
                      for machine in ("x86_64", "aarch64") for python in ("3.11.2", "3.11.14")]


@dataclass(frozen=True)
class Pin:
    name: str  # canonical (PEP 503)
    version: str
    marker: Marker | None
    hashes: tuple[str, ...]
    via: tuple[str, ...]
    line: int

    def applies(self, env: dict[str, str]) -> bool:
        return self.marker is None or self.marker.evaluate(env)


class LockError(ValueError):
    pass


HASH = re.compile(r"--hash=(\S+)")


def parse_lock(text: str) -> list[Pin]:
    """The lock's requirements, in order. Anything but pinned requirements with ``--hash`` options
    and comments (an index URL, an editable or a path) is a LockError: the image installs from PyPI
    only what the lock pins."""
    pins: list[dict[str, Any]] = []
    lines = text.splitlines()
    i = 0
    in_via = False
    while i < len(lines):
        line, start = lines[i], i + 1
        i += 1
        stripped = line.strip()
        if not stripped:
            in_via = False
            continue
        if stripped.startswith("#"):
            comment = stripped[1:].strip()
            if not pins or line.startswith("#"):
                in_via = False
                continue  # the header
            if comment.startswith("via"):
                rest = comment[3:].strip()
                if rest:
                    pins[-1]["via"].append(rest)
                in_via = not rest
            elif in_via and comment:
                pins[-1]["via"].append(comment)
            continue
        in_via = False
        logical = line
        while logical.rstrip().endswith("\\") and i < len(lines):
            logical = logical.rstrip()[:-1] + " " + lines[i].strip()
            i += 1
        logical = logical.rstrip().removesuffix("\\")
        if logical.startswith("-"):
            raise LockError(f"line {start}: {logical.split()[0]}: the lock holds pinned requirements only")
        req_text, _, opts = logical.partition(" --")
        opts = "--" + opts if opts else ""
        hashes = HASH.findall(opts)
        other = HASH.sub("", opts).split()
        if other:
            raise LockError(f"line {start}: options other than --hash: {' '.join(other)}")
        try:
            req = Requirement(req_text.strip())
        except ValueError as e:
            raise LockError(f"line {start}: {e}") from None
        specs = list(req.specifier)
        if req.url or len(specs) != 1 or specs[0].operator != "==" or "*" in specs[0].version:
            raise LockError(f"line {start}: {req_text.strip()!r} is not pinned with ==")
        pins.append({"name": canonicalize_name(req.name), "version": specs[0].version, "marker": req.marker,
                     "hashes": tuple(hashes), "via": [], "line": start})
    return [Pin(**{**p, "via": tuple(p["via"])}) for p in pins]


def requirements_in(text: str) -> list[Requirement]:
    """deploy/image/requirements.in: one requirement a line, comments aside."""
    out = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            out.append(Requirement(line))
    return out


def lock_problems(lock_text: str, pyproject: dict[str, Any], lock_in_text: str) -> list[str]:
    """Everything that makes the lock unfit for the image built from this pyproject.toml and
    requirements.in, or [] when it is fit."""
    try:
        pins = parse_lock(lock_text)
        in_reqs = requirements_in(lock_in_text)
    except (LockError, ValueError) as e:
        return [str(e)]
    problems: list[str] = []
    if not pins:
        return ["the lock pins nothing"]

    # requirements.in is pyproject.toml's build backend, nothing else
    build = sorted(str(Requirement(r)) for r in pyproject["build-system"]["requires"])
    if sorted(str(r) for r in in_reqs) != build:
        problems.append(f"requirements.in {sorted(str(r) for r in in_reqs)} is not [build-system] requires {build}")

    # every pinned line carries hashes, and the image installs every pin on both platforms (the
    # SBOM lists every pin), one release of each distribution
    for p in pins:
        if not p.hashes:
            problems.append(f"{p.name}=={p.version} (line {p.line}) has no --hash")
        for h in p.hashes:
            if not re.fullmatch(r"sha256:[0-9a-f]{64}", h):
                problems.append(f"{p.name}=={p.version} (line {p.line}): {h!r} is not a sha256 hash")
        if not all(p.applies(env) for env in IMAGE_ENVIRONMENTS):
            problems.append(f"{p.name}=={p.version} (line {p.line}): its marker {p.marker} does not hold in "
                            f"every image environment (CPython 3.11 on linux/amd64 and linux/arm64), "
                            f"so the image would not install what the lock and the SBOM list")
    seen: dict[str, Pin] = {}
    for p in pins:
        if p.name in seen:
            problems.append(f"{p.name} is pinned twice (lines {seen[p.name].line} and {p.line})")
        seen[p.name] = p

    # every requirement of pyproject.toml (dependencies and the compat extra) and requirements.in
    # is pinned at a release it allows, wherever its marker puts it in the image
    project = pyproject["project"]
    roots = {VIA_PYPROJECT: [Requirement(r) for r in project["dependencies"]]
             + [Requirement(r) for r in project["optional-dependencies"]["compat"]],
             VIA_LOCK_IN: in_reqs}
    direct: dict[str, set[str]] = {}
    for label, reqs in roots.items():
        for req in reqs:
            name = canonicalize_name(req.name)
            if not any(req.marker is None or req.marker.evaluate({**env, "extra": ""})
                       for env in IMAGE_ENVIRONMENTS):
                continue
            direct.setdefault(label, set()).add(name)
            if name not in seen:
                problems.append(f"{req} ({label}) is not in the lock")
            elif not req.specifier.contains(seen[name].version, prereleases=True):
                problems.append(f"{req} ({label}): the lock pins {name}=={seen[name].version}, "
                                f"which it does not allow")

    # nothing is left unexplained: every pin is required, by the inputs or by another pin, and
    # the inputs' own requirements are exactly what the lock says they require
    for label in roots:
        claimed = {p.name for p in pins if label in p.via}
        if claimed != direct.get(label, set()):
            problems.append(f"the lock says {label} requires {sorted(claimed)}; it requires "
                            f"{sorted(direct.get(label, set()))}")
    for p in pins:
        if not p.via:
            problems.append(f"{p.name}=={p.version} (line {p.line}): no '# via', nothing says why it is locked")
        for v in p.via:
            if v not in roots and canonicalize_name(v) not in seen:
                problems.append(f"{p.name}=={p.version} (line {p.line}): via {v!r}, which is neither an input "
                                f"nor in the lock")
    reached = {p.name for p in pins if any(v in roots for v in p.via)}
    grew = True
    while grew:
        more = {p.name for p in pins if p.name not in reached
                and any(canonicalize_name(v) in reached for v in p.via if v not in roots)}
        reached |= more
        grew = bool(more)
    for p in pins:
        if p.name not in reached:
            problems.append(f"{p.name}=={p.version} (line {p.line}) is not reachable from pyproject.toml's "
                            f"requirements or requirements.in")
    return problems


def load_pyproject() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())
