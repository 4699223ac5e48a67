"""A test device plugin: the kubelet's device plugin API v1beta1 over real unix sockets."""

from tests.support.deviceplugin import api_pb2, api_pb2_grpc
from tests.support.deviceplugin.plugin import ENV_DEVICES, DevicePlugin, FakeDevice

__all__ = ["ENV_DEVICES", "DevicePlugin", "FakeDevice", "api_pb2", "api_pb2_grpc"]
