"""A test kubelet: the PodResources v1 gRPC service over a real unix socket."""

from tests.support.kubelet.server import Container, Device, FakeKubelet, Memory, Pod

__all__ = ["Container", "Device", "FakeKubelet", "Memory", "Pod"]
