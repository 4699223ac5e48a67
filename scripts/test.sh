#!/usr/bin/env bash
# The whole test suite: install, lint, type-check, the import layers, unit and e2e tests (e2e builds
# the real kube-apiserver from Go modules on first use; the build is cached outside the repo).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q -e '.[test]'
python3 -m ruff check nfd tests benchmarks
python3 -m mypy nfd
# The layer contracts of docs/architecture.md ([tool.importlinter] in pyproject.toml): import-linter's
# `lint-imports`, called through python3 so it is the installation pip just filled
python3 -c 'from importlinter.cli import lint_imports_command; lint_imports_command()' --no-cache
# Build (or reuse) the e2e kube-apiserver; prints the build time when it builds. Without Go
# this only notes it, and pytest reports the e2e tests as skipped.
python3 -m tests.e2e.build --if-go
# Likewise helm, kustomize and kube-scheduler for the deploy/ tests (tests/tools/).
python3 -m tests.e2e.tools --if-go
# And the real node's parts (tests/e2e/node.py): containerd, runc and buildah from Debian packages,
# the project's image built from the Dockerfile, kubelet/controller-manager/scheduler; each
# cached, printing its set-up time. Only where the machine cannot run containers are the node
# tests skipped (with the reason).
python3 -m tests.e2e.node --if-go
# The arm64 parts (tests/e2e/arm64.py): qemu-user-static registered with binfmt_misc, the image
# built for linux/arm64 from the same Dockerfile (its RUN steps under emulation) and unpacked,
# upstream's nfd-worker cross-built for arm64 with cgo; each cached, printing its set-up time.
python3 -m tests.e2e.arm64 --if-go
# Upstream's e2e suite (the newest release on the Go module proxy, tests/tools/upstream-e2e):
# built here (`go test -c`, cached; prints its build time), run after pytest on a real node of
# its own against the project's image, printing its run time and `upstream e2e vX.Y.Z: N passed,
# M failed, K skipped`, and failing on a failing spec that docs/compatibility.md does not list
# with its reason. NFD_UPSTREAM_E2E=0 leaves it out (it is also left out when pytest is given
# arguments: a partial run).
upstream=${NFD_UPSTREAM_E2E:-1}
if [ "$upstream" != 0 ]; then python3 -m tests.e2e.upstream --if-go --build-only; fi
rc=0
python3 -m pytest -q -rs -p no:cacheprovider --durations=15 tests "$@" || rc=$?
pytest_rc=$rc
if [ $# -eq 0 ] && [ "$upstream" != 0 ]; then python3 -m tests.e2e.upstream --if-go || rc=$?; fi
# The README's commands in a fresh virtualenv with the newest release of every dependency, and
# with the lowest releases pyproject.toml allows (uv's lowest-direct resolution): install,
# `nfd export labels`, the unit tests (a slice of them at the lowest). Prints each step's time.
# Where pytest above passed the whole of tests/ on this interpreter, the newest environment runs
# its unit tests only if its releases differ from this interpreter's (on a fresh machine they are
# the same: pip installed the newest releases above).
if [ $# -eq 0 ] && [ "$pytest_rc" = 0 ]; then
  python3 -m tests.dependency_envs --suite-ran-unit-tests || rc=$?
else
  python3 -m tests.dependency_envs || rc=$?
fi
exit $rc
