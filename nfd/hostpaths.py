"""Where the host's filesystems are: one setting every feature source reads through.

Three layouts are supported:

- native (default): ``/sys``, ``/proc``, ``/etc`` ... are the host's own;
- ``--host-root DIR`` (or env ``NFD_HOST_ROOT``): DIR is the host's root, so ``DIR/sys``,
  ``DIR/proc``, ``DIR/etc``, ``DIR/usr``, ``DIR/lib``, ``DIR/boot``, ``DIR/var``;
- upstream's DaemonSet layout: host dirs mounted at ``/host-sys``, ``/host-etc``, ``/host-usr``,
  ``/host-lib``, ``/host-boot``, ``/host-var``, ``/host-proc``. Selected with
  ``NFD_HOST_PREFIX=/host-`` or detected automatically when ``/host-sys`` exists. As upstream,
  ``/proc`` other than ``/proc/swaps`` is then the container's own ``/proc`` (the kernel's
  files are the same there) unless a whole procfs is mounted at ``/host-proc``: the shipped
  DaemonSet mounts only the file ``/host-proc/swaps``, which makes ``/host-proc`` a directory
  holding nothing else.

``features.d`` and ``custom.d`` are never remapped (upstream mounts them at their own path),
except under an explicit host root where they live at ``DIR/etc/kubernetes/...``.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

_TOPS = ("sys", "proc", "etc", "usr", "lib", "boot", "var", "run", "dev")

#: upstream's config directory for the worker
NFD_CONFIG_DIR = "/etc/kubernetes/node-feature-discovery"


class HostPaths:
    """Maps host paths (``/sys/bus/pci``) to where this process can read them. Immutable and
    hashable; written out as a frozen dataclass would generate it (the one-shot worker does not
    load ``dataclasses``: docs/worker.md, "The one-shot wall")."""

    __slots__ = ("root", "tops", "config_dir")
    root: str
    #: per-top-level-dir overrides, e.g. {"sys": "/host-sys"}, or of one path under a top
    #: (``proc/swaps``), longest first
    tops: tuple[tuple[str, str], ...]
    #: features.d/custom.d base: upstream never remaps these
    config_dir: str

    def __init__(self, root: str = "/", tops: tuple[tuple[str, str], ...] = (),
                 config_dir: str = NFD_CONFIG_DIR) -> None:
        object.__setattr__(self, "root", root)
        object.__setattr__(self, "tops", tops)
        object.__setattr__(self, "config_dir", config_dir)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}")

    def _key(self) -> tuple[str, tuple[tuple[str, str], ...], str]:
        return (self.root, self.tops, self.config_dir)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, HostPaths)
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"HostPaths(root={self.root!r}, tops={self.tops!r}, config_dir={self.config_dir!r})"

    def path(self, host_path: str) -> str:
        """The readable location of absolute host path ``host_path``."""
        rel = host_path.lstrip("/")
        for name, base in self.tops:
            if rel == name or rel.startswith(name + "/"):
                rest = rel[len(name) + 1:]
                return os.path.join(base, rest) if rest else base
        return os.path.join(self.root, rel) if rel else self.root

    # convenience helpers: sys("bus/pci/devices") -> /sys/bus/pci/devices under the mapping
    def sys(self, rel: str = "") -> str:
        return self.path("/sys/" + rel)

    def proc(self, rel: str = "") -> str:
        return self.path("/proc/" + rel)

    def etc(self, rel: str = "") -> str:
        return self.path("/etc/" + rel)

    def features_d(self) -> str:
        return os.path.join(self.config_dir, "features.d")

    def custom_d(self) -> str:
        return os.path.join(self.config_dir, "custom.d")

    @property
    def is_native(self) -> bool:
        return self.root == "/" and not self.tops

    @classmethod
    def under(cls, root: str) -> HostPaths:
        """Everything, config dirs included, under ``root`` (tests, fixtures, ``--host-root``)."""
        root = os.path.abspath(root)
        return cls(root=root, config_dir=os.path.join(root, NFD_CONFIG_DIR.lstrip("/")))

    @classmethod
    def with_prefix(cls, prefix: str) -> HostPaths:
        """Upstream image layout: ``/sys`` -> ``<prefix>sys`` for each mounted top dir; a
        ``<prefix>proc`` that is not a whole procfs maps only the files mounted in it."""
        tops: list[tuple[str, str]] = []
        for t in _TOPS:
            base = prefix + t
            if not os.path.isdir(base):
                continue
            if t == "proc" and not os.path.isdir(os.path.join(base, "sys")):
                with contextlib.suppress(OSError):
                    tops += [(f"proc/{name}", os.path.join(base, name)) for name in sorted(os.listdir(base))]
                continue
            tops.append((t, base))
        return cls(tops=tuple(tops))

    @classmethod
    def detect(cls, host_root: str | None = None, *, env: dict[str, str] | None = None) -> HostPaths:
        """Explicit root > ``NFD_HOST_ROOT`` > ``NFD_HOST_PREFIX`` > ``/host-sys`` present > native."""
        env = dict(os.environ) if env is None else env
        root = host_root or env.get("NFD_HOST_ROOT")
        if root:
            return cls.under(root)
        prefix = env.get("NFD_HOST_PREFIX")
        if prefix:
            return cls.with_prefix(prefix)
        if os.path.isdir("/host-sys"):
            return cls.with_prefix("/host-")
        return cls()
