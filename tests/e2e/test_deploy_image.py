"""The Dockerfile's build stage, without Docker: install the package from exactly the files the
Dockerfile copies, and check every entry point the manifests run is there and starts."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
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
        if p.is_dir():
            shutil.copytree(p, ctx / src, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(p, ctx / src)
    prefix = tmp_path / "install"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                           "--prefix", str(prefix), str(ctx)], capture_output=True, text=True, timeout=300,
                          check=False)
    if proc.returncode != 0 and "No module named" in proc.stderr:
        pytest.skip(f"pip cannot build offline here: {proc.stderr.strip()[-200:]}")
    assert proc.returncode == 0, proc.stderr
    for ep in ENTRY_POINTS:
        assert (prefix / "bin" / ep).exists(), ep
    purelib = Path(sysconfig.get_path("purelib", vars={"base": str(prefix), "platbase": str(prefix)}))
    env = dict(os.environ, PYTHONPATH=str(purelib), PYTHONNOUSERSITE="1")
    for ep in ENTRY_POINTS[1:]:
        out = subprocess.run([str(prefix / "bin" / ep), "-version"], capture_output=True, text=True, env=env,
                             cwd=tmp_path, timeout=60, check=False)
        assert out.returncode == 0, f"{ep}: {out.stderr[-500:]}"
    where = subprocess.run([sys.executable, "-c", "import nfd; print(nfd.__file__)"], capture_output=True,
                           text=True, env=env, cwd=tmp_path, check=True).stdout
    assert str(purelib) in where  # the installed copy ran, not the checkout
    # package data the processes read at run time came along
    assert list(purelib.glob("nfd/**/*.json")) or list(purelib.glob("nfd/**/*.yaml"))
