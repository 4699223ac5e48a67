"""Go's net/url as Sprig's urlParse and urlJoin use it: ``url.Parse``, ``URL.String``,
``Hostname`` and ``Userinfo.String``.

Written from Go's documented rules (RFC 3986 with Go's leniencies): strings are handled as
bytes, as Go does, errors carry Go's text (``parse "x": invalid URL escape "%zz"``). Hosts
use the last colon for the port, as Go does for modules declaring go < 1.26 (upstream NFD's
and the oracle's), where the ``urlstrictcolons`` GODEBUG defaults to off.
"""

from __future__ import annotations

from dataclasses import dataclass

from nfd.lang.gotemplate.values import from_go_bytes, go_bytes, go_quote

# Parts of a URL, each with its own set of bytes that stay unescaped.
PATH, PATH_SEGMENT, HOST, ZONE, USERINFO, QUERY, FRAGMENT = range(7)

_ALNUM = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_HEX = frozenset(b"0123456789abcdefABCDEF")


def _safe_set(mode: int) -> frozenset[int]:
    """The bytes Go's shouldEscape leaves alone in ``mode``."""
    safe = set(_ALNUM) | set(b"-_.~")
    if mode in (HOST, ZONE):
        safe |= set(b"!$&'()*+,;=:[]<>\"")
    reserved = set(b"$&+,/:;=?@")
    keep = {
        PATH: reserved - set(b"?"),
        PATH_SEGMENT: reserved - set(b"/;,?"),
        USERINFO: reserved - set(b"@/?:"),
        QUERY: set(),
        FRAGMENT: reserved,
    }.get(mode, set())
    safe |= keep
    if mode == FRAGMENT:
        safe |= set(b"!()*")
    return frozenset(safe)


_SAFE = [_safe_set(m) for m in range(7)]
# Bytes a valid encoded path or fragment may hold besides the unescaped ones (Go's validEncoded).
_ENCODED_OK = frozenset(b"!$&'()*+,;=:@[]%")


class URLError(ValueError):
    """A URL Go's net/url refuses; the message is Go's error text."""


def escape(s: bytes, mode: int) -> bytes:
    """Percent-encode what ``mode`` does not allow (a space in a query component is ``+``)."""
    safe = _SAFE[mode]
    if all(c in safe for c in s):
        return s
    out = bytearray()
    for c in s:
        if c in safe:
            out.append(c)
        elif c == 0x20 and mode == QUERY:
            out.append(0x2B)
        else:
            out += b"%%%02X" % c
    return bytes(out)


def _escape_error(s: bytes) -> URLError:
    return URLError(f"invalid URL escape {go_quote(from_go_bytes(s[:3]))}")


def unescape(s: bytes, mode: int) -> bytes:
    """Decode %XX escapes, refusing malformed ones; hosts accept escapes of non-ASCII bytes
    only (and ``%25``), and no ASCII byte that would need escaping."""
    host_like = mode in (HOST, ZONE)
    safe = _SAFE[mode]
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        if c == 0x25:
            if i + 2 >= n or s[i + 1] not in _HEX or s[i + 2] not in _HEX:
                raise _escape_error(s[i:])
            esc = s[i:i + 3]
            if mode == HOST and int(esc[1:2], 16) < 8 and esc != b"%25":
                raise _escape_error(esc)
            if mode == ZONE:
                v = int(esc[1:], 16)
                if esc != b"%25" and v != 0x20 and v not in _SAFE[HOST]:
                    raise _escape_error(esc)
            i += 3
            continue
        if host_like and c < 0x80 and c not in safe:
            raise URLError(f"invalid character {go_quote(chr(c))} in host name")
        i += 1
    plus = mode == QUERY and 0x2B in s
    if 0x25 not in s and not plus:
        return s
    out = bytearray()
    i = 0
    while i < n:
        c = s[i]
        if c == 0x25:
            out.append(int(s[i + 1:i + 3], 16))
            i += 3
            continue
        out.append(0x20 if c == 0x2B and mode == QUERY else c)
        i += 1
    return bytes(out)


def _valid_encoded(s: bytes, mode: int) -> bool:
    safe = _SAFE[mode]
    return all(c in safe or c in _ENCODED_OK for c in s)


def _valid_optional_port(port: bytes) -> bool:
    """Empty, or ``:`` followed by digits only."""
    return not port or (port[:1] == b":" and all(0x30 <= c <= 0x39 for c in port[1:]))


@dataclass(slots=True)
class Userinfo:
    username: bytes = b""
    password: bytes = b""
    password_set: bool = False

    def string(self) -> bytes:
        s = escape(self.username, USERINFO)
        if self.password_set:
            s += b":" + escape(self.password, USERINFO)
        return s


@dataclass(slots=True)
class URL:
    """A parsed URL: Path and Fragment decoded, RawPath/RawFragment the original encoding
    when it differs from the default one."""

    scheme: bytes = b""
    opaque: bytes = b""
    user: Userinfo | None = None
    host: bytes = b""
    path: bytes = b""
    raw_path: bytes = b""
    raw_query: bytes = b""
    fragment: bytes = b""
    raw_fragment: bytes = b""
    force_query: bool = False
    omit_host: bool = False

    def hostname(self) -> bytes:
        """The host without a valid numeric port, and without the brackets of an IPv6 literal."""
        host = self.host
        colon = host.rfind(b":")
        if colon != -1 and _valid_optional_port(host[colon:]):
            host = host[:colon]
        if host.startswith(b"[") and host.endswith(b"]"):
            host = host[1:-1]
        return host

    @staticmethod
    def _raw_if_valid(raw: bytes, plain: bytes, mode: int) -> bytes | None:
        """``raw`` when it is a valid encoding of ``plain`` (Go keeps the original form)."""
        if raw and _valid_encoded(raw, mode):
            try:
                if unescape(raw, mode) == plain:
                    return raw
            except URLError:
                pass
        return None

    def escaped_path(self) -> bytes:
        """RawPath when it encodes Path, else Go's default encoding (``*`` stays as it is)."""
        raw = self._raw_if_valid(self.raw_path, self.path, PATH)
        if raw is not None:
            return raw
        return b"*" if self.path == b"*" else escape(self.path, PATH)

    def escaped_fragment(self) -> bytes:
        raw = self._raw_if_valid(self.raw_fragment, self.fragment, FRAGMENT)
        return raw if raw is not None else escape(self.fragment, FRAGMENT)

    def string(self) -> bytes:
        """``URL.String()``: scheme:opaque?query#fragment or scheme://userinfo@host/path?query#fragment."""
        b = bytearray()
        if self.scheme:
            b += self.scheme + b":"
        if self.opaque:
            b += self.opaque
        else:
            if (self.scheme or self.host or self.user is not None) and not (
                self.omit_host and not self.host and self.user is None
            ):
                if self.host or self.path or self.user is not None:
                    b += b"//"
                if self.user is not None:
                    b += self.user.string() + b"@"
                b += escape(self.host, HOST)
            path = self.escaped_path()
            if path and path[:1] != b"/" and self.host:
                b += b"/"
            if not b and b":" in path.partition(b"/")[0]:
                b += b"./"  # a first segment with a colon would read as a scheme
            b += path
        if self.force_query or self.raw_query:
            b += b"?" + self.raw_query
        if self.fragment:
            b += b"#" + self.escaped_fragment()
        return bytes(b)


def _split_scheme(raw: bytes) -> tuple[bytes, bytes]:
    """``scheme:rest`` when raw starts with [a-zA-Z][a-zA-Z0-9+.-]*: (else no scheme)."""
    for i, c in enumerate(raw):
        if c in _ALNUM[:52]:
            continue
        if c in b"0123456789+-.":
            if i == 0:
                break
            continue
        if c == 0x3A:
            if i == 0:
                raise URLError("missing protocol scheme")
            return raw[:i], raw[i + 1:]
        break
    return b"", raw


def _addr_error(addr: bytes, msg: str, at: bytes = b"") -> URLError:
    text = f"invalid host: ParseAddr({go_quote(from_go_bytes(addr))}): {msg}"
    if at:
        text += f" (at {go_quote(from_go_bytes(at))})"
    return URLError(text)


def _check_ipv4(addr: bytes, s: bytes) -> None:
    """netip's IPv4 field rules on ``s`` (the dotted tail of ``addr``)."""
    fields, digits, val = 0, 0, 0
    for i, c in enumerate(s):
        if 0x30 <= c <= 0x39:
            if digits == 1 and val == 0:
                raise _addr_error(addr, "IPv4 field has octet with leading zero")
            val = val * 10 + c - 0x30
            digits += 1
            if val > 255:
                raise _addr_error(addr, "IPv4 field has value >255")
        elif c == 0x2E:
            if i == 0 or i == len(s) - 1 or s[i - 1] == 0x2E:
                raise _addr_error(addr, "IPv4 field must have at least one digit", s[i:])
            if fields == 3:
                raise _addr_error(addr, "IPv4 address too long")
            fields += 1
            val = digits = 0
        else:
            raise _addr_error(addr, "unexpected character", s[i:])
    if fields < 3:
        raise _addr_error(addr, "IPv4 address too short")


def _check_ipv6(addr: bytes) -> None:
    """netip.ParseAddr's IPv6 rules (groups of at most 4 hex digits, one ``::``, an optional
    dotted IPv4 tail, a non-empty zone after ``%``), with its messages."""
    s, pct, zone = addr.partition(b"%")
    if pct and not zone:
        raise _addr_error(addr, "zone must be a non-empty string")
    groups = 0  # 16-bit groups filled
    ellipsis = False
    if s.startswith(b"::"):
        ellipsis, s = True, s[2:]
        if not s:
            return
    while groups < 8:
        off = 0
        while off < len(s) and s[off] in _HEX:
            if off > 3:
                raise _addr_error(addr, "each group must have 4 or less digits", s)
            off += 1
        if off == 0:
            raise _addr_error(addr, "each colon-separated field must have at least one digit", s)
        if off < len(s) and s[off] == 0x2E:
            if not ellipsis and groups != 6:
                raise _addr_error(addr, "embedded IPv4 address must replace the final 2 fields of the address", s)
            if groups + 2 > 8:
                raise _addr_error(addr, "too many hex fields to fit an embedded IPv4 at the end of the address", s)
            _check_ipv4(addr, s)
            s = b""
            groups += 2
            break
        groups += 1
        s = s[off:]
        if not s:
            break
        if s[0] != 0x3A:
            raise _addr_error(addr, "unexpected character, want colon", s)
        if len(s) == 1:
            raise _addr_error(addr, "colon must be followed by more characters", s)
        s = s[1:]
        if s[0] == 0x3A:
            if ellipsis:
                raise _addr_error(addr, "multiple :: in address", s)
            ellipsis, s = True, s[1:]
            if not s:
                break
    if s:
        raise _addr_error(addr, "trailing garbage after address", s)
    if groups < 8 and not ellipsis:
        raise _addr_error(addr, "address string too short")
    if groups == 8 and ellipsis:
        raise _addr_error(addr, "the :: must expand to at least one field of zeros")


def _check_ip_literal(addr: bytes) -> None:
    """A bracketed host must be an IPv6 address (IPv4-mapped ones included), never IPv4."""
    for c in addr:
        if c == 0x2E:
            _check_ipv4(addr, addr)
            raise URLError("invalid IP-literal")
        if c == 0x3A:
            _check_ipv6(addr)
            return
        if c == 0x25:
            raise _addr_error(addr, "missing IPv6 address")
    raise _addr_error(addr, "unable to parse IP")


def _parse_host(host: bytes) -> bytes:
    """host[:port] of an authority: an IP literal in brackets (RFC 6874 zones after %25), or a
    name whose %-escapes stand for non-ASCII bytes only."""
    bracket = host.rfind(b"[")
    if bracket > 0:
        raise URLError("invalid IP-literal")
    if bracket == 0:
        close = host.rfind(b"]")
        if close < 0:
            raise URLError("missing ']' in host")
        colon_port = host[close + 1:]
        if not _valid_optional_port(colon_port):
            raise URLError(f"invalid port {go_quote(from_go_bytes(colon_port))} after host")
        name = host[1:close]
        zone = name.find(b"%25")
        if zone >= 0:
            addr = unescape(name[:zone], HOST) + unescape(name[zone:], ZONE)
        else:
            addr = unescape(name, HOST)
        _check_ip_literal(addr)
        return b"[" + addr + b"]" + colon_port
    colon = host.rfind(b":")
    if colon != -1 and not _valid_optional_port(host[colon:]):
        raise URLError(f"invalid port {go_quote(from_go_bytes(host[colon:]))} after host")
    return unescape(host, HOST)


_USERINFO_OK = frozenset(_ALNUM + b"-._:~!$&'()*+,;=%@")


def _parse_authority(authority: bytes) -> tuple[Userinfo | None, bytes]:
    at = authority.rfind(b"@")
    host = _parse_host(authority[at + 1:])
    if at < 0:
        return None, host
    info = authority[:at]
    # Go checks runes: any non-ASCII rune is refused as well.
    if not all(c in _USERINFO_OK for c in info):
        raise URLError("net/url: invalid userinfo")
    if b":" not in info:
        return Userinfo(unescape(info, USERINFO)), host
    name, _, password = info.partition(b":")
    return Userinfo(unescape(name, USERINFO), unescape(password, USERINFO), True), host


def _parse(raw: bytes) -> URL:
    if any(c < 0x20 or c == 0x7F for c in raw):
        raise URLError("net/url: invalid control character in URL")
    u = URL()
    if raw == b"*":
        u.path = b"*"
        return u
    scheme, rest = _split_scheme(raw)
    u.scheme = scheme.lower()
    if rest.endswith(b"?") and rest.count(b"?") == 1:
        u.force_query, rest = True, rest[:-1]
    else:
        rest, _, u.raw_query = rest.partition(b"?")
    if not rest.startswith(b"/"):
        if u.scheme:
            u.opaque = rest  # rootless: scheme:opaque
            return u
        if b":" in rest.partition(b"/")[0]:
            raise URLError("first path segment in URL cannot contain colon")
    if rest.startswith(b"//") and (u.scheme or not rest.startswith(b"///")):
        authority, slash, tail = rest[2:].partition(b"/")
        rest = slash + tail
        u.user, u.host = _parse_authority(authority)
    elif u.scheme and rest.startswith(b"/"):
        u.omit_host = True
    u.path = unescape(rest, PATH)
    u.raw_path = b"" if escape(u.path, PATH) == rest else rest
    return u


def parse(s: str) -> URL:
    """``url.Parse(s)``; URLError with Go's ``parse "<url>": <reason>`` text."""
    raw = go_bytes(s)
    head, _, frag = raw.partition(b"#")
    try:
        u = _parse(head)
    except URLError as e:
        raise URLError(f"parse {go_quote(from_go_bytes(head))}: {e}") from None
    if frag:
        try:
            u.fragment = unescape(frag, FRAGMENT)
        except URLError as e:
            raise URLError(f"parse {go_quote(s)}: {e}") from None
        u.raw_fragment = b"" if escape(u.fragment, FRAGMENT) == frag else frag
    return u
