"""Where the simulated GPUs sit: two CPU sockets, half the GPUs on each, and how each pair of GPUs connects.

A two-socket server is the usual home of 4-8 GPUs, and the placement is what the topology and NUMA rules read:
GPUs 0-3 of eight hang off socket 0 (CPUs 0-15 of 32), GPUs 4-7 off socket 1. Boards with NVLink reach every
peer through NVSwitch (`NV<n>`, n the links both ends have up); boards without it go through PCIe, `PHB` within
a socket and `SYS` across, with peer-to-peer only within a socket.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gputui.model import Topology

SOCKETS = 2


def socket_of(index: int, count: int) -> int:
    """The socket GPU `index` of a `count`-GPU machine hangs off: the first half on 0, the rest on 1."""
    return index * SOCKETS // count


def socket_cpus(socket: int, cpu_count: int) -> range:
    """The host CPUs of `socket`: each socket has a contiguous half."""
    per_socket = max(1, cpu_count // SOCKETS)
    return range(socket * per_socket, (socket + 1) * per_socket)


def near_cpu(gpu: int, count: int, cpu_count: int, spread: int) -> int:
    """A CPU on the socket of `gpu`, picked by `spread` (a PID) so that processes do not all share one."""
    cpus = socket_cpus(socket_of(gpu, count), cpu_count)
    return cpus[spread % len(cpus)]


def topology(selected: Sequence[int], count: int, nvlinks: Mapping[int, int | None], cpu_count: int) -> Topology:
    """The topology of the `selected` GPUs, in their order; `nvlinks` gives each GPU's active links (None:
    no NVLink on the board)."""
    sockets = [socket_of(index, count) for index in selected]

    def link(a: int, b: int) -> str:
        if a == b:
            return "X"
        ends = (nvlinks[selected[a]], nvlinks[selected[b]])
        if ends[0] is not None and ends[1] is not None:
            return f"NV{min(ends[0], ends[1])}"
        return "PHB" if sockets[a] == sockets[b] else "SYS"

    pairs = range(len(selected))
    matrix = tuple(tuple(link(a, b) for b in pairs) for a in pairs)
    cpus = [socket_cpus(socket, cpu_count) for socket in sockets]
    return Topology(
        matrix=matrix,
        # Peer-to-peer works over NVLink and within a socket's PCIe tree; across sockets the boards refuse it.
        p2p=tuple(tuple(None if path == "X" else path != "SYS" for path in row) for row in matrix),
        numa_node=tuple(sockets),
        cpu_affinity=tuple(f"{r[0]}-{r[-1]}" for r in cpus),
        numa_nodes=SOCKETS,
    )
