"""Go's time.Time as Sprig's date functions use it: Format/Parse layouts, Duration strings."""

from __future__ import annotations

import re
import time as _time
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from typing import Any

from . import funcs as K
from .errors import FuncError
from .funcs import Method
from .values import GoObject, Int64, go_quote

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

    def go_json(self) -> str:
        """time.Time.MarshalJSON (RFC 3339 with nanoseconds)."""
        return format_time(self, "2006-01-02T15:04:05.999999999Z07:00")

    def go_syntax(self) -> str:
        """time.Time.GoString."""
        dt = self.dt
        s = f"time.Date({dt.year}, time.{_MONTHS[dt.month - 1]}, {dt.day}, {dt.hour}, {dt.minute}, {dt.second}, {self.nanos}, "
        loc = self.location()
        if loc.name == "UTC":
            return s + "time.UTC)"
        if loc.name == "Local":
            return s + "time.Local)"
        return s + f"time.Location({go_quote(loc.name)}))"

    def go_string(self) -> str:
        s = format_time(self, "2006-01-02 15:04:05.999999999 -0700 MST")
        if self.mono is not None:
            s += f" m=+{self.mono:.9f}"
        return s

    def method(self, name: str) -> Method | None:
        return _TIME_METHODS.get(name)

    def field(self, name: str) -> Any:
        m = self.method(name)
        if m is None or m.params or m.bad:
            raise KeyError(name)
        return m.fn(self)

    def location(self) -> Location:
        tz = self.dt.tzinfo or UTC
        if tz is UTC:
            return Location("UTC", UTC)
        key = getattr(tz, "key", None)
        if isinstance(key, str):
            return Location(key, tz)
        if tz is local_zone() or tz == local_zone():
            return Location("Local", tz)
        return Location("", tz)  # a fixed zone from a parsed offset


class Location(GoObject):
    """*time.Location: printed as its name ("" for a zone parsed from an offset)."""

    type_name = "*time.Location"

    def __init__(self, name: str, tz: tzinfo) -> None:
        self.name, self.tz = name, tz

    def go_string(self) -> str:
        return self.name

    def method(self, name: str) -> Method | None:
        return _LOCATION_METHODS.get(name)

    def field(self, name: str) -> Any:
        if name != "String":
            raise KeyError(name)
        return self.name


class _Named(int, GoObject):
    """A Go integer type with a String method (time.Month, time.Weekday, time.Duration)."""

    go_type = "int"
    go_kind = "int"
    type_name = "int"

    def go_string(self) -> str:
        return str(int(self))

    def go_syntax(self) -> str:
        return str(int(self))

    def method(self, name: str) -> Method | None:
        return _STRINGER if name == "String" else None

    def field(self, name: str) -> Any:
        if name != "String":
            raise KeyError(name)
        return self.go_string()


class Month(_Named):
    go_type = type_name = "time.Month"

    def go_string(self) -> str:
        return _MONTHS[self - 1] if 1 <= self <= 12 else f"%!Month({int(self)})"


class Weekday(_Named):
    go_type = type_name = "time.Weekday"

    def go_string(self) -> str:
        return ["Sunday", *_DAYS[:6]][self] if 0 <= self <= 6 else f"%!Weekday({int(self)})"


class Duration(_Named):
    go_type = type_name = "time.Duration"
    go_kind = "int64"

    def go_string(self) -> str:
        return format_duration(int(self))

    def method(self, name: str) -> Method | None:
        return _DURATION_METHODS.get(name)

    def field(self, name: str) -> Any:
        m = self.method(name)
        if m is None or m.params:
            raise KeyError(name)
        return m.fn(self)


_STRINGER = Method(lambda v: v.go_string())
_I64 = (1 << 63) - 1


def _dur(ns: int) -> Duration:
    return Duration(max(-_I64 - 1, min(_I64, ns)))


def _round_dur(d: int, m: int, *, trunc: bool) -> Duration:
    """Duration.Round/Truncate (halfway values away from zero)."""
    if m <= 0:
        return Duration(d)
    r = abs(d) % m
    if trunc:
        return Duration(d - (r if d >= 0 else -r))
    if d < 0:
        r = -r
        return _dur(d - r - m) if -r + -r >= m else Duration(d - r)
    return _dur(d + m - r) if r + r >= m else Duration(d - r)


def _time_round(t: GoTime, d: int, *, trunc: bool) -> GoTime:
    """Time.Round/Truncate: relative to the zero time, ignoring the zone."""
    if d <= 0:
        return GoTime(t.dt, t.nanos)
    since_zero = (t.unix() - _ZERO_UNIX) * 10**9 + t.nanos
    r = since_zero % d
    if trunc or r + r < d:
        return t.add_ns(-r)
    return t.add_ns(d - r)


def _add_date(t: GoTime, years: int, months: int, days: int) -> GoTime:
    """Time.AddDate: normalizes like time.Date (Oct 31 + 1 month = Dec 1)."""
    dt = t.dt
    y, m = dt.year + years, dt.month - 1 + months
    y += m // 12
    m = m % 12 + 1
    base = datetime(y, m, 1, dt.hour, dt.minute, dt.second, tzinfo=dt.tzinfo)
    out = base + timedelta(days=dt.day - 1 + days)
    # Wall clock kept in the zone (time.Date semantics), not elapsed time.
    out = out.replace(tzinfo=None).replace(tzinfo=dt.tzinfo)
    return GoTime(out, t.nanos)


def _sub(a: GoTime, b: GoTime) -> Duration:
    return _dur(a.unix_nano() - b.unix_nano())


def _cmp(a: GoTime, b: GoTime) -> int:
    x, y = a.unix_nano(), b.unix_nano()
    return (x > y) - (x < y)


def _bad2(name: str, second: str) -> Method:
    return Method(lambda t: None, (), f"invalid function signature for {name}: second return value should be error; is {second}")


def _bad3(name: str, n: int) -> Method:
    return Method(lambda t: None, (), f"function {name} has {n} return values; should be 1 or 2")


_T, _D = K.TIME, K.DURATION
_TIME_METHODS: dict[str, Method] = {
    "Year": Method(lambda t: t.dt.year),
    "Month": Method(lambda t: Month(t.dt.month)),
    "Day": Method(lambda t: t.dt.day),
    "Weekday": Method(lambda t: Weekday((t.dt.weekday() + 1) % 7)),
    "Hour": Method(lambda t: t.dt.hour),
    "Minute": Method(lambda t: t.dt.minute),
    "Second": Method(lambda t: t.dt.second),
    "Nanosecond": Method(lambda t: t.nanos),
    "YearDay": Method(lambda t: t.dt.timetuple().tm_yday),
    "Unix": Method(lambda t: Int64(t.unix())),
    "UnixNano": Method(lambda t: Int64(t.unix_nano())),
    "UnixMilli": Method(lambda t: Int64(t.unix_nano() // 10**6)),
    "UnixMicro": Method(lambda t: Int64(t.unix_nano() // 10**3)),
    "String": Method(lambda t: t.go_string()),
    "GoString": Method(lambda t: t.go_syntax()),
    "UTC": Method(lambda t: t.in_zone(UTC)),
    "Local": Method(lambda t: t.in_zone(local_zone())),
    "IsZero": Method(lambda t: t.unix() == _ZERO_UNIX and t.nanos == 0),
    "IsDST": Method(lambda t: bool(t.dt.dst())),
    "Location": Method(lambda t: t.location()),
    "Format": Method(lambda t, layout: format_time(t, layout), (K.STR,)),
    "Add": Method(lambda t, d: t.add_ns(d), (_D,)),
    "AddDate": Method(_add_date, (K.INT, K.INT, K.INT)),
    "Sub": Method(_sub, (_T,)),
    "After": Method(lambda t, u: _cmp(t, u) > 0, (_T,)),
    "Before": Method(lambda t, u: _cmp(t, u) < 0, (_T,)),
    "Equal": Method(lambda t, u: _cmp(t, u) == 0, (_T,)),
    "Compare": Method(_cmp, (_T,)),
    "In": Method(lambda t, loc: t.in_zone(_loc(loc)), (K.LOCATION,)),
    "Truncate": Method(lambda t, d: _time_round(t, d, trunc=True), (_D,)),
    "Round": Method(lambda t, d: _time_round(t, d, trunc=False), (_D,)),
    "Zone": _bad2("Zone", "int"),
    "ISOWeek": _bad2("ISOWeek", "int"),
    "ZoneBounds": _bad2("ZoneBounds", "time.Time"),
    "Date": _bad3("Date", 3),
    "Clock": _bad3("Clock", 3),
}
_DURATION_METHODS: dict[str, Method] = {
    "String": _STRINGER,
    "Hours": Method(lambda d: int(d) / 3.6e12),
    "Minutes": Method(lambda d: int(d) / 6e10),
    "Seconds": Method(lambda d: int(d) / 1e9),
    "Milliseconds": Method(lambda d: Int64(int(d / 10**6) if d >= 0 else -(-d // 10**6))),
    "Microseconds": Method(lambda d: Int64(int(d / 10**3) if d >= 0 else -(-d // 10**3))),
    "Nanoseconds": Method(lambda d: Int64(d)),
    "Abs": Method(lambda d: _dur(abs(int(d)))),
    "Round": Method(lambda d, m: _round_dur(d, m, trunc=False), (_D,)),
    "Truncate": Method(lambda d, m: _round_dur(d, m, trunc=True), (_D,)),
}
_LOCATION_METHODS: dict[str, Method] = {"String": Method(lambda loc: loc.name)}


def _loc(loc: Any) -> tzinfo:
    if loc is None:
        raise FuncError("time: missing Location in call to Time.In")
    return loc.tz  # type: ignore[no-any-return]


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
