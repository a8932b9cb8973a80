"""Code gputui did not write, kept as it came so it can be compared and regenerated rather than hand-edited.

- api.proto: the kubelet's pod-resources API (`PodResourcesLister` v1), vendored unchanged from kubernetes/kubelet
  (its header says from which commit); Copyright The Kubernetes Authors, Apache License 2.0 (LICENSE here).
- api_pb2.py, api_pb2.pyi, api_pb2_grpc.py: protoc's output for that proto, as it writes it. Regenerate them with
  `make podresources` (scripts/gen_podresources.py, grpcio-tools from the dev extra); a test fails when they no
  longer match a fresh run.

The generated modules import grpcio and protobuf, the optional `k8s` extra: only ../kubelet.py imports them, and
only when a socket is there to ask.
"""
