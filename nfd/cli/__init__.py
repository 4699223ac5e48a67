"""The ``nfd`` command: offline tools. Subcommands import their modules lazily to start fast.

- ``nfd export features|labels``  -> nfd.cli.export
- ``nfd rules validate|dryrun``   -> nfd.cli.rules
- ``nfd compat validate-node|attach`` -> nfd.cli.compat
"""

from __future__ import annotations

import importlib
import sys

from nfd import __version__

COMMANDS = {
    "export": ("nfd.cli.export", "export features or labels of this machine"),
    "rules": ("nfd.cli.rules", "validate and dry-run NodeFeatureRules offline"),
    "compat": ("nfd.cli.compat", "image compatibility: validate-node, attach"),
}


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print("usage: nfd <command> [args]\n\ncommands:")
        for name, (_, help_text) in COMMANDS.items():
            print(f"  {name:<8} {help_text}")
        print("  version  print the version")
        return 0  # cobra's root without a subcommand: help, exit 0
    if args[0] in ("version", "--version"):
        print(__version__)
        return 0
    entry = COMMANDS.get(args[0])
    if entry is None:
        print(f"nfd: unknown command {args[0]!r}; see 'nfd --help'", file=sys.stderr)
        return 2
    mod = importlib.import_module(entry[0])
    rc: int = mod.main(args[1:])
    return rc


if __name__ == "__main__":
    sys.exit(main())
