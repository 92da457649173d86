"""The kubelet's gRPC APIs as protobuf: `dra.proto` (DRA v1 node service) and
`pluginregistration.proto` (plugin registration v1), written from the published APIs
(k8s.io/kubelet/pkg/apis/dra/v1, .../pluginregistration/v1) with the kubelet's package names
and field numbers, and the Python messages protoc generated from them (`*_pb2.py` and their
`.pyi` types; the service glue is in `allot.agent.kubelet.rpc`). Generated with grpcio-tools
1.85 (protoc 35.1, for protobuf >= 7.35.1), from the repository root:

    python -m grpc_tools.protoc -I src --python_out=src --pyi_out=src \\
        src/allot/agent/kubelet/proto/dra.proto src/allot/agent/kubelet/proto/pluginregistration.proto

tests/agent/kubelet/test_protos.py runs that command again and fails when the committed
modules differ from its output.
"""
