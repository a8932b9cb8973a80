"""The GPU topology as words: shared by `gputui topo` and the monitor's `t` screen, so both say the same.

A cell the driver did not give reads "n/a": a path between two GPUs is never guessed.
"""

from __future__ import annotations

from typing import Literal

from gputui.formatting import NA
from gputui.model import GpuInfo, GpuSample, Topology

# What each connection means, fastest first, in the words of `nvidia-smi topo -m`'s legend.
LEGEND: tuple[tuple[str, str], ...] = (
    ("X", "the GPU itself"),
    ("NV#", "joined by # NVLinks, directly or through an NVSwitch: the fastest path"),
    ("PIX", "through at most one PCIe switch"),
    ("PXB", "through several PCIe switches, not through a CPU's host bridge"),
    ("PHB", "through a PCIe host bridge (the CPU)"),
    ("NODE", "through the links between host bridges inside one NUMA node"),
    ("SYS", "across NUMA nodes, over the link between CPU sockets (UPI, Infinity Fabric): the slowest"),
)

Speed = Literal["self", "nvlink", "switch", "host", "socket", "unknown"]
_SPEEDS: dict[str, Speed] = {
    "X": "self",
    "PIX": "switch",
    "PXB": "switch",
    "PHB": "host",
    "NODE": "host",
    "SYS": "socket",
}


def speed(cell: str | None) -> Speed:
    """How fast a pair's path is, as a class the views colour by."""
    if cell is None:
        return "unknown"
    if cell.startswith("NV"):
        return "nvlink"
    return _SPEEDS.get(cell, "unknown")


def cell_text(cell: str | None) -> str:
    return NA if cell is None else cell


def p2p_text(value: bool | None) -> str:
    return NA if value is None else ("OK" if value else "no")


def links_text(info: GpuInfo | None, sample: GpuSample | None) -> str:
    """NVLinks up out of those the GPU has: "18/18"; "n/a" without NVLink or when unread."""
    total = None if info is None else info.nvlink_links_total
    active = None if sample is None else sample.nvlink_links_active
    if total is None and active is None:
        return NA
    return f"{NA if active is None else active}/{NA if total is None else total}"


def labels(infos: tuple[GpuInfo, ...]) -> list[str]:
    return [f"GPU{info.index}" for info in infos]


def matrix_cell(topology: Topology, row: int, col: int) -> str | None:
    """One pair's path; None (unknown) also where the table is smaller than the GPU list."""
    rows = topology.matrix
    return rows[row][col] if row < len(rows) and col < len(rows[row]) else None


def p2p_cell(topology: Topology, row: int, col: int) -> str:
    if row == col:
        return "X"
    rows = topology.p2p
    return p2p_text(rows[row][col] if row < len(rows) and col < len(rows[row]) else None)


def numa_text(topology: Topology, row: int) -> str:
    node = topology.numa_node[row] if row < len(topology.numa_node) else None
    return NA if node is None else str(node)


def affinity_text(topology: Topology, row: int) -> str:
    cpus = topology.cpu_affinity[row] if row < len(topology.cpu_affinity) else None
    return cpus or NA


def affinity_groups(topology: Topology, names: list[str]) -> list[tuple[str, str]]:
    """GPUs that share their near CPUs, grouped ("GPU0,GPU1", "0-31"): one socket's GPUs on one line."""
    groups: dict[str, list[str]] = {}
    for row, name in enumerate(names):
        groups.setdefault(affinity_text(topology, row), []).append(name)
    return [(",".join(members), cpus) for cpus, members in groups.items()]
