"""Go's net/url, the parts Kubernetes' CEL URL library uses: ``url.ParseRequestURI``,
``url.Parse``, ``Hostname``, ``Port``, ``EscapedPath``, ``Query`` and ``String``.

Behaviour follows Go's documented parsing rules (RFC 3986 with Go's leniencies: userinfo may
hold ``@``, a host may hold several colons outside http/https, escapes in a host only for
non-ASCII bytes). Strings are handled as UTF-8 bytes, as Go does.
"""

from __future__ import annotations

from dataclasses import dataclass

PATH, PATH_SEGMENT, HOST, ZONE, USER_PASSWORD, QUERY_COMPONENT, FRAGMENT = range(7)

_ALNUM = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_HOST_OK = frozenset(b"!$&'()*+,;=:[]<>\"")
_HEX = frozenset(b"0123456789abcdefABCDEF")


class URLError(ValueError):
    """A string Go's net/url refuses, with Go's reason."""


def should_escape(c: int, mode: int) -> bool:
    """Whether byte ``c`` must be percent-encoded in the given part of a URL (Go's shouldEscape)."""
    if c in _ALNUM:
        return False
    if mode in (HOST, ZONE) and c in _HOST_OK:
        return False
    if c in b"-_.~":
        return False
    if c in b"$&+,/:;=?@":
        if mode == PATH:
            return c == ord("?")
        if mode == PATH_SEGMENT:
            return c in b"/;,?"
        if mode == USER_PASSWORD:
            return c in b"@/?:"
        if mode == QUERY_COMPONENT:
            return True
        if mode == FRAGMENT:
            return False
    return not (mode == FRAGMENT and c in b"!()*")


def escape(s: bytes, mode: int) -> bytes:
    out = bytearray()
    for c in s:
        if should_escape(c, mode):
            if c == 0x20 and mode == QUERY_COMPONENT:
                out += b"+"
            else:
                out += b"%%%02X" % c
        else:
            out.append(c)
    return bytes(out)


def unescape(s: bytes, mode: int) -> bytes:
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        if c == 0x25:  # %
            if i + 2 >= n or s[i + 1] not in _HEX or s[i + 2] not in _HEX:
                raise URLError(f"invalid URL escape {_q(s[i:i + 3])}")
            if mode == HOST and int(s[i + 1:i + 2], 16) < 8 and s[i:i + 3] != b"%25":
                raise URLError(f"invalid URL escape {_q(s[i:i + 3])}")
            if mode == ZONE:
                v = int(s[i + 1:i + 3], 16)
                if s[i:i + 3] != b"%25" and v != 0x20 and should_escape(v, HOST):
                    raise URLError(f"invalid URL escape {_q(s[i:i + 3])}")
            i += 3
            continue
        if mode in (HOST, ZONE) and c < 0x80 and should_escape(c, mode):
            raise URLError(f"invalid character {_q(s[i:i + 1])} in host name")
        i += 1
    out = bytearray()
    i = 0
    while i < n:
        c = s[i]
        if c == 0x25:
            out.append(int(s[i + 1:i + 3], 16))
            i += 3
            continue
        out.append(0x20 if c == 0x2B and mode == QUERY_COMPONENT else c)
        i += 1
    return bytes(out)


def _q(b: bytes) -> str:
    from nfd.lang.cel.values import go_quote

    return go_quote(b.decode(errors="replace"))


@dataclass
class URL:
    scheme: bytes = b""
    opaque: bytes = b""
    user: tuple[bytes, bytes | None] | None = None
    host: bytes = b""
    path: bytes = b""
    raw_path: bytes = b""
    omit_host: bool = False
    force_query: bool = False
    raw_query: bytes = b""
    fragment: bytes = b""
    raw_fragment: bytes = b""

    def hostname(self) -> bytes:
        return _split_host_port(self.host)[0]

    def port(self) -> bytes:
        return _split_host_port(self.host)[1]

    def escaped_path(self) -> bytes:
        if self.raw_path and _valid_encoded(self.raw_path, PATH):
            try:
                if unescape(self.raw_path, PATH) == self.path:
                    return self.raw_path
            except URLError:
                pass
        if self.path == b"*":
            return b"*"
        return escape(self.path, PATH)

    def escaped_fragment(self) -> bytes:
        if self.raw_fragment and _valid_encoded(self.raw_fragment, FRAGMENT):
            try:
                if unescape(self.raw_fragment, FRAGMENT) == self.fragment:
                    return self.raw_fragment
            except URLError:
                pass
        return escape(self.fragment, FRAGMENT)

    def query(self) -> dict[str, list[str]]:
        """``u.Query()``: pairs that do not decode (or hold ``;``) are dropped, as Go does."""
        out: dict[str, list[str]] = {}
        if self.raw_query.count(b"&") + 1 > 10_000:
            return out
        for part in self.raw_query.split(b"&") if self.raw_query else []:
            if b";" in part or not part:
                continue
            k, _, v = part.partition(b"=")
            try:
                key, value = unescape(k, QUERY_COMPONENT), unescape(v, QUERY_COMPONENT)
            except URLError:
                continue
            out.setdefault(_text(key), []).append(_text(value))
        return out

    def string(self) -> str:
        b = bytearray()
        if self.scheme:
            b += self.scheme + b":"
        if self.opaque:
            b += self.opaque
        else:
            authority = self.scheme or self.host or self.user is not None
            if authority and not (self.omit_host and not self.host and self.user is None):
                if self.host or self.path or self.user is not None:
                    b += b"//"
                if self.user is not None:
                    name, password = self.user
                    b += escape(name, USER_PASSWORD)
                    if password is not None:
                        b += b":" + escape(password, USER_PASSWORD)
                    b += b"@"
                if self.host:
                    b += escape(self.host, HOST)
            path = self.escaped_path()
            if path and path[:1] != b"/" and self.host:
                b += b"/"
            if not b and b":" in path.partition(b"/")[0]:
                b += b"./"
            b += path
        if self.force_query or self.raw_query:
            b += b"?" + self.raw_query
        if self.fragment:
            b += b"#" + self.escaped_fragment()
        return _text(bytes(b))


def _text(b: bytes) -> str:
    return b.decode(errors="replace")


def _valid_encoded(s: bytes, mode: int) -> bool:
    return all(c in b"!$&'()*+,;=:@[]%" or not should_escape(c, mode) for c in s)


def _valid_optional_port(port: bytes) -> bool:
    return not port or (port[:1] == b":" and all(0x30 <= c <= 0x39 for c in port[1:]))


def _split_host_port(hostport: bytes) -> tuple[bytes, bytes]:
    host, port = hostport, b""
    colon = hostport.rfind(b":")
    if colon != -1 and _valid_optional_port(hostport[colon:]):
        host, port = hostport[:colon], hostport[colon + 1:]
    if host.startswith(b"[") and host.endswith(b"]"):
        host = host[1:-1]
    return host, port


def _get_scheme(raw: bytes) -> tuple[bytes, bytes]:
    for i, c in enumerate(raw):
        if 0x61 <= c <= 0x7A or 0x41 <= c <= 0x5A:
            continue
        if 0x30 <= c <= 0x39 or c in b"+-.":
            if i == 0:
                return b"", raw
            continue
        if c == 0x3A:
            if i == 0:
                raise URLError("missing protocol scheme")
            return raw[:i], raw[i + 1:]
        return b"", raw
    return b"", raw


def _parse_host(scheme: bytes, host: bytes) -> bytes:
    from nfd.lang.cel.values import _parse_addr

    open_bracket = host.rfind(b"[")
    if open_bracket > 0:
        raise URLError("invalid IP-literal")
    if open_bracket == 0:
        close = host.rfind(b"]")
        if close < 0:
            raise URLError("missing ']' in host")
        colon_port = host[close + 1:]
        if not _valid_optional_port(colon_port):
            raise URLError(f"invalid port {_q(colon_port)} after host")
        colon_port = unescape(colon_port, HOST)
        name = host[1:close]
        zone = name.find(b"%25")
        if zone >= 0:
            unescaped = unescape(name[:zone], HOST) + unescape(name[zone:], ZONE)
        else:
            unescaped = unescape(name, HOST)
        addr_text, _, zone_text = unescaped.partition(b"%")
        try:
            addr = _parse_addr(addr_text.decode(errors="replace"))
        except ValueError as e:
            raise URLError(f"invalid host: {e}") from None
        if b"%" in unescaped and not zone_text:
            raise URLError("invalid host: zone must be a non-empty string")
        if addr.version == 4:
            raise URLError("invalid IP-literal")
        return b"[" + unescaped + b"]" + colon_port
    colon = host.rfind(b":")  # Kubernetes' Go (before 1.26's strict colons): the last colon
    if colon != -1 and not _valid_optional_port(host[colon:]):
        raise URLError(f"invalid port {_q(host[colon:])} after host")
    return unescape(host, HOST)


def _valid_userinfo(s: bytes) -> bool:
    return all(c in _ALNUM or c in b"-._:~!$&'()*+,;=%@" for c in s)


def _parse(raw: bytes, via_request: bool) -> URL:
    if any(c < 0x20 or c == 0x7F for c in raw):
        raise URLError("net/url: invalid control character in URL")
    if not raw and via_request:
        raise URLError("empty url")
    u = URL()
    if raw == b"*":
        u.path = b"*"
        return u
    scheme, rest = _get_scheme(raw)
    u.scheme = scheme.lower()
    if rest.endswith(b"?") and rest.count(b"?") == 1:
        u.force_query = True
        rest = rest[:-1]
    else:
        rest, _, u.raw_query = rest.partition(b"?")
    if not rest.startswith(b"/"):
        if u.scheme:
            u.opaque = rest
            return u
        if via_request:
            raise URLError("invalid URI for request")
        if b":" in rest.partition(b"/")[0]:
            raise URLError("first path segment in URL cannot contain colon")
    if (u.scheme or not via_request and not rest.startswith(b"///")) and rest.startswith(b"//"):
        authority, rest = rest[2:], b""
        slash = authority.find(b"/")
        if slash >= 0:
            authority, rest = authority[:slash], authority[slash:]
        at = authority.rfind(b"@")
        u.host = _parse_host(u.scheme, authority[at + 1:] if at >= 0 else authority)
        if at >= 0:
            info = authority[:at]
            if not _valid_userinfo(info):
                raise URLError("net/url: invalid userinfo")
            if b":" in info:
                name, _, password = info.partition(b":")
                u.user = (unescape(name, USER_PASSWORD), unescape(password, USER_PASSWORD))
            else:
                u.user = (unescape(info, USER_PASSWORD), None)
    elif u.scheme and rest.startswith(b"/"):
        u.omit_host = True
    u.path = unescape(rest, PATH)
    u.raw_path = b"" if escape(u.path, PATH) == rest else rest
    return u


def parse_request_uri(s: str) -> URL:
    """Go's url.ParseRequestURI (no fragment handling: ``#`` stays in the path)."""
    raw = s.encode()
    try:
        return _parse(raw, True)
    except URLError as e:
        raise URLError(f"parse {_q(raw)}: {e}") from None


def parse(s: str) -> URL:
    """Go's url.Parse."""
    raw = s.encode()
    head, _, frag = raw.partition(b"#")
    try:
        u = _parse(head, False)
    except URLError as e:
        raise URLError(f"parse {_q(head)}: {e}") from None
    if frag:
        try:
            u.fragment = unescape(frag, FRAGMENT)
        except URLError as e:
            raise URLError(f"parse {_q(raw)}: {e}") from None
        u.raw_fragment = b"" if escape(u.fragment, FRAGMENT) == frag else frag
    return u
