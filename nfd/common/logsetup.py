"""Process logging: klog's text format on stderr, the level from ``-v``.

Log pipelines written for upstream parse klog's header,
``Lmmdd hh:mm:ss.uuuuuu threadid file:line] msg`` (L is I, W, E or F; klog's thread id is the
process id). ``-skip_headers`` leaves the header out, ``-add_dir_header`` writes the file's
directory too, as klog does. Debug records (klog's ``V(n).Info``) are ``I`` lines.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from typing import Any

from nfd.lang.gostd.strconv import quote as go_quote

_LETTER = {logging.DEBUG: "I", logging.INFO: "I", logging.WARNING: "W", logging.ERROR: "E", logging.CRITICAL: "F"}


class KlogFormatter(logging.Formatter):
    def __init__(self, *, skip_headers: bool = False, add_dir_header: bool = False) -> None:
        super().__init__()
        self.skip_headers = skip_headers
        self.add_dir_header = add_dir_header
        self.pid = os.getpid()

    def format(self, record: logging.LogRecord) -> str:
        msg = record.getMessage()
        if record.exc_info:
            msg = f"{msg}\n{self.formatException(record.exc_info)}"
        if self.skip_headers:
            return msg
        t = time.localtime(record.created)
        micros = int((record.created % 1) * 1_000_000)
        letter = _LETTER.get(record.levelno, "I" if record.levelno < logging.WARNING else "E")
        where = record.filename
        if self.add_dir_header:
            where = f"{os.path.basename(os.path.dirname(record.pathname))}/{record.filename}"
        return (f"{letter}{t.tm_mon:02d}{t.tm_mday:02d} {t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}."
                f"{micros:06d} {self.pid:7d} {where}:{record.lineno}] {msg}")


def setup_logging(verbosity: int, *, debug_from: int = 2, skip_headers: bool = False,
                  add_dir_header: bool = False) -> None:
    """INFO by default; klog's V(n) lines (:func:`v_level`) from ``-v=n`` on; plain ``debug``
    records from ``-v=debug_from`` on; asyncio's own chatter only from -v=4."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(KlogFormatter(skip_headers=skip_headers, add_dir_header=add_dir_header))
    handler.set_name("nfd-klog")
    root = logging.getLogger()
    for h in list(root.handlers):  # ours from an earlier call (a config reload), not others'
        if h.get_name() == "nfd-klog":
            root.removeHandler(h)
    root.addHandler(handler)
    level = v_level(verbosity)
    root.setLevel(min(level, logging.DEBUG) if verbosity >= debug_from else level)
    if verbosity < 4:  # the libraries' own debug chatter (asyncio's "Using selector") only from -v=4
        logging.getLogger("asyncio").setLevel(logging.WARNING)
    # Never at any verbosity: h2 and hpack log every header they encode or decode, the API
    # client's Authorization header (its bearer token) included, and the cost slowed a daemon
    # at -v=5 several times over.
    for name in SECRET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)


#: Libraries whose debug records carry request headers (credentials).
SECRET_LOGGERS = ("hpack", "h2")


# -- structured logging: klog's InfoS / ErrorS / V(n).InfoS --------------------------------------
# The events operators grep for are written as upstream writes them: the message quoted, then
# key=value pairs in klog's text serialization (klog/v2 internal/serialize): strings, errors and
# Stringers (durations, object references) quoted as Go's strconv.Quote, multi-line strings as
# key=<\n\tline\n >, numbers and booleans bare, anything else as Go's encoding/json.
# docs/logging.md lists the messages, keys and levels.

def v_level(n: int) -> int:
    """The stdlib level of klog's V(n).Info: shown from ``-v=n`` on (see setup_logging)."""
    return logging.INFO - n if n > 0 else logging.INFO


class GoDuration:
    """A time.Duration value: logged as Go prints it (``"1.234567ms"``, ``"1m0s"``)."""

    __slots__ = ("seconds",)

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def __str__(self) -> str:
        # deferred: 1.3 ms of `nfd export labels` (which loads no other Go-duration code)
        from nfd.common.goduration import format_go_duration

        return format_go_duration(round(self.seconds * 1e9))


def kobj(namespace: str | None, name: str) -> str:
    """klog.KObj / klog.KRef: ``namespace/name``, or ``name`` for a cluster-scoped object."""
    return f"{namespace}/{name}" if namespace else name


class Dump:
    """utils.DelayedDumper: the object as YAML (keys sorted), formatted only if the line is written."""

    __slots__ = ("obj",)

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def __str__(self) -> str:
        import yaml  # deferred: 11.5 ms of a one-shot worker's start-up; only where a Dump is logged

        class GoYaml(yaml.SafeDumper):
            def choose_scalar_style(self) -> Any:
                style = super().choose_scalar_style()
                return '"' if style == "'" else style  # go-yaml quotes "true", "1.0" with double quotes

        return str(yaml.dump(self.obj, Dumper=GoYaml, sort_keys=True, default_flow_style=False, allow_unicode=True))


def _go_json(v: Any) -> str:
    text = json.dumps(v, separators=(",", ":"), sort_keys=True, ensure_ascii=False, default=str)
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def _kv_value(v: Any) -> str:
    """``=value`` as klog's KVFormat writes it."""
    if isinstance(v, bool) or v is None:
        return "=" + _go_json(v)
    if isinstance(v, (int, float)):
        return "=" + _go_json(v)
    if isinstance(v, (str, BaseException, GoDuration, Dump)):
        s = str(v)
        if "\n" not in s:
            return "=" + go_quote(s)
        body = s[:-1] if s.endswith("\n") else s
        return "=<\n" + "".join(f"\t{line}\n" for line in body.split("\n")) + " >"
    return "=" + _go_json(v)


class _Structured:
    """A record's msg, formatted when (and only if) a handler writes it."""

    __slots__ = ("msg", "err", "kv")

    def __init__(self, msg: str, err: BaseException | str | None, kv: dict[str, Any]) -> None:
        self.msg, self.err, self.kv = msg, err, kv

    def __str__(self) -> str:
        parts = [go_quote(self.msg)]
        if self.err is not None:
            parts.append("err" + _kv_value(str(self.err)))
        parts.extend(k + _kv_value(v) for k, v in self.kv.items())
        return " ".join(parts)


class KLogger:
    """klog's structured calls over a stdlib logger, so -v, -skip_headers and tests' caplog
    apply as to every other line. ``info_s("node updated", nodeName=n)`` writes
    ``I... file.go:12] "node updated" nodeName="n"``."""

    def __init__(self, name: str) -> None:
        self.log = logging.getLogger(name)

    def enabled(self, v: int = 0) -> bool:
        return self.log.isEnabledFor(v_level(v))

    def info_s(self, msg: str, /, *, v: int = 0, **kv: Any) -> None:
        level = v_level(v)
        if self.log.isEnabledFor(level):
            self.log.log(level, _Structured(msg, None, kv), stacklevel=2)

    def error_s(self, err: BaseException | str | None, msg: str, /, **kv: Any) -> None:
        self.log.error(_Structured(msg, err, kv), stacklevel=2)

    def warning_s(self, msg: str, /, **kv: Any) -> None:
        """klog has no WarningS: ours, for what upstream logs with InfoS but is a problem."""
        self.log.warning(_Structured(msg, None, kv), stacklevel=2)


def klogger(name: str) -> KLogger:
    return KLogger(name)
