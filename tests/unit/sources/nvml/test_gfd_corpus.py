"""The nvml source against gpu-feature-discovery's own labels: ../shared/conformance/gfd.

Its runner (`run.py`) runs `nfd export labels --sources nvml` per case on fake NVML and compares
the `nvidia.com/*` labels with those GFD's Go code produced for the same answers; every counted
case must be identical. The corpus is read from ../shared at test time, never copied here.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

CORPUS = Path(__file__).resolve().parents[4].parent / "shared" / "conformance" / "gfd"


def test_gfd_corpus_identical(tmp_path: Path) -> None:
    if not (CORPUS / "run.py").exists():
        pytest.skip(f"{CORPUS} is not there (the GFD corpus is read from ../shared at test time)")
    nfd = tmp_path / "nfd"  # this interpreter's nfd, whatever is on PATH
    nfd.write_text(f"#!/bin/sh\nexec {sys.executable} -m nfd.cli \"$@\"\n")
    nfd.chmod(0o755)
    out = subprocess.run([sys.executable, str(CORPUS / "run.py"), str(CORPUS), str(nfd), "-q", "-j", "2"],
                         capture_output=True, text=True, timeout=900)
    m = re.search(r"gfd: (\d+)/(\d+) cases identical", out.stdout)
    assert m, out.stdout[-2000:] + out.stderr[-2000:]
    identical, counted = int(m.group(1)), int(m.group(2))
    assert counted > 0 and identical == counted, out.stdout[-4000:]
    assert out.returncode == 0
