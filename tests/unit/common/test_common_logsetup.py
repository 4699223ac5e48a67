from __future__ import annotations

import subprocess
import sys

import pytest

_PROG = """
import logging, sys
from nfd.common.logsetup import setup_logging
setup_logging(int(sys.argv[1]), debug_from=int(sys.argv[2]))
logging.getLogger("nfd.x").debug("dbg")
logging.getLogger("nfd.x").info("inf")
logging.getLogger("aiohttp.client").info("aio")
"""


@pytest.mark.parametrize(
    ("v", "debug_from", "seen"),
    [(0, 2, {"inf"}), (2, 2, {"dbg", "inf"}), (2, 3, {"inf"}), (4, 2, {"dbg", "inf", "aio"})],
)
def test_levels_and_format(v: int, debug_from: int, seen: set[str]) -> None:
    err = subprocess.run(
        [sys.executable, "-c", _PROG, str(v), str(debug_from)], capture_output=True, text=True, check=True
    ).stderr
    lines = err.splitlines()
    assert {line.rsplit("] ", 1)[1] for line in lines} == seen
    assert any(" I nfd.x] inf" in line for line in lines)
