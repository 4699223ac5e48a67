"""Go's time.Time as Sprig's date functions use it: Format/Parse layouts, Duration strings."""

from __future__ import annotations

import re
import time as _time
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from typing import Any

from nfd.common.goduration import format_go_duration as format_duration

from . import funcs as K
from .errors import FuncError
from .funcs import Method
from .values import GoObject, Int64, from_go_bytes, go_bytes, go_quote

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


# Go's time.Time spans years Python's datetime cannot hold (year 0 from a layout without a
# year, negative years, years past 9999). The Gregorian calendar repeats every 400 years
# (weekdays included), so such a time keeps its wall clock in a datetime moved by a multiple
# of 400 years into datetime's range, and `shift` says by how many years.
_P400 = 146097 * 86400  # seconds in 400 Gregorian years
_LO = int((datetime(2, 1, 1, tzinfo=UTC) - _EPOCH).total_seconds())
_HI = int((datetime(9998, 1, 1, tzinfo=UTC) - _EPOCH).total_seconds())


class GoTime(GoObject):
    """An instant with nanoseconds and a zone; `mono` marks values from now() (printed with m=)."""

    type_name = "time.Time"

    def __init__(self, dt: datetime, nanos: int = 0, *, mono: float | None = None, shift: int = 0) -> None:
        self.dt = dt.replace(microsecond=0)
        self.nanos = nanos
        self.mono = mono
        self.shift = shift  # years added to the real date to fit dt (a multiple of 400)
        self.adj = getattr(dt.tzinfo, "big_offset", 0)  # zone offset datetime cannot hold

    @property
    def year(self) -> int:
        return self.dt.year - self.shift

    @classmethod
    def from_unix(cls, sec: int, tz: tzinfo, nanos: int = 0) -> GoTime:
        sec += getattr(tz, "big_offset", 0)  # such a zone holds the wall clock at offset 0
        k = 0
        if sec < _LO:
            k = -((sec - _LO) // _P400)
        elif sec >= _HI:
            k = -((sec - _HI) // _P400 + 1)
        dt = (_EPOCH + timedelta(seconds=sec + k * _P400)).astimezone(tz)
        return cls(dt, nanos, shift=400 * k)

    @classmethod
    def civil(cls, year: int, month: int, day: int, hour: int, minute: int, second: int, nanos: int,
              tz: tzinfo) -> GoTime:
        """time.Date for a valid calendar date (any year), wall clock in `tz`."""
        k = 0
        if year < 2:
            k = (2 - year + 399) // 400
        elif year > 9998:
            k = -((year - 9998 + 399) // 400)
        return cls(datetime(year + 400 * k, month, day, hour, minute, second, tzinfo=tz), nanos, shift=400 * k)

    @classmethod
    def now(cls) -> GoTime:
        ns = _time.time_ns()
        dt = (_EPOCH + timedelta(seconds=ns // 10**9)).astimezone(local_zone())
        return cls(dt, ns % 10**9, mono=_time.monotonic() - _START)

    def unix(self) -> int:
        d = self.dt - _EPOCH
        return d.days * 86400 + d.seconds - self.shift // 400 * _P400 - self.adj

    def unix_nano(self) -> int:
        return self.unix() * 10**9 + self.nanos

    def in_zone(self, tz: tzinfo) -> GoTime:
        return GoTime.from_unix(self.unix(), tz, self.nanos)

    def add_ns(self, ns: int) -> GoTime:
        total = self.nanos + ns
        return GoTime.from_unix(self.unix() + total // 10**9, self.dt.tzinfo or UTC, total % 10**9)

    def go_json(self) -> str:
        """time.Time.MarshalJSON (RFC 3339 with nanoseconds; RFC 3339 has 4-digit years only)."""
        if not 0 <= self.year <= 9999:
            raise FuncError("json: error calling MarshalJSON for type time.Time: "
                            "Time.MarshalJSON: year outside of range [0,9999]")
        if abs(_offset(self)) >= 24 * 3600:
            raise FuncError("json: error calling MarshalJSON for type time.Time: "
                            "Time.MarshalJSON: timezone hour outside of range [0,23]")
        return format_time(self, "2006-01-02T15:04:05.999999999Z07:00")

    def go_syntax(self) -> str:
        """time.Time.GoString."""
        dt = self.dt
        s = f"time.Date({self.year}, time.{_MONTHS[dt.month - 1]}, {dt.day}, {dt.hour}, {dt.minute}, {dt.second}, {self.nanos}, "
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
        local = local_zone()
        if tz is local or tz == local and tz.tzname(None) == local.tzname(None):
            return Location("Local", tz)
        return Location(_fixed_name(tz), tz)  # a fixed zone from a parsed offset


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
        return GoTime(t.dt, t.nanos, shift=t.shift)
    since_zero = (t.unix() - _ZERO_UNIX) * 10**9 + t.nanos
    r = since_zero % d
    if trunc or r + r < d:
        return t.add_ns(-r)
    return t.add_ns(d - r)


def _days_from_civil(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date, any year (Hinnant's algorithm)."""
    y -= m <= 2
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    return era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468


def _civil_from_days(n: int) -> tuple[int, int, int]:
    n += 719468
    era = n // 146097
    doe = n - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + (3 if mp < 10 else -9)
    return yoe + era * 400 + (m <= 2), m, d


def _add_date(t: GoTime, years: int, months: int, days: int) -> GoTime:
    """Time.AddDate: normalizes like time.Date (Oct 31 + 1 month = Dec 1), wall clock kept."""
    dt = t.dt
    y, m = t.year + years, dt.month - 1 + months
    y += m // 12
    m = m % 12 + 1
    y, m, d = _civil_from_days(_days_from_civil(y, m, 1) + dt.day - 1 + days)
    return GoTime.civil(y, m, d, dt.hour, dt.minute, dt.second, t.nanos, dt.tzinfo or UTC)


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
    "Year": Method(lambda t: t.year),
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
    return GoTime.civil(1, 1, 1, 0, 0, 0, 0, UTC)


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
    return (int(off.total_seconds()) if off is not None else 0) + t.adj


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
            y = t.year
            out.append(f"-{-y:04d}" if y < 0 else f"{y:04d}")
        elif kind == "Year2":
            out.append(f"{abs(t.year) % 100:02d}")
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


class _Bad(Exception):
    """An element of the value does not fit its layout element (Go's errBad)."""


def _atoi(s: str) -> int:
    """time's atoi: an optional sign, then decimal digits only."""
    neg = s[:1] == "-"
    digits = s[1:] if s[:1] in ("-", "+") else s
    if digits and not (digits.isascii() and digits.isdigit()):
        raise _Bad
    v = int(digits) if digits else 0
    return -v if neg else v


def _digit(s: str, i: int) -> bool:
    return i < len(s) and "0" <= s[i] <= "9"


def _getnum(s: str, fixed: bool) -> tuple[int, str]:
    """One or two digits (exactly two when fixed)."""
    if not _digit(s, 0):
        raise _Bad
    if not _digit(s, 1):
        if fixed:
            raise _Bad
        return int(s[0]), s[1:]
    return int(s[:2]), s[2:]


def _getnum3(s: str, fixed: bool) -> tuple[int, str]:
    i = 0
    while i < 3 and i < len(s) and "0" <= s[i] <= "9":
        i += 1
    if i == 0 or fixed and i != 3:
        raise _Bad
    return int(s[:i]), s[i:]


def _lookup(names: list[str], s: str) -> tuple[int, str]:
    """The first name `s` starts with, ASCII letters compared case-insensitively."""
    for i, name in enumerate(names):
        head = s[:len(name)]
        if len(head) == len(name) and head.isascii() and head.lower() == name.lower():
            return i, s[len(name):]
    raise _Bad


def _skip(value: str, prefix: str) -> tuple[str, bool]:
    """Strip the literal `prefix` from `value` (a run of spaces matches any run of spaces)."""
    while prefix:
        if prefix[0] == " ":
            if value and value[0] != " ":
                return value, False
            prefix, value = prefix.lstrip(" "), value.lstrip(" ")
            continue
        if not value or value[0] != prefix[0]:
            return value, False
        prefix, value = prefix[1:], value[1:]
    return value, True


def _signed_offset_len(s: str) -> int:
    """Length of a "+03"/"-4" offset (at most 23), 0 if there is none."""
    if s[:1] not in ("+", "-"):
        return 0
    m = re.match(r"[0-9]*", s[1:])
    digits = m.group() if m else ""
    if not digits or int(digits) > 23:
        return 0
    return 1 + len(digits)


def _zone_abbr_len(s: str) -> int:
    """time.parseTimeZone: how long the zone abbreviation at the start of `s` is (0: none)."""
    if len(s) < 3:
        return 0
    if s[:4] in ("ChST", "MeST"):
        return 4
    if s[:3] == "GMT":
        return 3 + (_signed_offset_len(s[3:]) if len(s) > 3 else 0)
    if s[0] in "+-":
        return _signed_offset_len(s)
    n = 0
    while n < 6 and n < len(s) and "A" <= s[n] <= "Z":
        n += 1
    if n == 3:
        return 3
    if n == 4 and (s[3] == "T" or s[:4] == "WITA"):
        return 4
    if n == 5 and s[4] == "T":
        return 5
    return 0


def _nanoseconds(s: str, n: int) -> tuple[int, str]:
    """The fraction in s[:n] (separator included) as nanoseconds, and a range error name."""
    if s[0] not in ".,":
        raise _Bad
    n = min(n, 10)
    ns = _atoi(s[1:n])
    if ns < 0:
        return 0, "fractional second"
    return ns * 10 ** (10 - n), ""


# Numeric zone layouts: (width, slices of hours, minutes, seconds, positions of colons).
_TZ_FORMS: dict[str, tuple[int, tuple[int, int], tuple[int, int] | None, tuple[int, int] | None, tuple[int, ...]]] = {
    "ColonTZ": (6, (1, 3), (4, 6), None, (3,)),
    "ShortTZ": (3, (1, 3), None, None, ()),
    "ColonSecTZ": (9, (1, 3), (4, 6), (7, 9), (3, 6)),
    "SecTZ": (7, (1, 3), (3, 5), (5, 7), ()),
    "NumTZ": (5, (1, 3), (3, 5), None, ()),
}


def _parse_offset(s: str, form: str) -> tuple[int, str, str]:
    """A numeric zone offset (+hh, +hhmm, +hh:mm, ...): (seconds, range error name, rest).
    Offsets up to 24h/60m/60s are accepted, as Go does; a range error wins over bad digits."""
    width, hs, ms, ss, colons = _TZ_FORMS[form]
    if len(s) < width or any(s[c] != ":" for c in colons):
        raise _Bad
    bad = False
    vals = [0, 0, 0]
    for i, sl in enumerate((hs, ms, ss)):
        if sl is None:
            continue
        try:
            vals[i], _ = _getnum(s[sl[0]:sl[1]], True)
        except _Bad:
            bad = True
            break
    hh, mm, sec = vals
    range_err = ""
    if hh > 24:
        range_err = "time zone offset hour"
    if mm > 60:
        range_err = "time zone offset minute"
    if sec > 60:
        range_err = "time zone offset second"
    offset = (hh * 60 + mm) * 60 + sec
    if s[0] == "-":
        offset = -offset
    elif s[0] != "+":
        bad = True
    if bad and not range_err:
        raise _Bad
    return offset, range_err, s[width:]


def _is_leap(y: int) -> bool:
    return y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)


_DAYS_BEFORE = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334, 365]


def parse_time(layout: str, value: str, tz: tzinfo) -> GoTime:
    """time.ParseInLocation(layout, value, tz): elements missing from the layout are zero (year
    0) or one (month, day); errors carry Go's ParseError text."""
    # Go slices the value by bytes: work on a string with one character per byte.
    def cannot(elem: str, rest: str) -> FuncError:
        return FuncError(f"parsing time {_q(value)} as {_q(layout)}: cannot parse {_qb(rest)} as {_qb(elem)}")

    def failed(msg: str) -> FuncError:
        return FuncError(f"parsing time {_q(value)}{msg}")

    year, month, day, yday = 0, -1, -1, -1
    hour = minute = second = nanos = 0
    am = pm = False
    utc = False
    zone_offset: int | None = None
    zone_name = ""
    chunks = [(k, _as_bytes(t)) for k, t in _chunks(layout)]
    s = _as_bytes(value)
    for ci, (kind, text) in enumerate(chunks):
        if kind == "":
            s, ok = _skip(s, text)
            if not ok:
                raise cannot(text, s)
            continue
        hold = s
        range_err = ""
        try:
            if kind == "Year2":
                if len(s) < 2:
                    raise _Bad
                year, s = _atoi(s[:2]), s[2:]
                year += 1900 if year >= 69 else 2000
            elif kind == "Year":
                if len(s) < 4 or not "0" <= s[0] <= "9":
                    raise _Bad
                year, s = _atoi(s[:4]), s[4:]
            elif kind in ("Month", "Mon3"):
                i, s = _lookup(_MONTHS if kind == "Month" else [m[:3] for m in _MONTHS], s)
                month = i + 1
            elif kind in ("NumMonth", "ZeroMonth"):
                month, s = _getnum(s, kind == "ZeroMonth")
                if not 1 <= month <= 12:
                    range_err = "month"
            elif kind in ("Weekday", "Wd3"):
                _, s = _lookup(_DAYS if kind == "Weekday" else [d[:3] for d in _DAYS], s)
            elif kind in ("Day", "UnderDay", "ZeroDay"):
                if kind == "UnderDay" and s[:1] == " ":
                    s = s[1:]
                day, s = _getnum(s, kind == "ZeroDay")
            elif kind in ("UnderYearDay", "ZeroYearDay"):
                if kind == "UnderYearDay":
                    s = s[2:] if s[:2] == "  " else s[1:] if s[:1] == " " else s
                yday, s = _getnum3(s, kind == "ZeroYearDay")
            elif kind == "Hour":
                hour, s = _getnum(s, False)
                if hour >= 24:
                    range_err = "hour"
            elif kind in ("Hour12", "ZeroHour12"):
                hour, s = _getnum(s, kind == "ZeroHour12")
                if hour > 12:
                    range_err = "hour"
            elif kind in ("Minute", "ZeroMinute"):
                minute, s = _getnum(s, kind == "ZeroMinute")
                if minute >= 60:
                    range_err = "minute"
            elif kind in ("Second", "ZeroSecond"):
                second, s = _getnum(s, kind == "ZeroSecond")
                if second >= 60:
                    range_err = "second"
                elif len(s) >= 2 and s[0] in ".," and "0" <= s[1] <= "9":
                    # A fraction after the seconds is read unless the layout has one next.
                    nxt = next((k for k, _ in chunks[ci + 1:] if k), "")
                    if nxt not in ("Frac0", "Frac9"):
                        n = 2
                        while n < len(s) and "0" <= s[n] <= "9":
                            n += 1
                        nanos, range_err = _nanoseconds(s, n)
                        s = s[n:]
            elif kind in ("PM", "pm"):
                if len(s) < 2:
                    raise _Bad
                p, s = s[:2], s[2:]
                if p == ("PM" if kind == "PM" else "pm"):
                    pm = True
                elif p == ("AM" if kind == "PM" else "am"):
                    am = True
                else:
                    raise _Bad
            elif kind.endswith("TZ") and kind != "TZ":
                if kind.startswith("Z") and s[:1] == "Z":
                    s, utc = s[1:], True
                else:
                    zone_offset, range_err, s = _parse_offset(s, "NumTZ" if kind == "ZTZ" else kind.removeprefix("Z"))
            elif kind == "TZ":
                if s[:3] == "UTC":
                    s, utc = s[3:], True
                else:
                    n = _zone_abbr_len(s)
                    if not n:
                        raise _Bad
                    zone_name, s = s[:n], s[n:]
            elif kind == "Frac0":
                n = len(text)
                if len(s) < n:
                    raise _Bad
                nanos, range_err = _nanoseconds(s, n)
                s = s[n:]
            elif kind == "Frac9" and len(s) >= 2 and s[0] in ".," and "0" <= s[1] <= "9":
                n = 1  # any number of digits (an omitted fraction is no error)
                while n < len(s) and "0" <= s[n] <= "9":
                    n += 1
                nanos, range_err = _nanoseconds(s, n)
                s = s[n:]
        except _Bad:
            if range_err:
                raise failed(f": {range_err} out of range") from None
            raise cannot(text, hold) from None
        if range_err:
            raise failed(f": {range_err} out of range")
    if s:
        raise failed(f": extra text: {_qb(s)}")
    if pm and hour < 12:
        hour += 12
    elif am and hour == 12:
        hour = 0
    if yday >= 0:
        m = d = 0
        if _is_leap(year):
            if yday == 60:
                m, d = 2, 29
            elif yday > 60:
                yday -= 1
        if not 1 <= yday <= 365:
            raise failed(": day-of-year out of range")
        if m == 0:
            m = (yday - 1) // 31 + 1
            if _DAYS_BEFORE[m] < yday:
                m += 1
            d = yday - _DAYS_BEFORE[m - 1]
        if month >= 0 and month != m:
            raise failed(": day-of-year does not match month")
        month = m
        if day >= 0 and day != d:
            raise failed(": day-of-year does not match day")
        day = d
    else:
        month = 1 if month < 0 else month
        day = 1 if day < 0 else day
    if not 1 <= day <= _days_in(month, year):
        raise failed(": day out of range")
    if utc:
        return GoTime.civil(year, month, day, hour, minute, second, nanos, UTC)
    if zone_offset is not None:
        t = GoTime.civil(year, month, day, hour, minute, second, nanos, UTC).add_ns(-zone_offset * 10**9)
        local = t.in_zone(tz)
        if _offset(local) == zone_offset and (not zone_name or _zone_name(local) == zone_name):
            return local
        return t.in_zone(_fixed_zone(zone_name, zone_offset))
    if zone_name:
        t = GoTime.civil(year, month, day, hour, minute, second, nanos, UTC)
        local = t.in_zone(tz)
        if _zone_name(local) == zone_name:  # the local zone's abbreviation at that time
            return t.add_ns(-_offset(local) * 10**9).in_zone(tz)
        offset = _atoi(zone_name[3:]) * 3600 if zone_name.startswith("GMT") and len(zone_name) > 3 else 0
        return t.in_zone(_fixed_zone(zone_name, offset))  # same instant, shown at the offset
    return GoTime.civil(year, month, day, hour, minute, second, nanos, tz)


def _days_in(month: int, year: int) -> int:
    if month == 2:
        return 29 if _is_leap(year) else 28
    return _DAYS_BEFORE[month] - _DAYS_BEFORE[month - 1]


class _BigFixedZone(tzinfo):
    """A fixed zone of 24 hours or more (Go accepts "+2400" up to +25:01): datetime cannot
    hold such an offset, so the wall clock is kept at offset 0 and GoTime.adj adds it."""

    def __init__(self, name: str, offset: int) -> None:
        self.name, self.big_offset = name, offset

    def utcoffset(self, dt: datetime | None) -> timedelta:
        return timedelta(0)

    def dst(self, dt: datetime | None) -> timedelta:
        return timedelta(0)

    def tzname(self, dt: datetime | None) -> str:
        return self.name


def _fixed_zone(name: str, offset: int) -> tzinfo:
    """time.FixedZone(name, offset); an empty name prints as the offset."""
    if abs(offset) >= 86400:
        return _BigFixedZone(name, offset)
    if name:
        return timezone(timedelta(seconds=offset), name)
    return timezone(timedelta(seconds=offset))


def _fixed_name(tz: tzinfo) -> str:
    """A fixed zone's name ("" when it has none: Python names those UTC+hh:mm)."""
    name = tz.tzname(None) or ""
    return "" if name.startswith("UTC") and name != "UTC" else name


def _as_bytes(s: str) -> str:
    """A Go string's bytes, one character each (so slicing counts bytes as Go does)."""
    return s if s.isascii() else go_bytes(s).decode("latin-1")


def _qb(s: str) -> str:
    """_q of a string made by _as_bytes."""
    return _q(from_go_bytes(s.encode("latin-1")))


def _q(s: str) -> str:
    """The time package's own quoting: bytes outside printable ASCII as \\x escapes."""
    out = ['"']
    for b in go_bytes(s):
        if b >= 0x80 or b < 0x20:
            out.append(f"\\x{b:02x}")
        elif b in (0x22, 0x5C):
            out.append("\\" + chr(b))
        else:
            out.append(chr(b))
    out.append('"')
    return "".join(out)


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
