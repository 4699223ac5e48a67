# One image with every entry point: nfd (with nfd compat), kubectl-nfd, nfd-worker, nfd-master,
# nfd-topology-updater, nfd-gc.
# Host paths are expected under /host-* (as upstream's image), see docs/install.md.
#
# BASE: any image with Python 3.11 and its venv module (`python3 -m venv`). The default is the
# official python:3.11-slim; the test suite builds on a Debian 12 root made offline
# (tests/e2e/image.py). Everything is installed into a virtual environment at /opt/nfd, so both
# lay files out the same (Debian's own Python would put `pip --prefix` installs under
# local/.../dist-packages, off sys.path, and has no `python` command).
ARG BASE=python:3.11-slim

FROM ${BASE} AS build
WORKDIR /src
COPY deploy/image/requirements.txt ./deploy/image/
COPY pyproject.toml README.md ./
COPY nfd ./nfd
COPY crds ./crds
# The Python distributions come from the lock (deploy/image/requirements.txt: nfd's dependencies
# with the compat extra, and the build backend), wheels only, each checked against the lock's
# hashes: a mismatch or a distribution missing from the lock fails the build. nfd itself is then
# built with the locked setuptools, so nothing unhashed is fetched, and `pip check` fails the build
# if the lock does not hold what nfd requires.
# Bytecode compiled at build time: the read-only root filesystem means no cache at run time.
RUN python3 -m venv /opt/nfd \
 && /opt/nfd/bin/pip install --no-cache-dir --disable-pip-version-check --require-hashes --only-binary :all: \
        -r deploy/image/requirements.txt \
 && /opt/nfd/bin/pip install --no-cache-dir --disable-pip-version-check --no-deps --no-build-isolation . \
 && /opt/nfd/bin/pip check \
 && /opt/nfd/bin/python3 -m compileall -q /opt/nfd/lib

FROM ${BASE}
COPY --from=build /opt/nfd /opt/nfd
# the CRD schemas `nfd rules validate` and `kubectl nfd validate` check objects against
COPY --from=build /src/crds /opt/nfd/crds
# the SBOM of the Python distributions installed from the lock (CycloneDX, docs/install.md)
COPY deploy/image/sbom.cdx.json /opt/nfd/sbom.cdx.json
ENV PATH=/opt/nfd/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 NFD_HOST_PREFIX=/host- NFD_CRDS_DIR=/opt/nfd/crds
# Non-root by default; the topology-updater DaemonSet overrides runAsUser to 0 for the kubelet socket.
USER 65534:65534
ENTRYPOINT []
CMD ["nfd-worker"]
