"""The kubelet's pod-resources API (`PodResourcesLister` v1): its proto, vendored unchanged, the Python modules
generated from it (api_pb2*, by scripts/gen_podresources.py) and the client gputui names pods with (client.py).

The generated modules import grpcio and protobuf, the optional `k8s` extra: nothing imports them until a socket
is there to ask.
"""
