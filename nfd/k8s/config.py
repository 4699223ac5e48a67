"""Connection settings: a kubeconfig file or the in-cluster ServiceAccount.

Read directly (no `kubernetes` package): token, token file, client certificate, CA, insecure,
exec credential plugins (nfd/k8s/execauth.py) and the ``oidc`` auth provider's ``id-token``.
The other auth providers (``gcp``, ``azure``) were removed from client-go in 1.26 in favour of
exec plugins and are refused with that advice.
"""

from __future__ import annotations

import base64
import os
import ssl
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from nfd.common import safeyaml
from nfd.common.fileargs import FileArgError, read_text_arg
from nfd.k8s.execauth import ExecError, ExecPlugin

SA_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")


class ConfigError(Exception):
    """The kubeconfig or in-cluster environment is unusable; the message names the file and field."""


@dataclass
class ConnectionConfig:
    server: str
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    token: str | None = None
    token_file: str | None = None  # re-read periodically: projected tokens rotate
    insecure: bool = False
    namespace: str | None = None
    exec_plugin: ExecPlugin | None = None  # users[].user.exec: runs for tokens or client certificates
    _tmpfiles: list[str] = field(default_factory=list, repr=False)

    def ssl_context(self) -> ssl.SSLContext | bool:
        if not self.server.startswith("https"):
            return False
        if self.insecure and not self.ca_file:
            # nothing is verified: the system's CA store (30 ms to load, ~1 MiB) is not needed
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        else:
            ctx = ssl.create_default_context(cafile=self.ca_file)
        if self.insecure:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        cert, key = self.cert_file, self.key_file
        cred = self.exec_plugin.credential if self.exec_plugin is not None else None
        if cred is not None and cred.cert_file:
            cert, key = cred.cert_file, cred.key_file
        if cert and key:
            ctx.load_cert_chain(cert, key)
        return ctx

    def bearer_token(self) -> str | None:
        if self.token_file:
            try:
                return Path(self.token_file).read_text().strip()
            except OSError:
                return self.token
        return self.token


def _materialise(data_b64: str, suffix: str, tmp: list[str]) -> str:
    fd, path = tempfile.mkstemp(prefix="nfd-kubeconfig-", suffix=suffix)
    with os.fdopen(fd, "wb") as f:
        f.write(base64.b64decode(data_b64))
    tmp.append(path)
    return path


def _resolve(base: Path, p: str | None) -> str | None:
    if not p:
        return None
    return str((base / p).resolve()) if not os.path.isabs(p) else p


def load_in_cluster() -> ConnectionConfig:
    host = os.environ.get("KUBERNETES_SERVICE_HOST")
    port = os.environ.get("KUBERNETES_SERVICE_PORT", "443")
    if not host:
        raise ConfigError("not in a cluster: KUBERNETES_SERVICE_HOST is unset and no kubeconfig was given")
    if ":" in host:
        host = f"[{host}]"
    ns = None
    try:
        ns = (SA_DIR / "namespace").read_text().strip()
    except OSError:
        pass
    return ConnectionConfig(
        server=f"https://{host}:{port}",
        ca_file=str(SA_DIR / "ca.crt"),
        token_file=str(SA_DIR / "token"),
        namespace=ns,
    )


def load_kubeconfig(path: str | None = None, *, context: str | None = None) -> ConnectionConfig:
    """Load `path`, else $KUBECONFIG (first entry), else ~/.kube/config, else in-cluster."""
    if not path:
        env = os.environ.get("KUBECONFIG", "")
        path = next((p for p in env.split(os.pathsep) if p), None)
    if not path:
        default = Path.home() / ".kube" / "config"
        if default.exists():
            path = str(default)
    if not path:
        return load_in_cluster()


    try:
        doc: Any = safeyaml.safe_load(read_text_arg(path, stdin=False), source=path)
    except FileArgError as e:  # "<path>: cannot read: Is a directory"
        raise ConfigError(f"kubeconfig {e}") from None
    except (ValueError, yaml.YAMLError) as e:
        raise ConfigError(f"{path}: cannot read kubeconfig: {e}") from e
    if not isinstance(doc, dict):
        raise ConfigError(f"{path}: kubeconfig is not a mapping")
    base = Path(path).parent
    ctx_name = context or doc.get("current-context")
    ctxs = {c.get("name"): c.get("context") or {} for c in doc.get("contexts") or []}
    if ctx_name not in ctxs:
        raise ConfigError(f"{path}: current-context {ctx_name!r} not found in contexts")
    ctx = ctxs[ctx_name]
    clusters = {c.get("name"): c.get("cluster") or {} for c in doc.get("clusters") or []}
    users = {u.get("name"): u.get("user") or {} for u in doc.get("users") or []}
    cluster = clusters.get(ctx.get("cluster"))
    if cluster is None:
        raise ConfigError(f"{path}: contexts[{ctx_name}].cluster {ctx.get('cluster')!r} not found")
    user = users.get(ctx.get("user"), {})
    tmp: list[str] = []
    cfg = ConnectionConfig(server=str(cluster.get("server", "")).rstrip("/"), _tmpfiles=tmp)
    if not cfg.server:
        raise ConfigError(f"{path}: clusters[{ctx.get('cluster')}].server is empty")
    cfg.insecure = bool(cluster.get("insecure-skip-tls-verify"))
    if cluster.get("certificate-authority-data"):
        cfg.ca_file = _materialise(cluster["certificate-authority-data"], ".crt", tmp)
    else:
        cfg.ca_file = _resolve(base, cluster.get("certificate-authority"))
    if user.get("client-certificate-data"):
        cfg.cert_file = _materialise(user["client-certificate-data"], ".crt", tmp)
    else:
        cfg.cert_file = _resolve(base, user.get("client-certificate"))
    if user.get("client-key-data"):
        cfg.key_file = _materialise(user["client-key-data"], ".key", tmp)
    else:
        cfg.key_file = _resolve(base, user.get("client-key"))
    cfg.token = user.get("token")
    cfg.token_file = _resolve(base, user.get("tokenFile"))
    cfg.namespace = ctx.get("namespace")
    where = f"{path}: users[{ctx.get('user')}].user"
    if user.get("exec") is not None:
        try:
            cfg.exec_plugin = ExecPlugin.from_kubeconfig(user["exec"], source=f"{where}.exec", base=base,
                                                         cluster=cluster)
        except ExecError as e:
            raise ConfigError(str(e)) from None
    provider = user.get("auth-provider")
    if provider is not None:
        name = (provider or {}).get("name") if isinstance(provider, dict) else None
        token = ((provider.get("config") or {}) if isinstance(provider, dict) else {}).get("id-token")
        if name != "oidc":
            raise ConfigError(f"{where}.auth-provider: {name!r} is not supported (client-go dropped it in 1.26): "
                              "use its exec plugin (gke-gcloud-auth-plugin, kubelogin)")
        if not token:
            raise ConfigError(f"{where}.auth-provider.config.id-token: missing (nfd does not run the OIDC "
                              "refresh flow: use an exec plugin such as kubelogin)")
        cfg.token = str(token)
    return cfg
