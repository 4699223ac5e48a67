"""tests/dependency_envs.py's newest environment: when its unit tests run again and when the
suite's own run already tested the same releases."""

from __future__ import annotations

import sys

from tests import dependency_envs


def test_the_same_releases_need_no_second_run() -> None:
    venv = {"nfd": "0.1.0", "pip": "25.3", "pyyaml": "6.0.3", "h2": "4.3.0"}
    main = {"nfd": "0.1.0", "pip": "23.2.1", "pyyaml": "6.0.3", "h2": "4.3.0", "extra-on-the-machine": "1"}
    assert dependency_envs.releases_differ(venv, main) == []


def test_an_older_or_missing_release_in_the_suite_interpreter_is_named() -> None:
    venv = {"pyyaml": "6.0.3", "orjson": "3.11.4", "h2": "4.3.0"}
    main = {"pyyaml": "6.0.1", "h2": "4.3.0"}
    assert dependency_envs.releases_differ(venv, main) == ["orjson 3.11.4 (suite: absent)",
                                                            "pyyaml 6.0.3 (suite: 6.0.1)"]


def test_installed_dists_reads_this_interpreter() -> None:
    dists = dependency_envs.installed_dists(sys.executable, dependency_envs._clean_env())
    assert dists["pytest"] and dists["pyyaml"]
    assert all(name == name.lower() and "_" not in name for name in dists)
