"""The sample NodeFeatureRules shipped under deploy/nodefeaturerule/samples validate cleanly."""

from __future__ import annotations

from pathlib import Path

from nfd.cli.rules import main

SAMPLES = Path(__file__).resolve().parents[3] / "deploy" / "nodefeaturerule" / "samples"


def test_samples_validate(capsys) -> None:  # type: ignore[no-untyped-def]
    files = sorted(SAMPLES.glob("*.yaml"))
    assert files
    argv = ["validate"]
    for f in files:
        argv += ["-f", str(f)]
    assert main(argv) == 0, capsys.readouterr()
