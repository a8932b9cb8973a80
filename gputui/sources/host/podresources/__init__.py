"""The kubelet's pod-resources API (`PodResourcesLister` v1): the client gputui names pods with (kubelet.py), and in
third_party/ the API's proto, vendored unchanged, with the Python modules generated from it (api_pb2*, by
scripts/gen_podresources.py).

The generated modules import grpcio and protobuf, the optional `k8s` extra: nothing imports them until a socket
is there to ask.
"""
