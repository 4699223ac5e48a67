"""The test device plugin (tests/support/deviceplugin) against a kubelet's Registration service
served here with grpcio: what the real-node test (tests/e2e/test_node_device_plugin.py) relies
on, checked without a node. The kubelet side is played by this test: it receives Register,
then calls the plugin as the kubelet does (GetDevicePluginOptions, ListAndWatch, Allocate)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import pytest

from tests.support.deviceplugin import ENV_DEVICES, DevicePlugin, FakeDevice, api_pb2, api_pb2_grpc


class _Registration(api_pb2_grpc.RegistrationServicer):
    def __init__(self) -> None:
        self.requests: list[Any] = []

    def Register(self, request: Any, context: Any) -> Any:  # noqa: N802
        self.requests.append(request)
        return api_pb2.Empty()


class Kubelet:
    def __init__(self, plugin_dir: Path) -> None:
        self.plugin_dir = plugin_dir
        self.registration = _Registration()
        self.server: Any = None

    def start(self) -> None:
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        api_pb2_grpc.add_RegistrationServicer_to_server(self.registration, self.server)
        assert self.server.add_insecure_port(f"unix://{self.plugin_dir / 'kubelet.sock'}")
        self.server.start()

    def stop(self) -> None:
        self.server.stop(None)  # removes kubelet.sock, as a stopping kubelet does


@pytest.fixture
def kubelet() -> Iterator[Kubelet]:
    import tempfile

    with tempfile.TemporaryDirectory(prefix="nfd-dp-") as d:  # unix socket paths must stay short
        k = Kubelet(Path(d))
        k.start()
        yield k
        k.stop()


def test_registers_streams_health_and_numa_and_allocates(kubelet: Kubelet) -> None:
    plugin = DevicePlugin("example.com/w", [FakeDevice("a", [1]), FakeDevice("b", [0, 1])],
                          plugin_dir=kubelet.plugin_dir).start()
    try:
        (req,) = kubelet.registration.requests
        assert (req.version, req.resource_name, req.endpoint) == ("v1beta1", "example.com/w", plugin.endpoint)
        with grpc.insecure_channel(f"unix://{kubelet.plugin_dir / req.endpoint}") as ch:
            stub = api_pb2_grpc.DevicePluginStub(ch)
            assert stub.GetDevicePluginOptions(api_pb2.Empty(), timeout=5) == api_pb2.DevicePluginOptions()
            stream = stub.ListAndWatch(api_pb2.Empty(), timeout=10)
            first = next(stream)
            assert [(d.ID, d.health, [n.ID for n in d.topology.nodes]) for d in first.devices] == [
                ("a", "Healthy", [1]), ("b", "Healthy", [0, 1])]
            plugin.set_health("b", False)
            assert [d.health for d in next(stream).devices] == ["Healthy", "Unhealthy"]
            answer = stub.Allocate(api_pb2.AllocateRequest(container_requests=[
                api_pb2.ContainerAllocateRequest(devices_ids=["a", "b"])]), timeout=5)
            assert dict(answer.container_responses[0].envs) == {ENV_DEVICES: "a,b"}
            assert plugin.allocations == [["a", "b"]]
            with pytest.raises(grpc.RpcError) as ei:
                stub.Allocate(api_pb2.AllocateRequest(container_requests=[
                    api_pb2.ContainerAllocateRequest(devices_ids=["zz"])]), timeout=5)
            assert ei.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            stream.cancel()
    finally:
        plugin.stop()
    assert not plugin.socket_path.exists()


def test_registers_again_when_the_kubelet_restarts(kubelet: Kubelet) -> None:
    plugin = DevicePlugin("example.com/w", [FakeDevice("a", [0])], plugin_dir=kubelet.plugin_dir).start()
    try:
        kubelet.stop()
        plugin.socket_path.unlink()  # the restarting kubelet removes the plugins' sockets
        kubelet.start()
        deadline = time.monotonic() + 10
        while len(kubelet.registration.requests) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(kubelet.registration.requests) == 2, plugin.errors
        assert plugin.registrations == 2 and plugin.socket_path.exists()
    finally:
        plugin.stop()
