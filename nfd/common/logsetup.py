"""Process logging: klog-like one-line records on stderr, the level from ``-v``."""

from __future__ import annotations

import logging
import sys


def setup_logging(verbosity: int, *, debug_from: int = 2) -> None:
    """INFO by default, DEBUG from ``-v=debug_from`` on; aiohttp's own chatter only from -v=4."""
    logging.basicConfig(
        level=logging.DEBUG if verbosity >= debug_from else logging.INFO,
        format="%(asctime)s %(levelname).1s %(name)s] %(message)s",
        stream=sys.stderr,
    )
    if verbosity < 4:
        logging.getLogger("aiohttp").setLevel(logging.WARNING)
