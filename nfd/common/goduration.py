"""Go ``time.ParseDuration`` text (``60s``, ``1h30m``, ``500ms``, ``-1.5h``, ``0``) in seconds.

One parser for flags and config files of all processes (Go's own rules, from
``nfd.lang.gostd.duration``); callers wrap the ValueError in their own error type (argparse,
ConfigError, ValidationError) so messages name the flag or key.
"""

from __future__ import annotations

from nfd.lang.gostd.duration import DurationError, parse_duration
from nfd.lang.gostd.duration import format_duration as format_go_duration

__all__ = ["format_go_duration", "parse_go_duration"]


def parse_go_duration(text: str) -> float:
    """Seconds; a unit is required except for a lone ``0``; surrounding blanks are ignored;
    ValueError otherwise (beyond Go's int64 nanoseconds, about 292 years, included)."""
    try:
        return parse_duration(text.strip()) / 1e9
    except DurationError:
        raise ValueError(f"invalid duration {text!r}") from None
