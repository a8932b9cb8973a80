"""The host's NUMA nodes, from sysfs (kernel Documentation/ABI/stable/sysfs-devices-node): how many CPU sockets
(or sub-NUMA clusters) a GPU's process can be near or away from. Read once, as the topology is."""

from __future__ import annotations

from pathlib import Path

from gputui.model import parse_cpus
from gputui.sources.host.cgroup import read_text


def numa_nodes(root: Path = Path("/")) -> int | None:
    """How many NUMA nodes are online (`/sys/devices/system/node/online`, a list like "0-1"); None where sysfs does
    not say (no sysfs, a kernel built without NUMA)."""
    nodes = parse_cpus(read_text(root / "sys/devices/system/node/online"))
    return len(nodes) if nodes else None
