"""Inputs that are ignored must be named, once, at the default verbosity: an unknown source name,
a bad NFD_NVML_PROFILE, an explicitly given config file that does not exist."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = str(Path(__file__).resolve().parents[3])


def _run(module: str, *argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    e = dict(os.environ, PYTHONPATH=ROOT, NODE_NAME="n1", **(env or {}))
    e.pop("NFD_NVML_FAULTS", None)
    return subprocess.run([sys.executable, "-m", module, *argv], capture_output=True, text=True, env=e,
                          timeout=180)


def _lines_naming(stderr: str, word: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if word in ln]


@pytest.mark.parametrize("argv, env, word", [
    (["--sources", "cpu,nvmlx"], {}, "'nvmlx': unknown source"),
    (["--sources", "nvml"], {"NFD_NVML_PROFILE": "bogus"}, "NVML profile 'bogus' not found"),
    (["--sources", "cpu", "--config", "/nonexistent.conf"], {}, "config file /nonexistent.conf not found"),
])
def test_export_names_ignored_inputs_once(argv: list[str], env: dict[str, str], word: str) -> None:
    r = _run("nfd.cli", "export", "labels", *argv, env=env)
    assert r.returncode == 0, r.stderr
    lines = _lines_naming(r.stderr, word)
    assert len(lines) == 1, r.stderr
    assert re.match(r"W\d{4} \d\d:\d\d:\d\d\.\d{6} ", lines[0]), lines[0]  # klog's W line


def test_export_verbose_lines_are_klogs() -> None:
    """``nfd export labels -vv`` writes klog's lines (docs/logging.md): V(n) records are ``I``
    lines, never Python's ``Level 17`` name."""
    r = _run("nfd.cli", "export", "labels", "-vv", "--sources", "cpu,kernel")
    assert r.returncode == 0, r.stderr
    assert "Level " not in r.stderr
    lines = [ln for ln in r.stderr.splitlines() if "feature discovery completed" in ln]
    assert lines and all(re.match(r"I\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+ \S+:\d+\] ", ln) for ln in lines), r.stderr


def test_worker_names_ignored_inputs_once() -> None:
    r = _run("nfd.worker", "-oneshot", "-no-publish", "-config", "/nonexistent.conf",
             "-feature-sources", "all,nvmlx", "-label-sources", "all,nvmlx", env={"NFD_NVML_PROFILE": "bogus"})
    for word in ("'nvmlx': unknown source", "NVML profile 'bogus' not found",
                 "config file /nonexistent.conf not found"):
        lines = _lines_naming(r.stderr, word)
        assert len(lines) == 1, (word, r.stderr)
        assert lines[0].startswith("W"), lines[0]  # klog's warning header, shown without -v
