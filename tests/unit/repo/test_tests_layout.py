"""tests/unit mirrors nfd/: the tests of ``nfd/<a>/<b>`` are in ``tests/unit/<a>/<b>``, so that
a package's tests are found where the package is, and a moved or renamed package shows up here.
The scripts and Go programs that regenerate expected outputs (oracle generators) live under
tests/oracles/, apart from the tests they feed; tests/unit holds tests, their helpers and data.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
UNIT = ROOT / "tests" / "unit"

# Directories of tests that are not one package's: repository-wide checks, and the corpora
# checked against upstream's Go (their generators: tests/oracles/, their READMEs say how).
NOT_A_PACKAGE = {"repo", "rules/corpus", "sources/parity"}


def _test_dirs() -> list[str]:
    """Every directory under tests/unit that holds Python (data-only directories are fixtures)."""
    return sorted({p.parent.relative_to(UNIT).as_posix() for p in UNIT.rglob("*.py")} - {"."})


def _generators() -> list[str]:
    out = []
    for path in UNIT.rglob("*"):
        name = path.name
        if path.suffix == ".go" or name == "go.mod" or (path.suffix == ".py" and name.startswith(("regen_", "gen_"))):
            out.append(path.relative_to(UNIT).as_posix())
    return sorted(out)


def test_every_test_directory_matches_an_nfd_package() -> None:
    orphans = [
        d for d in _test_dirs()
        if d not in NOT_A_PACKAGE and not any(d == a or d.startswith(a + "/") for a in NOT_A_PACKAGE)
        and not (ROOT / "nfd" / d / "__init__.py").exists()
    ]
    assert orphans == [], f"tests/unit/<dir> with no nfd/<dir> package: {orphans}"


def test_the_allow_list_names_directories_that_exist() -> None:
    assert sorted(d for d in NOT_A_PACKAGE if not (UNIT / d).is_dir()) == []


def test_no_test_file_sits_at_the_top_of_tests_unit() -> None:
    assert sorted(p.name for p in UNIT.glob("*.py")) == []


def test_oracle_generators_are_apart_from_the_tests() -> None:
    assert _generators() == [], "oracle generators belong under tests/oracles/"
    assert (ROOT / "tests" / "oracles").is_dir()
