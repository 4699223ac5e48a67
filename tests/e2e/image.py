"""Build the project's image from the Dockerfile, without Docker, for the real-node tests.

As a user builds it, but with `buildah bud` and a base image made offline (no registry is
reachable from the test machines):

1. the base: a Debian 12 root (Python 3.11, its venv module, CA certificates) made by
   `mmdebstrap` from Debian packages, committed as a local image;
2. `buildah bud --build-arg BASE=<that image>` runs the Dockerfile's own steps (the Dockerfile's
   default base, python:3.11-slim, stays what users get);
3. the image is written as a docker-archive tar that `ctr images import` reads.

Everything is cached outside the repository, keyed by its inputs, like the test apiserver:

    ${NFD_TEST_IMAGE_CACHE:-${XDG_CACHE_HOME:-~/.cache}/nfd-test-image}/
        base-<key>.tar     the mmdebstrap root (key: suite, packages, mmdebstrap version)
        nfd-<key>.tar      the image (key: Dockerfile, the files it copies, base key, buildah)
        storage/           buildah's image store (vfs)

`python -m tests.e2e.image` builds what is missing and prints the paths and times.

`--arch arm64` (`ensure_image(arch="arm64")`) builds the same Dockerfile for linux/arm64: the
base is mmdebstrap's `--arch=arm64` root and `buildah bud --platform linux/arm64` runs the
Dockerfile's RUN steps (pip installs PyPI's aarch64 wheels) under qemu-user through binfmt_misc
(tests/e2e/emulation.py sets that up). Its files: base-<key>.tar and nfd-arm64-<key>.tar, the
keys covering the architecture and qemu's version; `rootfs()` unpacks the image's filesystem
(rootfs-arm64-<key>/) for tests/e2e/test_arm64.py to run under emulation.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from tests.e2e import hostpkgs

REPO_ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO_ROOT / "Dockerfile"
#: the name the test overlay points the manifests at (containerd stores docker.io/library/nfd:e2e)
IMAGE_REF = "nfd:e2e"
PACKAGES = hostpkgs.IMAGE
BASE_SUITE = "bookworm"  # Debian 12: Python 3.11, as python:3.11-slim
BASE_INCLUDE = ("python3", "python3-venv", "ca-certificates")


class ImageError(RuntimeError):
    pass


def cache_root() -> Path:
    from tests.e2e.build import cache_dir

    return cache_dir("nfd-test-image", "NFD_TEST_IMAGE_CACHE")


def _version(cmd: str) -> str:
    """``cmd --version``'s output, installing the program first: the keys hash it before any build."""
    proc = subprocess.run([hostpkgs.program(cmd, log=_stderr), "--version"], capture_output=True, text=True,
                          check=False)
    return proc.stdout.strip()


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _run(argv: list[str], *, what: str, timeout: float = 1800) -> str:
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=timeout)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-30:])
        raise ImageError(f"{what} failed (exit {proc.returncode}):\n{tail}")
    return proc.stdout


def host_arch() -> str:
    """This machine's Debian/OCI architecture name."""
    return {"x86_64": "amd64", "aarch64": "arm64"}.get(os.uname().machine, os.uname().machine)


def _foreign(arch: str) -> bool:
    if arch == host_arch():
        return False
    if arch != "arm64":
        raise ImageError(f"cannot build for {arch} on {host_arch()}: only arm64 runs under emulation here")
    return True


def _emulate(arch: str, log: Callable[[str], None]) -> str:
    """Sets up qemu-user for ``arch`` when it is foreign here; its version for the keys ("" if native)."""
    if not _foreign(arch):
        return ""
    from tests.e2e import emulation

    try:
        emulation.ensure_binfmt(log=log)
    except (emulation.EmulationError, hostpkgs.PackageError) as e:
        raise ImageError(f"no emulation for {arch}: {e}") from e
    return emulation.qemu_version()


def base_key(arch: str | None = None) -> str:
    h = hashlib.sha256()
    h.update(f"{BASE_SUITE}\0{','.join(BASE_INCLUDE)}\0minbase\0{_version('mmdebstrap')}".encode())
    if arch and _foreign(arch):  # the host's architecture keeps the key it always had
        from tests.e2e import emulation

        h.update(f"\0{arch}\0{emulation.qemu_version()}".encode())
    return h.hexdigest()[:16]


def build_stage_copies(text: str) -> list[str]:
    """The sources of the Dockerfile's COPY lines (not --from): what the build context must hold."""
    out: list[str] = []
    for m in re.finditer(r"^COPY\s+(?!--from)(.+)$", text, re.MULTILINE):
        *srcs, _dest = m.group(1).split()
        out += srcs
    return out


def image_key(arch: str | None = None) -> str:
    """Hash of the Dockerfile, every file it copies (bytecode caches aside), the base and buildah."""
    text = DOCKERFILE.read_text()
    h = hashlib.sha256(text.encode())
    for src in sorted(set(build_stage_copies(text))):
        p = REPO_ROOT / src
        files = sorted(f for f in p.rglob("*") if f.is_file() and "__pycache__" not in f.parts) if p.is_dir() else [p]
        for f in files:
            h.update(str(f.relative_to(REPO_ROOT)).encode() + b"\0" + f.read_bytes() + b"\0")
    h.update(f"{base_key(arch)}\0{_version('buildah')}".encode())
    return h.hexdigest()[:16]


def _buildah(*args: str) -> list[str]:
    root = cache_root() / "storage"
    return ["buildah", "--root", str(root / "root"), "--runroot", str(root / "run"), "--storage-driver", "vfs",
            *args]


def _host_ca_bundle() -> Path | None:
    """The machine's CA bundle: where HTTPS goes through a proxy with its own CA, pip inside the
    build needs it (its RUN steps otherwise fail with CERTIFICATE_VERIFY_FAILED)."""
    for cand in (os.environ.get("SSL_CERT_FILE"), "/etc/ssl/certs/ca-certificates.crt"):
        if cand and Path(cand).is_file():
            return Path(cand)
    return None


def ensure_base(*, arch: str | None = None, log: Callable[[str], None] = print) -> str:
    """The local base image's name, making the Debian root and committing it first if needed
    (for ``arch``, default this machine's: a foreign one is made and later run under qemu-user)."""
    arch = arch or host_arch()
    _emulate(arch, log)
    key = base_key(arch)
    name = f"localhost/nfd-test-base:{key}"
    if subprocess.run(_buildah("inspect", "--type", "image", name), capture_output=True).returncode == 0:
        return name
    tar = cache_root() / f"base-{key}.tar"
    if not tar.exists():
        log(f"mmdebstrap --arch={arch} {BASE_SUITE} ({', '.join(BASE_INCLUDE)}) into {tar} (first run)")
        start = time.monotonic()
        tmp = tar.with_name(f".{tar.name}.{os.getpid()}.tmp.tar")
        try:
            _run(["mmdebstrap", "--variant=minbase", f"--arch={arch}", f"--include={','.join(BASE_INCLUDE)}",
                  BASE_SUITE, str(tmp)], what="mmdebstrap")
            os.replace(tmp, tar)
        finally:
            tmp.unlink(missing_ok=True)
        log(f"made the {arch} base root in {time.monotonic() - start:.1f}s")
    ctr = f"nfd-test-base-{key}-{os.getpid()}"
    _run(_buildah("from", "--arch", arch, "--name", ctr, "scratch"), what="buildah from scratch")
    try:
        _run(_buildah("add", ctr, str(tar), "/"), what=f"buildah add {tar}")
        _run(_buildah("config", "--env", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                      "--os", "linux", "--arch", arch, "--cmd", "/bin/sh", ctr), what="buildah config")
        _run(_buildah("commit", "--rm", ctr, name), what="buildah commit")
    except BaseException:
        subprocess.run(_buildah("rm", ctr), capture_output=True)
        raise
    return name


def cached_archive(target: Path, ref: str, commit: Callable[[str], str], *, keep: str, what: str,
                   log: Callable[[str], None] = print, arch: str | None = None) -> Path:
    """``target``, a docker-archive tar tagged ``ref`` of the image ``commit(base)`` makes in
    buildah's store (it returns the local name), built under the cache's lock when missing; the
    store then keeps only the base. Of the cache's archives matching the glob ``keep``, the two
    newest stay."""
    hostpkgs.ensure(PACKAGES, log=log)
    root = target.parent
    root.mkdir(parents=True, exist_ok=True)
    if not target.exists():
        with open(root / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not target.exists():
                start = time.monotonic()
                local = commit(ensure_base(arch=arch, log=log))
                tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
                try:
                    _run(_buildah("push", local, f"docker-archive:{tmp}:{ref}"), what="buildah push (docker-archive)")
                    os.replace(tmp, target)
                finally:
                    tmp.unlink(missing_ok=True)
                    # each image is a few hundred MB on vfs
                    subprocess.run(_buildah("rmi", local), capture_output=True)
                    subprocess.run(_buildah("rmi", "--prune"), capture_output=True)
                log(f"built {what} {target} ({target.stat().st_size / 2**20:.0f} MiB) "
                    f"in {time.monotonic() - start:.1f}s")
    for old in sorted(root.glob(keep), key=lambda p: p.stat().st_mtime, reverse=True)[2:]:
        old.unlink(missing_ok=True)
    return target


def ensure_image(*, arch: str | None = None, log: Callable[[str], None] = print) -> Path:
    """The image as a docker-archive tar (tagged nfd:e2e; nfd:e2e-<arch> for a foreign ``arch``),
    building it first if needed."""
    arch = arch or host_arch()
    foreign = _foreign(arch)
    if foreign:
        _emulate(arch, log)
    key = image_key(arch)

    def commit(base: str) -> str:
        tag = f"localhost/nfd-test:{key}"
        log(f"buildah bud --platform linux/{arch} --build-arg BASE={base} -f Dockerfile (image {key})")
        argv = _buildah("bud", "--isolation", "chroot", "--network", "host", "--pull=never",
                        "--platform", f"linux/{arch}",
                        "--build-arg", f"BASE={base}", "--layers=false", "-t", tag, "-f", str(DOCKERFILE))
        ca = _host_ca_bundle()
        if ca is not None:
            argv += ["--volume", f"{ca}:/etc/ssl/certs/ca-certificates.crt:ro"]
        _run([*argv, str(REPO_ROOT)], what="buildah bud")
        return tag

    if foreign:
        return cached_archive(cache_root() / f"nfd-{arch}-{key}.tar", f"{IMAGE_REF}-{arch}", commit,
                              keep=f"nfd-{arch}-{'[0-9a-f]' * 16}.tar", what=f"the {arch} image", log=log, arch=arch)
    # the key's 16 hex digits: not upstream_image.py's nfd-upstream-* archives
    return cached_archive(cache_root() / f"nfd-{key}.tar", IMAGE_REF, commit, keep=f"nfd-{'[0-9a-f]' * 16}.tar",
                          what="the image", log=log)


def rootfs(archive: Path, *, log: Callable[[str], None] = print) -> Path:
    """The image's filesystem unpacked from its docker-archive tar, beside it (cached: one per
    archive, the two newest kept): its layers in order, whiteouts applied. Owners, modes and
    device nodes are kept (run as root)."""
    import json
    import shutil
    import tarfile

    target = archive.with_name("rootfs-" + archive.name.removeprefix("nfd-").removesuffix(".tar"))
    if (target / ".complete").exists():
        return target
    with open(archive.parent / ".rootfs.lock", "w") as lock:  # not the builds' lock: unpacking waits for none
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / ".complete").exists():
            return target
        start = time.monotonic()
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir()
        with tarfile.open(archive) as outer:
            manifest = json.load(outer.extractfile("manifest.json"))  # type: ignore[arg-type]
            for layer in manifest[0]["Layers"]:
                with tarfile.open(fileobj=outer.extractfile(layer)) as tar:
                    members = []
                    for m in tar:
                        head, _, name = m.name.rpartition("/")
                        if name.startswith(".wh."):  # an OCI whiteout: remove what lower layers had
                            gone = target / head / name.removeprefix(".wh.")
                            if name == ".wh..wh..opq":
                                for child in (target / head).iterdir():
                                    if child.is_dir() and not child.is_symlink():
                                        shutil.rmtree(child)
                                    else:
                                        child.unlink()
                            elif gone.is_dir() and not gone.is_symlink():
                                shutil.rmtree(gone)
                            else:
                                gone.unlink(missing_ok=True)
                            continue
                        members.append(m)
                    tar.extractall(target, members=members, numeric_owner=True, filter="tar")
        (target / ".complete").touch()
        log(f"unpacked {archive.name} into {target} in {time.monotonic() - start:.1f}s")
    prefix = target.name.rsplit("-", 1)[0]
    for old in sorted((d for d in archive.parent.glob(f"{prefix}-*") if d.is_dir() and d != target),
                      key=lambda d: d.stat().st_mtime, reverse=True)[1:]:
        shutil.rmtree(old, ignore_errors=True)
    return target


def missing_reason() -> str | None:
    """Why the image cannot be built here (packages that cannot be installed), or None."""
    return hostpkgs.missing_reason(PACKAGES)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.e2e.image", description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default=None, help="amd64 or arm64 (default: this machine's)")
    args = ap.parse_args(argv)
    start = time.monotonic()
    try:
        path = ensure_image(arch=args.arch, log=lambda m: print(m, file=sys.stderr, flush=True))
    except (ImageError, hostpkgs.PackageError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"{path} (ready in {time.monotonic() - start:.1f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
