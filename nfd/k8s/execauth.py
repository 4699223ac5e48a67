"""Exec credential plugins (``users[].user.exec`` in a kubeconfig), as client-go runs them.

EKS (``aws eks get-token``), GKE (``gke-gcloud-auth-plugin``), AKS (``kubelogin``) and OIDC
helpers write kubeconfigs whose user runs a command that prints a
``client.authentication.k8s.io/v1`` (or ``v1beta1``) ExecCredential: a bearer token or a client
certificate, usually with ``status.expirationTimestamp``. The credential is cached until that
time and the command run again after it, and once more when the server answers 401 to the
credential in use (the token was revoked or the clock is off), so a long-running process never
keeps a dead token. The command runs without a terminal (``spec.interactive: false``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
EXEC_TIMEOUT_S = 60.0


class ExecError(Exception):
    """The plugin could not be run or printed no usable credential; the message names it."""


@dataclass
class Credential:
    token: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    expires: float | None = None  # wall-clock seconds; None: until the server refuses it


@dataclass
class ExecPlugin:
    """One kubeconfig user's exec section, with the credential it last printed."""

    command: str
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    api_version: str = API_VERSIONS[0]
    source: str = "kubeconfig"  # "<path>: users[<name>].user.exec", for messages
    cluster_info: dict[str, Any] | None = None  # provideClusterInfo: spec.cluster
    install_hint: str = ""
    credential: Credential | None = None
    generation: int = 0  # bumped when a new client certificate is printed (new connections)
    runs: int = 0
    _lock: asyncio.Lock | None = field(default=None, repr=False)
    _tmpfiles: list[str] = field(default_factory=list, repr=False)

    @classmethod
    def from_kubeconfig(cls, spec: Any, *, source: str, base: Path, cluster: dict[str, Any]) -> ExecPlugin:
        if not isinstance(spec, dict):
            raise ExecError(f"{source}: not a mapping")
        command = spec.get("command")
        if not isinstance(command, str) or not command:
            raise ExecError(f"{source}.command: missing")
        if os.sep in command and not os.path.isabs(command):  # as client-go: relative to the kubeconfig
            command = str((base / command).resolve())
        api_version = spec.get("apiVersion") or ""
        if api_version not in API_VERSIONS:
            raise ExecError(f"{source}.apiVersion: {api_version!r} is not one of {', '.join(API_VERSIONS)}")
        if spec.get("interactiveMode") == "Always":
            raise ExecError(f"{source}.interactiveMode: Always needs a terminal; nfd runs plugins without one")
        env: dict[str, str] = {}
        for i, e in enumerate(spec.get("env") or []):
            if not isinstance(e, dict) or not isinstance(e.get("name"), str):
                raise ExecError(f"{source}.env[{i}]: needs a name and a value")
            env[e["name"]] = str(e.get("value", ""))
        args = spec.get("args") or []
        if not isinstance(args, list):
            raise ExecError(f"{source}.args: not a list")
        info = None
        if spec.get("provideClusterInfo"):
            info = {k: v for k, v in {
                "server": cluster.get("server"),
                "tls-server-name": cluster.get("tls-server-name"),
                "insecure-skip-tls-verify": cluster.get("insecure-skip-tls-verify"),
                "certificate-authority-data": cluster.get("certificate-authority-data"),
                "proxy-url": cluster.get("proxy-url"),
                "config": next((x.get("extension") for x in cluster.get("extensions") or []
                                if isinstance(x, dict) and x.get("name") == "client.authentication.k8s.io/exec"),
                               None),
            }.items() if v is not None}
        return cls(command=command, args=[str(a) for a in args], env=env, api_version=api_version, source=source,
                   cluster_info=info, install_hint=str(spec.get("installHint") or ""))

    def fresh(self) -> Credential | None:
        """The cached credential while it has not expired."""
        c = self.credential
        if c is None or (c.expires is not None and time.time() >= c.expires):
            return None
        return c

    async def get(self) -> Credential:
        """The current credential, running the plugin when there is none or it expired.
        Raises ExecError."""
        c = self.fresh()
        if c is not None:
            return c
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:  # many requests at expiry: one run
            c = self.fresh()
            if c is None:
                c = await self._run()
            return c

    def refused(self, token: str | None) -> None:
        """The server answered 401 to ``token``: forget it, so that the next request runs the
        plugin again (unless a newer credential already replaced it)."""
        if self.credential is not None and self.credential.token == token:
            self.credential = None

    async def _run(self) -> Credential:
        info: dict[str, Any] = {"kind": "ExecCredential", "apiVersion": self.api_version,
                                "spec": {"interactive": False}}
        if self.cluster_info is not None:
            info["spec"]["cluster"] = self.cluster_info
        env = dict(os.environ, **self.env, KUBERNETES_EXEC_INFO=json.dumps(info))
        what = f"{self.source}: {self.command}"
        try:
            proc = await asyncio.create_subprocess_exec(
                self.command, *self.args, env=env, stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            )
        except OSError as e:
            hint = f" ({self.install_hint.strip()})" if self.install_hint.strip() else ""
            raise ExecError(f"{what}: cannot run: {e.strerror or e}{hint}") from e
        try:
            async with asyncio.timeout(EXEC_TIMEOUT_S):
                out, err = await proc.communicate()
        except TimeoutError:
            proc.kill()
            await proc.wait()
            raise ExecError(f"{what}: no answer in {EXEC_TIMEOUT_S:g}s") from None
        self.runs += 1
        if proc.returncode:
            tail = err.decode(errors="replace").strip().splitlines()[-1:] or [""]
            raise ExecError(f"{what}: exit status {proc.returncode}: {tail[0][:300]}")
        cred = self._parse(out, what)
        if cred.cert_file and (self.credential is None or self.credential.cert_file != cred.cert_file):
            self.generation += 1
        self.credential = cred
        return cred

    def _parse(self, out: bytes, what: str) -> Credential:
        try:
            doc = json.loads(out)
        except ValueError as e:
            raise ExecError(f"{what}: output is not JSON: {e}") from None
        if not isinstance(doc, dict) or doc.get("kind") != "ExecCredential":
            raise ExecError(f"{what}: output is not an ExecCredential")
        if doc.get("apiVersion") != self.api_version:
            raise ExecError(f"{what}: output apiVersion {doc.get('apiVersion')!r}, expected {self.api_version!r}")
        status = doc.get("status")
        if not isinstance(status, dict):
            raise ExecError(f"{what}: ExecCredential has no status")
        cred = Credential(token=str(status["token"]) if status.get("token") else None)
        cert, key = status.get("clientCertificateData"), status.get("clientKeyData")
        if bool(cert) != bool(key):
            raise ExecError(f"{what}: status.clientCertificateData and status.clientKeyData come together")
        if cert and key:
            cred.cert_file = self._write(str(cert), ".crt")
            cred.key_file = self._write(str(key), ".key")
        if not cred.token and not cred.cert_file:
            raise ExecError(f"{what}: status has neither token nor clientCertificateData")
        ts = status.get("expirationTimestamp")
        if ts:
            try:
                cred.expires = datetime.fromisoformat(str(ts).replace("Z", "+00:00")).timestamp()
            except ValueError:
                raise ExecError(f"{what}: status.expirationTimestamp {ts!r} is not RFC 3339") from None
        return cred

    def _write(self, pem: str, suffix: str) -> str:
        fd, path = tempfile.mkstemp(prefix="nfd-exec-", suffix=suffix)
        with os.fdopen(fd, "w") as f:
            f.write(pem)
        self._tmpfiles.append(path)
        while len(self._tmpfiles) > 4:  # the pair in use and the one before it (open connections)
            with contextlib.suppress(OSError):
                os.unlink(self._tmpfiles.pop(0))
        return path
