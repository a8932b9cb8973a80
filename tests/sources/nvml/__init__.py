"""The NVML source (gputui/sources/nvml) against the fake pynvml (tests/fake_pynvml.py)."""
