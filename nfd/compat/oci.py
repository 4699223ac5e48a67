"""Fetch and attach image compatibility artifacts in an OCI registry (oras Python SDK).

The SDK (``pip install nfd[compat]``) gives reference parsing, blob upload, the registry's
Basic and Bearer token challenges and credentials from the Docker config file
(``$DOCKER_CONFIG/config.json`` or ``~/.docker/config.json``, credential helpers included).
On top of it this module adds what the SDK lacks and upstream's oras-go does: resolving a
reference to a descriptor (an index narrowed to ``--platform``), listing referrers through the
referrers API with the referrers tag schema (``sha256-<hex>``) as fallback for registries
without it (CNCF distribution), and attaching an artifact with ``subject``.

Failures are OciError subclasses, each with its own exit status (docs/image-compatibility.md).
The SDK's own retry loop (sleeps of 5 s to 83 s on a refused connection) is bypassed: a
registry that cannot be reached is reported at once.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import logging
import os
import platform
import re
from dataclasses import dataclass
from typing import Any

from nfd.compat import ARTIFACT_TYPE, CREATED_ANNOTATION, SPEC_MEDIA_TYPE

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
EMPTY_JSON = "application/vnd.oci.empty.v1+json"
INDEXES = (OCI_INDEX, DOCKER_LIST)
MANIFEST_ACCEPT = ", ".join((OCI_MANIFEST, OCI_INDEX, DOCKER_MANIFEST, DOCKER_LIST))
MAX_MANIFEST_BYTES = 4 << 20
MAX_BLOB_BYTES = 1 << 20  # the spec layer; a compatibility spec is a few kB
TIMEOUT_S = 30.0

# oras-go's reference grammar (registry/reference.go): registry/repository[:tag|@digest]
_REPO = re.compile(r"[a-z0-9]+(?:(?:[._]|__|[-]*)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|[-]*)[a-z0-9]+)*)*")
_TAG = re.compile(r"[\w][\w.-]{0,127}")
_DIGEST = re.compile(r"[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]+")


class OciError(Exception):
    """A registry operation failed; ``exit_code`` tells the kind (see the subclasses)."""

    exit_code = 1


class ReferenceError_(OciError):
    """The image reference is not ``registry/repository[:tag|@digest]``."""

    exit_code = 1


class ImageNotFound(OciError):
    """The image (or the requested platform of it) is not in the registry."""

    exit_code = 3


class ArtifactNotFound(OciError):
    """The image has no compatibility artifact attached."""

    exit_code = 4


class MalformedArtifact(OciError):
    """The artifact exists but is not a valid compatibility spec."""

    exit_code = 5


class AuthError(OciError):
    """The registry refused the credentials (or wants some and none were given)."""

    exit_code = 6


class Unreachable(OciError):
    """No answer from the registry: refused connection, DNS, TLS, timeout."""

    exit_code = 7


@dataclass(frozen=True, slots=True)
class Reference:
    registry: str
    repository: str
    tag: str = ""
    digest: str = ""

    @property
    def reference(self) -> str:
        return self.digest or self.tag or "latest"

    def __str__(self) -> str:
        s = f"{self.registry}/{self.repository}"
        if self.tag:
            s += f":{self.tag}"
        if self.digest:
            s += f"@{self.digest}"
        return s


def parse_reference(ref: str) -> Reference:
    """``registry/repository[:tag][@digest]`` as oras-go's ParseReference reads it (the registry is
    required: ``ubuntu:22.04`` is refused, not taken as Docker Hub)."""
    registry, sep, rest = ref.partition("/")
    if not sep or not registry or not rest:
        raise ReferenceError_(f"invalid reference {ref!r}: missing registry or repository")
    digest = ""
    if "@" in rest:
        rest, _, digest = rest.partition("@")
        if not _DIGEST.fullmatch(digest):
            raise ReferenceError_(f"invalid reference {ref!r}: invalid digest {digest!r}")
    tag = ""
    repo = rest
    if ":" in rest:
        repo, _, tag = rest.rpartition(":")
        if not _TAG.fullmatch(tag):
            raise ReferenceError_(f"invalid reference {ref!r}: invalid tag {tag!r}")
    if not _REPO.fullmatch(repo):
        raise ReferenceError_(f"invalid reference {ref!r}: invalid repository {repo!r}")
    return Reference(registry, repo, tag, digest)


@dataclass(frozen=True, slots=True)
class Platform:
    os: str
    architecture: str
    variant: str = ""
    os_version: str = ""

    def matches(self, p: dict[str, Any]) -> bool:
        """oras-go's platform match: os and architecture equal, variant and os.version when asked."""
        return (p.get("os") == self.os and p.get("architecture") == self.architecture
                and (not self.variant or p.get("variant") == self.variant)
                and (not self.os_version or p.get("os.version") == self.os_version))

    def __str__(self) -> str:
        s = f"{self.os}/{self.architecture}" + (f"/{self.variant}" if self.variant else "")
        return s + (f":{self.os_version}" if self.os_version else "")


def go_arch() -> str:
    m = platform.machine().lower()
    return {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64", "i386": "386",
            "i686": "386", "armv7l": "arm", "ppc64le": "ppc64le", "s390x": "s390x", "riscv64": "riscv64"}.get(m, m)


def parse_platform(s: str) -> Platform | None:
    """``os[/arch[/variant]][:os_version]`` as upstream's --platform (arch defaults to this host's)."""
    if not s:
        return None
    p, _, os_version = s.partition(":")
    parts = p.split("/")
    if len(parts) > 3:
        raise ValueError(f"failed to parse platform {s!r}: expected format os[/arch[/variant]]")
    os_ = parts[0]
    arch = parts[1] if len(parts) >= 2 else go_arch()
    variant = parts[2] if len(parts) == 3 else ""
    if not os_:
        raise ValueError("invalid platform: OS cannot be empty")
    if not arch:
        raise ValueError("invalid platform: Architecture cannot be empty")
    return Platform(os_, arch, variant, os_version)


@dataclass(frozen=True, slots=True)
class Credentials:
    username: str = ""
    password: str = ""
    token: str = ""


def _oras() -> Any:
    try:
        import oras.provider  # optional: the compat extra
    except ImportError:
        raise OciError("the oras Python SDK is not installed: pip install 'nfd[compat]'") from None
    logging.getLogger("oras").setLevel(logging.CRITICAL)  # it logs (and prints) at INFO/WARNING
    return oras.provider


def _descriptor(media_type: str, body: bytes, **extra: Any) -> dict[str, Any]:
    d: dict[str, Any] = {"mediaType": media_type, "digest": "sha256:" + hashlib.sha256(body).hexdigest(),
                         "size": len(body)}
    d.update({k: v for k, v in extra.items() if v})
    return d


def _created(desc: dict[str, Any]) -> datetime.datetime:
    """The artifact's creation time; none or unparsable sorts first, as upstream's zero time."""
    raw = (desc.get("annotations") or {}).get(CREATED_ANNOTATION, "")
    try:
        t = datetime.datetime.fromisoformat(str(raw).replace("Z", "+00:00"))
    except ValueError:
        return datetime.datetime.min.replace(tzinfo=datetime.UTC)
    return t if t.tzinfo else t.replace(tzinfo=datetime.UTC)


class Client:
    """One repository of one registry, with the caller's credentials."""

    def __init__(self, ref: Reference, *, plain_http: bool = False, creds: Credentials | None = None,
                 timeout_s: float = TIMEOUT_S) -> None:
        provider = _oras()
        self.ref = ref
        self.creds = creds or Credentials()
        self.scheme = "http" if plain_http else "https"
        reg = provider.Registry(hostname=ref.registry, insecure=plain_http, auth_backend="token")
        self._reg = reg
        self._container = reg.get_container(f"{ref.registry}/{ref.repository}:{ref.tag or 'latest'}")
        session_request = reg.session.request

        def request(*a: Any, **kw: Any) -> Any:
            kw.setdefault("timeout", timeout_s)
            return session_request(*a, **kw)

        reg.session.request = request
        if self.creds.token:
            reg.auth.set_token_auth(self.creds.token)
        elif self.creds.username and self.creds.password:
            reg.auth.set_basic_auth(self.creds.username, self.creds.password)
        else:
            # the Docker config file's entry for this registry, if any ($DOCKER_CONFIG as the
            # docker CLI reads it; the SDK itself only looks at ~/.docker/config.json)
            env_dir = os.environ.get("DOCKER_CONFIG")
            configs = [os.path.join(env_dir, "config.json")] if env_dir else None
            try:
                reg.auth.load_configs(self._container, configs=configs)
            except (OSError, ValueError) as e:
                raise OciError(f"cannot read the Docker config file: {e}") from None
        self.base = f"{self.scheme}://{ref.registry}/v2/{ref.repository}"

    # -- HTTP through the SDK's authenticating request ---------------------------------------
    def _request(self, method: str, url: str, *, headers: dict[str, str] | None = None,
                 data: bytes | None = None, what: str) -> Any:
        import requests  # optional: comes with oras, the compat extra

        do_request = type(self._reg).do_request
        once = getattr(do_request, "__wrapped__", do_request)  # without the SDK's retry sleeps
        hdrs = dict(headers or {})
        try:
            resp = self._basic_aware(once, method, url, hdrs, data)
        except requests.exceptions.SSLError as e:
            raise Unreachable(f"{what}: TLS error talking to {self.ref.registry}: {_short(e)} "
                              "(use --plain-http for a plain HTTP registry)") from None
        except requests.exceptions.RequestException as e:
            raise Unreachable(f"{what}: registry {self.ref.registry} is unreachable: {_short(e)}") from None
        except ValueError as e:  # the SDK: "Cannot respond to request for authentication."
            raise AuthError(f"{what}: {self.ref.registry} requires authentication: {e}") from None
        if resp.status_code in (401, 403):
            who = "the given credentials were refused" if self._has_creds() else "no credentials were given"
            raise AuthError(f"{what}: {self.ref.registry} answered {resp.status_code} "
                            f"{resp.reason}: {who}")
        return resp

    def _has_creds(self) -> bool:
        return bool(self.creds.token or self.creds.username or getattr(self._reg.auth, "_basic_auth", None))

    def _basic_aware(self, once: Any, method: str, url: str, headers: dict[str, str], data: bytes | None) -> Any:
        """The SDK's token backend answers Bearer challenges; a registry with Basic auth
        (htpasswd) gets the Basic credentials directly."""
        basic = getattr(self._reg.auth, "_basic_auth", None)
        if getattr(self, "_basic_scheme", False) and basic:
            headers = {**headers, "Authorization": f"Basic {basic}"}
            return self._reg.session.request(method, url, data=data, headers=headers, verify=True)
        resp = self._reg.session.request(method, url, data=data, headers=dict(headers), verify=True)
        if resp.status_code == 401:
            challenge = resp.headers.get("Www-Authenticate", "")
            if challenge.lower().startswith("basic"):
                self._basic_scheme = True
                if not basic:
                    return resp
                return self._reg.session.request(method, url, data=data, verify=True,
                                                 headers={**headers, "Authorization": f"Basic {basic}"})
            if self.creds.token:
                headers = {**headers, "Authorization": f"Bearer {self.creds.token}"}
                return self._reg.session.request(method, url, data=data, headers=headers, verify=True)
            return once(self._reg, url, method, data=data, headers=headers)
        return resp

    def _get_manifest(self, reference: str, *, what: str, accept: str = MANIFEST_ACCEPT) -> tuple[dict[str, Any], bytes, str] | None:
        resp = self._request("GET", f"{self.base}/manifests/{reference}", headers={"Accept": accept}, what=what)
        if resp.status_code == 404:
            return None
        if resp.status_code != 200:
            raise OciError(f"{what}: {self.ref.registry} answered {resp.status_code} {resp.reason}")
        body: bytes = resp.content
        if len(body) > MAX_MANIFEST_BYTES:
            raise MalformedArtifact(f"{what}: manifest of {len(body)} bytes is too large")
        try:
            doc = json.loads(body)
        except ValueError:
            raise MalformedArtifact(f"{what}: the manifest is not JSON") from None
        if not isinstance(doc, dict):
            raise MalformedArtifact(f"{what}: the manifest is not a JSON object")
        media = doc.get("mediaType") or resp.headers.get("Content-Type", "").split(";")[0].strip()
        return doc, body, str(media)

    # -- resolve -----------------------------------------------------------------------------
    def resolve(self, platform: Platform | None = None) -> dict[str, Any]:
        """The descriptor of the image (of its ``platform`` manifest when given)."""
        what = f"resolving {self.ref}"
        got = self._get_manifest(self.ref.reference, what=what)
        if got is None:
            raise ImageNotFound(f"image {self.ref} not found in the registry")
        doc, body, media = got
        desc = _descriptor(media, body)
        if self.ref.digest and desc["digest"] != self.ref.digest:
            raise OciError(f"{what}: the registry returned content of digest {desc['digest']}")
        if platform is None:
            return desc
        if media in INDEXES:
            for m in doc.get("manifests") or []:
                if isinstance(m, dict) and isinstance(m.get("platform"), dict) and platform.matches(m["platform"]):
                    return {k: m[k] for k in ("mediaType", "digest", "size") if k in m}
            raise ImageNotFound(f"image {self.ref} has no manifest for platform {platform}")
        cfg = doc.get("config") or {}
        blob = self._blob(str(cfg.get("digest", "")), what=f"{what}: config", limit=MAX_MANIFEST_BYTES)
        try:
            image_cfg = json.loads(blob)
        except ValueError:
            image_cfg = {}
        if not (isinstance(image_cfg, dict) and platform.matches(image_cfg)):
            raise ImageNotFound(f"image {self.ref} is not for platform {platform}")
        return desc

    def _blob(self, digest: str, *, what: str, limit: int = MAX_BLOB_BYTES) -> bytes:
        if not _DIGEST.fullmatch(digest):
            raise MalformedArtifact(f"{what}: invalid digest {digest!r}")
        resp = self._request("GET", f"{self.base}/blobs/{digest}", what=what)
        if resp.status_code == 404:
            raise MalformedArtifact(f"{what}: blob {digest} is missing from the registry")
        if resp.status_code != 200:
            raise OciError(f"{what}: {self.ref.registry} answered {resp.status_code} {resp.reason}")
        body: bytes = resp.content
        if len(body) > limit:
            raise MalformedArtifact(f"{what}: blob of {len(body)} bytes is larger than {limit}")
        if digest.startswith("sha256:") and "sha256:" + hashlib.sha256(body).hexdigest() != digest:
            raise MalformedArtifact(f"{what}: blob content does not match its digest {digest}")
        return body

    # -- referrers ---------------------------------------------------------------------------
    def referrers(self, subject: dict[str, Any], artifact_type: str = ARTIFACT_TYPE) -> list[dict[str, Any]]:
        """Descriptors of the artifacts of ``artifact_type`` whose subject is ``subject``."""
        what = f"listing the referrers of {self.ref}"
        digest = str(subject["digest"])
        resp = self._request("GET", f"{self.base}/referrers/{digest}?artifactType={artifact_type}",
                             headers={"Accept": OCI_INDEX}, what=what)
        doc: Any = None
        if resp.status_code == 200 and resp.headers.get("Content-Type", "").startswith(OCI_INDEX):
            try:
                doc = json.loads(resp.content)
            except ValueError:
                doc = None
        elif resp.status_code not in (200, 404):
            raise OciError(f"{what}: {self.ref.registry} answered {resp.status_code} {resp.reason}")
        if doc is None:  # no referrers API: the referrers tag schema
            got = self._get_manifest(self._fallback_tag(digest), what=what, accept=OCI_INDEX)
            doc = got[0] if got is not None else {}
        return [m for m in (doc.get("manifests") or []) if isinstance(m, dict) and m.get("artifactType") == artifact_type]

    @staticmethod
    def _fallback_tag(digest: str) -> str:
        alg, _, hexpart = digest.partition(":")
        return f"{alg}-{hexpart}"[:128]

    def fetch_spec(self, platform: Platform | None = None) -> tuple[bytes, str]:
        """(the newest compatibility spec blob, its artifact digest), upstream's selection."""
        subject = self.resolve(platform)
        descs = self.referrers(subject)
        if not descs:
            raise ArtifactNotFound(f"compatibility artifact not found for image {self.ref}")
        newest = sorted(descs, key=_created)[-1]
        adigest = str(newest.get("digest", ""))
        what = f"artifact {adigest} of {self.ref}"
        got = self._get_manifest(adigest, what=what)
        if got is None:
            raise MalformedArtifact(f"{what}: its manifest is missing from the registry")
        layers = got[0].get("layers")
        if not isinstance(layers, list) or not layers or not isinstance(layers[0], dict):
            raise MalformedArtifact(f"{what}: compatibility layer not found")
        return self._blob(str(layers[0].get("digest", "")), what=f"{what}: spec layer"), adigest

    # -- attach ------------------------------------------------------------------------------
    def _push_blob(self, body: bytes, media_type: str) -> dict[str, Any]:
        desc = _descriptor(media_type, body)
        what = f"uploading a blob to {self.ref.registry}/{self.ref.repository}"
        head = self._request("HEAD", f"{self.base}/blobs/{desc['digest']}", what=what)
        if head.status_code == 200:
            return desc
        start = self._request("POST", f"{self.base}/blobs/uploads/", what=what)
        if start.status_code != 202 or "Location" not in start.headers:
            raise OciError(f"{what}: {self.ref.registry} answered {start.status_code} {start.reason}")
        loc = start.headers["Location"]
        if loc.startswith("/"):
            loc = f"{self.scheme}://{self.ref.registry}{loc}"
        loc += ("&" if "?" in loc else "?") + f"digest={desc['digest']}"
        put = self._request("PUT", loc, data=body, headers={"Content-Type": "application/octet-stream"}, what=what)
        if put.status_code != 201:
            raise OciError(f"{what}: {self.ref.registry} answered {put.status_code} {put.reason}")
        return desc

    def _put_manifest(self, reference: str, body: bytes, media_type: str) -> Any:
        what = f"pushing a manifest to {self.ref.registry}/{self.ref.repository}"
        resp = self._request("PUT", f"{self.base}/manifests/{reference}", data=body,
                             headers={"Content-Type": media_type}, what=what)
        if resp.status_code != 201:
            raise OciError(f"{what}: {self.ref.registry} answered {resp.status_code} {resp.reason}: "
                           f"{resp.text[:300]}")
        return resp

    def attach(self, spec: bytes, *, platform: Platform | None = None, created: str | None = None,
               artifact_type: str = ARTIFACT_TYPE, media_type: str = SPEC_MEDIA_TYPE) -> str:
        """Attach ``spec`` to the image as upstream's documented ``oras attach`` does; returns
        the artifact's digest. ``created`` (RFC 3339) defaults to now."""
        subject = self.resolve(platform)
        config = self._push_blob(b"{}", EMPTY_JSON)
        layer = self._push_blob(spec, media_type)
        layer["annotations"] = {"org.opencontainers.image.title": "image-compatibility.yaml"}
        when = created or datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        manifest = {"schemaVersion": 2, "mediaType": OCI_MANIFEST, "artifactType": artifact_type,
                    "config": config, "layers": [layer], "subject": subject,
                    "annotations": {CREATED_ANNOTATION: when}}
        body = json.dumps(manifest, separators=(",", ":")).encode()
        desc = _descriptor(OCI_MANIFEST, body, artifactType=artifact_type, annotations=manifest["annotations"])
        resp = self._put_manifest(str(desc["digest"]), body, OCI_MANIFEST)
        if not resp.headers.get("OCI-Subject"):  # no referrers API: keep the tag schema index
            tag = self._fallback_tag(str(subject["digest"]))
            got = self._get_manifest(tag, what=f"reading the referrers index of {self.ref}", accept=OCI_INDEX)
            index: dict[str, Any] = got[0] if got is not None else {"schemaVersion": 2, "mediaType": OCI_INDEX}
            old = index.get("manifests")
            manifests = [m for m in old if isinstance(m, dict) and m.get("digest") != desc["digest"]] \
                if isinstance(old, list) else []
            index["manifests"] = [*manifests, desc]
            self._put_manifest(tag, json.dumps(index, separators=(",", ":")).encode(), OCI_INDEX)
        return str(desc["digest"])

    def push_image(self, *, tag: str, platforms: list[Platform]) -> str:
        """A tiny image for tests and demos: one manifest per platform (one layer of text),
        under an index when more than one; returns the pushed digest."""
        manifests = []
        for p in platforms:
            cfg = json.dumps({"architecture": p.architecture, "os": p.os, **({"variant": p.variant} if p.variant else {}),
                              "rootfs": {"type": "layers", "diff_ids": []}}).encode()
            cdesc = self._push_blob(cfg, "application/vnd.oci.image.config.v1+json")
            ldesc = self._push_blob(f"hello from {p}\n".encode(), "application/vnd.oci.image.layer.v1.tar")
            body = json.dumps({"schemaVersion": 2, "mediaType": OCI_MANIFEST, "config": cdesc,
                               "layers": [ldesc]}, separators=(",", ":")).encode()
            d = _descriptor(OCI_MANIFEST, body)
            self._put_manifest(tag if len(platforms) == 1 else str(d["digest"]), body, OCI_MANIFEST)
            plat: dict[str, str] = {"architecture": p.architecture, "os": p.os}
            if p.variant:
                plat["variant"] = p.variant
            manifests.append({**d, "platform": plat})
        if len(platforms) == 1:
            return str(manifests[0]["digest"])
        body = json.dumps({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": manifests},
                          separators=(",", ":")).encode()
        self._put_manifest(tag, body, OCI_INDEX)
        return "sha256:" + hashlib.sha256(body).hexdigest()


def _short(e: Exception) -> str:
    """The innermost reason of a requests/urllib3 error, not its whole repr chain."""
    msg = str(e)
    for marker in ("Connection refused", "Name or service not known", "timed out", "No route to host",
                   "certificate verify failed", "Temporary failure in name resolution", "wrong version number"):
        if marker in msg:
            return marker
    return msg if len(msg) < 300 else msg[:300] + "..."
