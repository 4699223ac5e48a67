"""scripts/gpu_device_check.py, the real-GPU check, run here against the mock NVML library: its
self-test (no difference from the profile the mock answers from), a wrong profile's differences
found, and exit 2 without NVML. It has not run on a real GPU yet (docs/gpu.md)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import mocknvml

SCRIPT = mocknvml.REPO_ROOT / "scripts" / "gpu_device_check.py"



def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], env=env, cwd="/", capture_output=True, text=True,
                          timeout=300, check=False)


def test_self_test_under_the_mock_finds_no_difference(lib_dir: Path) -> None:
    r = _run("--self-test")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "no difference from profile h100-80gb" in r.stdout and "self-test: ok" in r.stdout


def test_another_models_profile_shows_its_differences(lib_dir: Path, tmp_path: Path) -> None:
    env = mocknvml.prepare("h100-80gb", tmp_path, lib_dir=lib_dir)
    r = _run("--profile", "h200", env=env)
    assert r.returncode == 0, r.stderr
    assert "differences from profile h200" in r.stdout
    assert "label[none] nvidia.com/gpu.product: GPU 'NVIDIA-H100-80GB-HBM3'  profile 'NVIDIA-H200'" in r.stdout


def test_without_nvml_it_says_so(tmp_path: Path) -> None:
    import ctypes.util

    if ctypes.util.find_library("nvidia-ml"):
        pytest.skip("this machine has an NVML library")
    env = {k: v for k, v in os.environ.items() if k not in ("NFD_NVML_PROFILE", mocknvml.DATA_ENV)}
    env["LD_LIBRARY_PATH"] = str(tmp_path)  # no libnvidia-ml.so.1 there (nor, on this machine, anywhere)
    r = _run(env=env)
    assert r.returncode == 2 and "no usable NVML" in r.stdout, r.stdout + r.stderr
