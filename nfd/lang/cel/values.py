"""Runtime values and errors of the CEL compiler.

CEL values are plain Python objects so compiled closures do no wrapping: bool, int (int64),
``UInt`` (uint64), float (double), str, bytes, None (null), list/tuple/set (list; flag sets stay
sets so ``in`` is O(1)), dict (map; ``KeyedMap`` where Python would merge keys), plus the two
extension types ``Version`` and ``Quantity``.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Iterator
from fractions import Fraction
from typing import Any

from nfd.lang.gostd import netip, strconv
from nfd.lang.gostd import url as gourl
from nfd.lang.gostd.strconv import quote as go_quote
from nfd.lang.semver import parse_version

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1
UINT64_MAX = (1 << 64) - 1


class CelError(Exception):
    """A CEL runtime error: ``&&``, ``||``, ``all`` and ``exists`` may absorb it, like CEL does."""


class CostLimitExceeded(BaseException):  # noqa: N818 - not an Exception on purpose
    """The evaluation step budget ran out. A BaseException so no error absorption swallows it."""


class UInt(int):
    """CEL ``uint``: a distinct type from ``int`` (``1u == 1`` compares values, ``1u + 1`` is an error)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"{int(self)}u"


def check_int(v: int) -> int:
    if v < INT64_MIN or v > INT64_MAX:
        raise CelError("integer overflow")
    return v


def check_uint(v: int) -> UInt:
    if v < 0 or v > UINT64_MAX:
        raise CelError("unsigned integer overflow")
    return UInt(v)


# -- maps -----------------------------------------------------------------------------------------

MISSING = object()  # what a map lookup finds when the key is absent
_KEY_TYPES = (int, UInt, bool)  # and str


def _tagged(k: Any) -> Any:
    t = type(k)
    if t is bool:
        return ("b", k)
    if t is UInt:
        return ("u", k)
    return k


class KeyedMap(dict[Any, Any]):
    """A CEL map whose keys a Python dict would merge: ``true`` and ``1`` are two CEL keys (in
    cel-spec and cel-go) but one dict key, since ``True == 1`` in Python. Bool and uint keys
    are stored tagged (``("b", true)``, ``("u", 1u)``) so each stays its own entry, and a
    lookup matches what cel-go's would; ``in``, iteration and ``items()`` deal in the CEL keys.
    ``make_map`` only builds one for a map with a bool key or keys of two numeric types, so
    string-keyed feature maps stay plain dicts and their lookups pay nothing for this."""

    __slots__ = ()

    def __init__(self, pairs: Iterable[tuple[Any, Any]] = ()) -> None:
        super().__init__()
        for k, v in pairs:
            if type(k) is not str and type(k) not in _KEY_TYPES:
                raise CelError(f"unsupported map key type {type_name(k)}")
            if self.find(k) is not MISSING:  # 0 and 0u repeat each other, true and 1 do not
                raise CelError(f"duplicate map key {k!r}")
            dict.__setitem__(self, _tagged(k), v)

    def find(self, k: Any) -> Any:
        """The value under CEL key ``k``, else MISSING. As cel-go: the key of ``k``'s own type
        first, then a number finds an equal number of another type (int/uint, a double an
        int then a uint); a bool finds only a bool, a string only a string."""
        g = dict.get
        t = type(k)
        if t is str:
            return g(self, k, MISSING)
        if t is int:
            v = g(self, k, MISSING)
            return g(self, ("u", k), MISSING) if v is MISSING and k >= 0 else v
        if t is bool:
            return g(self, ("b", k), MISSING)
        if t is UInt:
            v = g(self, ("u", k), MISSING)
            return g(self, int(k), MISSING) if v is MISSING and k <= INT64_MAX else v
        if t is float and k.is_integer():
            v = g(self, int(k), MISSING)
            return g(self, ("u", int(k)), MISSING) if v is MISSING and k >= 0 else v
        return MISSING

    def __getitem__(self, k: Any) -> Any:
        v = self.find(k)
        if v is MISSING:
            raise KeyError(k)
        return v

    def get(self, k: Any, default: Any = None) -> Any:  # type: ignore[override]
        v = self.find(k)
        return default if v is MISSING else v

    def __contains__(self, k: object) -> bool:
        return self.find(k) is not MISSING

    def __setitem__(self, k: Any, v: Any) -> None:
        dict.__setitem__(self, _tagged(k), v)

    def __iter__(self) -> Iterator[Any]:
        return (k[1] if type(k) is tuple else k for k in dict.__iter__(self))

    def keys(self) -> list[Any]:  # type: ignore[override]
        return list(self)

    def items(self) -> list[tuple[Any, Any]]:  # type: ignore[override]
        return [(k[1] if type(k) is tuple else k, v) for k, v in dict.items(self)]

    def copy(self) -> KeyedMap:
        return KeyedMap(self.items())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, dict):
            return NotImplemented
        return dict.__eq__(self, other if type(other) is KeyedMap else KeyedMap(other.items()))

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return "{" + ", ".join(f"{k!r}: {v!r}" for k, v in self.items()) + "}"


def make_map(pairs: Iterable[tuple[Any, Any]]) -> dict[Any, Any]:
    """A CEL map from ``(key, value)`` pairs: ``{true: 1, 1: 2}`` has two entries; a key
    repeated under CEL's equality (``'a'`` twice, or ``0`` and ``0u``) is an error, as
    cel-spec says (cel-go keeps the last value). A plain dict when its keys are strings plus
    keys of at most one type among int and uint, else a ``KeyedMap``."""
    if not isinstance(pairs, list | tuple):
        pairs = list(pairs)
    m: dict[Any, Any] = {}
    kt: type | None = None
    for key, value in pairs:
        t = type(key)
        if t is not str and t is not kt:
            if t not in _KEY_TYPES:
                raise CelError(f"unsupported map key type {type_name(key)}")
            if kt is not None or t is bool:
                return KeyedMap(pairs)
            kt = t
        if key in m:
            raise CelError(f"duplicate map key {key!r}")
        m[key] = value
    return m


# -- version ------------------------------------------------------------------------------------

class Version:
    """``version(s)``: compares as upstream's ``type: version`` (major.minor.patch, pre-release ignored)."""

    __slots__ = ("key", "text")

    def __init__(self, key: tuple[int, int, int], text: str) -> None:
        self.key = key
        self.text = text

    @classmethod
    def parse(cls, s: str) -> Version:
        # the same parser as upstream's `type: version` (pre-release dropped), shared with the
        # matchExpressions engine so `version()` and `type: version` never disagree
        key = parse_version(s)
        if key is None:
            raise CelError(f"invalid version {s!r}")
        return cls(key, s)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Version) and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)

    def __lt__(self, other: Version) -> bool:
        return self.key < other.key

    def __le__(self, other: Version) -> bool:
        return self.key <= other.key

    def __gt__(self, other: Version) -> bool:
        return self.key > other.key

    def __ge__(self, other: Version) -> bool:
        return self.key >= other.key

    def __repr__(self) -> str:
        return f"version({self.text!r})"


# -- quantity -----------------------------------------------------------------------------------

_QTY_RE = re.compile(r"([+-]?)([0-9]+\.?[0-9]*|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?")
_QTY_SUFFIX = {
    "Ki": Fraction(1 << 10), "Mi": Fraction(1 << 20), "Gi": Fraction(1 << 30),
    "Ti": Fraction(1 << 40), "Pi": Fraction(1 << 50), "Ei": Fraction(1 << 60),
    "n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "": Fraction(1),
    "k": Fraction(10**3), "M": Fraction(10**6), "G": Fraction(10**9), "T": Fraction(10**12),
    "P": Fraction(10**15), "E": Fraction(10**18),
}


class Quantity:
    """``quantity(s)``: a Kubernetes resource quantity (``1Gi``, ``500m``, ``1e3``), exact."""

    __slots__ = ("value", "text")

    def __init__(self, value: Fraction, text: str) -> None:
        self.value = value
        self.text = text

    @classmethod
    def parse(cls, s: str) -> Quantity:
        m = _QTY_RE.fullmatch(s)
        if m is None or len(s) > 256:
            raise CelError(f"invalid quantity {s!r}")
        sign, num, suffix = m.group(1), m.group(2), m.group(3) or ""
        if suffix not in _QTY_SUFFIX:  # a decimal exponent, e.g. e3
            exp = int(suffix[1:])
            if abs(exp) > 1000:
                raise CelError(f"invalid quantity {s!r}: exponent out of range")
            mult = Fraction(10) ** exp
        else:
            mult = _QTY_SUFFIX[suffix]
        v = Fraction(num) * mult
        return cls(-v if sign == "-" else v, s)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quantity) and self.value == other.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __lt__(self, other: Quantity) -> bool:
        return self.value < other.value

    def __le__(self, other: Quantity) -> bool:
        return self.value <= other.value

    def __gt__(self, other: Quantity) -> bool:
        return self.value > other.value

    def __ge__(self, other: Quantity) -> bool:
        return self.value >= other.value

    def __repr__(self) -> str:
        return f"quantity({self.text!r})"


def type_name(v: Any) -> str:
    """The CEL type name of a runtime value, for error messages."""
    t = type(v)
    if t is bool:
        return "bool"
    if t is int:
        return "int"
    if t is UInt:
        return "uint"
    if t is float:
        return "double"
    if t is str:
        return "string"
    if t is bytes:
        return "bytes"
    if v is None:
        return "null_type"
    if isinstance(v, list | tuple | set | frozenset):
        return "list"
    if isinstance(v, dict):
        return "map"
    if t is Version:
        return "version"
    if t is Quantity:
        return "quantity"
    return _TYPE_NAMES.get(t, t.__name__)



# -- Kubernetes' CEL value types: Semver, IP, CIDR, URL ------------------------------------------

_NUMBERS = frozenset("0123456789")
_ALNUM = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-")


def _semver_number(s: str, what: str) -> int:
    """One numeric part of a semantic version, with the errors of Go's blang/semver."""
    if not set(s) <= _NUMBERS:
        raise CelError(f"Invalid character(s) found in {what} number {go_quote(s)}")
    if len(s) > 1 and s[0] == "0":
        raise CelError(f"{what.capitalize()} number must not contain leading zeroes {go_quote(s)}")
    return _parse_uint64(s)


def _parse_uint64(s: str) -> int:
    try:
        return strconv.parse_uint(s, 10, 64)
    except strconv.NumError as e:
        raise CelError(str(e)) from None


class Semver:
    """``semver(s)``: a semantic version 2.0.0 as Kubernetes' semver library (blang/semver v4)
    reads it; unlike nfd's ``version()`` the pre-release counts (``1.0.0-rc.1 < 1.0.0``)."""

    __slots__ = ("major", "minor", "patch", "pre", "build")

    def __init__(self, major: int, minor: int, patch: int, pre: tuple[int | str, ...], build: tuple[str, ...]) -> None:
        self.major, self.minor, self.patch, self.pre, self.build = major, minor, patch, pre, build

    @classmethod
    def parse(cls, s: str, normalize: bool = False) -> Semver:
        if normalize:
            s = _semver_normalize(s)
        if not s:
            raise CelError("Version string empty")
        parts = s.split(".", 2)
        if len(parts) != 3:
            raise CelError("No Major.Minor.Patch elements found")
        major = _semver_number(parts[0], "major")
        minor = _semver_number(parts[1], "minor")
        rest, _, build_text = parts[2].partition("+")
        patch_text, dash, pre_text = rest.partition("-")
        patch = _semver_number(patch_text, "patch")
        pre: list[int | str] = []
        for p in pre_text.split(".") if dash else []:
            if not p:
                raise CelError("Prerelease is empty")
            if set(p) <= _NUMBERS:
                if len(p) > 1 and p[0] == "0":
                    raise CelError(f"Numeric PreRelease version must not contain leading zeroes {go_quote(p)}")
                pre.append(_parse_uint64(p))
            elif set(p) <= _ALNUM:
                pre.append(p)
            else:
                raise CelError(f"Invalid character(s) found in prerelease {go_quote(p)}")
        build: list[str] = []
        for b in build_text.split(".") if "+" in parts[2] else []:
            if not b:
                raise CelError("Build meta data is empty")
            if not set(b) <= _ALNUM:
                raise CelError(f"Invalid character(s) found in build meta data {go_quote(b)}")
            build.append(b)
        return cls(major, minor, patch, tuple(pre), tuple(build))

    def compare(self, other: Semver) -> int:
        a, b = (self.major, self.minor, self.patch), (other.major, other.minor, other.patch)
        if a != b:
            return -1 if a < b else 1
        if not self.pre or not other.pre:  # a release is newer than its pre-releases
            return (not self.pre) - (not other.pre)
        for x, y in zip(self.pre, other.pre, strict=False):
            if x == y:
                continue
            if type(x) is not type(y):  # numeric identifiers sort before alphanumeric ones
                return -1 if type(x) is int else 1
            return -1 if x < y else 1  # type: ignore[operator]
        return (len(self.pre) > len(other.pre)) - (len(self.pre) < len(other.pre))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Semver) and self.compare(other) == 0

    def __hash__(self) -> int:
        return hash((self.major, self.minor, self.patch, self.pre))

    def __str__(self) -> str:
        s = f"{self.major}.{self.minor}.{self.patch}"
        if self.pre:
            s += "-" + ".".join(map(str, self.pre))
        if self.build:
            s += "+" + ".".join(self.build)
        return s

    def __repr__(self) -> str:
        return f"semver({str(self)!r})"


def _semver_normalize(s: str) -> str:
    """Kubernetes' normalizeAndParse: drop one leading ``v``, leading zeros of the numeric
    parts, and fill a missing minor or patch with 0 (not allowed with pre-release or build)."""
    s = s.removeprefix("v")
    parts = s.split(".", 2)
    for i, p in enumerate(parts):
        if len(p) > 1:
            p = p.lstrip("0")
            if not p or p[0] not in _NUMBERS:
                p = "0" + p
            parts[i] = p
    if len(parts) < 3:
        if "+" in parts[-1] or "-" in parts[-1]:
            raise CelError("short version cannot contain PreRelease/Build meta data")
        parts += ["0"] * (3 - len(parts))
    return ".".join(parts)


class IP:
    """``ip(s)``: an IPv4 or IPv6 address, parsed strictly as Kubernetes does (Go's netip: no
    leading zeros in IPv4, no zone, no IPv4-mapped IPv6)."""

    __slots__ = ("addr",)

    def __init__(self, addr: ipaddress.IPv4Address | ipaddress.IPv6Address) -> None:
        self.addr = addr

    @classmethod
    def parse(cls, s: str) -> IP:
        return cls(parse_ip(s))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, IP) and self.addr == other.addr

    def __hash__(self) -> int:
        return hash(self.addr)

    def __str__(self) -> str:
        return str(self.addr)

    def __repr__(self) -> str:
        return f"ip({str(self)!r})"


class CIDR:
    """``cidr(s)``: an address with a prefix length; the address keeps its host bits
    (``cidr("10.1.2.3/8").ip()`` is 10.1.2.3), ``masked()`` clears them."""

    __slots__ = ("addr", "bits")

    def __init__(self, addr: ipaddress.IPv4Address | ipaddress.IPv6Address, bits: int) -> None:
        self.addr = addr
        self.bits = bits

    @classmethod
    def parse(cls, s: str) -> CIDR:
        try:
            p = netip.parse_prefix(s)
        except netip.PrefixError as e:
            raise CelError("network address parse error during conversion from string: network address parse "
                           f"error during conversion from string: {e}") from None
        if p.addr.is4in6:
            raise CelError("network address parse error during conversion from string: "
                           f"IPv4-mapped IPv6 address {go_quote(s)} is not allowed")
        return cls(p.addr.ip, p.bits)

    def masked(self) -> CIDR:
        net = ipaddress.ip_network(f"{self.addr}/{self.bits}", strict=False)
        return CIDR(net.network_address, self.bits)

    def contains_ip(self, ip: IP) -> bool:
        if ip.addr.version != self.addr.version:
            return False
        return ip.addr in ipaddress.ip_network(f"{self.addr}/{self.bits}", strict=False)

    def contains_cidr(self, other: CIDR) -> bool:
        return other.addr.version == self.addr.version and other.bits >= self.bits \
            and self.contains_ip(IP(other.addr))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CIDR) and (self.addr, self.bits) == (other.addr, other.bits)

    def __hash__(self) -> int:
        return hash((self.addr, self.bits))

    def __str__(self) -> str:
        return f"{self.addr}/{self.bits}"

    def __repr__(self) -> str:
        return f"cidr({str(self)!r})"


def parse_ip(s: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """``ip(s)``/``isIP(s)``: CelError unless netip.ParseAddr reads ``s`` as an address without
    zone that is not IPv4-mapped IPv6, as Kubernetes requires."""
    try:
        addr = netip.parse_addr(s)
    except netip.AddrError as e:
        raise CelError(f"IP Address {go_quote(s)} parse error during conversion from string: {e}") from None
    if addr.zone:
        raise CelError(f"IP address {go_quote(s)} with zone value is not allowed")
    if addr.is4in6:
        raise CelError(f"IPv4-mapped IPv6 address {go_quote(s)} is not allowed")
    return addr.ip


class Optional:
    """A CEL ``optional(T)`` value: ``optional.of(x)`` or ``optional.none()``."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    @property
    def has_value(self) -> bool:
        return self.value is not _NONE_VALUE

    def __repr__(self) -> str:
        return f"optional.of({self.value!r})" if self.has_value else "optional.none()"


_NONE_VALUE = object()
OPTIONAL_NONE = Optional(_NONE_VALUE)


class URL:
    """``url(s)``: a URL Kubernetes accepts (Go's url.ParseRequestURI: an absolute URI or an
    absolute path), read with Go's url.Parse; equal when their string forms are."""

    __slots__ = ("u", "text")

    def __init__(self, u: gourl.URL) -> None:
        self.u = u
        self.text = u.string().decode(errors="replace")

    @classmethod
    def parse(cls, s: str) -> URL:
        try:
            gourl.parse_request_uri(s)
            return cls(gourl.parse(s))
        except gourl.URLError as e:
            raise CelError(f"URL parse error during conversion from string: {e}") from None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, URL) and self.text == other.text

    def __hash__(self) -> int:
        return hash(self.text)

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"url({self.text!r})"


_TYPE_NAMES: dict[type, str] = {Semver: "kubernetes.Semver", IP: "net.IP", CIDR: "net.CIDR", URL: "kubernetes.URL",
                                Optional: "optional_type"}
