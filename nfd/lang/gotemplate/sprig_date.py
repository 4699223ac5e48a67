"""Sprig date functions (date, dateInZone, toDate, dateModify, duration, ago...) over gotime."""

from __future__ import annotations

import re
from datetime import UTC
from typing import Any

from nfd.lang.gostd.time import load_location

from . import funcs as K
from .errors import FuncError
from .funcs import Func
from .gotime import (
    GoTime,
    format_duration,
    format_time,
    local_zone,
    parse_duration,
    parse_time,
    zero_time,
)
from .values import Int64


def _as_time(v: Any, *, ints: tuple[type, ...] = (int,)) -> GoTime:
    """Sprig's type switch: a time, or unix seconds as int/int64; anything else is now."""
    if isinstance(v, GoTime):
        return v
    if isinstance(v, int) and isinstance(v, ints) and not isinstance(v, bool):
        return GoTime.from_unix(int(v), local_zone())
    return GoTime.now()


def date_in_zone(fmt: str, date: Any, zone: str) -> str:
    tz = load_location(zone) or UTC
    return format_time(_as_time(date).in_zone(tz), fmt)


def date(fmt: str, d: Any) -> str:
    return date_in_zone(fmt, d, "Local")


def html_date(d: Any) -> str:
    return date_in_zone("2006-01-02", d, "Local")


def html_date_in_zone(d: Any, zone: str) -> str:
    return date_in_zone("2006-01-02", d, zone)


def date_modify(fmt: str, d: Any) -> Any:
    try:
        return d.add_ns(parse_duration(fmt))
    except FuncError:
        return d


def must_date_modify(fmt: str, d: Any) -> Any:
    return d.add_ns(parse_duration(fmt))


def ago(d: Any) -> str:
    t = _as_time(d)
    ns = GoTime.now().unix_nano() - t.unix_nano()
    return format_duration((ns + 500_000_000) // 10**9 * 10**9 if ns >= 0 else -((-ns + 500_000_000) // 10**9 * 10**9))


def duration(sec: Any) -> str:
    n = 0
    if isinstance(sec, str):
        n = int(sec) if re.fullmatch(r"[+-]?\d+", sec) else 0
    elif isinstance(sec, Int64):  # only int64 is accepted (a template int literal is int: 0s)
        n = int(sec)
    return format_duration(n * 10**9)


def duration_round(d: Any) -> str:
    ns = 0
    if isinstance(d, str):
        try:
            ns = parse_duration(d)
        except FuncError:
            ns = 0
    elif isinstance(d, Int64):
        ns = int(d)
    elif isinstance(d, GoTime):
        ns = GoTime.now().unix_nano() - d.unix_nano()
    u = abs(ns)
    hour = 3600 * 10**9
    for size, unit in ((hour * 24 * 365, "y"), (hour * 24 * 30, "mo"), (hour * 24, "d"), (hour, "h"),
                       (60 * 10**9, "m"), (10**9, "s")):
        if u > size:
            return f"{u // size}{unit}"
    return "0s"


def to_date(fmt: str, s: str) -> GoTime:
    try:
        return parse_time(fmt, s, local_zone())
    except FuncError:
        return zero_time()


def must_to_date(fmt: str, s: str) -> GoTime:
    return parse_time(fmt, s, local_zone())


def unix_epoch(d: Any) -> str:
    if not isinstance(d, GoTime):
        raise FuncError("wrong type for value; expected time.Time")
    return str(d.unix())


def _f(fn: Any, *params: str) -> Func:
    return Func(fn, tuple(params))


A, S = K.ANY, K.STR
T = K.ANY  # time.Time parameters: checked by the functions themselves

DATE_FUNCS: dict[str, Func] = {
    "ago": _f(ago, A),
    "date": _f(date, S, A),
    "date_in_zone": _f(date_in_zone, S, A, S),
    "date_modify": _f(date_modify, S, T),
    "dateInZone": _f(date_in_zone, S, A, S),
    "dateModify": _f(date_modify, S, T),
    "duration": _f(duration, A),
    "durationRound": _f(duration_round, A),
    "htmlDate": _f(html_date, A),
    "htmlDateInZone": _f(html_date_in_zone, A, S),
    "must_date_modify": _f(must_date_modify, S, T),
    "mustDateModify": _f(must_date_modify, S, T),
    "mustToDate": _f(must_to_date, S, S),
    "now": _f(GoTime.now),
    "toDate": _f(to_date, S, S),
    "unixEpoch": _f(unix_epoch, T),
}
