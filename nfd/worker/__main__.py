"""``nfd-worker``: thin shell around :class:`nfd.worker.daemon.Worker`."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    from nfd.worker.flags import parse_flags

    args = sys.argv[1:] if argv is None else argv
    try:
        flags = parse_flags(args)
    except SystemExit as e:
        if isinstance(e.code, str):
            print(e.code, file=sys.stderr)
            return 2
        return int(e.code or 0)
    if flags.version:
        from nfd import __version__

        print(f"nfd-worker {__version__}")
        return 0
    from nfd.common.goflags import klog_header_options
    from nfd.common.logsetup import setup_logging

    setup_logging(flags.verbosity or 0, debug_from=3, **klog_header_options(flags))
    from nfd.worker.daemon import Worker

    try:
        worker = Worker(flags)
    except ValueError as e:
        print(f"nfd-worker: {e}", file=sys.stderr)
        return 2
    done = worker.run_offline_once()
    if done is not None:
        return done
    import asyncio  # the daemon and an API-publishing one-shot run on an event loop
    import logging

    from nfd.common.httpserver import ListenError

    try:
        return asyncio.run(worker.run())
    except ListenError as e:
        logging.getLogger("nfd").error("%s", e)
        return 1


if __name__ == "__main__":
    sys.exit(main())
