"""The live driver through nvidia-ml-py: samples, GPM, NVLink, topology, XID events."""
