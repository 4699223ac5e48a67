"""The Dockerfile's build stage, without Docker: install the package from exactly the files the
Dockerfile copies, and check every entry point the manifests run is there and starts."""

from __future__ import annotations

import configparser
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.e2e.harness import REPO_ROOT

ENTRY_POINTS = ("nfd", "nfd-worker", "nfd-master", "nfd-gc", "nfd-topology-updater")


def _build_stage_copies() -> list[str]:
    text = (REPO_ROOT / "Dockerfile").read_text()
    build = text.split("FROM ")[1]  # the first stage
    out: list[str] = []
    for m in re.finditer(r"^COPY\s+(?!--from)(.+)$", build, re.MULTILINE):
        *srcs, _dest = m.group(1).split()
        out += srcs
    return out


def test_dockerfile_build_context_installs_every_entry_point(tmp_path: Path) -> None:
    ctx = tmp_path / "src"
    ctx.mkdir()
    copies = _build_stage_copies()
    assert "pyproject.toml" in copies and "nfd" in copies
    for src in copies:
        p = REPO_ROOT / src
        (ctx / src).parent.mkdir(parents=True, exist_ok=True)  # deploy/image/requirements.txt
        if p.is_dir():
            shutil.copytree(p, ctx / src, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(p, ctx / src)
    # Build a wheel and unpack it: nothing is installed into (or removed from) this environment.
    wheels = tmp_path / "wheels"
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                           "-w", str(wheels), str(ctx)], capture_output=True, text=True, timeout=300, check=False)
    if proc.returncode != 0 and "No module named" in proc.stderr:
        pytest.skip(f"pip cannot build offline here: {proc.stderr.strip()[-200:]}")
    assert proc.returncode == 0, proc.stderr
    (wheel,) = wheels.glob("nfd-*.whl")
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as z:
        z.extractall(site)
    (dist,) = site.glob("nfd-*.dist-info")
    scripts = configparser.ConfigParser()
    scripts.read(dist / "entry_points.txt")
    assert set(scripts["console_scripts"]) == {*ENTRY_POINTS, "kubectl-nfd"}
    env = dict(os.environ, PYTHONPATH=str(site), PYTHONNOUSERSITE="1")
    for ep in ENTRY_POINTS[1:]:
        module, _, func = scripts["console_scripts"][ep].partition(":")
        code = f"import sys; from {module} import {func}; sys.argv[0] = {ep!r}; sys.exit({func}())"
        out = subprocess.run([sys.executable, "-c", code, "-version"], capture_output=True, text=True, env=env,
                             cwd=tmp_path, timeout=60, check=False)
        assert out.returncode == 0, f"{ep}: {out.stderr[-500:]}"
    where = subprocess.run([sys.executable, "-c", "import nfd; print(nfd.__file__)"], capture_output=True,
                           text=True, env=env, cwd=tmp_path, check=True).stdout
    assert str(site) in where  # the wheel's copy ran, not the checkout
    # package data the processes read at run time came along
    assert list(site.glob("nfd/**/*.json")) or list(site.glob("nfd/**/*.yaml"))
