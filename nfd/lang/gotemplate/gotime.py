"""Go's time.Time as Sprig's date functions use it: Format/Parse layouts, Duration strings."""

from __future__ import annotations

import re
import time as _time
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from typing import Any

from .errors import FuncError
from .values import GoObject, Int64

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_START = _time.monotonic()
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
           "October", "November", "December"]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


def local_zone() -> tzinfo:
    return datetime.now().astimezone().tzinfo or UTC


def load_location(name: str) -> tzinfo | None:
    """time.LoadLocation: "" and "UTC" are UTC, "Local" the host zone, else the tz database."""
    if name in ("", "UTC"):
        return UTC
    if name == "Local":
        return local_zone()
    try:
        from zoneinfo import ZoneInfo

        return ZoneInfo(name)
    except Exception:
        return None


class GoTime(GoObject):
    """An instant with nanoseconds and a zone; `mono` marks values from now() (printed with m=)."""

    type_name = "time.Time"

    def __init__(self, dt: datetime, nanos: int = 0, *, mono: float | None = None) -> None:
        self.dt = dt.replace(microsecond=0)
        self.nanos = nanos
        self.mono = mono

    @classmethod
    def from_unix(cls, sec: int, tz: tzinfo) -> GoTime:
        return cls((_EPOCH + timedelta(seconds=sec)).astimezone(tz))

    @classmethod
    def now(cls) -> GoTime:
        ns = _time.time_ns()
        dt = (_EPOCH + timedelta(seconds=ns // 10**9)).astimezone(local_zone())
        return cls(dt, ns % 10**9, mono=_time.monotonic() - _START)

    def unix(self) -> int:
        d = self.dt - _EPOCH
        return d.days * 86400 + d.seconds

    def unix_nano(self) -> int:
        return self.unix() * 10**9 + self.nanos

    def in_zone(self, tz: tzinfo) -> GoTime:
        return GoTime(self.dt.astimezone(tz), self.nanos)

    def add_ns(self, ns: int) -> GoTime:
        total = self.nanos + ns
        return GoTime(self.dt + timedelta(seconds=total // 10**9), total % 10**9)

    def go_string(self) -> str:
        s = format_time(self, "2006-01-02 15:04:05.999999999 -0700 MST")
        if self.mono is not None:
            s += f" m=+{self.mono:.9f}"
        return s

    def field(self, name: str) -> Any:
        getters = {
            "Year": lambda: self.dt.year,
            "Day": lambda: self.dt.day,
            "Hour": lambda: self.dt.hour,
            "Minute": lambda: self.dt.minute,
            "Second": lambda: self.dt.second,
            "Nanosecond": lambda: self.nanos,
            "YearDay": lambda: self.dt.timetuple().tm_yday,
            "Unix": lambda: Int64(self.unix()),
            "UnixNano": lambda: Int64(self.unix_nano()),
            "UnixMilli": lambda: Int64(self.unix_nano() // 10**6),
            "String": self.go_string,
            "UTC": lambda: self.in_zone(UTC),
            "Local": lambda: self.in_zone(local_zone()),
            "IsZero": lambda: self.unix() == _ZERO_UNIX and self.nanos == 0,
        }
        g = getters.get(name)
        if g is None:
            raise KeyError(name)
        return g()


_ZERO_UNIX = -62135596800  # 0001-01-01T00:00:00Z


def zero_time() -> GoTime:
    return GoTime(datetime(1, 1, 1, tzinfo=UTC))


# --- layouts ---------------------------------------------------------------

_STD_WORDS = [
    ("January", "Month"), ("Jan", "Mon3"), ("Monday", "Weekday"), ("Mon", "Wd3"), ("MST", "TZ"),
    ("2006", "Year"), ("Z07:00:00", "ZColonSecTZ"), ("Z070000", "ZSecTZ"), ("Z07:00", "ZColonTZ"),
    ("Z0700", "ZTZ"), ("Z07", "ZShortTZ"), ("-07:00:00", "ColonSecTZ"), ("-070000", "SecTZ"),
    ("-07:00", "ColonTZ"), ("-0700", "NumTZ"), ("-07", "ShortTZ"),
]


_ZERO_KINDS = ["ZeroMonth", "ZeroDay", "ZeroHour12", "ZeroMinute", "ZeroSecond", "Year2"]


def _std_at(rest: str) -> tuple[str, int, str] | None:
    """The layout element at the start of `rest` as (kind, length, literal prefix), following
    time.nextStdChunk; None when `rest` starts with literal text."""
    c = rest[0]
    if c == "J" and rest.startswith("Jan"):
        if rest.startswith("January"):
            return "Month", 7, ""
        if not rest[3:4].islower():
            return "Mon3", 3, ""
    elif c == "M":
        if rest.startswith("Monday"):
            return "Weekday", 6, ""
        if rest.startswith("Mon") and not rest[3:4].islower():
            return "Wd3", 3, ""
        if rest.startswith("MST"):
            return "TZ", 3, ""
    elif c == "0":
        if len(rest) >= 2 and "1" <= rest[1] <= "6":
            return _ZERO_KINDS[int(rest[1]) - 1], 2, ""
        if rest.startswith("002"):
            return "ZeroYearDay", 3, ""
    elif c == "1":
        return ("Hour", 2, "") if rest.startswith("15") else ("NumMonth", 1, "")
    elif c == "2":
        return ("Year", 4, "") if rest.startswith("2006") else ("Day", 1, "")
    elif c == "_":
        if rest.startswith("_2006"):
            return "Year", 5, "_"
        if rest.startswith("_2"):
            return "UnderDay", 2, ""
        if rest.startswith("__2"):
            return "UnderYearDay", 3, ""
    elif c in "345":
        return {"3": "Hour12", "4": "Minute", "5": "Second"}[c], 1, ""
    elif rest.startswith(("PM", "pm")):
        return rest[:2], 2, ""
    elif c in "-Z":
        for word, kind in _STD_WORDS:
            if rest.startswith(word):
                return kind, len(word), ""
    elif c in ".," and len(rest) > 1 and rest[1] in "09":
        j = 1
        while j < len(rest) and rest[j] == rest[1]:
            j += 1
        if not (j < len(rest) and rest[j].isdigit()):
            return ("Frac0" if rest[1] == "0" else "Frac9"), j, ""
    return None


def _chunks(layout: str) -> list[tuple[str, str]]:
    """Split a Go layout into (kind, text) pieces; kind "" is literal text."""
    out: list[tuple[str, str]] = []
    lit: list[str] = []
    i = 0
    while i < len(layout):
        hit = _std_at(layout[i:])
        if hit is None:
            lit.append(layout[i])
            i += 1
            continue
        kind, n, prefix = hit
        lit.append(prefix)
        if "".join(lit):
            out.append(("", "".join(lit)))
        lit = []
        out.append((kind, layout[i + len(prefix) : i + n]))
        i += n
    if lit:
        out.append(("", "".join(lit)))
    return out


def _offset(t: GoTime) -> int:
    off = t.dt.utcoffset()
    return int(off.total_seconds()) if off is not None else 0


def _zone_name(t: GoTime) -> str:
    tz = t.dt.tzinfo
    if tz is UTC:
        return "UTC"
    name = t.dt.tzname() or ""
    if name.startswith("UTC") and name != "UTC":
        return ""  # a fixed offset without an abbreviation
    return name


def _fmt_offset(off: int, kind: str) -> str:
    if kind.startswith("Z") and off == 0:
        return "Z"
    sign = "-" if off < 0 else "+"
    off = abs(off)
    h, m, s = off // 3600, off // 60 % 60, off % 60
    base = kind.lstrip("Z")
    if base in ("ShortTZ",):
        return f"{sign}{h:02d}"
    if base in ("NumTZ", "TZ"):
        return f"{sign}{h:02d}{m:02d}"
    if base == "ColonTZ":
        return f"{sign}{h:02d}:{m:02d}"
    if base == "SecTZ":
        return f"{sign}{h:02d}{m:02d}{s:02d}"
    return f"{sign}{h:02d}:{m:02d}:{s:02d}"  # ColonSecTZ


def format_time(t: GoTime, layout: str) -> str:
    """time.Time.Format."""
    dt = t.dt
    out: list[str] = []
    for kind, text in _chunks(layout):
        if kind == "":
            out.append(text)
        elif kind == "Year":
            y = dt.year
            out.append(f"{y:04d}")
        elif kind == "Year2":
            out.append(f"{dt.year % 100:02d}")
        elif kind == "Month":
            out.append(_MONTHS[dt.month - 1])
        elif kind == "Mon3":
            out.append(_MONTHS[dt.month - 1][:3])
        elif kind == "NumMonth":
            out.append(str(dt.month))
        elif kind == "ZeroMonth":
            out.append(f"{dt.month:02d}")
        elif kind == "Weekday":
            out.append(_DAYS[dt.weekday()])
        elif kind == "Wd3":
            out.append(_DAYS[dt.weekday()][:3])
        elif kind == "Day":
            out.append(str(dt.day))
        elif kind == "UnderDay":
            out.append(f"{dt.day:2d}")
        elif kind == "ZeroDay":
            out.append(f"{dt.day:02d}")
        elif kind == "UnderYearDay":
            out.append(f"{dt.timetuple().tm_yday:3d}")
        elif kind == "ZeroYearDay":
            out.append(f"{dt.timetuple().tm_yday:03d}")
        elif kind == "Hour":
            out.append(f"{dt.hour:02d}")
        elif kind in ("Hour12", "ZeroHour12"):
            h = dt.hour % 12 or 12
            out.append(str(h) if kind == "Hour12" else f"{h:02d}")
        elif kind == "Minute":
            out.append(str(dt.minute))
        elif kind == "ZeroMinute":
            out.append(f"{dt.minute:02d}")
        elif kind == "Second":
            out.append(str(dt.second))
        elif kind == "ZeroSecond":
            out.append(f"{dt.second:02d}")
        elif kind == "PM":
            out.append("PM" if dt.hour >= 12 else "AM")
        elif kind == "pm":
            out.append("pm" if dt.hour >= 12 else "am")
        elif kind == "TZ":
            name = _zone_name(t)
            out.append(name or _fmt_offset(_offset(t), "NumTZ"))
        elif kind.endswith("TZ"):
            out.append(_fmt_offset(_offset(t), kind))
        elif kind in ("Frac0", "Frac9"):
            digits = len(text) - 1
            frac = f"{t.nanos:09d}"[:digits]
            if kind == "Frac9":
                frac = frac.rstrip("0")
                out.append(text[0] + frac if frac else "")
            else:
                out.append(text[0] + frac)
    return "".join(out)


class _ParseError(Exception):
    pass


def parse_time(layout: str, value: str, tz: tzinfo) -> GoTime:
    """time.ParseInLocation for the common layout elements."""
    def fail(elem: str, rest: str) -> FuncError:
        return FuncError(f'parsing time {_q(value)} as {_q(layout)}: cannot parse {_q(rest)} as {_q(elem)}')

    year, month, day, hour, minute, second, nanos = 1, 1, 1, 0, 0, 0, 0
    pm: bool | None = None
    offset: int | None = None
    zone_abbr = ""
    s = value
    for kind, text in _chunks(layout):
        if kind == "":
            if not s.startswith(text):
                raise fail(text, s)
            s = s[len(text):]
            continue
        m: re.Match[str] | None
        if kind in ("Year",):
            m = re.match(r"\d{4}", s)
            if not m:
                raise fail(text, s)
            year = int(m.group())
        elif kind == "Year2":
            m = re.match(r"\d{2}", s)
            if not m:
                raise fail(text, s)
            y = int(m.group())
            year = y + (1900 if y >= 69 else 2000)
        elif kind in ("Month", "Mon3"):
            m = None
            for i, name in enumerate(_MONTHS):
                cand = name if kind == "Month" else name[:3]
                if s[: len(cand)].lower() == cand.lower():
                    month = i + 1
                    m = re.match(re.escape(s[: len(cand)]), s)
                    break
            if not m:
                raise fail(text, s)
        elif kind in ("Weekday", "Wd3"):
            m = None
            for name in _DAYS:
                cand = name if kind == "Weekday" else name[:3]
                if s[: len(cand)].lower() == cand.lower():
                    m = re.match(re.escape(s[: len(cand)]), s)
                    break
            if not m:
                raise fail(text, s)
        elif kind in ("NumMonth", "Day", "Hour12", "Minute", "Second"):
            m = re.match(r"\d\d?", s)
            if not m:
                raise fail(text, s)
            v = int(m.group())
            if kind == "NumMonth":
                month = v
            elif kind == "Day":
                day = v
            elif kind == "Hour12":
                hour = v
            elif kind == "Minute":
                minute = v
            else:
                second = v
        elif kind in ("ZeroMonth", "ZeroDay", "ZeroHour12", "ZeroMinute", "ZeroSecond", "Hour"):
            m = re.match(r"\d\d", s)
            if not m:
                raise fail(text, s)
            v = int(m.group())
            if kind == "ZeroMonth":
                month = v
            elif kind == "ZeroDay":
                day = v
            elif kind in ("ZeroHour12", "Hour"):
                hour = v
            elif kind == "ZeroMinute":
                minute = v
            else:
                second = v
        elif kind == "UnderDay":
            m = re.match(r" ?\d\d?", s)
            if not m:
                raise fail(text, s)
            day = int(m.group())
        elif kind in ("PM", "pm"):
            m = re.match(r"(?i)AM|PM", s)
            if not m:
                raise fail(text, s)
            pm = m.group().upper() == "PM"
        elif kind == "TZ":
            m = re.match(r"UTC|[A-Z]{3,5}|[+-]\d{4}", s)
            if not m:
                raise fail(text, s)
            zone_abbr = m.group()
            if zone_abbr == "UTC":
                offset = 0
        elif kind.endswith("TZ"):
            if kind.startswith("Z") and s.startswith("Z"):
                offset = 0
                m = re.match("Z", s)
            else:
                m = re.match(r"([+-])(\d\d)(?::?(\d\d))?(?::?(\d\d))?", s)
                if not m:
                    raise fail(text, s)
                sign = -1 if m.group(1) == "-" else 1
                offset = sign * (int(m.group(2)) * 3600 + int(m.group(3) or 0) * 60 + int(m.group(4) or 0))
        elif kind in ("Frac0", "Frac9"):
            m = re.match(r"[.,](\d+)", s) if kind == "Frac9" else re.match(r"[.,](\d{" + str(len(text) - 1) + "})", s)
            if not m:
                if kind == "Frac9":
                    continue
                raise fail(text, s)
            nanos = int((m.group(1) + "000000000")[:9])
        else:
            raise fail(text, s)
        assert m is not None
        s = s[m.end():]
        if kind in ("Second", "ZeroSecond"):
            fm = re.match(r"[.,](\d+)", s)  # Go accepts fractional seconds after seconds
            if fm and not any(k.startswith("Frac") for k, _ in _chunks(layout)):
                nanos = int((fm.group(1) + "000000000")[:9])
                s = s[fm.end():]
    if s:
        raise FuncError(f"parsing time {_q(value)}: extra text: {_q(s)}")
    if pm is not None and hour <= 12:
        if pm and hour < 12:
            hour += 12
        elif not pm and hour == 12:
            hour = 0
    if not 1 <= month <= 12:
        raise FuncError(f"parsing time {_q(value)}: month out of range")
    try:
        zone: tzinfo = timezone(timedelta(seconds=offset)) if offset is not None else tz
        if offset == 0 and (zone_abbr in ("", "UTC")):
            zone = UTC
        dt = datetime(year, month, day, hour, minute, second, tzinfo=zone)
    except ValueError:
        raise FuncError(f"parsing time {_q(value)}: day out of range") from None
    return GoTime(dt, nanos)


def _q(s: str) -> str:
    from .values import go_quote

    return go_quote(s)


# --- durations ---------------------------------------------------------------

_UNITS = {"ns": 1, "us": 1000, "µs": 1000, "μs": 1000, "ms": 10**6, "s": 10**9, "m": 60 * 10**9, "h": 3600 * 10**9}


def parse_duration(s: str) -> int:
    """time.ParseDuration → nanoseconds."""
    orig = s
    neg = False
    if s[:1] in "+-":
        neg = s[0] == "-"
        s = s[1:]
    if s == "0":
        return 0
    if not s:
        raise FuncError(f"time: invalid duration {_q(orig)}")
    total = 0.0
    for m in re.finditer(r"(\d*\.?\d*)(ns|us|µs|μs|ms|s|m|h)?", s):
        if not m.group(0):
            continue
        num, unit = m.group(1), m.group(2)
        if num in ("", "."):
            raise FuncError(f"time: invalid duration {_q(orig)}")
        if unit is None:
            raise FuncError(f"time: missing unit in duration {_q(orig)}")
        total += float(num) * _UNITS[unit]
    if not re.fullmatch(r"((\d*\.?\d*)(ns|us|µs|μs|ms|s|m|h))+", s):
        raise FuncError(f"time: invalid duration {_q(orig)}")
    v = int(round(total))
    return -v if neg else v


def format_duration(ns: int) -> str:
    """time.Duration.String: 1h2m3.5s, 1.5ms, 0s."""
    if ns == 0:
        return "0s"
    neg = ns < 0
    u = -ns if neg else ns
    if u < 10**9:
        for unit, size in (("ns", 1), ("µs", 1000), ("ms", 10**6)):
            if u < size * 1000:
                out = _frac(u, size) + unit
                break
    else:
        h, rem = divmod(u, 3600 * 10**9)
        m, rem = divmod(rem, 60 * 10**9)
        out = ""
        if h:
            out += f"{h}h"
        if h or m:
            out += f"{m}m"
        out += _frac(rem, 10**9) + "s"
    return ("-" if neg else "") + out


def _frac(v: int, size: int) -> str:
    whole, frac = divmod(v, size)
    if not frac:
        return str(whole)
    digits = len(str(size)) - 1
    return f"{whole}." + f"{frac:0{digits}d}".rstrip("0")
