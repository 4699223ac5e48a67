"""``nfd-worker``: thin shell around :class:`nfd.worker.daemon.Worker`."""

from __future__ import annotations

import logging
import sys

from nfd import __version__
from nfd.common.goflags import klog_header_options
from nfd.common.logsetup import setup_logging
from nfd.worker.daemon import Worker
from nfd.worker.flags import parse_flags


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    try:
        flags = parse_flags(args)
    except SystemExit as e:
        if isinstance(e.code, str):
            print(e.code, file=sys.stderr)
            return 2
        return int(e.code or 0)
    if flags.version:
        print(f"nfd-worker {__version__}")
        return 0
    setup_logging(flags.verbosity or 0, debug_from=3, **klog_header_options(flags))
    try:
        worker = Worker(flags)
    except ValueError as e:
        print(f"nfd-worker: {e}", file=sys.stderr)
        return 2
    done = worker.run_offline_once()
    if done is not None:
        return done
    # here, not at the top: the event loop the daemon and an API-publishing one-shot run on
    # (asyncio, ssl: ~25 ms and 58 modules after a one-shot run, python -X importtime) is what
    # `nfd-worker -oneshot -no-publish` does without (tests/unit/worker/test_worker_imports.py)
    import asyncio

    from nfd.common.httpserver import ListenError

    try:
        return asyncio.run(worker.run())
    except ListenError as e:
        logging.getLogger("nfd").error("%s", e)
        return 1


if __name__ == "__main__":
    sys.exit(main())
