"""``nfd`` and its command groups alone print their help and exit 0, as cobra's groups (and
upstream's ``nfd compat``) do; subcommands have a description and every flag a help text."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from nfd.cli import main as nfd_main


@pytest.mark.parametrize("argv", [[], ["rules"], ["compat"], ["export"]])
def test_group_without_subcommand_prints_help_exit_0(argv: list[str], capsys: Any) -> None:
    assert nfd_main(argv) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: nfd"), out


def _subparsers(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            return dict(a.choices)
    return {}


@pytest.mark.parametrize("command", ["validate", "dryrun"])
def test_rules_subcommands_describe_themselves_and_every_flag(command: str) -> None:
    from nfd.cli.rules import build_parser

    sub = _subparsers(build_parser())[command]
    assert sub.description and len(sub.description) > 40
    for a in sub._actions:
        assert a.help and a.help != argparse.SUPPRESS, a.option_strings
