"""Path arguments that cannot be read or written: one line naming the flag and path, exit != 0,
never a traceback, for every offline entry point that takes one (nfd.common.fileargs)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from nfd.common.fileargs import FileArgError, read_text_arg, write_text_arg

BAD_OUT = ["/nonexistent-dir/l.txt", "/", "/proc/version"]


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    root = str(Path(__file__).resolve().parents[3])
    env = dict(os.environ, PYTHONPATH=root)
    return subprocess.run([sys.executable, "-m", "nfd.cli", *argv], capture_output=True, text=True,
                          env=env, timeout=120)


@pytest.mark.parametrize("path", BAD_OUT)
def test_export_path_that_cannot_be_written(path: str) -> None:
    if path == "/proc/version" and not os.path.exists(path):
        pytest.skip("no /proc")
    r = _run("export", "features", "--sources", "memory", "--path", path)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"nfd export: --path {path}: cannot write: ")


@pytest.mark.parametrize("argv", [
    ["rules", "validate", "-f", "/"],
    ["rules", "dryrun", "-f", "/nonexistent.yaml", "--nodefeature", "/nonexistent.yaml"],
    ["compat", "attach", "--image", "example.com/a:b", "--spec", "/"],
])
def test_unreadable_inputs_are_one_line(argv: list[str]) -> None:
    r = _run(*argv)
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "cannot read" in r.stderr


def test_helpers_name_flag_and_reason(tmp_path: Path) -> None:
    with pytest.raises(FileArgError, match=r"^--x /nonexistent/f: cannot read: No such file or directory$"):
        read_text_arg("/nonexistent/f", flag="--x")
    with pytest.raises(FileArgError, match=r": cannot read: Is a directory$"):
        read_text_arg(str(tmp_path))
    (tmp_path / "bin").write_bytes(b"\xff\xfe")
    with pytest.raises(FileArgError, match=r"not UTF-8"):
        read_text_arg(str(tmp_path / "bin"))
    with pytest.raises(FileArgError, match=r"^--p .*: cannot write: Is a directory$"):
        write_text_arg(str(tmp_path), "x", flag="--p")
    write_text_arg(str(tmp_path / "ok"), "hello")
    assert (tmp_path / "ok").read_text() == "hello"


def test_config_and_kubeconfig_paths_use_the_same_words(tmp_path: Path) -> None:
    from nfd.k8s.config import ConfigError, load_kubeconfig
    from nfd.worker.config import load_config_file

    with pytest.raises(ConfigError, match=rf"^kubeconfig {tmp_path}: cannot read: Is a directory$"):
        load_kubeconfig(str(tmp_path))
    with pytest.raises(OSError, match=rf"^{tmp_path}: cannot read: Is a directory$"):
        load_config_file(str(tmp_path))
