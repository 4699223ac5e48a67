"""The kubelet's topology-manager settings, from ``-kubelet-config-uri``.

- ``file:///path``: the kubelet config file (YAML or JSON KubeletConfiguration);
- ``https://host:port/configz``: the kubelet's configz endpoint, with the bearer token from
  ``-api-auth-token-file`` and TLS verification off (as upstream), answer
  ``{"kubeletconfig": {...}}``;
- ``/api/v1/nodes/<node>/proxy/configz`` (extension): the same endpoint through the API server
  with the updater's own credentials (needs ``nodes/proxy``; ``${NODE_NAME}`` is expanded).

Only ``topologyManagerPolicy`` and ``topologyManagerScope`` are used; empty fields get the
kubelet's defaults (``none``, ``container``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlparse, urlsplit

import yaml

from nfd.common import safeyaml
from nfd.k8s.client import ApiClient
from nfd.k8s.config import ConnectionConfig
from nfd.k8s.errors import ApiError, ApiUnavailable
from nfd.topology_updater.topologymanager import DEFAULT_POLICY, DEFAULT_SCOPE

FETCH_TIMEOUT_S = 120.0


class KubeletConfigError(Exception):
    """The kubelet configuration could not be read (message names the URI)."""


@dataclass(frozen=True, slots=True)
class TopologyManagerInfo:
    policy: str
    scope: str


def from_config(cfg: Any, *, source: str) -> TopologyManagerInfo:
    if not isinstance(cfg, dict):
        raise KubeletConfigError(f"{source}: expected a KubeletConfiguration mapping")
    return TopologyManagerInfo(
        policy=str(cfg.get("topologyManagerPolicy") or DEFAULT_POLICY),
        scope=str(cfg.get("topologyManagerScope") or DEFAULT_SCOPE),
    )


def check_uri(uri: str) -> None:
    """Reject what upstream rejects at startup (unparsable URI, unsupported scheme)."""
    if is_apiserver_path(uri):
        return
    u = urlparse(uri)
    if u.scheme not in ("file", "https"):
        raise KubeletConfigError(f"-kubelet-config-uri {uri!r}: unsupported URI scheme {u.scheme!r}")


def file_path(uri: str) -> str:
    """The path of a ``file:`` URI, percent-decoded as Go's url.URL.Path is (``file:/p``,
    ``file:///p`` and ``file://host/p`` all name ``/p``, as upstream reads them)."""
    return unquote(urlparse(uri).path)


def default_uri(node_address: str | None) -> str:
    """``https://${NODE_ADDRESS}:10250/configz`` (IPv6 bracketed)."""
    if not node_address:
        raise KubeletConfigError(
            "unable to determine the default kubelet config endpoint 'https://${NODE_ADDRESS}:10250/configz' "
            "due to empty NODE_ADDRESS environment, please either define the NODE_ADDRESS environment variable "
            "or specify endpoint with the -kubelet-config-uri flag"
        )
    if node_address.count(":") >= 2 and not node_address.startswith("["):
        node_address = f"[{node_address}]"
    return f"https://{node_address}:10250/configz"


def read_file(path: str) -> TopologyManagerInfo:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise KubeletConfigError(f"kubelet config file {path}: cannot read: {e.strerror or e}") from e


    try:
        data = safeyaml.safe_load(text, source=f"kubelet config file {path}")
    except safeyaml.YamlLimitError as e:  # names the file already
        raise KubeletConfigError(str(e)) from None
    except yaml.YAMLError as e:
        raise KubeletConfigError(f"kubelet config file {path}: invalid YAML/JSON: {safeyaml.error_text(e)}") from None
    return from_config(data or {}, source=f"kubelet config file {path}")


async def fetch_configz(uri: str, token_file: str) -> TopologyManagerInfo:
    try:
        with open(token_file, encoding="utf-8") as f:
            token = f.read().strip()
    except OSError as e:
        raise KubeletConfigError(f"api auth token file {token_file}: cannot read: {e.strerror or e}") from e


    u = urlsplit(uri)
    # the kubelet's serving certificate is self-signed on most nodes: not verified, as upstream
    cfg = ConnectionConfig(server=f"{u.scheme}://{u.netloc}", token=token, insecure=True)
    try:
        async with ApiClient(cfg, qps=0, burst=1, user_agent="nfd-topology-updater",
                             timeout_s=FETCH_TIMEOUT_S) as api:
            body = await api.request("GET", u.path + (f"?{u.query}" if u.query else ""), decode=False)
    except ApiError as e:
        raise KubeletConfigError(f"{uri}: HTTP {e.status}: {e.message[:200]}") from e
    except ApiUnavailable as e:
        raise KubeletConfigError(f"{uri}: {e}") from e
    return configz_info(body, source=uri)


def configz_info(body: bytes, *, source: str) -> TopologyManagerInfo:
    """The settings in a configz answer (``{"kubeletconfig": {...}}``)."""
    try:
        data = json.loads(body)
    except ValueError as e:
        raise KubeletConfigError(f"{source}: answer is not JSON: {e}") from e
    if not isinstance(data, dict) or "kubeletconfig" not in data:
        raise KubeletConfigError(f"{source}: answer lacks the 'kubeletconfig' wrapper")
    return from_config(data["kubeletconfig"], source=source)


def is_apiserver_path(uri: str) -> bool:
    return uri.startswith("/api/v1/nodes/") and uri.endswith("/configz")


async def fetch_via_apiserver(api: Any, path: str) -> TopologyManagerInfo:
    try:
        data = await api.request("GET", path, verb="GET", timeout_s=FETCH_TIMEOUT_S)
    except (ApiError, ApiUnavailable) as e:
        raise KubeletConfigError(f"{path}: {e}") from e
    if not isinstance(data, dict) or "kubeletconfig" not in data:
        raise KubeletConfigError(f"{path}: answer lacks the 'kubeletconfig' wrapper")
    return from_config(data["kubeletconfig"], source=path)


async def load(uri: str, *, token_file: str, api: Any = None, node_name: str = "") -> TopologyManagerInfo:
    if is_apiserver_path(uri):
        if api is None:
            raise KubeletConfigError(f"{uri}: no API client to fetch it with")
        return await fetch_via_apiserver(api, uri.replace("${NODE_NAME}", node_name))
    u = urlparse(uri)
    if u.scheme == "file":
        return read_file(file_path(uri))
    if u.scheme == "https":
        return await fetch_configz(uri, token_file)
    raise KubeletConfigError(f"-kubelet-config-uri {uri!r}: unsupported URI scheme {u.scheme!r}")


class KubeletConfigSource:
    """``load`` for a daemon that re-reads the settings every cycle, at the cost of a stat or one
    request on a kept-open connection: the file is parsed again only when it changed (mtime,
    size, inode), the configz endpoint is asked over one HTTP/2 connection kept between cycles
    (a new TLS handshake per cycle cost more than the rest of the cycle) and its answer decoded
    again only when its bytes changed."""

    def __init__(self, uri: str, *, token_file: str, api: Any = None, node_name: str = "") -> None:
        self.uri = uri
        self.token_file = token_file
        self.api = api
        self.node_name = node_name
        self._key: Any = None
        self._info: TopologyManagerInfo | None = None
        self._kubelet: Any = None  # ApiClient to the kubelet (https configz)

    async def load(self) -> TopologyManagerInfo:
        u = urlparse(self.uri)
        if is_apiserver_path(self.uri) or u.scheme != "https":
            if not is_apiserver_path(self.uri) and u.scheme == "file":
                path = file_path(self.uri)
                try:
                    st = os.stat(path)
                except OSError as e:
                    raise KubeletConfigError(f"kubelet config file {path}: cannot read: {e.strerror or e}") from e
                key = (st.st_mtime_ns, st.st_size, st.st_ino)
                if key == self._key and self._info is not None:
                    return self._info
                self._info, self._key = read_file(path), key
                return self._info
            return await load(self.uri, token_file=self.token_file, api=self.api, node_name=self.node_name)
        return await self._configz()

    async def _configz(self) -> TopologyManagerInfo:
        u = urlparse(self.uri)
        if not os.access(self.token_file, os.R_OK):
            raise KubeletConfigError(f"api auth token file {self.token_file}: cannot read")
        if self._kubelet is None:
            # the kubelet's serving certificate is self-signed on most nodes: not verified, as upstream
            cfg = ConnectionConfig(server=f"{u.scheme}://{u.netloc}", token_file=self.token_file, insecure=True)
            self._kubelet = ApiClient(cfg, qps=0, burst=1, user_agent="nfd-topology-updater",
                                      timeout_s=FETCH_TIMEOUT_S)
        try:
            body = await self._kubelet.request("GET", u.path + (f"?{u.query}" if u.query else ""), decode=False)
        except ApiError as e:
            raise KubeletConfigError(f"{self.uri}: HTTP {e.status}: {e.message[:200]}") from e
        except ApiUnavailable as e:
            raise KubeletConfigError(f"{self.uri}: {e}") from e
        if body == self._key and self._info is not None:
            return self._info
        self._info, self._key = configz_info(body, source=self.uri), body
        return self._info

    async def close(self) -> None:
        if self._kubelet is not None:
            await self._kubelet.close()
            self._kubelet = None
