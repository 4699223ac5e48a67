"""Go's net/url: ``url.Parse``, ``url.ParseRequestURI``, ``URL.String``, ``Hostname``,
``Port``, ``EscapedPath``, ``Query`` and ``Userinfo.String``, as Kubernetes' CEL URL library
and Sprig's urlParse/urlJoin use them.

Written from Go's documented rules (RFC 3986 with Go's leniencies: userinfo may hold ``@``,
escapes in a host only for non-ASCII bytes): strings are handled as bytes, as Go does, errors
carry Go's text (``parse "x": invalid URL escape "%zz"``); a bracketed host must be an IPv6
address as netip.ParseAddr reads it. Hosts use the last colon for the port, as Go does for
modules declaring go < 1.26 (upstream NFD's, Kubernetes' and the oracles'), where the
``urlstrictcolons`` GODEBUG defaults to off.
"""

from __future__ import annotations

from dataclasses import dataclass

from nfd.lang.gostd import go_bytes
from nfd.lang.gostd.netip import AddrError, parse_addr
from nfd.lang.gostd.strconv import quote

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


MAX_QUERY_PARAMS = 10_000  # Go's urlmaxqueryparams default


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
    return URLError(f"invalid URL escape {quote(s[:3])}")


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
            raise URLError(f"invalid character {quote(bytes([c]))} in host name")
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

    def port(self) -> bytes:
        """The valid numeric port after the last colon, else empty."""
        colon = self.host.rfind(b":")
        if colon != -1 and _valid_optional_port(self.host[colon:]):
            return self.host[colon + 1:]
        return b""

    def query(self) -> dict[bytes, list[bytes]]:
        """``u.Query()``: decoded pairs of RawQuery; a pair that does not decode or holds
        ``;`` is dropped, and a query of more than 10,000 pairs reads as empty, as Go does."""
        out: dict[bytes, list[bytes]] = {}
        if not self.raw_query or self.raw_query.count(b"&") >= MAX_QUERY_PARAMS:
            return out
        for part in self.raw_query.split(b"&"):
            if not part or b";" in part:
                continue
            k, _, v = part.partition(b"=")
            try:
                key, value = unescape(k, QUERY), unescape(v, QUERY)
            except URLError:
                continue
            out.setdefault(key, []).append(value)
        return out

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


def _check_ip_literal(addr: bytes) -> None:
    """A bracketed host must be an IPv6 address (IPv4-mapped ones included), never IPv4."""
    try:
        ip = parse_addr(addr)
    except AddrError as e:
        raise URLError(f"invalid host: {e}") from None
    if ip.is4:
        raise URLError("invalid IP-literal")


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
            raise URLError(f"invalid port {quote(colon_port)} after host")
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
        raise URLError(f"invalid port {quote(host[colon:])} after host")
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


def _parse(raw: bytes, via_request: bool) -> URL:
    """Go's parse(rawURL, viaRequest): ``via_request`` is ParseRequestURI's stricter reading
    (an absolute URI or an absolute path, no empty URL, ``//x`` is a path without a scheme)."""
    if any(c < 0x20 or c == 0x7F for c in raw):
        raise URLError("net/url: invalid control character in URL")
    if not raw and via_request:
        raise URLError("empty url")
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
        if via_request:
            raise URLError("invalid URI for request")
        if b":" in rest.partition(b"/")[0]:
            raise URLError("first path segment in URL cannot contain colon")
    if rest.startswith(b"//") and (u.scheme or not via_request and not rest.startswith(b"///")):
        authority, slash, tail = rest[2:].partition(b"/")
        rest = slash + tail
        u.user, u.host = _parse_authority(authority)
    elif u.scheme and rest.startswith(b"/"):
        u.omit_host = True
    u.path = unescape(rest, PATH)
    u.raw_path = b"" if escape(u.path, PATH) == rest else rest
    return u


def _raw(s: str | bytes) -> bytes:
    return go_bytes(s) if isinstance(s, str) else s


def parse(s: str | bytes) -> URL:
    """``url.Parse(s)``; URLError with Go's ``parse "<url>": <reason>`` text."""
    raw = _raw(s)
    head, _, frag = raw.partition(b"#")
    try:
        u = _parse(head, False)
    except URLError as e:
        raise URLError(f"parse {quote(head)}: {e}") from None
    if frag:
        try:
            u.fragment = unescape(frag, FRAGMENT)
        except URLError as e:
            raise URLError(f"parse {quote(raw)}: {e}") from None
        u.raw_fragment = b"" if escape(u.fragment, FRAGMENT) == frag else frag
    return u


def parse_request_uri(s: str | bytes) -> URL:
    """``url.ParseRequestURI(s)``: no fragment is split off (``#`` stays in the path)."""
    raw = _raw(s)
    try:
        return _parse(raw, True)
    except URLError as e:
        raise URLError(f"parse {quote(raw)}: {e}") from None
