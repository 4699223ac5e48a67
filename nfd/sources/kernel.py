"""``kernel`` source: version, kconfig, loaded/enabled modules, selinux, kvm."""

from __future__ import annotations

import gzip  # /proc/config.gz only
import io
import os
import posixpath
import re
import zlib
from typing import Any

from nfd.api.features import Features
from nfd.common.logsetup import klogger
from nfd.sources.base import DiscoveryContext, FeatureSource, str_list
from nfd.sources.hostfs import exists, go_fields, go_trim_space, read_bytes, read_text, read_value

_log = klogger("nfd.sources.kernel")

_FULL_SANITIZE = re.compile(r"[^-A-Za-z0-9_.]")
_VERSION = re.compile(r"^(?P<major>\d+)(\.(?P<minor>\d+))?(\.(?P<revision>\d+))?(-.*)?$")
#: kconfig files are a few hundred KiB; cap what we read (and decompress)
_KCONFIG_LIMIT = 16 << 20


class KernelSource(FeatureSource):
    name = "kernel"
    features = ("kernel.version", "kernel.config", "kernel.loadedmodule", "kernel.enabledmodule", "kernel.selinux",
                "kernel.kvm")

    def default_config(self) -> dict[str, Any]:
        return {"kconfigFile": "", "configOpts": ["NO_HZ", "NO_HZ_IDLE", "NO_HZ_FULL", "PREEMPT"]}

    def parse_config(self, raw: Any, *, path: str) -> dict[str, Any]:
        cfg = super().parse_config(raw, path=path)
        cfg["configOpts"] = str_list(cfg["configOpts"], f"{path}.configOpts")
        return cfg

    def discover(self, ctx: DiscoveryContext, config: dict[str, Any]) -> Features:
        f = Features()
        osrelease = read_value(ctx, ctx.paths.proc("sys/kernel/osrelease"))
        if osrelease:
            f.attributes["kernel.version"] = parse_version(osrelease)
        else:
            ctx.warn(f"{ctx.paths.proc('sys/kernel/osrelease')}: cannot get kernel version")
        kconfig = read_kconfig(ctx, str(config.get("kconfigFile") or ""), osrelease or "")
        if kconfig is not None:
            f.attributes["kernel.config"] = kconfig
        modules_path = ctx.paths.proc("modules")
        modules_text = read_text(ctx, modules_path, limit=4 << 20)
        loaded: set[str] | None = None
        if modules_text is None and not os.path.exists(modules_path):
            # upstream's line (read_text is quiet about a missing file): kernel.loadedmodule is
            # gone and kernel.enabledmodule holds the built-in modules only
            _log.error_s(f"failed to read file {modules_path}: open {modules_path}: no such file or directory",
                         "failed to get loaded kernel modules")
        if modules_text is not None:
            # upstream: lines split on LF, first whitespace-separated field (its blank-line check
            # is on length; a whitespace-only line would crash it, we skip it)
            loaded = {fields[0] for fields in map(go_fields, modules_text.split("\n")) if fields}
            f.flags["kernel.loadedmodule"] = set(loaded)
        if osrelease:
            builtin_path = ctx.paths.path(f"/lib/modules/{osrelease}/modules.builtin")
            text = read_text(ctx, builtin_path, limit=4 << 20)
            if text is not None:
                lines = (go_trim_space(line) for line in text.split("\n"))
                builtin = {posixpath.basename(line)[:-3] for line in lines if line.endswith(".ko")}
                f.flags["kernel.enabledmodule"] = (loaded or set()) | builtin
        if os.path.isdir(ctx.paths.sys("fs")):
            enforce = read_bytes(ctx, ctx.paths.sys("fs/selinux/enforce"), limit=16)
            f.attributes["kernel.selinux"] = {"enabled": "true" if enforce and enforce[:1] == b"1" else "false"}
        f.attributes["kernel.kvm"] = {
            "enabled": "true" if exists(ctx.paths.sys("devices/virtual/misc/kvm")) else "false"
        }
        return f

    def labels(self, features: Features, config: dict[str, Any], ctx: DiscoveryContext) -> dict[str, str]:
        out = {f"version.{k}": v for k, v in features.attributes.get("kernel.version", {}).items()}
        kconfig = features.attributes.get("kernel.config", {})
        for opt in config.get("configOpts") or []:
            if opt in kconfig:
                v = kconfig[opt]
                out[f"config.{opt}"] = "true" if v in ("y", "m") else v  # upstream's "legacy" value
        if features.attributes.get("kernel.selinux", {}).get("enabled") == "true":
            out["selinux.enabled"] = "true"
        return out


def parse_version(osrelease: str) -> dict[str, str]:
    full = _FULL_SANITIZE.sub("_", osrelease).strip("-_.")
    m = _VERSION.match(full)
    out = {"full": full}
    if m:  # as upstream: no major/minor/revision at all when the version does not parse
        out.update({k: m.group(k) or "" for k in ("major", "minor", "revision")})
    return out


def kconfig_paths(ctx: DiscoveryContext, ver: str) -> list[str]:
    """Upstream's search order (``/proc/config.gz`` and ``/lib/modules/<v>/build`` not remapped
    in the DaemonSet layout; under an explicit host root everything is)."""
    p = ctx.paths.path
    if not ver:
        return [p("/proc/config.gz"), p("/usr/src/linux/.config")]
    return [
        p("/proc/config.gz"),
        p(f"/usr/src/linux-{ver}/.config"),
        p(f"/usr/src/linux-rt-{ver}/.config"),
        p("/usr/src/linux/.config"),
        p(f"/usr/lib/modules/{ver}/config"),
        p(f"/usr/lib/ostree-boot/config-{ver}"),
        p(f"/usr/lib/kernel/config-{ver}"),
        p(f"/usr/src/linux-headers-{ver}/.config"),
        p(f"/lib/modules/{ver}/build/.config"),
        p(f"/usr/src/linux-rt-headers-{ver}/.config"),
        p(f"/boot/config-{ver}"),
    ]


def read_kconfig(ctx: DiscoveryContext, kconfig_file: str, ver: str) -> dict[str, str] | None:
    candidates = ([kconfig_file] if kconfig_file else []) + kconfig_paths(ctx, ver)
    for path in candidates:
        parsed = _read_config_file(ctx, path)
        if parsed is not None:
            return dict(parsed)
    ctx.warn(f"kernel config: not found in any of {', '.join(candidates)}")
    return None


# The last kernel config read, per path: (what was read, its options). The file does not change
# while the kernel runs, and decompressing and parsing it (~1700 options) was half of a daemon's
# discovery pass: each pass reads the file again and parses it only when the bytes differ.
_MEMO: dict[str, tuple[bytes | str, dict[str, str]]] = {}
_MEMO_MAX = 1 << 20  # compressed bytes (upstream's /proc/config.gz is ~25-60 KiB)


def _read_config_file(ctx: DiscoveryContext, path: str) -> dict[str, str] | None:
    if path.endswith(".gz"):
        try:
            with open(path, "rb") as raw:
                blob = raw.read(_MEMO_MAX + 1)
                more = len(blob) > _MEMO_MAX
                if more:  # not kept: decompressed from the file as it streams
                    raw.seek(0)
                    with gzip.GzipFile(fileobj=raw, mode="rb") as f:
                        data = f.read(_KCONFIG_LIMIT)
                else:
                    hit = _MEMO.get(path)
                    if hit is not None and hit[0] == blob:
                        return hit[1]
                    with gzip.GzipFile(fileobj=io.BytesIO(blob), mode="rb") as f:
                        data = f.read(_KCONFIG_LIMIT)
        except FileNotFoundError:
            return None
        except (OSError, EOFError, zlib.error) as e:
            ctx.warn(f"{path}: cannot read gzip kernel config: {e}")
            return None
        parsed = parse_kconfig(data.decode("utf-8", errors="replace"))
        if not more:
            _MEMO[path] = (blob, parsed)
        return parsed
    text = read_text(ctx, path, limit=_KCONFIG_LIMIT)
    if text is None:
        return None
    hit = _MEMO.get(path)
    if hit is not None and hit[0] == text:
        return hit[1]
    parsed = parse_kconfig(text)
    _MEMO[path] = (text, parsed)
    return parsed


def parse_kconfig(text: str) -> dict[str, str]:
    """``CONFIG_<NAME>=<value>`` lines (quotes stripped); a later line of a name wins."""
    return {name[7:]: value.strip('"')
            for name, sep, value in (line.partition("=") for line in text.split("\n") if line.startswith("CONFIG_"))
            if sep}


SOURCE = KernelSource()
