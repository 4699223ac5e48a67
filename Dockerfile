# One image with every entry point: nfd (with nfd compat), kubectl-nfd, nfd-worker, nfd-master,
# nfd-topology-updater, nfd-gc.
# Host paths are expected under /host-* (as upstream's image), see docs/install.md.
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY nfd ./nfd
COPY crds ./crds
RUN pip install --no-cache-dir --prefix=/install ".[compat]"

FROM python:3.11-slim
COPY --from=build /install /usr/local
# Bytecode compiled at build time: the read-only root filesystem means no cache at run time.
RUN python -m compileall -q /usr/local/lib/python3.11/site-packages
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 NFD_HOST_PREFIX=/host-
# Non-root by default; the topology-updater DaemonSet overrides runAsUser to 0 for the kubelet socket.
USER 65534:65534
ENTRYPOINT []
CMD ["nfd-worker"]
