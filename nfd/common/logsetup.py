"""Process logging: klog's text format on stderr, the level from ``-v``.

Log pipelines written for upstream parse klog's header,
``Lmmdd hh:mm:ss.uuuuuu threadid file:line] msg`` (L is I, W, E or F; klog's thread id is the
process id). ``-skip_headers`` leaves the header out, ``-add_dir_header`` writes the file's
directory too, as klog does. Debug records (klog's ``V(n).Info``) are ``I`` lines.
"""

from __future__ import annotations

import logging
import os
import sys
import time

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
    """INFO by default, DEBUG from ``-v=debug_from`` on; aiohttp's own chatter only from -v=4."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(KlogFormatter(skip_headers=skip_headers, add_dir_header=add_dir_header))
    handler.set_name("nfd-klog")
    root = logging.getLogger()
    for h in list(root.handlers):  # ours from an earlier call (a config reload), not others'
        if h.get_name() == "nfd-klog":
            root.removeHandler(h)
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if verbosity >= debug_from else logging.INFO)
    if verbosity < 4:
        logging.getLogger("aiohttp").setLevel(logging.WARNING)
