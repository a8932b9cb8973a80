"""Hand-made topologies for the `topo` command and the `t` screen: the machines the issue names."""

from __future__ import annotations

from gputui.model import Topology

NVSWITCH_AFFINITY = ("0-55,112-167", "56-111,168-223")


def nvswitch8() -> Topology:
    """8 GPUs, NV18 between every pair through NVSwitch, two NUMA nodes of 4 GPUs, P2P everywhere."""
    n = 8
    return Topology(
        matrix=tuple(tuple("X" if i == j else "NV18" for j in range(n)) for i in range(n)),
        p2p=tuple(tuple(None if i == j else True for j in range(n)) for i in range(n)),
        numa_node=tuple(i // 4 for i in range(n)),
        cpu_affinity=tuple(NVSWITCH_AFFINITY[i // 4] for i in range(n)),
    )


def pcie_box4() -> Topology:
    """4 consumer GPUs on two sockets: PIX within a socket, SYS across, no P2P across; some facts unread."""

    def path(i: int, j: int) -> str | None:
        if {i, j} == {1, 3}:
            return None  # the driver did not say
        return "X" if i == j else ("PIX" if i // 2 == j // 2 else "SYS")

    return Topology(
        matrix=tuple(tuple(path(i, j) for j in range(4)) for i in range(4)),
        p2p=tuple(tuple(None if i == j else i // 2 == j // 2 for j in range(4)) for i in range(4)),
        numa_node=(0, 0, 1, None),
        cpu_affinity=("0-15", "0-15", "16-31", None),
    )


def single() -> Topology:
    return Topology(matrix=(("X",),), p2p=((None,),), numa_node=(0,), cpu_affinity=("0-63",))
