"""No tracked file names a path of one particular machine (a home, a checkout, a scratch file).

Docs, comments and tests must work on any clone: the shared conformance data is found relative
to the repository (``../shared``), temporary files under ``tempfile``/``tmp_path``. Host paths
the product reads (``/proc``, ``/sys``, ``/etc``, ``/var/lib/kubelet``, ``/host-*``, ``/dev``,
``/run``) are not machine-specific and are not matched.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

# An absolute path that starts with a user's home, a build or work area, or a scratch name in
# /tmp; a relative path such as a fixture's host root (``fixtures/<host>/root``) is not one.
MACHINE_PATH = re.compile(r"(?<![\w.\-~$}>/])/(?:root|home|work|Users|mnt/[a-z])(?:/|\b)|(?<![\w.\-~$}>/])/tmp/[\w.-]")


def offenders(text: str) -> list[str]:
    return [m.group(0) for m in MACHINE_PATH.finditer(text)]


def test_the_pattern_finds_machine_paths_and_leaves_host_paths() -> None:
    # written as (prefix, top directory, rest) so that this file names no such path itself
    for pre, top, rest in (("see ", "work", "/shared/reference/x.md"), ("", "root", "/.cache/nfd"),
                           ("cd ", "home", "/ci/src"), ("-o ", "tmp", "/master.prof"), ("path: ", "Users", "/me/nfd")):
        bad = f"{pre}/{top}{rest}"
        assert offenders(bad), bad
    for ok in ("/proc/cpuinfo", "/sys/bus/pci", "/etc/kubernetes/node-feature-discovery", "/var/lib/kubelet",
               "tests/fixtures/sysfs/<host>/root", "fixtures/gpu-server/root/sys", "/host-sys", "/dev/kmsg",
               "https://example.com/work/x", "${HOME}/work/x"):
        assert not offenders(ok), ok


def test_no_tracked_file_names_a_machine_path() -> None:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
    files = [f for f in out.stdout.decode().split("\0") if f]
    assert len(files) > 100, "git ls-files found no tracked files"
    found: list[str] = []
    for rel in files:
        path = ROOT / rel
        if not path.is_file() or path.stat().st_size > 2 << 20:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for n, line in enumerate(text.splitlines(), 1):
            for hit in offenders(line):
                found.append(f"{rel}:{n}: {hit!r}")
    assert found == [], "machine-specific paths in tracked files:\n" + "\n".join(found)
