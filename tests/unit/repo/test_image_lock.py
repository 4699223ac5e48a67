"""The image's lock (deploy/image/requirements.txt) still satisfies pyproject.toml: every runtime
requirement and the compat extra's, and the build backend, pinned at a release they allow, every
pin with its hashes, nothing pinned that nothing requires; and the Dockerfile installs from it
with hash checking. When this fails, run scripts/update-image-lock.sh (docs/install.md)."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

import pytest
from image_lock import (
    LOCK,
    LOCK_IN,
    ROOT,
    SBOM,
    UPDATE_COMMAND,
    LockError,
    load_pyproject,
    lock_problems,
    parse_lock,
)

from tests.e2e.image import build_stage_copies

DOCKERFILE = (ROOT / "Dockerfile").read_text()


def test_the_lock_satisfies_pyproject() -> None:
    assert lock_problems(LOCK.read_text(), load_pyproject(), LOCK_IN.read_text()) == [], \
        f"the image's lock is out of date: run {UPDATE_COMMAND}"


def test_the_lock_holds_the_runtime_dependencies_and_says_how_it_is_made() -> None:
    names = {p.name for p in parse_lock(LOCK.read_text())}
    assert {"pyyaml", "google-re2", "protobuf", "oras", "setuptools"} <= names
    assert f"#    {UPDATE_COMMAND}\n" in LOCK.read_text()
    assert (ROOT / UPDATE_COMMAND).is_file()


def _drop_block(name: str) -> Callable[[str], str]:
    def edit(text: str) -> str:
        return re.sub(rf"(?ms)^{re.escape(name)}==.*?(?=^\S)", "", text, count=1)
    return edit


def _sub(pattern: str, repl: str) -> Callable[[str], str]:
    def edit(text: str) -> str:
        out, n = re.subn(pattern, repl, text, count=1, flags=re.M)
        assert n == 1, pattern
        return out
    return edit


HASH = "--hash=sha256:" + "ab" * 32
TAMPERED_LOCKS: dict[str, tuple[Callable[[str], str], str]] = {
    "a release pyproject.toml does not allow": (_sub(r"^pyyaml==\S+", "pyyaml==5.4.1"),
                                                "pyyaml>=6 (nfd (pyproject.toml)): the lock pins pyyaml==5.4.1"),
    "google-re2 past its bound": (_sub(r"^google-re2==\S+", "google-re2==1.2.0"), "google-re2<1.2,>=1.1"),
    "the compat extra below its floor": (_sub(r"^oras==\S+", "oras==0.2.1"), "oras>=0.2.40"),
    "the build backend too old": (_sub(r"^setuptools==\S+", "setuptools==68.0.0"),
                                  "setuptools>=77 (-r deploy/image/requirements.in)"),
    "a runtime dependency missing": (_drop_block("h2"), "h2>=4.1 (nfd (pyproject.toml)) is not in the lock"),
    "a pin without hashes": (_sub(r"^(attrs==\S+) \\\n(?:    --hash=\S+(?: \\)?\n)+", r"\1\n"),
                             "attrs==26.1.0 (line 3) has no --hash"),
    "a hash that is not sha256": (_sub(r"--hash=sha256:", "--hash=md5:"), "is not a sha256 hash"),
    "an unexplained pin": (lambda t: t + f"six==1.17.0 \\\n    {HASH}\n    # via nothing-here\n",
                           "six==1.17.0 (line"),
    "a pin nothing requires": (lambda t: t + f"six==1.17.0 \\\n    {HASH}\n", "no '# via'"),
    "two pins that only require each other": (
        lambda t: t + f"aaa==1.0 \\\n    {HASH}\n    # via bbb\nbbb==1.0 \\\n    {HASH}\n    # via aaa\n",
        "aaa==1.0 (line"),
    "a pin that claims pyproject.toml requires it": (
        lambda t: t + f"six==1.17.0 \\\n    {HASH}\n    # via nfd (pyproject.toml)\n",
        "the lock says nfd (pyproject.toml) requires"),
    "a pin for Windows only": (_sub(r"^(idna==\S+)", r"\1 ; sys_platform == 'win32'"),
                               "does not hold in every image environment"),
    "a second release of one distribution": (lambda t: t + f"idna==3.0 \\\n    {HASH}\n    # via requests\n",
                                             "idna is pinned twice"),
    "an index URL": (lambda t: "--extra-index-url https://example.com/simple\n" + t, "pinned requirements only"),
    "an unpinned requirement": (_sub(r"^urllib3==\S+", "urllib3>=2"), "is not pinned with =="),
}


@pytest.mark.parametrize("case", sorted(TAMPERED_LOCKS))
def test_a_tampered_lock_fails(case: str) -> None:
    edit, expected = TAMPERED_LOCKS[case]
    text = edit(LOCK.read_text())
    assert text != LOCK.read_text()
    problems = lock_problems(text, load_pyproject(), LOCK_IN.read_text())
    assert any(expected in p for p in problems), problems


TAMPERED_PYPROJECTS: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "a new runtime dependency": (lambda p: p["project"]["dependencies"].append("psutil>=5.9"),
                                 "psutil>=5.9 (nfd (pyproject.toml)) is not in the lock"),
    "a raised floor": (lambda p: p["project"]["dependencies"].__setitem__(
        [i for i, r in enumerate(p["project"]["dependencies"]) if r.startswith("protobuf")][0], "protobuf>=99"),
        "protobuf>=99"),
    "a new compat requirement": (lambda p: p["project"]["optional-dependencies"]["compat"].append("zstandard"),
                                 "zstandard (nfd (pyproject.toml)) is not in the lock"),
    "a dropped dependency": (lambda p: p["project"]["dependencies"].remove(
        next(r for r in p["project"]["dependencies"] if r.startswith("orjson"))),
        "the lock says nfd (pyproject.toml) requires"),
    "another build backend": (lambda p: p["build-system"].__setitem__("requires", ["setuptools>=80", "wheel"]),
                              "is not [build-system] requires"),
}


@pytest.mark.parametrize("case", sorted(TAMPERED_PYPROJECTS))
def test_the_lock_fails_a_changed_pyproject(case: str) -> None:
    change, expected = TAMPERED_PYPROJECTS[case]
    pyproject = copy.deepcopy(load_pyproject())
    change(pyproject)
    problems = lock_problems(LOCK.read_text(), pyproject, LOCK_IN.read_text())
    assert any(expected in p for p in problems), problems


def test_the_parser_reads_markers_hashes_and_multi_line_via() -> None:
    text = ("# header\nfoo==1.0 ; python_full_version < '3.13' \\\n"
            f"    {HASH} \\\n    --hash=sha256:{'cd' * 32}\n    # via\n    #   bar\n    #   nfd (pyproject.toml)\n"
            f"bar==2.0 \\\n    {HASH}\n    # via -r deploy/image/requirements.in\n")
    foo, bar = parse_lock(text)
    assert (foo.name, foo.version, str(foo.marker), len(foo.hashes), foo.via) == \
        ("foo", "1.0", 'python_full_version < "3.13"', 2, ("bar", "nfd (pyproject.toml)"))
    assert (bar.name, bar.line, bar.via) == ("bar", 8, ("-r deploy/image/requirements.in",))
    with pytest.raises(LockError):
        parse_lock("-e .\n")


def test_the_dockerfile_installs_from_the_lock_with_hash_checking() -> None:
    build = DOCKERFILE.split("\nFROM ")[1]  # the build stage
    lock = LOCK.relative_to(ROOT).as_posix()
    assert lock in build_stage_copies(DOCKERFILE)
    commands = [" ".join(c.split()) for c in build.replace("\\\n", " ").split("&&")]
    installs = [c.split("pip install ", 1)[1] for c in commands if "pip install " in c]
    assert installs[0].endswith(f"-r {lock}") and "--require-hashes" in installs[0] \
        and "--only-binary :all:" in installs[0], installs
    # then nfd alone, built with the locked setuptools: nothing else is resolved or fetched
    assert installs[1:] == ["--no-cache-dir --disable-pip-version-check --no-deps --no-build-isolation ."], installs
    assert "pip check" in build


def test_the_image_key_covers_the_lock_and_the_sbom() -> None:
    copies = build_stage_copies(DOCKERFILE)  # what tests/e2e/image.py's image_key hashes
    assert LOCK.relative_to(ROOT).as_posix() in copies
    assert SBOM.relative_to(ROOT).as_posix() in copies
