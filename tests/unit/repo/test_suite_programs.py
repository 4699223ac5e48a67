"""Every program a test, benchmark or script runs comes from somewhere a fresh machine has.

A green CI on a machine that earlier sessions had used hid a program nothing installed
(``mmdebstrap`` was run for its version before the image's packages were installed). This reads
every tracked Python file under tests/, benchmarks/ and scripts/ and every shell script the suite
runs, finds the programs they start by name, and holds each against what provides it:

- a Debian package the suite installs (``tests/e2e/hostpkgs.PROVIDERS``, program to package, the
  package in one of hostpkgs' groups, so that ``program()`` and the rehearsal know it);
- the fresh machine's base (``hostpkgs.BASE_PROGRAMS``);
- this project's own console scripts (pyproject's ``[project.scripts]``, installed by the
  README's ``pip install -e``).

Programs started through a variable (a Go tool the suite built, ``sys.executable``) are not
named here and need no entry. A program found nowhere fails the test with the files that run it.
"""

from __future__ import annotations

import ast
import re
import shlex
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from tests.e2e import hostpkgs

ROOT = Path(__file__).resolve().parents[3]

#: calls that start a program from an argv list: subprocess's, os.exec*, the harness's
#: start_process and the suite's own _run/run helpers
RUNNER = re.compile(r"(^|_)(run|call|check_output|check_call|start_process|spawn\w*)$|^(Popen|exec\w*)$")
#: a word that names a program (not a flag, a template, a path fragment with spaces)
PROGRAM = re.compile(r"^/?[A-Za-z0-9_][\w.+-]*(/[\w.+-]+)*$")
#: shell words that are no program: builtins, keywords, the shell itself
SHELL_WORDS = {"if", "then", "else", "elif", "fi", "for", "do", "done", "while", "case", "esac", "exec", "set",
               "cd", "echo", "export", "local", "[", "[[", "test", "true", "false", "exit", "return", "read",
               "printf", "shift", "trap", "source", ".", "unset", "wait", "rc=0", "{", "}"}
#: the shell, the interpreter and coreutils a fresh machine always has, for the shell scripts
SHELL_BASE = {"bash", "sh", "python", "python3", "dirname", "basename", "env", "cat", "grep", "mkdir", "rm",
              "mktemp"}


def _callee(node: ast.Call) -> str:
    f = node.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def _argv_programs(node: ast.expr) -> list[str]:
    """The programs an argv list literal starts: its first word, and the one after `ip netns exec NS`."""
    if not isinstance(node, ast.List | ast.Tuple) or not node.elts:
        return []
    words = [e.value if isinstance(e, ast.Constant) and isinstance(e.value, str) else None for e in node.elts]
    out = [words[0]] if words[0] else []
    if words[:3] == ["ip", "netns", "exec"] and len(words) > 4 and words[4]:
        out.append(words[4])
    return [Path(w).name for w in out if PROGRAM.match(w)]


def python_programs(source: str) -> list[tuple[str, int]]:
    """(program, line) for each program the module starts by name."""
    tree = ast.parse(source)
    found: list[tuple[str, int]] = []
    argv_builders: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _callee(node)
        if name == "which" and node.args and isinstance(node.args[0], ast.Constant):
            found.append((str(node.args[0].value), node.lineno))
        elif name == "program" and node.args and isinstance(node.args[0], ast.Constant):
            found.append((str(node.args[0].value), node.lineno))  # hostpkgs.program("buildah")
        elif RUNNER.search(name) and node.args:
            first = node.args[0]
            found += [(p, node.lineno) for p in _argv_programs(first)]
            if isinstance(first, ast.Call):
                argv_builders.add(_callee(first))  # _run(_buildah(...)): the list is built there
            shell = any(k.arg == "shell" and isinstance(k.value, ast.Constant) and k.value.value for k in node.keywords)
            if shell and isinstance(first, ast.Constant) and isinstance(first.value, str) and first.value.split():
                found.append((first.value.split()[0], node.lineno))
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name in argv_builders:
            for ret in ast.walk(node):
                if isinstance(ret, ast.Return) and ret.value is not None:
                    found += [(p, ret.lineno) for p in _argv_programs(ret.value)]
    return found


def shell_programs(source: str) -> list[tuple[str, int]]:
    """(program, line) for each command word of a shell script: at a line's start, after
    ``&&``, ``||``, ``;``, ``|``, ``$(`` and the keywords that open a command list."""
    found: list[tuple[str, int]] = []
    lines = source.replace("\\\n", " ").splitlines()  # a continued line is one command
    heredoc_end: str | None = None
    for n, raw in enumerate(lines, 1):
        if heredoc_end is not None:  # a here-document's body is another program's input
            if raw.strip() == heredoc_end:
                heredoc_end = None
            continue
        line = raw.split(" #")[0].strip()
        if not line or line.startswith("#"):
            continue
        opened = re.search(r"<<-?\s*['\"]?(\w+)['\"]?", line)
        if opened:
            heredoc_end = opened.group(1)
        for part in re.split(r"&&|\|\||;|\||\$\(|`", line):
            try:
                words = shlex.split(part, comments=True)
            except ValueError:
                words = part.split()
            words = [w for w in words if not re.match(r"^[A-Za-z_]\w*=", w)]  # VAR=value prefixes
            while words and words[0] in {"if", "then", "else", "elif", "do", "while", "!", "exec", "time"}:
                words = words[1:]
            if words and words[0] not in SHELL_WORDS and PROGRAM.match(words[0]) and not words[0].startswith("-"):
                found.append((Path(words[0]).name, n))
    return found


def project_scripts() -> set[str]:
    return set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"])


def tracked(*patterns: str) -> list[Path]:
    out = subprocess.run(["git", "ls-files", "-z", "--", *patterns], cwd=ROOT, capture_output=True, check=True)
    return [ROOT / f for f in out.stdout.decode().split("\0") if f]


def programs_run_by_the_suite() -> dict[str, list[str]]:
    """program -> the places (file:line) that run it, over tests/, benchmarks/, scripts/ and .ci/."""
    where: dict[str, list[str]] = {}
    for path in tracked("tests/*.py", "benchmarks/*.py", "scripts/*.py"):
        for prog, line in python_programs(path.read_text()):
            where.setdefault(prog, []).append(f"{path.relative_to(ROOT)}:{line}")
    for path in tracked("scripts/*.sh", ".ci/run"):
        for prog, line in shell_programs(path.read_text()):
            where.setdefault(prog, []).append(f"{path.relative_to(ROOT)}:{line}")
    return where


def unprovided(where: dict[str, list[str]]) -> dict[str, list[str]]:
    known = set(hostpkgs.PROVIDERS) | set(hostpkgs.BASE_PROGRAMS) | project_scripts() | SHELL_BASE
    return {prog: places for prog, places in where.items() if prog not in known}


def test_every_program_the_suite_runs_is_installed_by_it_or_on_the_base_machine() -> None:
    where = programs_run_by_the_suite()
    assert {"buildah", "mmdebstrap", "git", "ip", "nft", "python3"} <= set(where), sorted(where)  # the scan sees
    missing = unprovided(where)
    assert not missing, (
        "programs that no install step provides (add the package to a group and the program to "
        "tests/e2e/hostpkgs.PROVIDERS, or, if a fresh machine has it, to BASE_PROGRAMS): "
        + "; ".join(f"{p} at {', '.join(sorted(w)[:3])}" for p, w in sorted(missing.items())))


def test_the_scan_finds_a_program_nothing_provides() -> None:
    module = '''
import subprocess, shutil
def _tool(*a):
    return ["frobnicate-tool", *a]
subprocess.run(["mmdebstrap", "--version"])
subprocess.run(_tool("x"))
shutil.which("skopeo")
subprocess.run(["ip", "netns", "exec", ns, "tcpdump", "-i", "eth0"])
subprocess.Popen("zstd -d x", shell=True)
'''
    found = {p for p, _ in python_programs(module)}
    assert found == {"mmdebstrap", "frobnicate-tool", "skopeo", "ip", "tcpdump", "zstd"}
    assert set(unprovided({p: ["x"] for p in found})) == {"frobnicate-tool", "skopeo", "tcpdump", "zstd"}
    script = ('set -eu\ncd "$(dirname "$0")/.."\nFOO=1 kubeconform -strict x && python3 -m pytest \\\n  tests/x.proto\n'
              "python3 - <<'PY'\nimport tomllib\nprint(1)\nPY\n")
    assert {p for p, _ in shell_programs(script)} == {"dirname", "kubeconform", "python3"}


def test_each_provider_package_is_in_a_group_and_no_base_program_is_one_the_suite_installs() -> None:
    grouped = set(hostpkgs.all_packages())
    assert set(hostpkgs.PROVIDERS.values()) <= grouped
    assert not set(hostpkgs.PROVIDERS) & set(hostpkgs.BASE_PROGRAMS)
    assert not set(hostpkgs.BASE_PROGRAMS.values()) & (grouped - set(hostpkgs.BASE_PACKAGES))


@pytest.mark.skipif(shutil.which("dpkg-query") is None, reason="no dpkg on this machine: the packages' file lists")
def test_each_installed_provider_package_ships_its_program() -> None:
    """Where the package is installed, its file list holds the program (the table says the truth)."""
    checked = 0
    for prog, pkg in hostpkgs.PROVIDERS.items():
        if not hostpkgs.installed([pkg]):
            continue
        files = subprocess.run(["dpkg-query", "-L", pkg], capture_output=True, text=True, check=True).stdout
        assert re.search(rf"/s?bin/{re.escape(prog)}$", files, re.MULTILINE), f"{pkg} ships no {prog}"
        checked += 1
    if checked == 0:
        pytest.skip("none of the suite's packages is installed yet (the e2e set-up installs them)")


def test_the_image_keys_install_the_programs_they_ask_for_its_version(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The failure of the fresh machine: `mmdebstrap --version` ran before mmdebstrap was installed.
    Here PATH holds only what the (recorded) install puts there."""
    from tests.e2e import image

    installs: list[tuple[str, ...]] = []

    def fake_ensure(packages: tuple[str, ...], *, log: object = None) -> None:
        installs.append(tuple(packages))
        for pkg in packages:
            for prog in (p for p, owner in hostpkgs.PROVIDERS.items() if owner == pkg):
                exe = tmp_path / prog
                exe.write_text(f"#!/bin/sh\necho '{prog} 1.0'\n")
                exe.chmod(0o755)

    monkeypatch.setattr(hostpkgs, "ensure", fake_ensure)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(image, "DOCKERFILE", tmp_path / "Dockerfile")
    (tmp_path / "Dockerfile").write_text("FROM scratch\n")
    assert re.fullmatch(r"[0-9a-f]{16}", image.image_key())
    assert ("mmdebstrap",) in installs and ("buildah",) in installs
