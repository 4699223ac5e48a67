"""Exec credential plugins (nfd/k8s/execauth.py) run as real subprocesses: what the kubeconfig
may say, what the plugin must print, caching until expirationTimestamp, and the messages."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from nfd.k8s.config import ConfigError, load_kubeconfig
from nfd.k8s.execauth import ExecError, ExecPlugin


def kubeconfig(tmp_path: Path, exec_spec: dict[str, Any]) -> str:
    p = tmp_path / "kc.yaml"
    p.write_text(yaml.safe_dump({
        "current-context": "c", "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
        "clusters": [{"name": "k", "cluster": {"server": "https://127.0.0.1:1",
                                               "extensions": [{"name": "client.authentication.k8s.io/exec",
                                                               "extension": {"region": "x"}}]}}],
        "users": [{"name": "u", "user": {"exec": exec_spec}}]}))
    return str(p)


def plugin(tmp_path: Path, output: Any, *, code: int = 0) -> Path:
    """A plugin printing ``output`` (JSON), recording its KUBERNETES_EXEC_INFO and each run."""
    script = tmp_path / "plugin.py"
    script.write_text(
        "import json, os, sys\n"
        f"open({str(tmp_path / 'runs')!r}, 'a').write(os.environ['KUBERNETES_EXEC_INFO'] + '\\n')\n"
        f"print(json.dumps({output!r}))\n"
        f"sys.stderr.write('first\\nlast words\\n'); sys.exit({code})\n")
    return script


def cred(token: str = "t0k", *, expires: str | None = None, api: str = "client.authentication.k8s.io/v1") -> dict:
    status: dict[str, Any] = {"token": token}
    if expires:
        status["expirationTimestamp"] = expires
    return {"apiVersion": api, "kind": "ExecCredential", "status": status}


def runs(tmp_path: Path) -> list[dict]:
    f = tmp_path / "runs"
    return [json.loads(line) for line in f.read_text().splitlines()] if f.exists() else []


def test_kubeconfig_exec_is_run_cached_until_expiry_and_refused_once(tmp_path: Path) -> None:
    soon = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 2))
    script = plugin(tmp_path, cred(expires=soon))
    cfg = load_kubeconfig(kubeconfig(tmp_path, {
        "apiVersion": "client.authentication.k8s.io/v1", "command": sys.executable, "args": [str(script)],
        "env": [{"name": "X", "value": "1"}], "provideClusterInfo": True, "interactiveMode": "IfAvailable"}))
    assert cfg.exec_plugin is not None

    async def go() -> None:
        p = cfg.exec_plugin
        assert p is not None
        assert (await p.get()).token == "t0k"
        await asyncio.gather(*(p.get() for _ in range(10)))  # cached: no new run
        assert len(runs(tmp_path)) == 1
        p.refused("t0k")  # a 401 to it: the next request runs the plugin again
        await p.get()
        assert len(runs(tmp_path)) == 2
        await asyncio.sleep(2.1)  # past expirationTimestamp (whole seconds)
        await p.get()
        assert len(runs(tmp_path)) == 3

    asyncio.run(go())
    info = runs(tmp_path)[0]
    assert info["kind"] == "ExecCredential" and info["apiVersion"] == "client.authentication.k8s.io/v1"
    assert info["spec"]["interactive"] is False
    assert info["spec"]["cluster"] == {"server": "https://127.0.0.1:1", "config": {"region": "x"}}


@pytest.mark.parametrize(("spec", "message"), [
    ({"command": "x"}, "apiVersion: '' is not one of"),
    ({"apiVersion": "client.authentication.k8s.io/v1alpha1", "command": "x"}, "v1alpha1' is not one of"),
    ({"apiVersion": "client.authentication.k8s.io/v1"}, "command: missing"),
    ({"apiVersion": "client.authentication.k8s.io/v1", "command": "x", "interactiveMode": "Always"},
     "interactiveMode: Always needs a terminal"),
    ({"apiVersion": "client.authentication.k8s.io/v1", "command": "x", "env": [{"value": "v"}]},
     "env[0]: needs a name"),
])
def test_kubeconfig_exec_section_errors_name_the_field(tmp_path: Path, spec: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=r"kc.yaml: users\[u\]\.user\.exec") as e:
        load_kubeconfig(kubeconfig(tmp_path, spec))
    assert message in str(e.value)


@pytest.mark.parametrize(("output", "code", "message"), [
    (cred(), 3, "exit status 3: last words"),
    ({"kind": "Nope"}, 0, "output is not an ExecCredential"),
    (cred(api="client.authentication.k8s.io/v1beta1"), 0, "output apiVersion 'client.authentication.k8s.io/v1beta1'"),
    ({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": {}}, 0,
     "status has neither token nor clientCertificateData"),
    (cred(expires="tomorrow"), 0, "status.expirationTimestamp 'tomorrow' is not RFC 3339"),
])
def test_plugin_output_errors(tmp_path: Path, output: Any, code: int, message: str) -> None:
    p = ExecPlugin(command=sys.executable, args=[str(plugin(tmp_path, output, code=code))], source="kc: users[u].user.exec")
    with pytest.raises(ExecError, match="kc: users") as e:
        asyncio.run(p.get())
    assert message in str(e.value)


def test_a_missing_command_says_so_with_the_install_hint(tmp_path: Path) -> None:
    p = ExecPlugin(command="nfd-no-such-plugin", source="kc: users[u].user.exec", install_hint="install it")
    with pytest.raises(ExecError, match="nfd-no-such-plugin: cannot run: .* \\(install it\\)"):
        asyncio.run(p.get())


def test_auth_providers(tmp_path: Path) -> None:
    def kc(provider: dict) -> str:
        p = tmp_path / "kc2.yaml"
        p.write_text(yaml.safe_dump({
            "current-context": "c", "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
            "clusters": [{"name": "k", "cluster": {"server": "https://h"}}],
            "users": [{"name": "u", "user": {"auth-provider": provider}}]}))
        return str(p)

    assert load_kubeconfig(kc({"name": "oidc", "config": {"id-token": "idt"}})).token == "idt"
    with pytest.raises(ConfigError, match="'gcp' is not supported .*gke-gcloud-auth-plugin"):
        load_kubeconfig(kc({"name": "gcp", "config": {}}))
    with pytest.raises(ConfigError, match="id-token: missing"):
        load_kubeconfig(kc({"name": "oidc", "config": {"refresh-token": "r"}}))
