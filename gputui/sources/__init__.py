"""Producers of Snapshots: the live driver (nvml), the host, the simulated machine, recordings."""
