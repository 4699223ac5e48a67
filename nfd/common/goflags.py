"""Go ``flag``-package command lines, one parser for the four daemons.

Upstream's binaries parse with ``flag.NewFlagSet(name, flag.ExitOnError)``; scripts and manifests
written for them rely on its rules, so :class:`GoFlagSet` follows them:

- ``-flag value``, ``-flag=value``, ``--flag=value``; a boolean takes no separate value
  (``-oneshot``, ``-oneshot=false``; ``-oneshot false`` leaves ``false`` as an argument);
  ``--`` or the first non-flag ends the flags.
- an unknown flag prints ``flag provided but not defined: -foo`` and the usage, exit 2; a bad
  value ``invalid value "x" for flag -port: parse error``; a missing one ``flag needs an
  argument: -port``; a leftover argument ``unknown command line argument: x`` (upstream's own
  check), each followed by the usage, exit 2.
- ``-h``/``-help`` print the usage and exit 0: ``Usage of <name>:`` and every flag with its type
  and default, byte for byte as ``flag.PrintDefaults`` (``(default 8080)``, ``(default "*")``,
  durations as Go prints them, no default where it is the type's zero value).

Ours: a one-line description above the usage (upstream prints none; docs/compatibility.md).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn, TypeAlias

from nfd.common.goduration import format_go_duration, parse_go_duration
from nfd.common.valuerecord import Record
from nfd.lang.gostd.strconv import quote as go_quote

_TRUE = ("1", "t", "T", "TRUE", "true", "True")
_FALSE = ("0", "f", "F", "FALSE", "false", "False")


def klog_header_options(ns: Any, conf: Mapping[str, Any] | None = None) -> dict[str, bool]:
    """setup_logging's skip_headers/add_dir_header from klog's flags (``ns``; given ones only),
    else from a config's ``klog`` map (flags win, as upstream)."""
    out = {}
    given = getattr(ns, "given", None)
    folded = {str(k).replace("_", "").lower(): v for k, v in (conf or {}).items()}
    for name in ("skip_headers", "add_dir_header"):  # config keys: skipHeaders, addDirHeader
        v = getattr(ns, name, None)
        if given is not None and name not in given:
            v = None
        if v is None:
            v = folded.get(name.replace("_", ""))
        if isinstance(v, str):
            v = v.strip().lower() in ("1", "t", "true")
        out[name] = bool(v)
    return out


def parse_duration(text: str) -> float:
    """A Go duration in seconds, as an argparse ``type`` (``0`` alone needs no unit)."""
    try:
        return parse_go_duration(text)
    except ValueError as e:
        import argparse  # deferred: 1.5 ms (with gettext) of a one-shot worker's start-up; see FlagValues

        raise argparse.ArgumentTypeError(str(e)) from None


def parse_bool(text: str) -> bool:
    """strconv.ParseBool's spellings; ArgumentTypeError otherwise."""
    t = text.strip()
    if t in _TRUE:
        return True
    if t in _FALSE:
        return False
    import argparse  # deferred: 1.5 ms (with gettext) of a one-shot worker's start-up; see FlagValues

    raise argparse.ArgumentTypeError(f"invalid boolean value {text!r}")


class FlagValues:
    """Parsed flags, one attribute each, as ``argparse.Namespace`` holds them (``==`` by value,
    ``name in values``, its ``repr`` form) without loading argparse: every daemon parses its
    flags at start, and argparse with gettext is ~2.5 ms of a one-shot worker run."""

    given: frozenset[str]  # the flags set on the command line (GoFlagSet.parse sets it)

    def __init__(self, **kwargs: Any) -> None:
        self.__dict__.update(kwargs)

    if TYPE_CHECKING:  # attributes are the flags': unknown to the type checker, as Namespace's
        def __getattr__(self, name: str) -> Any: ...

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FlagValues):
            return NotImplemented
        return vars(self) == vars(other)

    __hash__ = None  # type: ignore[assignment]

    def __contains__(self, key: str) -> bool:
        return key in self.__dict__

    def __repr__(self) -> str:
        args = [f"{k}={v!r}" for k, v in sorted(self.__dict__.items()) if k.isidentifier()]
        odd = {k: v for k, v in sorted(self.__dict__.items()) if not k.isidentifier()}
        if odd:
            args.append(f"**{odd!r}")
        return f"{type(self).__name__}({', '.join(args)})"


class FlagValueError(ValueError):
    """A flag value's error, worded as the Go flag.Value's Set would word it."""


def _go_int(text: str, *, unsigned: bool = False, bits: int = 64) -> int:
    """strconv.ParseInt(s, 0, 64) / ParseUint: base prefixes, a leading 0 is octal."""
    s = text
    if re.fullmatch(r"[+-]?0[0-7_]+", s) and "_" not in s:
        v = int(s, 8)
    else:
        if "_" in s and not re.match(r"[+-]?0[xXoObB]", s):
            raise FlagValueError("parse error")
        try:
            v = int(s, 0)
        except ValueError:
            raise FlagValueError("parse error") from None
    if unsigned and (v < 0 or s.startswith(("+", "-"))):
        raise FlagValueError("parse error")
    lo, hi = (0, 2**bits - 1) if unsigned else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    if not lo <= v <= hi:
        raise FlagValueError("value out of range")
    return v


def _go_float(text: str) -> float:
    if not re.fullmatch(r"[+-]?(inf|infinity|nan|(\d[\d_]*\.?[\d_]*|\.[\d_]+)([eE][+-]?\d+)?|0[xX][\da-fA-F.pP+-]+)",
                        text, re.IGNORECASE):
        raise FlagValueError("parse error")
    try:
        return float.fromhex(text) if "x" in text.lower() else float(text.replace("_", ""))
    except ValueError:
        raise FlagValueError("parse error") from None


def _go_bool(text: str) -> bool:
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise FlagValueError("parse error")


def _go_duration(text: str) -> float:
    try:
        return parse_go_duration(text) if text.strip() == text else parse_go_duration("x")
    except ValueError:
        raise FlagValueError("parse error") from None


def _format_float(v: float) -> str:
    """strconv.FormatFloat(v, 'g', -1, 64), as flag's float64Value.String."""
    if v == int(v) and abs(v) < 1e21:
        return str(int(v))
    return repr(v)


class Flag(Record):
    """One command-line flag as Go's flag package defines it. Written out as a dataclass would
    generate it: the one-shot worker does not load ``dataclasses`` (docs/worker.md)."""

    _FIELDS = ("name", "usage", "type_name", "default", "def_text", "zero_text", "parse", "is_bool",
               "quote_default", "hidden")

    def __init__(self, name: str, usage: str, type_name: str, default: Any, def_text: str, zero_text: str,
                 parse: Callable[[str], Any], is_bool: bool = False, quote_default: bool = False,
                 hidden: bool = False) -> None:
        self.name = name
        self.usage = usage
        self.type_name = type_name  # what PrintDefaults writes after the name ("" for a boolean)
        self.default = default  # the Python value when the flag is not given
        self.def_text = def_text  # Go's DefValue
        self.zero_text = zero_text  # the String() of the type's zero value: no "(default ...)" when equal
        self.parse = parse
        self.is_bool = is_bool
        self.quote_default = quote_default  # a string flag: (default "x")
        self.hidden = hidden  # accepted, not listed (flags upstream removed)


# GoFlagSet names its methods after Go's flag.Bool, flag.Int, ...: the builtins under other names
_Bool: TypeAlias = bool
_Int: TypeAlias = int
_Float: TypeAlias = float


class GoFlagSet:
    """A Go ``flag.FlagSet`` with ExitOnError. :meth:`parse` returns :class:`FlagValues`
    with one attribute per flag (dashes as underscores) and ``given``: the names of the flags set
    on the command line (Go's ``flag.Visit``), which decide config-file overrides."""

    def __init__(self, name: str, *, description: str = "") -> None:
        self.name = name
        self.description = description
        self.flags: dict[str, Flag] = {}

    # -- definitions, one per Go flag type -------------------------------------------------
    def add(self, flag: Flag) -> None:
        if flag.name in self.flags:
            raise ValueError(f"{self.name} flag redefined: {flag.name}")
        self.flags[flag.name] = flag

    def string(self, name: str, default: str | None, usage: str, *, hidden: _Bool = False) -> None:
        """``default=None``: the attribute is None when not given; -h shows no default."""
        self.add(Flag(name, usage, "string", default, default or "", "", str, quote_default=True, hidden=hidden))

    def int(self, name: str, default: _Int | None, usage: str, *, hidden: _Bool = False) -> None:
        self.add(Flag(name, usage, "int", default, str(default or 0), "0", _go_int, hidden=hidden))

    def uint(self, name: str, default: _Int, usage: str) -> None:
        self.add(Flag(name, usage, "uint", default, str(default), "0", lambda s: _go_int(s, unsigned=True)))

    def float(self, name: str, default: _Float | None, usage: str) -> None:
        self.add(Flag(name, usage, "float", default, _format_float(default or 0.0), "0", _go_float))

    def bool(self, name: str, default: _Bool | None, usage: str, *, zero_text: str = "false") -> None:
        self.add(Flag(name, usage, "", default, "true" if default else "false", zero_text, _go_bool, is_bool=True))

    def duration(self, name: str, default: _Float | None, usage: str) -> None:
        """Seconds in Python, Go's duration text on the command line and in -h."""
        text = format_go_duration(round((default or 0.0) * 1e9))
        self.add(Flag(name, usage, "duration", default, text, "0s", _go_duration))

    def value(self, name: str, usage: str, *, parse: Callable[[str], Any], default: Any = None,
              def_text: str = "", zero_text: str = "", is_bool: _Bool = False) -> None:
        """A ``flag.Var`` of a custom type (``-h`` names its type ``value``)."""
        self.add(Flag(name, usage, "" if is_bool else "value", default, def_text, zero_text, parse, is_bool=is_bool))

    # -- parsing ---------------------------------------------------------------------------
    def parse(self, argv: Sequence[str]) -> FlagValues:
        values = {f.name: f.default for f in self.flags.values()}
        given: set[str] = set()
        args = list(argv)
        while args:
            s = args[0]
            if len(s) < 2 or s[0] != "-":
                break
            minuses = 2 if s[1] == "-" else 1
            if s == "--":
                args.pop(0)
                break
            name = s[minuses:]
            if not name or name[0] in "-=":
                self._fail(f"bad flag syntax: {s}")
            args.pop(0)
            has_value, value = False, ""
            if "=" in name[1:]:
                i = name.index("=", 1)
                name, value, has_value = name[:i], name[i + 1:], True
            flag = self.flags.get(name)
            if flag is None:
                if name in ("help", "h"):
                    self.print_usage(help=True)
                    sys.exit(0)
                self._fail(f"flag provided but not defined: -{name}")
            if flag.is_bool:
                if not has_value:
                    value = "true"
                try:
                    values[name] = flag.parse(value)
                except (FlagValueError, ValueError) as e:
                    self._fail(f"invalid boolean value {go_quote(value)} for -{name}: {e}" if has_value
                               else f"invalid boolean flag {name}: {e}")
            else:
                if not has_value and args:
                    value, has_value = args.pop(0), True
                if not has_value:
                    self._fail(f"flag needs an argument: -{name}")
                try:
                    values[name] = flag.parse(value)
                except (FlagValueError, ValueError) as e:
                    self._fail(f"invalid value {go_quote(value)} for flag -{name}: {e}")
            given.add(name)
        if args:  # upstream's own check after flag.Parse
            self._fail(f"unknown command line argument: {args[0]}")
        ns = FlagValues(**{k.replace("-", "_"): v for k, v in values.items()})
        ns.given = frozenset(given)
        return ns

    parse_go = parse  # the old name, for callers and tests
    parse_args = parse

    # -- usage -----------------------------------------------------------------------------
    def usage(self, *, help: _Bool = False) -> str:
        """Go's defaultUsage (``Usage of <name>:`` + PrintDefaults); for -h after our description."""
        out = []
        if help and self.description:
            out.append(f"{self.name}: {self.description}\n")
        out.append(f"Usage of {self.name}:\n")
        for name in sorted(self.flags):
            f = self.flags[name]
            if f.hidden:
                continue
            line = f"  -{name}"
            if f.type_name:
                line += f" {f.type_name}"
            line += "\t" if len(line) <= 4 else "\n    \t"
            line += f.usage.replace("\n", "\n    \t")
            if f.def_text != f.zero_text:
                line += f" (default {go_quote(f.def_text)})" if f.quote_default else f" (default {f.def_text})"
            out.append(line + "\n")
        return "".join(out)

    def print_usage(self, file: Any = None, *, help: _Bool = False) -> None:
        (file or sys.stderr).write(self.usage(help=help))

    def _fail(self, msg: str) -> NoReturn:
        sys.stderr.write(msg + "\n")
        self.print_usage()
        sys.exit(2)


# klog.InitFlags: name, Go type, default, usage (klog v2.140.0, as upstream's go.mod)
KLOG_FLAGS: tuple[tuple[str, str, str, str], ...] = (
    ("add_dir_header", "bool", "false", "If true, adds the file directory to the header of the log messages"),
    ("alsologtostderr", "bool", "false",
     "log to standard error as well as files (no effect when -logtostderr=true)"),
    ("alsologtostderrthreshold", "severity", "0",
     "logs at or above this threshold go to stderr when -alsologtostderr=true (no effect when -logtostderr=true)"),
    ("legacy_stderr_threshold_behavior", "bool", "true",
     "If true, stderrthreshold is ignored when logtostderr=true (legacy behavior). If false, stderrthreshold is "
     "honored even when logtostderr=true"),
    ("log_backtrace_at", "trace", "", "when logging hits line file:N, emit a stack trace"),
    ("log_dir", "string", "", "If non-empty, write log files in this directory (no effect when -logtostderr=true)"),
    ("log_file", "string", "", "If non-empty, use this log file (no effect when -logtostderr=true)"),
    ("log_file_max_size", "uint", "1800",
     "Defines the maximum size a log file can grow to (no effect when -logtostderr=true). Unit is megabytes. "
     "If the value is 0, the maximum file size is unlimited."),
    ("logtostderr", "bool", "true", "log to standard error instead of files"),
    ("one_output", "bool", "false",
     "If true, only write logs to their native severity level (vs also writing to each lower severity level; "
     "no effect when -logtostderr=true)"),
    ("skip_headers", "bool", "false", "If true, avoid header prefixes in the log messages"),
    ("skip_log_headers", "bool", "false",
     "If true, avoid headers when opening log files (no effect when -logtostderr=true)"),
    ("stderrthreshold", "severity", "2",
     "logs at or above this threshold go to stderr when writing to files and stderr (no effect when "
     "-logtostderr=true or -alsologtostderr=true unless -legacy_stderr_threshold_behavior=false)"),
    ("v", "level", "0", "number for the log level verbosity"),
    ("vmodule", "vmodule", "", "comma-separated list of pattern=N settings for file-filtered logging"),
)

_SEVERITIES = {"INFO": 0, "WARNING": 1, "ERROR": 2, "FATAL": 3}


def _severity(text: str) -> int:
    """klog's severityValue.Set: a name (INFO, ...) or a number."""
    if text.upper() in _SEVERITIES:
        return _SEVERITIES[text.upper()]
    return _level(text)


def _level(text: str) -> int:
    """strconv.ParseInt(s, 10, 32), with its error text (klog's Set returns it as is)."""
    if not re.fullmatch(r"[+-]?\d+", text):
        raise FlagValueError(f"strconv.ParseInt: parsing {go_quote(text)}: invalid syntax")
    v = int(text)
    if not -(2**31) <= v < 2**31:
        raise FlagValueError(f"strconv.ParseInt: parsing {go_quote(text)}: value out of range")
    return v


def _vmodule(text: str) -> str:
    for pat in filter(None, text.split(",")):
        name, eq, n = pat.partition("=")
        if not eq or not name or not n.isdigit():
            raise FlagValueError("syntax error: expect comma-separated list of filename=N")
    return text


def _trace(text: str) -> str:
    if text and not re.fullmatch(r"[^:]+:\d+", text):
        raise FlagValueError("syntax error: expect file.go:234")
    return text


def add_klog_flags(fs: GoFlagSet, *, wrapped: bool) -> None:
    """klog's flags. ``wrapped``: as nfd-worker and nfd-master register them (each behind a
    KlogFlagVal so the config's ``klog`` map can set them): every non-boolean is a ``value`` and
    every non-empty default is shown. Otherwise as nfd-gc and nfd-topology-updater
    (``klog.InitFlags``): native types. Values are strings (bools: Python bools), None when not
    given, so a config's ``klog`` map may decide."""
    for name, kind, default, usage in KLOG_FLAGS:
        parse: Callable[[str], Any] = {"bool": _go_bool, "uint": lambda s: _go_int(s, unsigned=True),
                                       "severity": _severity, "level": _level, "vmodule": _vmodule,
                                       "trace": _trace}.get(kind, str)
        if kind == "bool":
            fs.value(name, usage, parse=parse, def_text=default, is_bool=True,
                     zero_text="" if wrapped else "false")
        elif wrapped:
            fs.value(name, usage, parse=parse, def_text=default)
        elif kind == "string":
            fs.add(Flag(name, usage, "string", None, default, "", parse, quote_default=True))
        elif kind == "uint":
            fs.add(Flag(name, usage, "uint", None, default, "0", parse))
        else:
            fs.value(name, usage, parse=parse, def_text=default, zero_text={"level": "0", "severity": "0"}.get(kind, ""))


FEATURE_GATES = {"NodeFeatureAPI": True, "DisableAutoPrefix": False, "NodeFeatureGroupAPI": False,
                 "DRAResourceSlices": False}  # name: default; NodeFeatureAPI is GA, locked to true
FEATURE_GATES_USAGE = (
    "A set of key=value pairs that describe feature gates for alpha/experimental features. Options are:\n"
    + "\n".join(f"{k}=true|false (ALPHA - default={str(v).lower()})"
                for k, v in sorted(FEATURE_GATES.items()) if k != "NodeFeatureAPI")
)


def parse_feature_gates(text: str) -> dict[str, bool]:
    """``-feature-gates=A=true,B=false`` -> {A: True, B: False}, refused as upstream's featuregate.Set
    words it. The one parser of the flag: nfd-master and the worker (masterless mode) use it."""
    gates: dict[str, bool] = {}
    for part in text.split(","):
        if not part:
            continue
        name, eq, raw = part.partition("=")
        name = name.strip()
        if not eq:
            raise FlagValueError(f"missing bool value for {name}")
        raw = raw.strip()
        if raw not in _TRUE + _FALSE:
            raise FlagValueError(f"invalid value of {name}={raw}, err: strconv.ParseBool: parsing "
                                 f"{go_quote(raw)}: invalid syntax")
        if name not in FEATURE_GATES:
            raise FlagValueError(f"unrecognized feature gate: {name}")
        if name == "NodeFeatureAPI" and raw in _FALSE:
            raise FlagValueError(f"cannot set feature gate {name} to false, feature is locked to true")
        gates[name] = raw in _TRUE
    return gates


def go_duration_value(text: str) -> float:
    """A utils.DurationVal flag: seconds; time.ParseDuration's error text."""
    try:
        return parse_go_duration(text)
    except ValueError:
        raise FlagValueError(f"time: invalid duration {go_quote(text)}") from None


def verbosity(ns: FlagValues, conf: Mapping[str, Any] | None = None) -> int:
    """``-v`` if given, else the config's ``klog.v``, else 0."""
    if "v" in ns.given and ns.v is not None:
        return int(ns.v)
    raw = str((conf or {}).get("v", "0") or "0")
    return int(raw) if raw.isdigit() else 0
