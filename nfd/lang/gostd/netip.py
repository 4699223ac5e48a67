"""Go's net/netip: ParseAddr and ParsePrefix, with Go's errors
(``ParseAddr("1.2.3"): IPv4 address too short``, ``... (at "x")`` naming the rest of the input
where Go does).

Addresses are returned as ``ipaddress`` objects plus the zone, so callers compare and mask
them with the standard library; the parsing rules (no leading zeros, no IPv4 zone, IPv4 tail
only in the last 32 bits of IPv6, a zone after ``%`` never empty) are netip's.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from nfd.lang.gostd import go_bytes
from nfd.lang.gostd.strconv import NumError, atoi, quote

_HEX = frozenset(b"0123456789abcdefABCDEF")


class AddrError(ValueError):
    """An address netip refuses; ``str()`` is Go's error text, ``reason`` the bare message."""

    def __init__(self, text: str, reason: str) -> None:
        super().__init__(text)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Addr:
    """A parsed address: ``ip`` without zone, ``zone`` ("" when none; IPv6 only)."""

    ip: ipaddress.IPv4Address | ipaddress.IPv6Address
    zone: str = ""

    @property
    def is4(self) -> bool:
        return self.ip.version == 4

    @property
    def is4in6(self) -> bool:
        return self.ip.version == 6 and self.ip.ipv4_mapped is not None

    def __str__(self) -> str:
        """Addr.String: an IPv4-mapped IPv6 address keeps its dotted tail (``::ffff:1.2.3.4``)."""
        if self.ip.version == 6 and self.ip.ipv4_mapped is not None:
            text = f"::ffff:{self.ip.ipv4_mapped}"
        else:
            text = str(self.ip)
        return f"{text}%{self.zone}" if self.zone else text


def _fail(raw: bytes, reason: str, at: bytes = b"") -> AddrError:
    text = f"ParseAddr({quote(raw)}): {reason}"
    if at:
        text += f" (at {quote(at)})"
    return AddrError(text, reason)


def _ipv4(raw: bytes, s: bytes) -> bytes:
    """The four octets of dotted ``s``, a part of ``raw`` (the whole input, for errors)."""
    octets = bytearray()
    val = digits = 0
    for i, c in enumerate(s):
        if 0x30 <= c <= 0x39:
            if digits == 1 and val == 0:
                raise _fail(raw, "IPv4 field has octet with leading zero")
            val = val * 10 + c - 0x30
            digits += 1
            if val > 255:
                raise _fail(raw, "IPv4 field has value >255")
        elif c == 0x2E:
            if i == 0 or i == len(s) - 1 or s[i - 1] == 0x2E:
                raise _fail(raw, "IPv4 field must have at least one digit", s[i:])
            if len(octets) == 3:
                raise _fail(raw, "IPv4 address too long")
            octets.append(val)
            val = digits = 0
        else:
            raise _fail(raw, "unexpected character", s[i:])
    if len(octets) < 3:
        raise _fail(raw, "IPv4 address too short")
    octets.append(val)
    return bytes(octets)


def _ipv6(raw: bytes) -> Addr:
    """Groups of at most four hex digits, one ``::``, an optional dotted tail in the last 32
    bits, an optional non-empty zone after ``%``."""
    s, pct, zone = raw.partition(b"%")
    if pct and not zone:
        raise _fail(raw, "zone must be a non-empty string")
    head: list[int] = []  # 16-bit groups before the ellipsis, then after it
    tail: list[int] = []
    groups = head
    ellipsis = False
    if s.startswith(b"::"):
        ellipsis, groups, s = True, tail, s[2:]
    while s and len(head) + len(tail) < 8:
        off = 0
        while off < len(s) and s[off] in _HEX:
            if off > 3:
                raise _fail(raw, "each group must have 4 or less digits", s)
            off += 1
        if off == 0:
            raise _fail(raw, "each colon-separated field must have at least one digit", s)
        if off < len(s) and s[off] == 0x2E:  # a dotted IPv4 tail
            if not ellipsis and len(head) != 6:
                raise _fail(raw, "embedded IPv4 address must replace the final 2 fields of the address", s)
            if len(head) + len(tail) + 2 > 8:
                raise _fail(raw, "too many hex fields to fit an embedded IPv4 at the end of the address", s)
            o = _ipv4(raw, s)
            groups += [o[0] << 8 | o[1], o[2] << 8 | o[3]]
            s = b""
            break
        groups.append(int(s[:off], 16))
        s = s[off:]
        if not s:
            break
        if s[0] != 0x3A:
            raise _fail(raw, "unexpected character, want colon", s)
        if len(s) == 1:
            raise _fail(raw, "colon must be followed by more characters", s)
        s = s[1:]
        if s[0] == 0x3A:
            if ellipsis:
                raise _fail(raw, "multiple :: in address", s)
            ellipsis, groups, s = True, tail, s[1:]
    if s:
        raise _fail(raw, "trailing garbage after address", s)
    n = len(head) + len(tail)
    if n < 8 and not ellipsis:
        raise _fail(raw, "address string too short")
    if n == 8 and ellipsis:
        raise _fail(raw, "the :: must expand to at least one field of zeros")
    value = 0
    for g in head + [0] * (8 - n) + tail:
        value = value << 16 | g
    return Addr(ipaddress.IPv6Address(value), zone.decode("utf-8", "surrogateescape"))


def parse_addr(s: str | bytes) -> Addr:
    """netip.ParseAddr: IPv4 when a ``.`` comes before any ``:``, IPv6 when a ``:`` does."""
    raw = go_bytes(s) if isinstance(s, str) else s
    for c in raw:
        if c == 0x2E:
            return Addr(ipaddress.IPv4Address(_ipv4(raw, raw)))
        if c == 0x3A:
            return _ipv6(raw)
        if c == 0x25:
            raise _fail(raw, "missing IPv6 address")
    raise _fail(raw, "unable to parse IP")


class PrefixError(ValueError):
    """A prefix netip refuses; ``str()`` is Go's text (``netip.ParsePrefix("x"): no '/'``)."""


@dataclass(frozen=True, slots=True)
class Prefix:
    """An address (host bits kept, as netip does) and a prefix length."""

    addr: Addr
    bits: int

    def __str__(self) -> str:
        return f"{self.addr}/{self.bits}"


def parse_prefix(s: str) -> Prefix:
    """netip.ParsePrefix: ``addr/bits`` at the last ``/``; no zone; bits in decimal without
    sign or leading zero, at most 32 (IPv4) or 128 (IPv6)."""
    def fail(reason: str) -> PrefixError:
        return PrefixError(f"netip.ParsePrefix({quote(s)}): {reason}")

    addr_text, slash, bits_text = s.rpartition("/")
    if not slash:
        raise fail("no '/'")
    try:
        addr = parse_addr(addr_text)
    except AddrError as e:
        raise fail(str(e)) from None
    if addr.zone:
        raise fail("IPv6 zones cannot be present in a prefix")
    bad_bits = fail(f"bad bits after slash: {quote(bits_text)}")
    if len(bits_text) > 1 and not "1" <= bits_text[0] <= "9":
        raise bad_bits
    try:
        bits = atoi(bits_text)
    except NumError:
        raise bad_bits from None
    if not 0 <= bits <= (32 if addr.is4 else 128):
        raise fail("prefix length out of range")
    return Prefix(addr, bits)
