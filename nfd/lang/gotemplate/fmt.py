"""Go's fmt.Sprint/Sprintln/Sprintf for plain values (verbs v s q d b o O x X c U e E f F g G t T %)."""

from __future__ import annotations

import math
from typing import Any

from nfd.lang.gostd import go_bytes
from nfd.lang.gostd.strconv import quote as go_quote

from .values import GoObject, format_float_g, format_value, sorted_keys, type_name


def sprint(*args: Any) -> str:
    """fmt.Sprint: a space between operands when neither side is a string."""
    out = []
    prev_str = False
    for i, a in enumerate(args):
        is_str = isinstance(a, str)
        if i > 0 and not is_str and not prev_str:
            out.append(" ")
        out.append(format_value(a))
        prev_str = is_str
    return "".join(out)


def sprintln(*args: Any) -> str:
    return " ".join(format_value(a) for a in args) + "\n"


class _Spec:
    __slots__ = ("minus", "plus", "sharp", "space", "zero", "width", "prec", "verb")

    def __init__(self) -> None:
        self.minus = self.plus = self.sharp = self.space = self.zero = False
        self.width: int | None = None
        self.prec: int | None = None
        self.verb = ""


def _pad(s: str, sp: _Spec, *, numeric: bool = False) -> str:
    if sp.width is None or len(s) >= sp.width:
        return s
    fill = sp.width - len(s)
    if sp.minus:
        return s + " " * fill
    if sp.zero:
        if numeric and s[:1] in "+- ":
            return s[0] + "0" * fill + s[1:]
        return "0" * fill + s
    return " " * fill + s


def _bad(sp: _Spec, v: Any) -> str:
    """Go's badVerb: the value is printed with %v but the original flags, width and precision."""
    if v is None:
        return f"%!{sp.verb}(<nil>)"
    as_v = _Spec()
    for attr in _Spec.__slots__:
        setattr(as_v, attr, getattr(sp, attr))
    as_v.verb = "v"
    return f"%!{sp.verb}({type_name(v)}={format_verb(v, as_v)})"


def _fmt_int(v: int, sp: _Spec) -> str:
    verb = sp.verb
    if verb == "c":
        return _pad(chr(v) if 0 <= v <= 0x10FFFF else "\ufffd", sp)
    if verb == "q":
        ch = chr(v) if 0 <= v <= 0x10FFFF else "\ufffd"
        q = go_quote(ch)[1:-1].replace("'", "\\'").replace('\\"', '"')
        return _pad("'" + q + "'", sp)
    if verb == "U":
        s = f"U+{v & ((1 << 64) - 1):04X}"  # Go prints the value as uint64
        if sp.sharp and 0 <= v <= 0x10FFFF and chr(v).isprintable():
            s += f" '{chr(v)}'"
        return _pad(s, sp)
    neg = v < 0
    a = -v if neg else v
    if verb in ("d", "v"):
        digits = str(a)
        prefix = ""
    elif verb == "x":
        digits, prefix = format(a, "x"), "0x" if sp.sharp else ""
    elif verb == "X":
        digits, prefix = format(a, "X"), "0X" if sp.sharp else ""
    elif verb == "o":
        digits, prefix = format(a, "o"), "0" if sp.sharp else ""
    elif verb == "O":
        digits, prefix = format(a, "o"), "0o"
    elif verb == "b":
        digits, prefix = format(a, "b"), "0b" if sp.sharp else ""
    else:
        return _bad(sp, v)
    if sp.prec is not None:
        digits = digits.zfill(sp.prec) if sp.prec > 0 else ("" if a == 0 else digits)
        if prefix == "0" and digits.startswith("0"):
            prefix = ""
    elif prefix == "0" and digits == "0":
        prefix = ""
    sign = "-" if neg else ("+" if sp.plus else (" " if sp.space else ""))
    body = prefix + digits
    if sp.zero and not sp.minus and sp.width is not None and sp.prec is None:
        fill = sp.width - len(sign) - len(body)
        if fill > 0:
            body = prefix + "0" * fill + digits
    if sp.zero and sp.prec is not None:
        # %05.1d: with a precision, Go pads integers with spaces, not zeros.
        z = sp.zero
        sp.zero = False
        try:
            return _pad(sign + body, sp)
        finally:
            sp.zero = z
    return _pad(sign + body, sp)


def _fmt_float(v: float, sp: _Spec) -> str:
    verb = sp.verb
    if verb not in "veEfFgGb" and verb != "x" and verb != "X":
        return _bad(sp, v)
    if math.isinf(v) or math.isnan(v):
        s = "NaN" if math.isnan(v) else ("+Inf" if v > 0 else "-Inf")
        if s == "+Inf" and not sp.plus:
            s = " Inf" if sp.space else "Inf"
        if s == "NaN" and sp.plus:
            s = "+NaN"
        z = sp.zero
        sp.zero = False
        try:
            return _pad(s, sp)
        finally:
            sp.zero = z
    if verb in ("v", "g", "G") and sp.prec is None:
        s = format_float_g(v, upper=verb == "G")
    elif verb in ("v", "g", "G"):
        s = format(v, f".{sp.prec}{'G' if verb == 'G' else 'g'}")
    elif verb in ("e", "E", "f", "F"):
        prec = 6 if sp.prec is None else sp.prec
        s = format(v, f".{prec}{verb.lower() if verb == 'F' else verb}")
    elif verb in ("x", "X"):
        s = _hex_float(v, sp.prec)
        if verb == "X":
            s = s.upper()
    elif verb == "b":
        m, e = math.frexp(v)
        s = f"{int(m * (1 << 53))}p{e - 53:+d}" if v != 0 else "0p-1074"
    else:
        return _bad(sp, v)
    if sp.sharp and verb not in ("b", "v"):  # %#v is Go syntax, not the '#' float flag
        s = _sharp_float(s, verb, sp.prec)
    if not s.startswith("-"):
        if sp.plus:
            s = "+" + s
        elif sp.space:
            s = " " + s
    return _pad(s, sp, numeric=True)


def _sharp_float(s: str, verb: str, prec: int | None) -> str:
    """fmt's '#' flag on floats: always a decimal point; %#g/%#x keep trailing zeros up to the
    precision (default 6 significant digits), counting as Go does."""
    digits = 0
    if verb in ("v", "g", "G", "x"):
        digits = 6 if prec is None else prec
    sign = "-" if s.startswith("-") else ""
    num = s[1:] if sign else s
    tail = ""
    has_point = False
    seen_nonzero = False
    for i, c in enumerate(num):
        if c == ".":
            has_point = True
        elif c in "pP" or (c in "eE" and verb not in ("x", "X")):
            tail = num[i:]
            num = num[:i]
            break
        else:
            if c != "0":
                seen_nonzero = True
            if seen_nonzero:
                digits -= 1
    if not has_point:
        if num == "0":
            digits -= 1
        num += "."
    if digits > 0:
        num += "0" * digits
    return sign + num + tail


def _hex_float(v: float, prec: int | None) -> str:
    """strconv 'x' format: -0x1.8p+01 (mantissa without trailing zeros, exponent >= 2 digits)."""
    h = v.hex()  # e.g. '-0x1.8000000000000p+1'
    sign = "-" if h.startswith("-") else ""
    h = h.lstrip("-")[2:]
    mant, _, exp = h.partition("p")
    if prec is not None:
        ip, _, fp = mant.partition(".")
        fp = (fp + "0" * prec)[:prec] if prec > 0 else ""
        mant = ip + ("." + fp if fp else "")
    else:
        mant = mant.rstrip("0").rstrip(".")
    e = int(exp)
    return f"{sign}0x{mant}p{'-' if e < 0 else '+'}{abs(e):02d}"


def _fmt_str(v: str, sp: _Spec) -> str:
    verb = sp.verb
    if verb == "v" and sp.sharp:
        return _pad(go_quote(v), sp)
    if verb in ("s", "v"):
        s = v if sp.prec is None else v[: sp.prec]
        return _pad(s, sp)
    if verb == "q":
        s = v if sp.prec is None else v[: sp.prec]
        if sp.sharp and "`" not in s and all(c == "\t" or c.isprintable() for c in s):
            return _pad("`" + s + "`", sp)
        return _pad(go_quote(s, ascii_only=sp.plus), sp)
    if verb in ("x", "X"):
        b = go_bytes(v)
        if sp.prec is not None:
            b = b[: sp.prec]
        if not b:
            return _pad("", sp)
        parts = [format(c, "02x" if verb == "x" else "02X") for c in b]
        pre = ("0x" if verb == "x" else "0X") if sp.sharp else ""
        if sp.space:
            return _pad(" ".join(pre + p for p in parts), sp)
        return _pad(pre + "".join(parts), sp)
    return _bad(sp, v)


def format_verb(v: Any, sp: _Spec, depth: int = 0) -> str:
    verb = sp.verb
    if v is None and depth > 0:
        return "<nil>"  # a nil inside a container prints as <nil> whatever the verb
    if verb == "T":
        return _pad(type_name(v) if v is not None else "<nil>", sp)
    if v is None:
        if verb == "v":
            return _pad("<nil>", sp)
        return _bad(sp, v)
    if isinstance(v, bool):
        if verb in ("t", "v"):
            return _pad("true" if v else "false", sp)
        return _bad(sp, v)
    if isinstance(v, GoObject):
        # Go calls String() for %v %s %q %x %X (GoString-like %#v for the struct form).
        if verb == "v" and sp.sharp:
            return _pad(v.go_syntax(), sp)
        if verb in "vsqxX":
            plain = _Spec()
            for attr in _Spec.__slots__:
                setattr(plain, attr, getattr(sp, attr))
            plain.sharp = sp.sharp and verb != "v"
            return _fmt_str(v.go_string(), plain)
        if not isinstance(v, int):
            return _bad(sp, v)
    if isinstance(v, int):
        return _fmt_int(v, sp)
    if isinstance(v, float):
        return _fmt_float(v, sp)
    if isinstance(v, complex):
        if verb in "vbgGxXfFeE":
            # Each part formatted as a float (v as g); the imaginary part always has a sign.
            part = _Spec()
            for attr in _Spec.__slots__:
                setattr(part, attr, getattr(sp, attr))
            if verb == "v":
                part.verb, part.sharp = "g", False
            re_part = _fmt_float(v.real, part)
            part.plus = True
            return "(" + re_part + _fmt_float(v.imag, part) + "i)"
        return _bad(sp, v)
    if isinstance(v, str):
        return _fmt_str(v, sp)
    if isinstance(v, (list, tuple)):
        if sp.sharp and verb == "v":
            return _go_syntax(v)
        inner = _Spec()
        for attr in _Spec.__slots__:
            setattr(inner, attr, getattr(sp, attr))
        return "[" + " ".join(format_verb(x, inner, depth + 1) for x in v) + "]"
    if isinstance(v, dict):
        if sp.sharp and verb == "v":
            return _go_syntax(v)
        return (
            "map["
            + " ".join(f"{format_verb(k, sp, depth + 1)}:{format_verb(v[k], sp, depth + 1)}" for k in sorted_keys(v))
            + "]"
        )
    return _pad(str(v), sp)


def _go_syntax(v: Any) -> str:
    """%#v, for the shapes templates handle."""
    if v is None:
        return "interface {}(nil)"
    if isinstance(v, str):
        return go_quote(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return format_float_g(v)
    if isinstance(v, (list, tuple)):
        if not v and getattr(v, "go_nil", False):
            return f"{type_name(v)}(nil)"
        return type_name(v) + "{" + ", ".join(_go_syntax(x) for x in v) + "}"
    if isinstance(v, dict):
        if not v and getattr(v, "go_nil", False):
            return f"{type_name(v)}(nil)"
        return (
            type_name(v)
            + "{"
            + ", ".join(f"{go_quote(str(k))}:{_go_syntax(v[k])}" for k in sorted_keys(v))
            + "}"
        )
    return str(v)


_MAX_WIDTH = 1_000_000  # fmt rejects larger widths and precisions ("tooLarge")


def _parse_num(fmt: str, i: int) -> tuple[int | None, int]:
    """fmt's parsenum: digits at fmt[i:]; a runaway number consumes the rest of the format."""
    num: int | None = None
    n = len(fmt)
    while i < n and "0" <= fmt[i] <= "9":
        if num is not None and num > _MAX_WIDTH:
            return None, n
        num = (num or 0) * 10 + ord(fmt[i]) - 48
        i += 1
    return num, i


def _int_arg(args: tuple[Any, ...], i: int) -> bool:
    """A usable `*` width/precision argument: an int no larger than Go allows."""
    if i >= len(args):
        return False
    a = args[i]
    return isinstance(a, int) and not isinstance(a, bool) and abs(a) <= _MAX_WIDTH


def sprintf(fmt: str, *args: Any) -> str:
    out: list[str] = []
    n = len(fmt)
    i = 0
    argn = 0
    nargs = len(args)
    reordered = False
    while i < n:
        j = fmt.find("%", i)
        if j < 0:
            out.append(fmt[i:])
            break
        out.append(fmt[i:j])
        sp = _Spec()
        i = _parse_flags(fmt, j + 1, sp)
        i, argn, good_index = _arg_index(fmt, i, argn, nargs)
        reordered = reordered or fmt[i - 1 : i] == "]"
        i, argn, bad_width = _parse_width(fmt, i, argn, args, sp)
        bad_prec = False
        if i < n and fmt[i] == ".":
            i, argn, ok, bad_prec = _parse_precision(fmt, i + 1, argn, args, sp)
            good_index = good_index and ok
        if bad_width:
            out.append("%!(BADWIDTH)")
        if bad_prec:
            out.append("%!(BADPREC)")
        if i < n and fmt[i] == "[":
            i, argn, ok = _arg_index(fmt, i, argn, nargs)
            good_index = good_index and ok
            reordered = True
        if i >= n:
            out.append("%!(NOVERB)")
            break
        verb = fmt[i]
        i += 1
        sp.verb = verb
        if verb == "%":
            out.append("%")
            continue
        if not good_index:
            out.append(f"%!{verb}(BADINDEX)")
            continue
        if verb == "v" and sp.plus:
            sp.plus = False  # %+v is Go's plusV (struct field names), never a sign
        if argn >= nargs:
            out.append(f"%!{verb}(MISSING)")
            continue
        out.append(format_verb(args[argn], sp))
        argn += 1
    if not reordered and argn < nargs:
        out.append(_extra_args(args[argn:]))
    return "".join(out)


# The parts of a directive before its verb, as fmt's doPrintf reads them: each takes the
# format and the position to read from, and returns the position after what it read.


def _parse_flags(fmt: str, i: int, sp: _Spec) -> int:
    """The flags (``#0+- ``) at fmt[i:] into ``sp``."""
    n = len(fmt)
    while i < n and fmt[i] in "#0+- ":
        c = fmt[i]
        if c == "#":
            sp.sharp = True
        elif c == "0":
            sp.zero = not sp.minus
        elif c == "+":
            sp.plus = True
        elif c == "-":
            sp.minus = True
            sp.zero = False
        else:
            sp.space = True
        i += 1
    return i


def _arg_index(fmt: str, i: int, argn: int, nargs: int) -> tuple[int, int, bool]:
    """An explicit [n] argument index at fmt[i]; returns (new i, new argn, ok)."""
    if i < len(fmt) and fmt[i] == "[":
        j = fmt.find("]", i)
        if j > i + 1 and fmt[i + 1 : j].isdigit():
            k = int(fmt[i + 1 : j])
            if 1 <= k <= nargs:
                return j + 1, k - 1, True
        return (j + 1 if j > 0 else len(fmt)), argn, False
    return i, argn, True


def _parse_width(fmt: str, i: int, argn: int, args: tuple[Any, ...], sp: _Spec) -> tuple[int, int, bool]:
    """The width at fmt[i:] into ``sp``: digits, or ``*`` for args[argn] (negative: left-justify);
    returns (new i, new argn, whether a ``*`` had no usable, non-negative argument)."""
    if i < len(fmt) and fmt[i] == "*":
        if not _int_arg(args, argn):
            return i + 1, argn + 1, True
        w = args[argn]
        if w < 0:
            sp.minus, sp.zero, w = True, False, -w
        sp.width = w
        return i + 1, argn + 1, False
    num, i = _parse_num(fmt, i)
    if num is not None:
        sp.width = num
    return i, argn, False


def _parse_precision(fmt: str, i: int, argn: int, args: tuple[Any, ...], sp: _Spec) -> tuple[int, int, bool, bool]:
    """The precision after the ``.`` at fmt[i-1] into ``sp``: an optional [n] argument index,
    then digits (none: 0) or ``*`` for args[argn] (negative: none, reported); returns (new i, new argn,
    whether the index was good, whether a ``*`` had no usable, non-negative argument)."""
    i, argn, good_index = _arg_index(fmt, i, argn, len(args))
    if i < len(fmt) and fmt[i] == "*":
        if not _int_arg(args, argn):
            return i + 1, argn + 1, good_index, True
        if args[argn] < 0:  # Go: a negative precision makes no sense, so BADPREC and none
            return i + 1, argn + 1, good_index, True
        sp.prec = args[argn]
        return i + 1, argn + 1, good_index, False
    num, i = _parse_num(fmt, i)
    sp.prec = num if num is not None else 0
    return i, argn, good_index, False


def _extra_args(extra: tuple[Any, ...]) -> str:
    """The %!(EXTRA ...) note for arguments no verb used."""
    described = ", ".join("<nil>" if a is None else f"{type_name(a)}={format_value(a)}" for a in extra)
    return f"%!(EXTRA {described})"
