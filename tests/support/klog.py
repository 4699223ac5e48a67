"""Read klog text lines as log pipelines written for upstream do: the header, the quoted
message and the key=value pairs (docs/logging.md)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

HEADER = re.compile(r'^([IWEF])(\d{4}) (\d{2}:\d{2}:\d{2}\.\d{6}) +(\d+) ([^ :]+):(\d+)\] "((?:[^"\\]|\\.)*)"(.*)$')
_KV = re.compile(r' (\w+)=("(?:[^"\\]|\\.)*"|<\n(?:\t.*\n)* >|\S+)')


@dataclass
class Line:
    severity: str
    file: str
    msg: str
    kv: dict[str, str]  # quoted values unquoted, multi-line values without their tabs, others as written
    raw: str


def parse(text: str) -> list[Line]:
    """The structured lines of ``text`` (plain-text lines are skipped); a multi-line value's
    lines (``key=<`` ... `` >``) belong to its record."""
    out: list[Line] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = HEADER.match(lines[i])
        i += 1
        if not m:
            continue
        rest = m.group(8)
        raw = lines[i - 1]
        if rest.endswith("=<"):  # a multi-line value: up to the " >" line
            while i < len(lines) and lines[i] != " >":
                rest += "\n" + lines[i]
                i += 1
            rest += "\n >"
            i += 1
        kv = {}
        for k, v in _KV.findall(rest):
            if v.startswith('"'):
                v = json.loads(v)  # Go's strconv.Quote of printable text reads as JSON
            elif v.startswith("<\n"):
                v = "\n".join(x[1:] for x in v[2:-3].split("\n"))
            kv[k] = v
        out.append(Line(m.group(1), m.group(5), json.loads(f'"{m.group(7)}"'), kv, raw))
    return out


def find(text: str, msg: str, **keys: str) -> list[Line]:
    """The lines with message ``msg`` whose keys include ``keys`` (values compared as text)."""
    return [ln for ln in parse(text) if ln.msg == msg and all(ln.kv.get(k) == v for k, v in keys.items())]
