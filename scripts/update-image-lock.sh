#!/usr/bin/env bash
# Update the image's lock and SBOM (docs/install.md, "The lock and the SBOM"):
#
#   deploy/image/requirements.in   pyproject.toml's [build-system] requires (the build backend)
#   deploy/image/requirements.txt  every Python distribution the Dockerfile installs, pinned with
#                                  its hashes: pyproject.toml's dependencies with the `compat`
#                                  extra and requirements.in,
#                                  resolved by uv for every platform (--universal), so one lock
#                                  serves linux/amd64 and linux/arm64 images
#   deploy/image/sbom.cdx.json     a CycloneDX SBOM of those distributions, made from the lock by
#                                  cyclonedx-py (no timestamp or serial number: regenerating it
#                                  from the same lock gives the same file)
#
# Pins already in the lock are kept while they still satisfy pyproject.toml (uv pip compile's
# default); arguments go to uv pip compile: `--upgrade` takes the newest release of everything,
# `--upgrade-package NAME` of one. Needs PyPI; uv and cyclonedx-bom, at the versions below, are
# installed into a temporary virtualenv.
set -euo pipefail
cd "$(dirname "$0")/.."
UV_VERSION=0.13.10
CYCLONEDX_BOM_VERSION=7.5.0
tools=$(mktemp -d)
trap 'rm -rf "$tools"' EXIT
python3 -m venv "$tools/venv"
"$tools/venv/bin/python" -m pip install -q --disable-pip-version-check \
    "uv==$UV_VERSION" "cyclonedx-bom==$CYCLONEDX_BOM_VERSION"
# requirements.in: the build backend, as pyproject.toml's [build-system] requires names it
python3 - <<'PY'
import tomllib
from pathlib import Path

requires = tomllib.loads(Path("pyproject.toml").read_text())["build-system"]["requires"]
Path("deploy/image/requirements.in").write_text(
    "# Written by scripts/update-image-lock.sh from pyproject.toml's [build-system] requires: the build\n"
    "# backend, an input of the image's lock (requirements.txt beside this file) with pyproject.toml's\n"
    "# dependencies and its compat extra. The Dockerfile installs it from the lock and builds nfd with it\n"
    "# (--no-build-isolation), so the image build fetches nothing without a hash.\n"
    + "".join(f"{r}\n" for r in requires))
PY
"$tools/venv/bin/uv" pip compile --quiet --universal --generate-hashes --extra compat \
    --custom-compile-command scripts/update-image-lock.sh \
    -o deploy/image/requirements.txt "$@" pyproject.toml deploy/image/requirements.in
# (its UserWarning says the SBOM has no dependency graph: a requirements file has none to give)
PYTHONWARNINGS=ignore::UserWarning "$tools/venv/bin/cyclonedx-py" requirements --pyproject pyproject.toml --output-reproducible \
    --spec-version 1.6 -o deploy/image/sbom.cdx.json deploy/image/requirements.txt
echo "updated deploy/image/requirements.in, requirements.txt and sbom.cdx.json"
