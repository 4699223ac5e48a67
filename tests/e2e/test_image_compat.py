"""``nfd compat validate-node`` and ``attach`` against a real OCI registry.

CNCF distribution's registry (tests/tools/registry, built from Go modules and cached like the
test apiserver) runs on loopback ports: one plain HTTP registry without auth and one with
htpasswd basic auth. A small multi-platform image is pushed, compatibility artifacts are
attached (compatible, incompatible, malformed, several tags and platforms) and validate-node
runs on fixture host roots. distribution has no referrers API, so the referrers tag schema is
what is exercised; failures give a message and their own exit status, never a traceback.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("oras", reason="the oras SDK (pip install 'nfd[compat]') is not installed")

from nfd.compat import oci  # noqa: E402
from tests.e2e.build import BuildError, find_go  # noqa: E402
from tests.e2e.harness import free_port  # noqa: E402
from tests.e2e.tools import ensure_tool  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[2]
FIXTURES = REPO_ROOT / "tests" / "fixtures" / "sysfs"
SRIOV = FIXTURES / "sriov-host" / "root"  # Intel NICs (8086, class 0200), vfio-pci loaded
GPU = FIXTURES / "gpu-server" / "root"
USER, PASSWORD = "nfd", "s3cret-pw"


class Registry:
    def __init__(self, binary: Path, tmp: Path, *, htpasswd: bool) -> None:
        self.port = free_port()
        self.host = f"127.0.0.1:{self.port}"
        conf: dict[str, Any] = {
            "version": 0.1, "log": {"level": "warn"},
            "storage": {"filesystem": {"rootdirectory": str(tmp / "data")}, "delete": {"enabled": True}},
            "http": {"addr": self.host},
        }
        if htpasswd:
            import bcrypt

            pw = tmp / "htpasswd"
            pw.write_text(f"{USER}:{bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=5)).decode()}\n")
            conf["auth"] = {"htpasswd": {"realm": "nfd-e2e", "path": str(pw)}}
        cfg = tmp / "config.json"  # YAML is a superset of JSON
        cfg.write_text(json.dumps(conf))
        self.log = tmp / "registry.log"
        self.proc = subprocess.Popen([str(binary), "serve", str(cfg)], stdout=self.log.open("wb"),
                                     stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"registry did not start:\n{self.log.read_text()[-2000:]}") from None
                time.sleep(0.05)

    def client(self, repo: str, *, auth: bool = False) -> oci.Client:
        creds = oci.Credentials(username=USER, password=PASSWORD) if auth else None
        return oci.Client(oci.parse_reference(f"{self.host}/{repo}"), plain_http=True, creds=creds)

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


@pytest.fixture(scope="module")
def registry_bin() -> Path:
    if find_go() is None:
        pytest.skip("Go is not installed: cannot build the OCI registry (tests/tools/registry)")
    try:
        return ensure_tool("registry", log=lambda m: print(f"nfd e2e: {m}", file=sys.__stderr__, flush=True))
    except BuildError as e:
        pytest.fail(f"cannot build the registry: {e}", pytrace=False)


@pytest.fixture(scope="module")
def registry(registry_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    r = Registry(registry_bin, tmp_path_factory.mktemp("registry"), htpasswd=False)
    yield r
    r.close()


@pytest.fixture(scope="module")
def auth_registry(registry_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    r = Registry(registry_bin, tmp_path_factory.mktemp("auth-registry"), htpasswd=True)
    yield r
    r.close()


COMPATIBLE = """
version: v1alpha1
compatibilities:
- description: SR-IOV network function
  tag: sriov
  weight: 10
  rules:
  - name: vfio and intel nic
    varsTemplate: "nic={{ (index .pci.device 0).device }}"
    matchFeatures:
    - feature: kernel.loadedmodule
      matchExpressions:
        vfio_pci: {op: Exists}
    - feature: pci.device
      matchExpressions:
        vendor: {op: In, value: ["8086"]}
        class: {op: In, value: ["0200"]}
  - name: uses the previous rule
    matchFeatures:
    - feature: rule.matched
      matchExpressions:
        nic: {op: Exists}
- description: needs a GPU
  tag: gpu
  rules:
  - name: nvidia gpu
    matchAny:
    - matchFeatures:
      - feature: pci.device
        matchExpressions: {vendor: {op: In, value: ["10de"]}, class: {op: In, value: ["0300"]}}
    - matchFeatures:
      - feature: pci.device
        matchExpressions: {vendor: {op: In, value: ["10de"]}, class: {op: In, value: ["0302"]}}
"""


def nfd_cli() -> str:
    exe = Path(sys.executable).parent / "nfd"
    found = str(exe) if exe.exists() else shutil.which("nfd")
    assert found, "the nfd console script is not installed (pip install -e .)"
    return found


def validate_node(*args: str, stdin: str = "", env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = dict(os.environ)
    full["DOCKER_CONFIG"] = full.get("NFD_E2E_EMPTY_DOCKER_CONFIG", "/nonexistent-docker-config")
    full.update(env or {})
    r = subprocess.run([nfd_cli(), "compat", "validate-node", *args], input=stdin, capture_output=True,
                       text=True, env=full, timeout=120, check=False)
    assert "Traceback" not in r.stderr, r.stderr
    return r


def rule_matches(out: str) -> dict[tuple[str, str], bool]:
    return {(s.get("tag", ""), r["name"]): r["isMatch"] for s in json.loads(out) for r in s["rules"]}


@pytest.fixture(scope="module")
def image(registry: Registry, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A two-platform image with the compatible spec attached to the index, plus per-platform
    artifacts attached to the amd64 and arm64 manifests."""
    c = registry.client("apps/net-fn:v1")
    c.push_image(tag="v1", platforms=[oci.Platform("linux", "amd64"), oci.Platform("linux", "arm64")])
    c.attach(textwrap.dedent(COMPATIBLE).encode(), created="2024-01-01T00:00:00Z")
    amd = "version: v1alpha1\ncompatibilities:\n- {description: amd64 set, tag: amd64, rules: [{name: static}]}\n"
    c.attach(amd.encode(), platform=oci.Platform("linux", "amd64"))
    spec = tmp_path_factory.mktemp("spec") / "arm.yaml"
    spec.write_text("version: v1alpha1\ncompatibilities:\n- {description: arm64 set, tag: arm64, rules: []}\n")
    r = subprocess.run([nfd_cli(), "compat", "attach", "--image", f"{registry.host}/apps/net-fn:v1",
                        "--platform", "linux/arm64", "--spec", str(spec), "--plain-http"],
                       capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 0 and r.stdout.startswith("sha256:"), r.stderr
    return f"{registry.host}/apps/net-fn:v1"


def test_compatible_node_every_expression_reported(image: str) -> None:
    r = validate_node("--image", image, "--plain-http", "--output-json", "--host-root", str(SRIOV))
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert [s["tag"] for s in out] == ["sriov", "gpu"]
    assert out[0]["weight"] == 10 and out[0]["description"] == "SR-IOV network function"
    assert rule_matches(r.stdout) == {("sriov", "vfio and intel nic"): True,
                                      ("sriov", "uses the previous rule"): True,  # vars fed back
                                      ("gpu", "nvidia gpu"): False}
    first = out[0]["rules"][0]["matchedExpressions"]
    assert [(m["feature"], m["name"], m["matcherType"], m["isMatch"]) for m in first] == [
        ("kernel.loadedmodule", "vfio_pci", "matchExpression", True),
        ("pci.device", "class", "matchExpression", True),
        ("pci.device", "vendor", "matchExpression", True),
    ]
    assert first[1]["expression"] == {"op": "In", "value": ["0200"]}
    gpu = out[1]["rules"][0]
    assert "matchedExpressions" not in gpu and len(gpu["matchedAny"]) == 2
    # not fail-fast: both matchAny elements are reported, each expression on its own
    assert [[m["isMatch"] for m in e["matchedExpressions"]] for e in gpu["matchedAny"]] == [[True, False],
                                                                                            [False, False]]


def test_incompatible_node_and_table_output(image: str) -> None:
    r = validate_node("--image", image, "--plain-http", "--host-root", str(GPU))
    assert r.returncode == 0, r.stderr  # an incompatible node is a result, not an error (upstream)
    assert "COMPATIBILITY SET #1 Weight: 10; Tag: sriov" in r.stdout
    assert "Description: SR-IOV network function" in r.stdout
    assert "RULE: VFIO AND INTEL NIC -  FAIL " in r.stdout
    assert "│ Feature " in r.stdout and "Matcher Type" in r.stdout
    assert '{op: "In", value: ["8086"]}' in r.stdout


def test_tags_select_sets(image: str) -> None:
    r = validate_node("--image", image, "--plain-http", "--output-json", "--tags", "gpu", "--host-root", str(GPU))
    assert r.returncode == 0, r.stderr
    assert rule_matches(r.stdout) == {("gpu", "nvidia gpu"): True}
    r = validate_node("--image", image, "--plain-http", "--output-json", "--tags=gpu,sriov", "--host-root", str(GPU))
    assert [s["tag"] for s in json.loads(r.stdout)] == ["sriov", "gpu"]
    r = validate_node("--image", image, "--plain-http", "--output-json", "--tags", "none", "--host-root", str(GPU))
    assert r.returncode == 0 and r.stdout == "[]"


def test_platforms_pick_their_own_artifact(image: str) -> None:
    amd = validate_node("--image", image, "--plain-http", "--output-json", "--platform", "linux/amd64",
                        "--host-root", str(GPU))
    assert amd.returncode == 0, amd.stderr
    assert [s["tag"] for s in json.loads(amd.stdout)] == ["amd64"]
    arm = validate_node("--image", image, "--plain-http", "--output-json", "--platform", "linux/arm64",
                        "--host-root", str(GPU))
    assert [s["tag"] for s in json.loads(arm.stdout)] == ["arm64"]
    assert json.loads(arm.stdout)[0]["rules"] is None  # Go's nil slice
    missing = validate_node("--image", image, "--plain-http", "--platform", "linux/s390x")
    assert missing.returncode == 3 and "no manifest for platform linux/s390x" in missing.stderr
    bad = validate_node("--image", image, "--plain-http", "--platform", "/amd64")
    assert bad.returncode == 1 and "OS cannot be empty" in bad.stderr


def test_newest_artifact_wins(registry: Registry) -> None:
    c = registry.client("apps/versions:v1")
    c.push_image(tag="v1", platforms=[oci.Platform("linux", "amd64")])
    for tag, when in (("new", "2025-06-01T00:00:00Z"), ("old", "2023-01-01T00:00:00Z")):
        c.attach(f"version: v1alpha1\ncompatibilities: [{{tag: {tag}, rules: []}}]\n".encode(), created=when)
    r = validate_node("--image", f"{registry.host}/apps/versions:v1", "--plain-http", "--output-json",
                      "--host-root", str(GPU))
    assert r.returncode == 0, r.stderr
    assert [s["tag"] for s in json.loads(r.stdout)] == ["new"]


@pytest.mark.parametrize("spec, message", [
    (b"version: v1alpha1\ncompatibilities: [\n", "not valid YAML"),
    (b"version: v1alpha1\ncompatibilities: {a: 1}\n", "compatibilities: must be a list"),
    (b"version: v1alpha1\ncompatibilities:\n- rules:\n  - matchFeatures:\n    - feature: cpu.model\n"
     b"      matchExpressions: {vendor_id: {op: Sometimes}}\n", 'unknown operator "Sometimes"'),
    (b"version: v9\n", "'v9' is not supported"),
    (b"\xff\xfe\x00binary", "not UTF-8"),
])
def test_malformed_artifact(registry: Registry, spec: bytes, message: str) -> None:
    repo = f"apps/malformed-{abs(hash(spec)) % 10**8}:v1"
    c = registry.client(repo)
    c.push_image(tag="v1", platforms=[oci.Platform("linux", "amd64")])
    c.attach(spec)
    r = validate_node("--image", f"{registry.host}/{repo}", "--plain-http", "--host-root", str(GPU))
    assert r.returncode == 5, r.stdout + r.stderr
    assert "malformed compatibility artifact" in r.stderr and message in r.stderr


def test_attach_refuses_a_malformed_spec(registry: Registry, tmp_path: Path) -> None:
    spec = tmp_path / "bad.yaml"
    spec.write_text("version: v1alpha1\ncompatibilities: 3\n")
    r = subprocess.run([nfd_cli(), "compat", "attach", "--image", f"{registry.host}/apps/net-fn:v1",
                        "--spec", str(spec), "--plain-http"], capture_output=True, text=True, timeout=60, check=False)
    assert r.returncode == 5 and "compatibilities: must be a list" in r.stderr


def test_missing_image_and_missing_artifact(registry: Registry) -> None:
    r = validate_node("--image", f"{registry.host}/apps/nope:v1", "--plain-http")
    assert r.returncode == 3 and "not found in the registry" in r.stderr
    c = registry.client("apps/bare:v1")
    c.push_image(tag="v1", platforms=[oci.Platform("linux", "amd64")])
    r = validate_node("--image", f"{registry.host}/apps/bare:v1", "--plain-http")
    assert r.returncode == 4 and "compatibility artifact not found" in r.stderr


def test_unreachable_registry(registry: Registry) -> None:
    r = validate_node("--image", f"127.0.0.1:{free_port()}/apps/x:v1", "--plain-http")
    assert r.returncode == 7 and "unreachable" in r.stderr and "Connection refused" in r.stderr
    r = validate_node("--image", f"{registry.host}/apps/net-fn:v1")  # HTTPS to a plain HTTP registry
    assert r.returncode == 7 and "--plain-http" in r.stderr


def test_bad_reference_and_flags() -> None:
    r = validate_node("--image", "ubuntu:22.04")
    assert r.returncode == 1 and "missing registry or repository" in r.stderr
    r = validate_node()
    assert r.returncode == 1 and 'required flag(s) "image" not set' in r.stderr
    r = validate_node("--image", "h:1/a:b", "--registry-password-stdin", "--registry-token-stdin")
    assert r.returncode == 1 and "at the same time" in r.stderr


@pytest.fixture(scope="module")
def auth_image(auth_registry: Registry) -> str:
    c = auth_registry.client("secure/app:v1", auth=True)
    c.push_image(tag="v1", platforms=[oci.Platform("linux", "amd64")])
    c.attach(textwrap.dedent(COMPATIBLE).encode())
    return f"{auth_registry.host}/secure/app:v1"


def test_basic_auth_from_flags(auth_image: str) -> None:
    r = validate_node("--image", auth_image, "--plain-http", "--output-json", "--registry-username", USER,
                      "--registry-password-stdin", "--host-root", str(SRIOV), stdin=PASSWORD + "\n")
    assert r.returncode == 0, r.stderr
    assert rule_matches(r.stdout)[("sriov", "vfio and intel nic")] is True


def test_refused_login(auth_image: str) -> None:
    r = validate_node("--image", auth_image, "--plain-http", "--registry-username", USER,
                      "--registry-password-stdin", stdin="wrong\n")
    assert r.returncode == 6 and "credentials were refused" in r.stderr
    r = validate_node("--image", auth_image, "--plain-http")
    assert r.returncode == 6 and "no credentials were given" in r.stderr
    r = validate_node("--image", auth_image, "--plain-http", "--registry-token-stdin", stdin="not-a-token")
    assert r.returncode == 6


def test_basic_auth_from_docker_config(auth_image: str, tmp_path: Path) -> None:
    host = auth_image.split("/")[0]
    (tmp_path / "config.json").write_text(json.dumps(
        {"auths": {host: {"auth": base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()}}}))
    r = validate_node("--image", auth_image, "--plain-http", "--output-json", "--host-root", str(SRIOV),
                      env={"DOCKER_CONFIG": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    assert rule_matches(r.stdout)[("sriov", "vfio and intel nic")] is True
