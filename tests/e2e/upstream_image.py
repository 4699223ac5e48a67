"""An image of upstream's own binaries, for running upstream's e2e suite against upstream beside
this project's image (tests/e2e/upstream.py `--upstream-image`): same cluster, flags and specs,
so a spec that fails with both images is this machine's and one that fails only with ours is a
bug of ours.

It is assembled as upstream's Dockerfile lays its image out, without its builder stage: the
binaries (built by tests/e2e/tools.py, module "upstream-nfd-image": static, the release's
version, host paths under /host-) in /usr/bin, the release's nfd-worker.conf.example as
/etc/kubernetes/node-feature-discovery/nfd-worker.conf when the Go module cache holds it, user
65534:65534 and GRPC_GO_LOG_SEVERITY_LEVEL=INFO, on the Debian base tests/e2e/image.py makes
(upstream's "full" variant is debian:stable-slim). Another build (e.g. upstream's HEAD built
outside the repository) is given as a directory holding the same binary names.

The image is a docker-archive tar in the image cache, tagged `nfd-upstream:<label>`, keyed by
the binaries' bytes; nothing of upstream is in the repository.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

from tests.e2e.image import ImageError, _buildah, _run, base_key, cache_root, cached_archive
from tests.e2e.tools import MODULES, UPSTREAM_IMAGE_BINARIES, build_module

#: upstream's /usr/bin: what the suite's pods run
BINARIES = UPSTREAM_IMAGE_BINARIES

REPO = "docker.io/library/nfd-upstream"
WORKER_CONF = "/etc/kubernetes/node-feature-discovery/nfd-worker.conf"


def image_key(bins: dict[str, Path], worker_conf: Path | None) -> str:
    h = hashlib.sha256(base_key().encode())
    for name in sorted(bins):
        h.update(name.encode() + b"\0" + bins[name].read_bytes() + b"\0")
    if worker_conf is not None:
        h.update(worker_conf.read_bytes())
    return h.hexdigest()[:16]


def ensure_upstream_image(bins: dict[str, Path], tag: str, *, worker_conf: Path | None = None,
                          log: Callable[[str], None] = print) -> Path:
    """A docker-archive tar of upstream's binaries tagged `nfd-upstream:<tag>` (built if missing)."""
    missing = [b for b in BINARIES if b not in bins or not bins[b].is_file()]
    if missing:
        raise ImageError(f"upstream image: missing binaries {', '.join(missing)}")
    key = image_key(bins, worker_conf)

    def commit(base: str) -> str:
        ctr = f"nfd-upstream-{key}-{os.getpid()}"
        local = f"localhost/nfd-upstream:{key}"
        _run(_buildah("from", "--pull=never", "--name", ctr, base), what=f"buildah from {base}")
        try:
            for name in BINARIES:
                _run(_buildah("copy", "--chmod", "0755", ctr, str(bins[name]), f"/usr/bin/{name}"),
                     what=f"buildah copy {name}")
            if worker_conf is not None:
                _run(_buildah("copy", "--chmod", "0644", ctr, str(worker_conf), WORKER_CONF),
                     what="buildah copy nfd-worker.conf")
            _run(_buildah("config", "--user", "65534:65534", "--env", "GRPC_GO_LOG_SEVERITY_LEVEL=INFO",
                          ctr), what="buildah config")
            _run(_buildah("commit", "--rm", ctr, local), what="buildah commit")
        except BaseException:
            subprocess.run(_buildah("rm", ctr), capture_output=True)
            raise
        return local

    return cached_archive(cache_root() / f"nfd-upstream-{tag}-{key}.tar", f"nfd-upstream:{tag}", commit,
                          keep=f"nfd-upstream-{tag}-*.tar", what="upstream's image", log=log)


def release_binaries(*, log: Callable[[str], None] = print) -> dict[str, Path]:
    """The proxy's release (tests/tools/upstream-nfd) built as the image's binaries."""
    module = next(m for m in MODULES if m.name == "upstream-nfd-image")
    return build_module(module, log=log)


def binaries_in(directory: Path) -> dict[str, Path]:
    """Binaries built elsewhere (e.g. upstream's HEAD): the image's names in one directory."""
    return {name: directory / name for name in BINARIES}
