"""A device plugin for the tests: the kubelet's device plugin API v1beta1 over real unix sockets.

It does what a GPU vendor's device plugin does, with made-up devices: serves ``DevicePlugin``
(GetDevicePluginOptions, ListAndWatch, Allocate) on a socket in the kubelet's
``device-plugins/`` directory, registers its extended resource with the kubelet's
``Registration`` service on ``kubelet.sock``, streams each device's health and NUMA topology,
and registers again whenever the kubelet's socket is re-created (a kubelet restart removes the
plugins' sockets and forgets them). Tests flip a device's health, stop and start it, and read
what the kubelet asked (``allocations``, ``registrations``).

grpcio (test extra) serves it on its own thread pool, so it works beside a sync test.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from concurrent import futures
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from tests.support.deviceplugin import api_pb2, api_pb2_grpc

API_VERSION = "v1beta1"
HEALTHY = "Healthy"
UNHEALTHY = "Unhealthy"
KUBELET_SOCKET = "kubelet.sock"
#: the env var Allocate puts in each container: the device ids it got
ENV_DEVICES = "NFD_E2E_DEVICES"


@dataclass
class FakeDevice:
    id: str
    numa: list[int] = field(default_factory=list)
    healthy: bool = True

    def to_pb(self) -> api_pb2.Device:
        d = api_pb2.Device(ID=self.id, health=HEALTHY if self.healthy else UNHEALTHY)
        if self.numa:
            d.topology.CopyFrom(api_pb2.TopologyInfo(nodes=[api_pb2.NUMANode(ID=n) for n in self.numa]))
        return d


class _Servicer(api_pb2_grpc.DevicePluginServicer):
    def __init__(self, plugin: DevicePlugin) -> None:
        self.p = plugin

    def GetDevicePluginOptions(self, request: Any, context: Any) -> Any:  # noqa: N802 (gRPC method name)
        return api_pb2.DevicePluginOptions()

    def ListAndWatch(self, request: Any, context: Any) -> Iterator[Any]:  # noqa: N802
        """The device list now, then again after every change, until the plugin stops or the
        kubelet hangs up."""
        p = self.p
        sent = -1
        while context.is_active():
            with p._changed:
                if p._version == sent and not p._stopping:
                    p._changed.wait(timeout=0.5)
                if p._stopping:
                    return
                if p._version == sent:
                    continue
                sent = p._version
                answer = api_pb2.ListAndWatchResponse(devices=[d.to_pb() for d in p.devices.values()])
                p.list_and_watch_calls += 1
            yield answer

    def Allocate(self, request: Any, context: Any) -> Any:  # noqa: N802
        out = api_pb2.AllocateResponse()
        with self.p._changed:
            for req in request.container_requests:
                ids = list(req.devices_ids)
                unknown = [i for i in ids if i not in self.p.devices]
                if unknown:
                    context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"unknown device ids {unknown}")
                self.p.allocations.append(ids)
                out.container_responses.append(api_pb2.ContainerAllocateResponse(envs={ENV_DEVICES: ",".join(ids)}))
        return out


class DevicePlugin:
    """``DevicePlugin(resource, devices, plugin_dir=...)``; ``start()`` serves and registers,
    ``stop()`` stops serving (the kubelet then marks every device unhealthy)."""

    def __init__(self, resource: str, devices: list[FakeDevice], *, plugin_dir: str | Path,
                 endpoint: str | None = None) -> None:
        self.resource = resource
        self.devices = {d.id: d for d in devices}
        self.plugin_dir = Path(plugin_dir)
        self.endpoint = endpoint or f"nfd-e2e-{resource.replace('/', '-').replace('.', '-')}.sock"
        self.registrations = 0
        self.list_and_watch_calls = 0
        self.allocations: list[list[str]] = []
        self.errors: list[str] = []
        self._changed = threading.Condition()
        self._version = 0
        self._stopping = False
        self._server: grpc.Server | None = None
        self._kubelet_id: tuple[int, float] | None = None  # the kubelet.sock we registered with
        self._watcher: threading.Thread | None = None
        self._closed = threading.Event()

    @property
    def socket_path(self) -> Path:
        return self.plugin_dir / self.endpoint

    # ---- devices ----------------------------------------------------------------------------

    def set_health(self, device_id: str, healthy: bool) -> None:
        with self._changed:
            self.devices[device_id].healthy = healthy
            self._version += 1
            self._changed.notify_all()

    # ---- lifecycle --------------------------------------------------------------------------

    def start(self, *, timeout: float = 30.0) -> DevicePlugin:
        """Serve, register, and keep registered across kubelet restarts."""
        self._closed.clear()
        self._serve()
        deadline = time.monotonic() + timeout
        while True:
            try:
                self._register()
                break
            except (grpc.RpcError, OSError) as e:
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"device plugin {self.resource}: Register failed: {e}") from e
                time.sleep(0.5)
        self._watcher = threading.Thread(target=self._watch_kubelet, name=f"deviceplugin-{self.resource}",
                                         daemon=True)
        self._watcher.start()
        return self

    def stop(self) -> None:
        """Stop serving (ListAndWatch streams end) and remove the socket."""
        self._closed.set()
        if self._watcher is not None and self._watcher is not threading.current_thread():
            self._watcher.join(timeout=5)
        self._watcher = None
        self._stop_server()

    def _serve(self) -> None:
        with self._changed:
            self._stopping = False
            self._version += 1  # a new stream sends the list at once
        self.plugin_dir.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        api_pb2_grpc.add_DevicePluginServicer_to_server(_Servicer(self), server)
        if server.add_insecure_port(f"unix://{self.socket_path}") == 0:
            raise RuntimeError(f"cannot listen on {self.socket_path}")
        server.start()
        self._server = server

    def _stop_server(self) -> None:
        with self._changed:
            self._stopping = True
            self._changed.notify_all()
        if self._server is not None:
            self._server.stop(grace=1).wait(5)
            self._server = None
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()

    def _kubelet_socket_id(self) -> tuple[int, float] | None:
        try:
            st = os.stat(self.plugin_dir / KUBELET_SOCKET)
        except FileNotFoundError:
            return None
        return st.st_ino, st.st_ctime

    def _register(self) -> None:
        kid = self._kubelet_socket_id()
        if kid is None:
            raise FileNotFoundError(f"no {self.plugin_dir / KUBELET_SOCKET}")
        with grpc.insecure_channel(f"unix://{self.plugin_dir / KUBELET_SOCKET}") as ch:
            api_pb2_grpc.RegistrationStub(ch).Register(
                api_pb2.RegisterRequest(version=API_VERSION, endpoint=self.endpoint, resource_name=self.resource,
                                        options=api_pb2.DevicePluginOptions()),
                timeout=10)
        self._kubelet_id = kid
        self.registrations += 1

    def _watch_kubelet(self) -> None:
        """What device plugins do: when the kubelet's socket is re-created (a kubelet restart),
        serve again on a fresh socket (the kubelet removed ours) and register again."""
        while not self._closed.wait(0.2):
            kid = self._kubelet_socket_id()
            if kid is None or kid == self._kubelet_id:
                continue
            try:
                self._stop_server()
                self._serve()
                self._register()
            except (grpc.RpcError, OSError, RuntimeError) as e:
                self.errors.append(f"re-register: {e}")
                self._kubelet_id = None  # try again on the next tick
