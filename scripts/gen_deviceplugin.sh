#!/bin/sh
# Regenerate the Python stubs of the kubelet's device plugin API v1beta1 (the test device
# plugin, tests/support/deviceplugin). Needs grpcio-tools (a test dependency); run from anywhere.
set -eu
cd "$(dirname "$0")/.."
python -m grpc_tools.protoc -I . \
  --python_out=. --pyi_out=. --grpc_python_out=. \
  tests/support/deviceplugin/api.proto
echo "generated tests/support/deviceplugin/api_pb2.py, api_pb2.pyi and api_pb2_grpc.py"
