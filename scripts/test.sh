#!/usr/bin/env bash
# The whole test suite: install, lint, type-check, unit and e2e tests (e2e builds the real
# kube-apiserver from Go modules on first use; the build is cached outside the repo).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q -e '.[test]'
python3 -m ruff check nfd
python3 -m mypy nfd
python3 -m pytest -q -p no:cacheprovider tests "$@"
