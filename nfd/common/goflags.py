"""Go ``flag``-package compatible command lines, shared by the four processes.

Upstream binaries accept ``-flag value``, ``-flag=value``, ``--flag=value``, bare booleans
(``-oneshot``, ``-pods-fingerprint=false``), Go durations (``60s``, ``1h30m``) and klog's flags.
Unknown flags and positional arguments exit with status 2, as Go's ExitOnError does.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from nfd.common.goduration import parse_go_duration

KLOG_FLAGS = (
    "vmodule",
    "log_dir",
    "log_file",
    "log_file_max_size",
    "log_backtrace_at",
    "stderrthreshold",
    "alsologtostderrthreshold",
)
KLOG_BOOL_FLAGS = (
    "logtostderr",
    "alsologtostderr",
    "skip_headers",
    "skip_log_headers",
    "add_dir_header",
    "one_output",
    "legacy_stderr_threshold_behavior",
)


def klog_header_options(ns: Any, conf: Mapping[str, Any] | None = None) -> dict[str, bool]:
    """setup_logging's skip_headers/add_dir_header from klog's flags (``ns``), else from a
    config's ``klog`` map (flags win, as upstream)."""
    out = {}
    folded = {str(k).replace("_", "").lower(): v for k, v in (conf or {}).items()}
    for name in ("skip_headers", "add_dir_header"):  # config keys: skipHeaders, addDirHeader
        v = getattr(ns, name, None)
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
        raise argparse.ArgumentTypeError(str(e)) from None


def parse_bool(text: str) -> bool:
    t = text.strip().lower()
    if t in ("1", "t", "true"):
        return True
    if t in ("0", "f", "false"):
        return False
    raise argparse.ArgumentTypeError(f"invalid boolean value {text!r}")


class GoFlagParser(argparse.ArgumentParser):
    """argparse with Go-style single-dash long flags."""

    def __init__(
        self, prog: str, *, description: str | None = None, verbosity_default: int | None = 0, klog: bool = True
    ) -> None:
        """``klog=False`` leaves klog's flags (other than ``-v``) to the caller."""
        super().__init__(prog=prog, description=description, allow_abbrev=False, add_help=True)
        self.add_flag("v", type=int, default=verbosity_default, help="number for the log level verbosity")
        if not klog:
            return
        for f in KLOG_FLAGS:
            self.add_flag(f, default=None, help=argparse.SUPPRESS)
        for f in KLOG_BOOL_FLAGS:
            self.add_bool(f, default=None, help=argparse.SUPPRESS)

    def add_flag(self, name: str, **kw: object) -> None:
        self.add_argument(f"-{name}", f"--{name}", dest=name.replace("-", "_"), **kw)  # type: ignore[arg-type]

    def add_bool(self, name: str, *, default: bool | None, help: str | None = None) -> None:
        self.add_argument(
            f"-{name}",
            f"--{name}",
            dest=name.replace("-", "_"),
            nargs="?",
            const=True,
            default=default,
            type=parse_bool,
            metavar="BOOL",
            help=help,
        )

    def parse_go(self, argv: Sequence[str]) -> argparse.Namespace:
        ns, rest = self.parse_known_args(list(argv))
        if rest:
            print(f"unknown command line argument: {rest[0]}", file=sys.stderr)
            self.print_usage(sys.stderr)
            sys.exit(2)
        return ns
