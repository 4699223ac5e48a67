"""The README's commands in the two virtualenvs a user can get: newest and lowest dependencies.

`python3 -m tests.dependency_envs` (scripts/test.sh runs it after the suite; exit 1 on any
failure, with the step named):

- **newest**: a fresh virtualenv and a plain `pip install -e '.[test]'`, so pip resolves the
  newest release of every dependency (the machine's own site-packages, with whatever older
  releases it holds, are not seen); then the README's commands: `nfd export labels` and
  `python -m pytest tests/unit`.
- **lowest**: `uv pip install --resolution lowest-direct -e .` in a fresh virtualenv: every
  runtime dependency at the lowest release pyproject.toml allows (pip has no such resolution;
  uv, installed from PyPI, is the well-kept tool that has), then `nfd export labels` and the
  unit tests that exercise each runtime dependency, with pytest, pytest-timeout, aiohttp and
  grpcio also at their lowest allowed releases and the runtime releases held where they are;
  `ruff check nfd` and `mypy nfd` with ruff and mypy at theirs.
  Left out there: tests/unit/lang/cel (cel-python, the reference interpreter, needs
  pyyaml>=6.0.2, above our lowest), and the two corpus tests that compare thousands of cases
  (run in the newest environment and the main suite).

Each step prints its time and the resolved versions. The virtualenvs live in a temporary
directory removed at the end; pip's and uv's download caches are kept as usual.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())


def _dist(requirement: str) -> str:
    for sep in "<>=!~[; ":
        requirement = requirement.split(sep)[0]
    return requirement.strip().lower()


RUNTIME_DISTS = tuple(_dist(r) for r in PYPROJECT["project"]["dependencies"])
# the test tools the lowest slice needs, at the bounds pyproject.toml's `test` extra gives them
LOWEST_TEST_TOOLS = ("pytest", "pytest-timeout", "aiohttp", "grpcio", "ruff", "mypy", "types-pyyaml", "grimp",
                     "packaging", "cyclonedx-bom")
LOWEST_SLICE_LEFT_OUT = ["--ignore=tests/unit/lang/cel",
                         "--ignore=tests/unit/lang/goregex/test_goregex_conformance.py",
                         "--deselect=tests/unit/sources/nvml/test_gfd_corpus.py::test_gfd_corpus_identical"]


class StepFailed(Exception):
    pass


def _step(what: str, argv: list[str | Path], *, env: dict[str, str] | None = None,
          capture: bool = False) -> str:
    print(f"== {what}: {' '.join(str(a) for a in argv)}", flush=True)
    start = time.monotonic()
    proc = subprocess.run([str(a) for a in argv], cwd=REPO, env=env, check=False, text=True,
                          stdout=subprocess.PIPE if capture else None)
    took = time.monotonic() - start
    if proc.returncode != 0:
        raise StepFailed(f"{what}: exit {proc.returncode} after {took:.0f}s")
    print(f"== {what}: done in {took:.0f}s", flush=True)
    return proc.stdout or ""


def _clean_env() -> dict[str, str]:
    """The environment without the caller's Python settings (PYTHONPATH would put the checkout's
    or another environment's packages first)."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}


def extra_requirements(names: tuple[str, ...]) -> list[str]:
    """The `test` extra's requirement strings for these distributions (their bounds stay in
    pyproject.toml only)."""
    reqs = PYPROJECT["project"]["optional-dependencies"]["test"]
    out = []
    for name in names:
        found = [r for r in reqs if _dist(r) == name]
        if not found:
            raise StepFailed(f"pyproject.toml: no {name} in the test extra")
        out += found
    return out


def _export_labels(nfd: Path, env: dict[str, str], what: str) -> None:
    out = _step(f"{what}: nfd export labels", [nfd, "export", "labels"], env=env, capture=True)
    labels = [line for line in out.splitlines() if line.startswith("feature.node.kubernetes.io/")]
    if not labels:
        raise StepFailed(f"{what}: nfd export labels printed no feature.node.kubernetes.io label:\n{out[-2000:]}")
    print(f"== {what}: {len(labels)} labels", flush=True)


def _versions(python: Path, env: dict[str, str]) -> str:
    code = ("import importlib.metadata as m, sys\n"
            "print(', '.join(f'{d}=={m.version(d)}' for d in sys.argv[1:]))")
    return subprocess.run([str(python), "-c", code, *RUNTIME_DISTS], env=env, text=True, capture_output=True,
                          check=True).stdout.strip()


_DISTS_CODE = ("import importlib.metadata as m\n"
               "for d in m.distributions():\n"
               "    print(f\"{d.metadata['Name']}=={d.version}\")")


def installed_dists(python: Path | str, env: dict[str, str]) -> dict[str, str]:
    """Every distribution ``python`` imports from, by normalised name: its version."""
    out = subprocess.run([str(python), "-c", _DISTS_CODE], env=env, text=True, capture_output=True,
                         check=True).stdout
    dists: dict[str, str] = {}
    for line in out.splitlines():
        name, _, version = line.partition("==")
        if name:
            dists.setdefault(name.lower().replace("_", "-"), version)
    return dists


def releases_differ(venv: dict[str, str], main: dict[str, str]) -> list[str]:
    """The distributions of the new virtualenv that the suite's own interpreter lacks or holds at
    another release (nfd itself and pip, the installer, aside): where the suite's unit-test run did not already test the
    newest releases."""
    return sorted(f"{name} {version} (suite: {main.get(name, 'absent')})" for name, version in venv.items()
                  if name not in ("nfd", "pip") and main.get(name) != version)


def newest(tmp: Path, pytest_args: list[str], *, suite_ran_unit_tests: bool = False) -> None:
    env = _clean_env()
    venv = tmp / "newest"
    _step("newest: venv", [sys.executable, "-m", "venv", venv], env=env)
    py = venv / "bin" / "python"
    _step("newest: pip install -e '.[test]'", [py, "-m", "pip", "install", "-q", "-e", f"{REPO}[test]"], env=env)
    print(f"== newest: {_versions(py, env)}", flush=True)
    _export_labels(venv / "bin" / "nfd", env, "newest")
    if suite_ran_unit_tests and not pytest_args:
        # On a fresh machine the suite's own `pip install -e '.[test]'` got these same newest
        # releases, and its pytest run has just passed the unit tests on them: a second run
        # checks nothing more (about 200 s on 2 cores). Where any release differs (a machine
        # that kept older ones, a release published since), the unit tests run here.
        differ = releases_differ(installed_dists(py, env), installed_dists(sys.executable, env))
        if not differ:
            print("== newest: unit tests: the suite's run already tested exactly these releases "
                  f"({sys.executable}); not run again", flush=True)
            return
        print(f"== newest: releases the suite's run did not test: {'; '.join(differ)}", flush=True)
    _step("newest: unit tests", [py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/unit", *pytest_args],
          env=env)


def lowest(tmp: Path, pytest_args: list[str]) -> None:
    env = _clean_env()
    tools = tmp / "tools"
    _step("lowest: uv from PyPI", [sys.executable, "-m", "venv", tools], env=env)
    _step("lowest: uv from PyPI", [tools / "bin" / "python", "-m", "pip", "install", "-q", "uv"], env=env)
    uv = tools / "bin" / "uv"
    venv = tmp / "lowest"
    py = venv / "bin" / "python"
    _step("lowest: venv", [uv, "venv", "-q", "--python", sys.executable, venv], env=env)
    _step("lowest: uv pip install --resolution lowest-direct -e .",
          [uv, "pip", "install", "-q", "--python", py, "--resolution", "lowest-direct", "-e", REPO], env=env)
    print(f"== lowest: {_versions(py, env)}", flush=True)
    _export_labels(venv / "bin" / "nfd", env, "lowest")
    pins = tmp / "lowest-runtime.txt"
    frozen = _step("lowest: the runtime releases", [uv, "pip", "freeze", "--python", py], env=env, capture=True)
    pins.write_text("".join(line + "\n" for line in frozen.splitlines()
                            if line and not line.startswith(("-e ", "nfd ", "nfd=="))))
    _step("lowest: test tools at their lowest",
          [uv, "pip", "install", "-q", "--python", py, "--resolution", "lowest-direct", "-c", pins,
           *extra_requirements(LOWEST_TEST_TOOLS)], env=env)
    _step("lowest: ruff", [py, "-m", "ruff", "check", "nfd"], env=env)
    _step("lowest: mypy", [py, "-m", "mypy", "nfd"], env=env)
    _step("lowest: unit tests",
          [py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/unit", *LOWEST_SLICE_LEFT_OUT, *pytest_args],
          env=env)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m tests.dependency_envs", description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=("newest", "lowest"), help="one of the two environments")
    ap.add_argument("--suite-ran-unit-tests", action="store_true",
                    help="the caller's interpreter has just passed tests/unit (scripts/test.sh): the newest "
                         "environment's unit tests run only where its releases differ from that interpreter's")
    ap.add_argument("pytest_args", nargs="*", help="passed to pytest (after --)")
    args = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="nfd-dependency-envs-"))
    failed = []
    try:
        for name in ("newest", "lowest"):
            if args.only in (None, name):
                try:
                    if name == "newest":
                        newest(tmp, args.pytest_args, suite_ran_unit_tests=args.suite_ran_unit_tests)
                    else:
                        lowest(tmp, args.pytest_args)
                except StepFailed as e:
                    print(f"== FAILED {e}", flush=True)
                    failed.append(str(e))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for f in failed:
        print(f"dependency environments: {f}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
