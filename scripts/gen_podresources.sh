#!/bin/sh
# Regenerate the Python stubs for the kubelet PodResources v1 API.
# Needs grpcio-tools (a test/dev dependency); run from anywhere.
set -eu
cd "$(dirname "$0")/.."
python -m grpc_tools.protoc -I . \
  --python_out=. --pyi_out=. --grpc_python_out=. \
  nfd/topology_updater/podresources/api.proto
echo "generated nfd/topology_updater/podresources/api_pb2.py, api_pb2.pyi and api_pb2_grpc.py"
