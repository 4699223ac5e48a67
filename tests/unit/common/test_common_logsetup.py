from __future__ import annotations

import re
import subprocess
import sys
from types import SimpleNamespace

import pytest

from nfd.common.goflags import klog_header_options

_PROG = """
import logging, sys
from nfd.common.logsetup import setup_logging
setup_logging(int(sys.argv[1]), debug_from=int(sys.argv[2]), skip_headers=sys.argv[3] == "1",
              add_dir_header=sys.argv[4] == "1")
logging.getLogger("nfd.x").debug("dbg")
logging.getLogger("nfd.x").info("inf")
logging.getLogger("nfd.x").warning("wrn")
logging.getLogger("asyncio").info("aio")
"""

# klog's text header: Lmmdd hh:mm:ss.uuuuuu threadid file:line] msg
KLOG = re.compile(r"^([IWEF])(\d{2})(\d{2}) (\d{2}):(\d{2}):(\d{2})\.(\d{6}) +(\d+) ([^ ]+):(\d+)\] (.*)$")


def _run(v: int, debug_from: int, skip: bool = False, add_dir: bool = False) -> list[str]:
    return subprocess.run([sys.executable, "-c", _PROG, str(v), str(debug_from), str(int(skip)), str(int(add_dir))],
                          capture_output=True, text=True, check=True).stderr.splitlines()


@pytest.mark.parametrize(
    ("v", "debug_from", "seen"),
    [(0, 2, {"inf", "wrn"}), (2, 2, {"dbg", "inf", "wrn"}), (2, 3, {"inf", "wrn"}), (4, 2, {"dbg", "inf", "wrn", "aio"})],
)
def test_levels_and_klog_format(v: int, debug_from: int, seen: set[str]) -> None:
    lines = _run(v, debug_from)
    parsed = [KLOG.match(line) for line in lines]
    assert all(parsed), lines
    assert {m.group(11) for m in parsed if m} == seen
    by_msg = {m.group(11): m for m in parsed if m}
    assert by_msg["inf"].group(1) == "I" and by_msg["wrn"].group(1) == "W"
    assert by_msg["inf"].group(9) == "<string>"  # the source file, as klog's file:line


def test_skip_headers_and_dir_header() -> None:
    assert _run(0, 2, skip=True) == ["inf", "wrn"]
    assert all("/<string>:" in line for line in _run(0, 2, add_dir=True))


def test_header_options_flags_win_over_config() -> None:
    none = SimpleNamespace(skip_headers=None, add_dir_header=None)
    assert klog_header_options(none, {"skipHeaders": "true"}) == {"skip_headers": True, "add_dir_header": False}
    assert klog_header_options(SimpleNamespace(skip_headers=False, add_dir_header=None), {"skipHeaders": True}) \
        == {"skip_headers": False, "add_dir_header": False}
    assert klog_header_options(none, {"add_dir_header": True})["add_dir_header"] is True


_STRUCTURED = """
import sys
from nfd.common.logsetup import GoDuration, Dump, klogger, kobj, setup_logging
setup_logging(int(sys.argv[1]))
k = klogger("nfd.x")
k.info_s("node updated", nodeName="n-1", labelsAdded=2, ok=True, ratio=0.5, none=None)
k.info_s("quoted", text='say "hi"\\tnow', ref=kobj("ns", "nf"), cluster=kobj("", "r"), took=GoDuration(0.0015))
k.info_s("json", configuration={"b": [1, "<x>"], "a": {}})
k.info_s("dump", v=1, labels=Dump({"l/b": "true", "l/a": "x"}))
k.error_s(ValueError("bad op"), "failed to process rule", ruleName="r1")
k.info_s("deep", v=4)
"""


def _run_structured(v: int) -> list[str]:
    return subprocess.run([sys.executable, "-c", _STRUCTURED, str(v)], capture_output=True, text=True,
                          check=True).stderr.splitlines()


def test_structured_lines_as_klog_serializes_them() -> None:
    """klog's text format: the message quoted, strings/errors/Stringers quoted as strconv.Quote,
    numbers and booleans bare, maps as Go's JSON (keys sorted), multi-line values as key=<...>."""
    lines = _run_structured(1)
    body = [KLOG.match(line).group(11) if KLOG.match(line) else line for line in lines]
    assert body == [
        '"node updated" nodeName="n-1" labelsAdded=2 ok=true ratio=0.5 none=null',
        '"quoted" text="say \\"hi\\"\\tnow" ref="ns/nf" cluster="r" took="1.5ms"',
        '"json" configuration={"a":{},"b":[1,"\\u003cx\\u003e"]}',
        '"dump" labels=<',
        '\tl/a: x',
        '\tl/b: "true"',
        ' >',
        '"failed to process rule" err="bad op" ruleName="r1"',
    ]
    assert KLOG.match(lines[-1]).group(1) == "E"


@pytest.mark.parametrize(("v", "count"), [(0, 4), (1, 5), (4, 6)])
def test_v_levels(v: int, count: int) -> None:
    """V(n) lines from -v=n on; errors always."""
    msgs = [line for line in _run_structured(v) if KLOG.match(line)]
    assert len(msgs) == count, msgs


def test_no_verbosity_logs_the_http2_headers_and_their_token() -> None:
    """h2/hpack debug records carry every header, the bearer token included: never shown."""
    code = r'''
import logging, sys
import hpack
from nfd.common.logsetup import setup_logging
setup_logging(10)
enc = hpack.Encoder()
dec = hpack.Decoder()
dec.decode(enc.encode([(":method", "GET"), ("authorization", "Bearer s3cr3t-token")]))
logging.getLogger("nfd.test").debug("visible debug line")
'''
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "visible debug line" in out.stderr  # -v=10 shows debug records
    assert "s3cr3t-token" not in out.stderr and "authorization" not in out.stderr.lower()
