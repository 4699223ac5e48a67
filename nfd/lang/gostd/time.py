"""Go's time: time.Time with Format and ParseInLocation (Go's layouts, zones and ParseError
texts), ParseDuration and Duration.String in integer nanoseconds with Go's errors
(``time: unknown unit "d" in duration "1d"``), and the time package's own quoting of inputs.

Go's time.Time spans years Python's datetime cannot hold; see ``Time``. The template engine's
time values (``nfd.lang.gotemplate.gotime``) subclass ``Time`` and add the methods templates
call.
"""

from __future__ import annotations

import re
import time as _time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from typing import TypeVar
from zoneinfo import ZoneInfo

from nfd.lang.gostd import from_go_bytes, go_bytes

# durations and the package's quote live in nfd.lang.gostd.duration (no datetime there)
from nfd.lang.gostd.duration import DurationError as DurationError
from nfd.lang.gostd.duration import format_duration as format_duration
from nfd.lang.gostd.duration import parse_duration as parse_duration
from nfd.lang.gostd.duration import quote

_T = TypeVar("_T", bound="Time")


class TimeParseError(ValueError):
    """A value time.Parse refuses; ``str()`` is Go's ParseError text."""


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_START = _time.monotonic()
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


def local_zone() -> tzinfo:
    return datetime.now().astimezone().tzinfo or UTC


def load_location(name: str) -> tzinfo | None:
    """time.LoadLocation: "" and "UTC" are UTC, "Local" the host zone, else the tz database."""
    if name in ("", "UTC"):
        return UTC
    if name == "Local":
        return local_zone()
    try:
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


class Time:
    """time.Time: an instant with nanoseconds and a zone; `mono` marks values from now() (Go
    prints them with m=). Constructors are classmethods, so a subclass (the template engine's
    time values) gets its own instances from them and from parse_time."""

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
    def from_unix(cls: type[_T], sec: int, tz: tzinfo, nanos: int = 0) -> _T:
        sec += getattr(tz, "big_offset", 0)  # such a zone holds the wall clock at offset 0
        k = 0
        if sec < _LO:
            k = -((sec - _LO) // _P400)
        elif sec >= _HI:
            k = -((sec - _HI) // _P400 + 1)
        dt = (_EPOCH + timedelta(seconds=sec + k * _P400)).astimezone(tz)
        return cls(dt, nanos, shift=400 * k)

    @classmethod
    def civil(cls: type[_T], year: int, month: int, day: int, hour: int, minute: int, second: int, nanos: int,
              tz: tzinfo) -> _T:
        """time.Date for a valid calendar date (any year), wall clock in `tz`."""
        k = 0
        if year < 2:
            k = (2 - year + 399) // 400
        elif year > 9998:
            k = -((year - 9998 + 399) // 400)
        return cls(datetime(year + 400 * k, month, day, hour, minute, second, tzinfo=tz), nanos, shift=400 * k)

    @classmethod
    def now(cls: type[_T]) -> _T:
        ns = _time.time_ns()
        dt = (_EPOCH + timedelta(seconds=ns // 10**9)).astimezone(local_zone())
        return cls(dt, ns % 10**9, mono=_time.monotonic() - _START)

    def unix(self) -> int:
        d = self.dt - _EPOCH
        return d.days * 86400 + d.seconds - self.shift // 400 * _P400 - self.adj

    def unix_nano(self) -> int:
        return self.unix() * 10**9 + self.nanos

    def in_zone(self: _T, tz: tzinfo) -> _T:
        return type(self).from_unix(self.unix(), tz, self.nanos)

    def add_ns(self: _T, ns: int) -> _T:
        total = self.nanos + ns
        return type(self).from_unix(self.unix() + total // 10**9, self.dt.tzinfo or UTC, total % 10**9)


def days_from_civil(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date, any year (Hinnant's algorithm)."""
    y -= m <= 2
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    return era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468


def civil_from_days(n: int) -> tuple[int, int, int]:
    n += 719468
    era = n // 146097
    doe = n - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + (3 if mp < 10 else -9)
    return yoe + era * 400 + (m <= 2), m, d


ZERO_UNIX = -62135596800  # 0001-01-01T00:00:00Z


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


def offset_of(t: Time) -> int:
    off = t.dt.utcoffset()
    return (int(off.total_seconds()) if off is not None else 0) + t.adj


def _zone_name(t: Time) -> str:
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


def format_time(t: Time, layout: str) -> str:
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
            out.append(MONTHS[dt.month - 1])
        elif kind == "Mon3":
            out.append(MONTHS[dt.month - 1][:3])
        elif kind == "NumMonth":
            out.append(str(dt.month))
        elif kind == "ZeroMonth":
            out.append(f"{dt.month:02d}")
        elif kind == "Weekday":
            out.append(DAYS[dt.weekday()])
        elif kind == "Wd3":
            out.append(DAYS[dt.weekday()][:3])
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
            out.append(name or _fmt_offset(offset_of(t), "NumTZ"))
        elif kind.endswith("TZ"):
            out.append(_fmt_offset(offset_of(t), kind))
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


@dataclass(slots=True)
class _Elements:
    """What a value gave for each element of its layout (-1: month, day or year day absent)."""

    year: int = 0
    month: int = -1
    day: int = -1
    yday: int = -1
    hour: int = 0
    minute: int = 0
    second: int = 0
    nanos: int = 0
    am: bool = False
    pm: bool = False
    utc: bool = False
    zone_offset: int | None = None
    zone_name: str = ""


def _cannot(layout: str, value: str, elem: str, rest: str) -> TimeParseError:
    return TimeParseError(f"parsing time {quote(value)} as {quote(layout)}: cannot parse {_qb(rest)} as {_qb(elem)}")


def _failed(value: str, msg: str) -> TimeParseError:
    return TimeParseError(f"parsing time {quote(value)}{msg}")


def parse_time(layout: str, value: str, tz: tzinfo, *, cls: type[_T] = Time) -> _T:  # type: ignore[assignment]
    """time.ParseInLocation(layout, value, tz): elements missing from the layout are zero (year
    0) or one (month, day); errors carry Go's ParseError text."""
    e = _read_elements(layout, value)
    hour = e.hour
    if e.pm and hour < 12:
        hour += 12
    elif e.am and hour == 12:
        hour = 0
    year, month, day = e.year, e.month, e.day
    if e.yday >= 0:
        month, day = _from_year_day(value, year, e.yday, month, day)
    else:
        month = 1 if month < 0 else month
        day = 1 if day < 0 else day
    if not 1 <= day <= _days_in(month, year):
        raise _failed(value, ": day out of range")
    minute, second, nanos, zone_name, zone_offset = e.minute, e.second, e.nanos, e.zone_name, e.zone_offset
    if e.utc:
        return cls.civil(year, month, day, hour, minute, second, nanos, UTC)
    if zone_offset is not None:
        t = cls.civil(year, month, day, hour, minute, second, nanos, UTC).add_ns(-zone_offset * 10**9)
        local = t.in_zone(tz)
        if offset_of(local) == zone_offset and (not zone_name or _zone_name(local) == zone_name):
            return local
        return t.in_zone(_fixed_zone(zone_name, zone_offset))
    if zone_name:
        t = cls.civil(year, month, day, hour, minute, second, nanos, UTC)
        local = t.in_zone(tz)
        if _zone_name(local) == zone_name:  # the local zone's abbreviation at that time
            return t.add_ns(-offset_of(local) * 10**9).in_zone(tz)
        offset = _atoi(zone_name[3:]) * 3600 if zone_name.startswith("GMT") and len(zone_name) > 3 else 0
        return t.in_zone(_fixed_zone(zone_name, offset))  # same instant, shown at the offset
    return cls.civil(year, month, day, hour, minute, second, nanos, tz)


def _read_elements(layout: str, value: str) -> _Elements:
    """Read ``value`` element by element as ``layout`` lays it out (Go slices the value by
    bytes: both are worked on as strings of one character per byte)."""
    e = _Elements()
    chunks = [(k, _as_bytes(t)) for k, t in _chunks(layout)]
    s = _as_bytes(value)
    for ci, (kind, text) in enumerate(chunks):
        if kind == "":
            s, ok = _skip(s, text)
            if not ok:
                raise _cannot(layout, value, text, s)
            continue
        hold = s
        range_err = ""
        try:
            s, range_err = _ELEMENT_READERS[kind](e, kind, text, s)
            if kind in _SECOND_KINDS and not range_err and _fraction_at(s):
                # A fraction after the seconds is read unless the layout has one next.
                nxt = next((k for k, _ in chunks[ci + 1:] if k), "")
                if nxt not in ("Frac0", "Frac9"):
                    s, range_err = _read_fraction_digits(e, s, 2)
        except _Bad:
            if range_err:
                raise _failed(value, f": {range_err} out of range") from None
            raise _cannot(layout, value, text, hold) from None
        if range_err:
            raise _failed(value, f": {range_err} out of range")
    if s:
        raise _failed(value, f": extra text: {_qb(s)}")
    return e


# Each element reader takes (elements, kind, layout text, value) from the element's start,
# stores what it read in the elements and returns (the rest of the value, a range error name);
# a value that does not fit the element raises _Bad.


def _read_date_element(e: _Elements, kind: str, text: str, s: str) -> tuple[str, str]:
    """A year, month, weekday, day of the month or day of the year."""
    if kind == "Year2":
        if len(s) < 2:
            raise _Bad
        year = _atoi(s[:2])
        e.year = year + (1900 if year >= 69 else 2000)
        return s[2:], ""
    if kind == "Year":
        if len(s) < 4 or not "0" <= s[0] <= "9":
            raise _Bad
        e.year = _atoi(s[:4])
        return s[4:], ""
    if kind in ("Month", "Mon3"):
        i, s = _lookup(MONTHS if kind == "Month" else [m[:3] for m in MONTHS], s)
        e.month = i + 1
        return s, ""
    if kind in ("NumMonth", "ZeroMonth"):
        e.month, s = _getnum(s, kind == "ZeroMonth")
        return s, "" if 1 <= e.month <= 12 else "month"
    if kind in ("Weekday", "Wd3"):
        _, s = _lookup(DAYS if kind == "Weekday" else [d[:3] for d in DAYS], s)
        return s, ""
    if kind in ("Day", "UnderDay", "ZeroDay"):
        if kind == "UnderDay" and s[:1] == " ":
            s = s[1:]
        e.day, s = _getnum(s, kind == "ZeroDay")
        return s, ""
    # UnderYearDay, ZeroYearDay
    if kind == "UnderYearDay":
        s = s[2:] if s[:2] == "  " else s[1:] if s[:1] == " " else s
    e.yday, s = _getnum3(s, kind == "ZeroYearDay")
    return s, ""


def _read_clock_element(e: _Elements, kind: str, text: str, s: str) -> tuple[str, str]:
    """An hour (24- or 12-hour), minute, second or AM/PM mark."""
    if kind == "Hour":
        e.hour, s = _getnum(s, False)
        return s, "hour" if e.hour >= 24 else ""
    if kind in ("Hour12", "ZeroHour12"):
        e.hour, s = _getnum(s, kind == "ZeroHour12")
        return s, "hour" if e.hour > 12 else ""
    if kind in ("Minute", "ZeroMinute"):
        e.minute, s = _getnum(s, kind == "ZeroMinute")
        return s, "minute" if e.minute >= 60 else ""
    if kind in _SECOND_KINDS:
        e.second, s = _getnum(s, kind == "ZeroSecond")
        return s, "second" if e.second >= 60 else ""
    # PM, pm
    if len(s) < 2:
        raise _Bad
    p, s = s[:2], s[2:]
    if p == ("PM" if kind == "PM" else "pm"):
        e.pm = True
    elif p == ("AM" if kind == "PM" else "am"):
        e.am = True
    else:
        raise _Bad
    return s, ""


def _read_zone_element(e: _Elements, kind: str, text: str, s: str) -> tuple[str, str]:
    """A zone: UTC or an abbreviation (MST), or a numeric offset (Z for UTC with a Z layout)."""
    if kind == "TZ":
        if s[:3] == "UTC":
            e.utc = True
            return s[3:], ""
        n = _zone_abbr_len(s)
        if not n:
            raise _Bad
        e.zone_name = s[:n]
        return s[n:], ""
    if kind.startswith("Z") and s[:1] == "Z":
        e.utc = True
        return s[1:], ""
    e.zone_offset, range_err, s = _parse_offset(s, "NumTZ" if kind == "ZTZ" else kind.removeprefix("Z"))
    return s, range_err


def _read_fraction_element(e: _Elements, kind: str, text: str, s: str) -> tuple[str, str]:
    """A fraction of a second: as many digits as the layout's (Frac0), or any number (Frac9,
    which may also be absent)."""
    if kind == "Frac0":
        n = len(text)
        if len(s) < n:
            raise _Bad
        e.nanos, range_err = _nanoseconds(s, n)
        return s[n:], range_err
    if _fraction_at(s):
        return _read_fraction_digits(e, s, 1)
    return s, ""  # an omitted fraction is no error


def _fraction_at(s: str) -> bool:
    """Whether ``s`` starts with a fraction: a separator and a digit."""
    return len(s) >= 2 and s[0] in ".," and "0" <= s[1] <= "9"


def _read_fraction_digits(e: _Elements, s: str, n: int) -> tuple[str, str]:
    """The fraction at the start of ``s``, its digits from ``s[n]`` on (its separator and any
    digit before ``n`` already seen), as nanoseconds."""
    while n < len(s) and "0" <= s[n] <= "9":
        n += 1
    e.nanos, range_err = _nanoseconds(s, n)
    return s[n:], range_err


_SECOND_KINDS = ("Second", "ZeroSecond")
_ELEMENT_READERS: dict[str, Callable[[_Elements, str, str, str], tuple[str, str]]] = {
    **dict.fromkeys(("Year2", "Year", "Month", "Mon3", "NumMonth", "ZeroMonth", "Weekday", "Wd3", "Day",
                     "UnderDay", "ZeroDay", "UnderYearDay", "ZeroYearDay"), _read_date_element),
    **dict.fromkeys(("Hour", "Hour12", "ZeroHour12", "Minute", "ZeroMinute", *_SECOND_KINDS, "PM", "pm"),
                    _read_clock_element),
    **dict.fromkeys([k for _, k in _STD_WORDS if k.endswith("TZ")], _read_zone_element),
    **dict.fromkeys(("Frac0", "Frac9"), _read_fraction_element),
}


def _from_year_day(value: str, year: int, yday: int, month: int, day: int) -> tuple[int, int]:
    """The month and day of day ``yday`` of ``year``, checked against a month and day the
    value also gave (-1: not given)."""
    m = d = 0
    if _is_leap(year):
        if yday == 60:
            m, d = 2, 29
        elif yday > 60:
            yday -= 1
    if not 1 <= yday <= 365:
        raise _failed(value, ": day-of-year out of range")
    if m == 0:
        m = (yday - 1) // 31 + 1
        if _DAYS_BEFORE[m] < yday:
            m += 1
        d = yday - _DAYS_BEFORE[m - 1]
    if month >= 0 and month != m:
        raise _failed(value, ": day-of-year does not match month")
    if day >= 0 and day != d:
        raise _failed(value, ": day-of-year does not match day")
    return m, d


def _days_in(month: int, year: int) -> int:
    if month == 2:
        return 29 if _is_leap(year) else 28
    return _DAYS_BEFORE[month] - _DAYS_BEFORE[month - 1]


class _BigFixedZone(tzinfo):
    """A fixed zone of 24 hours or more (Go accepts "+2400" up to +25:01): datetime cannot
    hold such an offset, so the wall clock is kept at offset 0 and Time.adj adds it."""

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


def fixed_zone_name(tz: tzinfo) -> str:
    """A fixed zone's name ("" when it has none: Python names those UTC+hh:mm)."""
    name = tz.tzname(None) or ""
    return "" if name.startswith("UTC") and name != "UTC" else name


def _as_bytes(s: str) -> str:
    """A Go string's bytes, one character each (so slicing counts bytes as Go does)."""
    return s if s.isascii() else go_bytes(s).decode("latin-1")


def _qb(s: str) -> str:
    """_q of a string made by _as_bytes."""
    return quote(from_go_bytes(s.encode("latin-1")))

