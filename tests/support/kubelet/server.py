"""A kubelet PodResources v1 server for tests.

Speaks the published protocol (``v1.PodResourcesLister``: List, GetAllocatableResources, Get)
over a real unix socket with grpcio, so the updater is exercised through real gRPC. Tests feed
it pods, containers, devices, exclusive CPU ids and memory blocks, and can stop/restart it to
model a kubelet restart (the socket file disappears and comes back).

The server runs on grpc's own thread pool, so it works from sync and asyncio tests alike.
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from concurrent import futures
from dataclasses import dataclass, field

import grpc

from nfd.topology_updater.podresources import api_pb2, api_pb2_grpc


@dataclass
class Device:
    resource: str
    ids: list[str]
    numa: list[int] = field(default_factory=list)

    def to_pb(self) -> api_pb2.ContainerDevices:
        d = api_pb2.ContainerDevices(resource_name=self.resource, device_ids=self.ids)
        if self.numa:
            d.topology.CopyFrom(_topology(self.numa))
        return d


@dataclass
class Memory:
    type: str
    size: int
    numa: list[int] = field(default_factory=list)

    def to_pb(self) -> api_pb2.ContainerMemory:
        m = api_pb2.ContainerMemory(memory_type=self.type, size=self.size)
        if self.numa:
            m.topology.CopyFrom(_topology(self.numa))
        return m


@dataclass
class Container:
    name: str
    cpus: list[int] = field(default_factory=list)
    devices: list[Device] = field(default_factory=list)
    memory: list[Memory] = field(default_factory=list)

    def to_pb(self) -> api_pb2.ContainerResources:
        return api_pb2.ContainerResources(
            name=self.name,
            cpu_ids=self.cpus,
            devices=[d.to_pb() for d in self.devices],
            memory=[m.to_pb() for m in self.memory],
        )


@dataclass
class Pod:
    namespace: str
    name: str
    containers: list[Container] = field(default_factory=list)

    def to_pb(self) -> api_pb2.PodResources:
        return api_pb2.PodResources(
            name=self.name, namespace=self.namespace, containers=[c.to_pb() for c in self.containers]
        )


def _topology(numa: list[int]) -> api_pb2.TopologyInfo:
    return api_pb2.TopologyInfo(nodes=[api_pb2.NUMANode(ID=n) for n in numa])


class _Servicer(api_pb2_grpc.PodResourcesListerServicer):
    def __init__(self, kubelet: FakeKubelet) -> None:
        self.k = kubelet

    def List(self, request, context):  # noqa: N802 (gRPC method name)
        with self.k.lock:
            self.k.calls["List"] += 1
            return api_pb2.ListPodResourcesResponse(pod_resources=[p.to_pb() for p in self.k.pods.values()])

    def GetAllocatableResources(self, request, context):  # noqa: N802
        with self.k.lock:
            self.k.calls["GetAllocatableResources"] += 1
            if not self.k.allocatable_enabled:
                context.abort(grpc.StatusCode.UNKNOWN, "Pod Resources API GetAllocatableResources disabled")
            return api_pb2.AllocatableResourcesResponse(
                cpu_ids=self.k.cpus,
                devices=[d.to_pb() for d in self.k.devices],
                memory=[m.to_pb() for m in self.k.memory],
            )

    def Get(self, request, context):  # noqa: N802
        with self.k.lock:
            self.k.calls["Get"] += 1
            pod = self.k.pods.get((request.pod_namespace, request.pod_name))
            if pod is None:
                context.abort(
                    grpc.StatusCode.NOT_FOUND, f"pod {request.pod_namespace}/{request.pod_name} not found"
                )
            return api_pb2.GetPodResourcesResponse(pod_resources=pod.to_pb())


class FakeKubelet:
    def __init__(
        self,
        socket_path: str,
        *,
        cpus: list[int] | None = None,
        devices: list[Device] | None = None,
        memory: list[Memory] | None = None,
    ) -> None:
        self.socket_path = socket_path
        self.cpus = list(cpus or [])
        self.devices = list(devices or [])
        self.memory = list(memory or [])
        self.pods: dict[tuple[str, str], Pod] = {}
        self.allocatable_enabled = True
        self.calls: Counter[str] = Counter()
        self.lock = threading.Lock()
        self._server: grpc.Server | None = None

    # --- state -------------------------------------------------------------------------------

    def add_pod(self, pod: Pod) -> None:
        with self.lock:
            self.pods[(pod.namespace, pod.name)] = pod

    def remove_pod(self, namespace: str, name: str) -> None:
        with self.lock:
            self.pods.pop((namespace, name), None)

    def set_allocatable(
        self,
        *,
        cpus: list[int] | None = None,
        devices: list[Device] | None = None,
        memory: list[Memory] | None = None,
    ) -> None:
        with self.lock:
            if cpus is not None:
                self.cpus = list(cpus)
            if devices is not None:
                self.devices = list(devices)
            if memory is not None:
                self.memory = list(memory)

    # --- lifecycle ---------------------------------------------------------------------------

    def start(self) -> FakeKubelet:
        if self._server is not None:
            return self
        os.makedirs(os.path.dirname(self.socket_path) or ".", exist_ok=True)
        if os.path.exists(self.socket_path):
            os.unlink(self.socket_path)
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        api_pb2_grpc.add_PodResourcesListerServicer_to_server(_Servicer(self), server)
        if server.add_insecure_port("unix://" + self.socket_path) == 0:
            raise RuntimeError(f"cannot listen on {self.socket_path}")
        server.start()
        self._server = server
        return self

    def stop(self) -> None:
        """Stop serving and remove the socket, as a stopped kubelet does."""
        if self._server is not None:
            self._server.stop(grace=None)
            self._server = None
        if os.path.exists(self.socket_path):
            os.unlink(self.socket_path)

    def restart(self) -> None:
        self.stop()
        self.start()

    def __enter__(self) -> FakeKubelet:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
