"""Regenerate cases.json: inputs for nfd/lang/gostd, answered by real Go (tests/tools/gostd, our
own program over Go's strconv, net/netip, net/url and time, built with the installed Go and
cached outside the repository like the other test tools).

    python3 tests/oracles/gostd/regen_cases.py

Time cases are in UTC, so they do not depend on the machine's zone. test_gostd_oracle.py only
reads cases.json; Go is not needed to run it. Inputs are listed
here and widened with seeded random ones, so a rerun gives the same file.
"""

from __future__ import annotations

import base64
import json
import random
import struct
import subprocess
import sys
from datetime import UTC
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[3]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from nfd.lang.gostd.time import Time, format_time  # noqa: E402
from tests.e2e.build import find_go  # noqa: E402
from tests.e2e.tools import ensure_tool  # noqa: E402

HERE = Path(__file__).resolve().parent
CASES = REPO_ROOT / "tests" / "unit" / "lang" / "gostd" / "cases.json"


def build_oracle() -> Path:
    if find_go() is None:
        raise SystemExit("Go is not installed: the oracle is Go's own standard library")
    return ensure_tool("gostd-oracle")


def _bytes(s: str) -> bytes:
    return s.encode("utf-8", "surrogateescape")


# -- inputs ---------------------------------------------------------------------------------------

QUOTES = ["", "abc", 'a"b\\c', "tab\there", "nl\n", "\x00\x01\x1f\x7f", "\a\b\f\r\v", "é", "\u00a0", "\u00ad",
          "\u2028", "\u200b", "\ufeff", "\ufffd", "😀", "\U000e0001", "\U0010ffff", "日本語", "a\udcffb",
          "\udcc3\udca9", "\udce2\udc82", "\u0301", "x\u0378y", "\U0001f9ff", "\u061c", "\ue000"]
FLOATS = [1e300, 1e-300, 123456789.125, 0.0, -0.0, 1.0, -1.0, 0.1, 0.5, 1.5, 100.0, 123456.0, 999999.0, 1e6, 1234567.0, 1e20, 1e21, 1e22,
          1e-4, 1e-5, 0.000123, 1.0000000000000002, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308,
          float("inf"), float("-inf"), float("nan"), 3.141592653589793, 2.0**53, 2.0**63, 1 / 3, 12345.678]
INTS = ["", "0", "1", "-1", "+1", "00", "007", "0x1F", "0X1f", "0b101", "0o17", "0o", "0x", "0b", "08", "1_000",
        "_1", "1_", "1__0", "0_7", "0x_1F", "0x1_F", "9223372036854775807", "9223372036854775808",
        "-9223372036854775808", "-9223372036854775809", "18446744073709551615", "18446744073709551616",
        "99999999999999999999x", "x99999999999999999999", " 1", "1 ", "1.0", "٣", "+", "-", "--1", "+-1",
        "zz", "ZZ", "127", "128", "-128", "-129", "255", "256", "4294967295", "4294967296"]
INT_FORMS = [(10, 64), (0, 64), (16, 64), (36, 64), (2, 8), (10, 8), (0, 32), (10, 0), (1, 64), (37, 64), (10, 65)]
FLOAT_TEXTS = ["", "0", "-0", "+0", "1", "1.", ".5", ".", "1e5", "1E+5", "1e-5", "1e", "1e+", "e5", "1.5e308",
               "1.8e308", "-1.8e308", "1e400", "1e-400", "4.9e-324", "2e-324", "inf", "+Inf", "-INF", "infinity",
               "-Infinity", "infin", "nan", "NaN", "+nan", "-nan", "0x1p-2", "0x1P+2", "0x1", "0x.8p1", "0x1.8p1",
               "0x1p1024", "0x_1p0", "1_000.5", "1_000", "_1", "1__0", "1_.5", "0x1p", " 1", "1 ", "1,5", "١",
               "00001.5", "123456789012345678901234567890", "0.1e1_0", "1e1_0", "0b101", "0o7"]
ADDRS = ["", "1.2.3.4", "0.0.0.0", "255.255.255.255", "1.2.3", "1.2.3.4.5", "01.2.3.4", "1.2.3.04", "1.2.3.256",
         "1..2.3", ".1.2.3", "1.2.3.", "1.2.3.-1", " 1.2.3.4", "1.2.3.4 ", "1.2.3.4%eth0", "::", "::1", "1::",
         "fe80::1", "fe80::1%eth0", "fe80::1%", "%eth0", "::%eth0", "2001:db8::1", "2001:DB8:0:0:0:0:0:1",
         "1:0:2:3:4:5:6:7", "1:0:0:2:0:0:0:3", "0:0:0:0:0:0:0:0", "::ffff:1.2.3.4", "::1.2.3.4", "64:ff9b::1.2.3.4",
         "1:2:3:4:5:6:1.2.3.4", "1:2:3:4:5:1.2.3.4", "1:2:3:4:5:6:7:1.2.3.4", "::1.2.3", "::01.2.3.4", "1::2::3",
         "1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8:9", "1:2:3:4:5:6:7::", "::1:2:3:4:5:6:7", "1:2:3:4:5:6:7:8::",
         "1::2:3:4:5:6:7:8", "12345::", "::g", ":1", "1:", "1:::2", ":::", "[::1]", "::ffff:0:0", "0x1.2.3.4",
         "é", "1.2.3.é", "::é", "abc", "1", "fe80::1%25eth0", "::1%eth0%1", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
         "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255", "::ffff:255.255.255.256"]
PREFIXES = ["10.0.0.0/8", "10.1.2.3/8", "0.0.0.0/0", "1.2.3.4/32", "1.2.3.4/33", "1.2.3.4/-1", "1.2.3.4/08",
            "1.2.3.4/ 8", "1.2.3.4", "1.2.3.4/", "::/0", "::1/128", "2001:db8::/32", "2001:db8::1/129",
            "fe80::1%eth0/64", "fe80::1%/64", "::ffff:1.2.3.4/96", "01.2.3.4/8", "/8", "", "10.0.0.0/+8",
            "10.0.0.0/8/8", "1.2.3.4/0", "1.2.3.4/00", "1.2.3.4/99999999999999999999", "1.2.3/8", "::/-0"]
URLS = ["https://example.com", "https://example.com/", "https://user:pass@example.com:8443/a/b?x=1&y=2&x=3#frag",
        "http://example.com/a%2Fb", "http://example.com/a b", "http://example.com/%zz", "http://example.com/%41",
        "http://[::1]:8080/x", "http://[fe80::1%25en0]/", "http://[1.2.3.4]/", "http://[::1", "http://a:b:c/",
        "https://a:b:c/", "http://example.com:abc/", "http://example.com:/", "/just/a/path", "just/a/path", "*",
        "", "mailto:someone@example.com", "urn:isbn:0451450523", "HTTP://EXAMPLE.COM/UPPER",
        "http://example.com/?", "http://example.com/?a=1;b=2", "http://example.com/?a=%zz&b=2",
        "http://example.com/?a+b=c+d", "http://example.com/?a=&=b&c", "http://ex ample.com/",
        "http://example.com/\u00e9", "http://\u00e9.com/", "http://example.com/#a b", "http://example.com/#%zz",
        "http://%41.com/", "http://%c3%a9.com/", "ftp://ftp.example.com/pub/file.txt", "https://example.com:443",
        "://missing", "1http://x", "http://user@example.com", "http://us er@example.com", "http://a@b@example.com/",
        "http://example.com/a/../b", "http:///path", "file:///etc/hosts", "http://example.com/a?b#c?d",
        "https://example.com/\x7f", "http://example.com/path;params", "http://example.com/a%2fb%2Fc",
        "http://[::1]:99999/", "http://[::1%25]/", "http://[::1%]/", "http://[fe80::1%25%65n0]/",
        "http://[fe80::1%25en0%0a]/", "http://[fe80::1%en0]/", "http://[::ffff:1.2.3.4]/", "http://[01.2.3.4]/",
        "http://[%eth0]/", "http://[zz]/", "http://x[::1]/", "http://[::1]x/", "http://[::1]:8x/",
        "http://h/%e9", "http://h/%E9%", "http://%0a/", "http://%07/", "http://%25/", "http://h%3a80/",
        "http://user:p%40ss@h/", "http://us%zzer@h/", "http://\u00e9@h/", "//host/path", "///path", "//",
        "?q=1", "#frag", "http:", "http:?x", "http:#x", "http://h?x#", "http://h/?#", "a:b", "a/b:c", "./a:b",
        "http://h/a?%zz=1&ok=2", "http://h/?a=1&a=2&b", "http://h:8080", "http://:8080/", "http://h:/",
        "http://[::1]:/", "HTTPS://H/%7e%7E", "http://h/a%20b%2Fc?d%20e#f%20g", "http://h/%2F#%2F",
        "http://h/path#frag%2Fment", "s3://bucket/key", "a+b-c.d://h/", "-x://h/", "x_y://h/",
        "http://h/\udcff", "http://h\udcff/", "http://h/?\udcff", "http://[::1]%3a80/"]
DURATIONS = ["0", "-0", "+0", "", "1s", "1.5h", "-1.5h", "1h30m", "300ms", "1us", "1µs", "1μs", "1ns", "2h45m",
             "5", "1d", "1h-5m", "--1s", "+", "1.s", ".5s", ".s", "1.s5", "1 s", " 3s", "3s ", "1h1s", "1m1m",
             "9223372036854775807ns", "9223372036854775808ns", "-9223372036854775808ns", "-9223372036854775809ns",
             "2562047h", "2562048h", "2562047h47m16.854775807s", "2562047h47m16.854775808s",
             "0.000000001s", "0.0000000001s", "1.0000000000000000000001h", "99999999999999999999s", "1e3s",
             "1Ms", "1MS", "1.5µs", "12.345678901234567890123s", "0.1h", "1x", "1é", "1\udcffs", "s", "h1",
             "1h.", "1.h", "+.5s", "-.5s", "00001s", "1h0.5m0.25s"]
LAYOUTS = ["2006-01-02", "2006-01-02T15:04:05Z07:00", "2006-01-02T15:04:05.999999999Z07:00", "Jan _2 15:04:05",
           "Mon Jan 2 15:04:05 MST 2006", "02/01/06 03:04PM", "2006-002", "15:04:05.000", "January 2, 2006",
           "20060102150405", "2006-01-02 15:04:05 -0700", "Monday", "3:04pm", "06-1-2", "2006-01-02T15:04:05,999"]
TIME_VALUES = ["2024-02-29", "2023-02-29", "2024-13-01", "2024-01-02T03:04:05Z", "2024-01-02T03:04:05+01:00",
               "2024-01-02T03:04:05.123456789-07:30", "Feb  3 04:05:06", "Tue Jan 2 15:04:05 UTC 2024",
               "Tue Jan 2 15:04:05 PST 2024", "31/12/99 11:59PM", "2024-366", "2023-366", "12:34:56.789",
               "March 4, 2025", "20240102030405", "2024-01-02 03:04:05 +0530", "Friday", "1:02am", "24-1-2",
               "2024-01-02T03:04:05,5", "", "x", "2024-01-02T03:04:05", "9999-12-31", "0000-01-01",
               "2024-01-02T03:04:05+24:00", "2024-1-2", "2024-01-02 extra"]
UNIX_TIMES = [(0, 0), (1700000000, 123456789), (-1, 999999999), (951782400, 0), (253402300799, 1), (-62135596800, 0),
              (1234567890, 500), (4102444800, 0)]
DURATION_NS = [0, 1, 999, 1000, 1500, 999999, 1000000, 1500000, 999999999, 10**9, 1500000000, 60 * 10**9,
               3600 * 10**9, 3661 * 10**9 + 5, -1, -1500000000, (1 << 63) - 1, -(1 << 63), 86400 * 10**9]


def _random_inputs(rnd: random.Random) -> list[dict[str, Any]]:
    """Seeded mixes of the characters each parser reacts to."""
    out: list[dict[str, Any]] = []
    url_bits = ["http", "https", "x", ":", "//", "/", "@", "[", "]", "::1", "1.2.3.4", "%25", "%", "%41", "%zz",
                "?", "#", "&", "=", ";", "+", " ", "é", "h", "80", ".", "..", "*", "\t", "fe80::1", "u:p"]
    addr_bits = ["1", "0", "00", "255", "256", ".", ":", "::", "ffff", "abcd", "12345", "%", "eth0", "g"]
    dur_bits = ["1", "0", ".", "5", "h", "m", "s", "ms", "us", "µs", "ns", "-", "+", "99999999999", "x"]
    quote_chars = ["a", '"', "\\", "\n", "\x00", "\x7f", "é", "\u00a0", "😀", "\udc80", "\u0300", "\u2029", " "]
    for _ in range(400):
        out.append({"fn": rnd.choice(["url_parse", "url_parse_request"]),
                    "in": "".join(rnd.choice(url_bits) for _ in range(rnd.randint(1, 8)))})
    for _ in range(300):
        out.append({"fn": "parse_addr", "in": "".join(rnd.choice(addr_bits) for _ in range(rnd.randint(1, 9)))})
    for _ in range(200):
        out.append({"fn": "parse_duration", "in": "".join(rnd.choice(dur_bits) for _ in range(rnd.randint(1, 6)))})
    for _ in range(100):
        out.append({"fn": rnd.choice(["quote", "quote_ascii"]),
                    "in": "".join(rnd.choice(quote_chars) for _ in range(rnd.randint(0, 6)))})
    for _ in range(200):
        bits = rnd.getrandbits(64)
        out.append({"fn": "format_float", "in": f"{bits:016x}", "n": ord(rnd.choice("geGEf"))})
    for _ in range(100):
        f = rnd.choice([rnd.uniform(-1e6, 1e6), rnd.uniform(-1, 1) * 10.0 ** rnd.randint(-30, 30)])
        out.append({"fn": "format_float", "in": f"{struct.unpack('<Q', struct.pack('<d', f))[0]:016x}", "n": ord("g")})
    return out


def requests() -> list[dict[str, Any]]:
    reqs: list[dict[str, Any]] = []
    for s in QUOTES:
        reqs += [{"fn": "quote", "in": s}, {"fn": "quote_ascii", "in": s}]
    for f in FLOATS:
        bits = struct.unpack("<Q", struct.pack("<d", f))[0]
        reqs += [{"fn": "format_float", "in": f"{bits:016x}", "n": ord(c)} for c in "geGEf"]
    for s in INTS:
        reqs += [{"fn": "parse_int", "in": s, "n": b, "m": m} for b, m in INT_FORMS]
        reqs += [{"fn": "parse_uint", "in": s, "n": b, "m": m} for b, m in INT_FORMS[:4]]
        reqs.append({"fn": "atoi", "in": s})
    reqs += [{"fn": "parse_float", "in": s} for s in FLOAT_TEXTS + INTS]
    reqs += [{"fn": "parse_addr", "in": s} for s in ADDRS]
    reqs += [{"fn": "parse_prefix", "in": s} for s in PREFIXES]
    reqs += [{"fn": fn, "in": s} for s in URLS for fn in ("url_parse", "url_parse_request")]
    reqs += [{"fn": "parse_duration", "in": s} for s in DURATIONS]
    reqs += [{"fn": "format_duration", "in": str(n)} for n in DURATION_NS]
    reqs += [{"fn": "time_parse", "in": lay, "b": v} for lay in LAYOUTS for v in TIME_VALUES]
    reqs += [{"fn": "time_format", "in": lay, "n": sec, "m": ns} for lay in LAYOUTS for sec, ns in UNIX_TIMES]
    # values in each layout (written by nfd, read back by Go): the parse paths that succeed
    reqs += [{"fn": "time_parse", "in": lay, "b": format_time(Time.from_unix(sec, UTC, ns), lay)}
             for lay in LAYOUTS for sec, ns in UNIX_TIMES]
    reqs += _random_inputs(random.Random(32))
    seen: set[str] = set()
    unique = []
    for r in reqs:
        key = json.dumps(r, sort_keys=True)
        if key not in seen:
            seen.add(key)
            unique.append(r)
    return unique


def _decode(v: Any) -> Any:
    """The oracle's base64 byte strings back to Go-string convention text (surrogate escapes)."""
    if isinstance(v, dict):
        return {k: (_decode(x) if not isinstance(x, bool) else x) for k, x in v.items()}
    if isinstance(v, list):
        return [_decode(x) for x in v]
    if isinstance(v, str):
        return base64.b64decode(v).decode("utf-8", "surrogateescape")
    return v


def main() -> None:
    oracle = build_oracle()
    reqs = requests()
    lines = "".join(json.dumps({"fn": r["fn"], "a": base64.b64encode(_bytes(r["in"])).decode(),
                                "b": base64.b64encode(_bytes(r.get("b", ""))).decode(),
                                "n": r.get("n", 0), "m": r.get("m", 0)}) + "\n" for r in reqs)
    proc = subprocess.run([str(oracle)], input=lines, capture_output=True, text=True, check=True)
    answers = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(answers) == len(reqs)
    cases = []
    for r, a in zip(reqs, answers, strict=True):
        out = a.get("out")
        if (r["fn"].startswith("url_") or r["fn"] == "time_format") and out is not None:
            out = _decode(out)
        cases.append({**r, "out": out, "err": a.get("err", "")})
    CASES.write_text("[\n" + ",\n".join(json.dumps(c, ensure_ascii=True) for c in cases) + "\n]\n")
    print(f"{len(cases)} cases written to {CASES.relative_to(REPO_ROOT)}")


if __name__ == "__main__":
    main()
