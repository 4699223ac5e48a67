"""How tests/e2e/tools.py builds upstream's image binaries (module upstream-nfd-image), without
building them: the version read from go.mod and the flags upstream's Makefile gives its image."""

from __future__ import annotations

from pathlib import Path

from tests.e2e import tools, upstream_image


def test_a_one_line_require_names_the_version(tmp_path: Path) -> None:
    (tmp_path / "go.mod").write_text("module m\n\ngo 1.23.0\n\nrequire sigs.k8s.io/node-feature-discovery v0.17.3\n\n"
                                     "require (\n\tgithub.com/x/y v1.0.0 // indirect\n)\n")
    assert tools.module_requirement(tmp_path, "sigs.k8s.io/node-feature-discovery") == "v0.17.3"
    assert tools.module_requirement(tmp_path, "github.com/x/y") == "v1.0.0"


def test_image_binaries_are_built_as_upstreams_image_ships_them() -> None:
    module = next(m for m in tools.MODULES if m.name == "upstream-nfd-image")
    version = tools.module_requirement(module.dir, "sigs.k8s.io/node-feature-discovery")
    assert module.dir == tools.TOOLS_DIR / "upstream-nfd" and module.static
    # the real node's GPU Operator migration runs them (tests/e2e/test_node_gpu_operator.py):
    # `python -m tests.e2e.tools` (CI) builds them before pytest, outside any test's timeout; the
    # arm64 worker is left to `python -m tests.e2e.arm64`
    assert not module.on_demand and [m.name for m in tools.MODULES if m.on_demand] == ["upstream-nfd-image-arm64"]
    flags = module.ldflags().split()
    assert f"sigs.k8s.io/node-feature-discovery/pkg/version.version={version}" in flags
    assert "sigs.k8s.io/node-feature-discovery/pkg/utils/hostpath.pathPrefix=/host-" in flags
    assert sorted(module.packages) == sorted(upstream_image.BINARIES)
    assert {"nfd-master", "nfd-worker", "nfd-topology-updater", "nfd-gc"} <= set(upstream_image.BINARIES)


def test_arm64_worker_is_built_as_upstreams_arm64_image_has_it() -> None:
    """As upstream's Makefile builds it for its arm64 image: cgo on (the arm64 cpu source reads
    getauxval through cgo), linked static, the release's version, host paths under /host-."""
    module = next(m for m in tools.MODULES if m.name == "upstream-nfd-image-arm64")
    version = tools.module_requirement(module.dir, "sigs.k8s.io/node-feature-discovery")
    assert module.goarch == "arm64" and not module.static and module.cross_cc == "aarch64-linux-gnu-gcc"
    assert module.dir == tools.TOOLS_DIR / "upstream-nfd" and list(module.packages) == ["nfd-worker"]
    flags = module.ldflags().split()
    assert "-extldflags=-static" in flags
    assert f"sigs.k8s.io/node-feature-discovery/pkg/version.version={version}" in flags
    assert "sigs.k8s.io/node-feature-discovery/pkg/utils/hostpath.pathPrefix=/host-" in flags
