"""Go's time.Time as Sprig's date functions use it: the template values (GoTime, Location, Month,
Weekday, Duration) and their methods, over nfd.lang.gostd.time (Format/Parse layouts, durations)."""

from __future__ import annotations

from datetime import UTC, tzinfo
from typing import Any

from nfd.lang.gostd.strconv import quote as go_quote
from nfd.lang.gostd.time import (
    DAYS,
    MONTHS,
    ZERO_UNIX,
    DurationError,
    Time,
    TimeParseError,
    civil_from_days,
    days_from_civil,
    fixed_zone_name,
    format_duration,
    format_time,
    local_zone,
    offset_of,
)
from nfd.lang.gostd.time import parse_duration as _parse_duration
from nfd.lang.gostd.time import parse_time as _parse_time

from . import funcs as K
from .errors import FuncError
from .funcs import Method
from .values import GoObject, Int64


class GoTime(Time, GoObject):
    """A time.Time value in templates: printing, JSON and the methods templates may call."""

    type_name = "time.Time"

    def go_json(self) -> str:
        """time.Time.MarshalJSON (RFC 3339 with nanoseconds; RFC 3339 has 4-digit years only)."""
        if not 0 <= self.year <= 9999:
            raise FuncError("json: error calling MarshalJSON for type time.Time: "
                            "Time.MarshalJSON: year outside of range [0,9999]")
        if abs(offset_of(self)) >= 24 * 3600:
            raise FuncError("json: error calling MarshalJSON for type time.Time: "
                            "Time.MarshalJSON: timezone hour outside of range [0,23]")
        return format_time(self, "2006-01-02T15:04:05.999999999Z07:00")

    def go_syntax(self) -> str:
        """time.Time.GoString."""
        dt = self.dt
        s = f"time.Date({self.year}, time.{MONTHS[dt.month - 1]}, {dt.day}, {dt.hour}, {dt.minute}, {dt.second}, {self.nanos}, "
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
        return Location(fixed_zone_name(tz), tz)  # a fixed zone from a parsed offset


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
        return MONTHS[self - 1] if 1 <= self <= 12 else f"%!Month({int(self)})"


class Weekday(_Named):
    go_type = type_name = "time.Weekday"

    def go_string(self) -> str:
        return ["Sunday", *DAYS[:6]][self] if 0 <= self <= 6 else f"%!Weekday({int(self)})"


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
    since_zero = (t.unix() - ZERO_UNIX) * 10**9 + t.nanos
    r = since_zero % d
    if trunc or r + r < d:
        return t.add_ns(-r)
    return t.add_ns(d - r)


def _add_date(t: GoTime, years: int, months: int, days: int) -> GoTime:
    """Time.AddDate: normalizes like time.Date (Oct 31 + 1 month = Dec 1), wall clock kept."""
    dt = t.dt
    y, m = t.year + years, dt.month - 1 + months
    y += m // 12
    m = m % 12 + 1
    y, m, d = civil_from_days(days_from_civil(y, m, 1) + dt.day - 1 + days)
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
    "IsZero": Method(lambda t: t.unix() == ZERO_UNIX and t.nanos == 0),
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


def zero_time() -> GoTime:
    return GoTime.civil(1, 1, 1, 0, 0, 0, 0, UTC)


def parse_time(layout: str, value: str, tz: tzinfo) -> GoTime:
    """time.ParseInLocation; FuncError with Go's ParseError text."""
    try:
        return _parse_time(layout, value, tz, cls=GoTime)
    except TimeParseError as e:
        raise FuncError(str(e)) from None



# --- durations ---------------------------------------------------------------


def parse_duration(s: str) -> int:
    """time.ParseDuration → nanoseconds; FuncError with Go's text."""
    try:
        return _parse_duration(s)
    except DurationError as e:
        raise FuncError(str(e)) from None
