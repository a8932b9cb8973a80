"""How the GPUs connect, through NVML: NVLinks per GPU, and the `nvidia-smi topo -m` matrix, P2P and placement.

A multi-GPU job is only as fast as its links: a link down or a pair without P2P slows every collective while
each GPU reads busy. What a GPU's links reach is read once; which are up and their error counters on the slow
cadence (18 links x 5 calls is too many for every tick); NVLink traffic every tick from two cumulative field
readings, only where GPM does not already give it. Every call goes through the query helper (query.py): what the
driver does not give reads None and is not asked again, and its GpuLost reaches the source, which marks the GPU
lost.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from gputui.model import NVSWITCH, GpmValues, Topology
from gputui.sources.nvml.query import Fields, GpuLost, Nvml

KIB = 1024
ALL_LINKS = 0xFFFFFFFF  # scopeId for "every link"; a bare per-link field id reads link 0 only
# nvmlDeviceGetTopologyCommonAncestor -> the `nvidia-smi topo -m` name. INTERNAL (0) between two GPUs means
# both sit on one board (a dual-GPU card) behind one switch, which nvidia-smi also prints as PIX.
PCIE_PATHS = {0: "PIX", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}
_VERSION_NAME = re.compile(r"NVML_NVLINK_VERSION_(\d+)_\d+$")


def nvlink_versions(pynvml: ModuleType) -> dict[int, int]:
    """NVML's enum -> the NVLink generation, from pynvml's own names (NVML_NVLINK_VERSION_4_0 = 6 -> 4)."""
    out: dict[int, int] = {}
    for name, value in vars(pynvml).items():
        match = _VERSION_NAME.match(name)
        if match and isinstance(value, int):
            out[value] = int(match.group(1))
    return out


def bus_key(bus_id: str) -> str:
    """One spelling for a PCI bus id: NVML gives 8-digit domains, legacy and remote infos sometimes 4."""
    domain, _, rest = bus_id.strip().partition(":")
    try:
        return f"{int(domain, 16):x}:{rest}".upper()
    except ValueError:
        return bus_id.strip().upper()


@dataclass(frozen=True, slots=True)
class NvLinkCounters:
    """What the slow cadence reads: links up now and the error counters summed over them (cumulative)."""

    active: int | None = None
    replay: int | None = None
    recovery: int | None = None
    crc: int | None = None


class NvLinkReader:
    """One GPU's NVLinks: how many and what each reaches, read once; state and errors when asked."""

    def __init__(self, nvml: Nvml, handle: Any, gpm_gives_traffic: bool) -> None:
        pynvml = nvml.pynvml
        self._nvml = nvml
        self._handle = handle
        self.total: int | None = None
        self.version: int | None = None
        self.active_at_open: tuple[bool, ...] = ()
        self.remotes: tuple[str, ...] = ()  # raw: a bus id, or NVSWITCH where the driver says so
        self.gpu_links: frozenset[int] = frozenset()  # links the driver says reach a GPU
        self._state = nvml.query(nvml.function("nvmlDeviceGetNvLinkState", handle))
        self._error_counter = nvml.query(nvml.function("nvmlDeviceGetNvLinkErrorCounter", handle))
        # The driver's totals over the links, in one call: five calls per link instead would cost 0.5 ms a slow
        # tick for 8 GPUs.
        self._error_totals = Fields(
            nvml,
            handle,
            [
                pynvml.NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL,
                pynvml.NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL,
                pynvml.NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL,
                pynvml.NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL,
            ],
        )
        self._throughput = Fields(
            nvml,
            handle,
            [
                (pynvml.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, ALL_LINKS),
                (pynvml.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, ALL_LINKS),
            ],
        )
        self._errors = True
        self._traffic = not gpm_gives_traffic
        self._last_traffic: tuple[float, int, int] | None = None  # (time, rx KiB, tx KiB)
        self._open()
        if not self.total:
            self.total, self._errors, self._traffic = None, False, False

    def _open(self) -> None:
        total = self._link_count()
        if total == 0:
            return
        states = [self._state(link) for link in range(total)]
        if not self._state.available:
            return
        self.total = total
        self.active_at_open = tuple(bool(state) for state in states)
        self.version = self._version()
        self.remotes = self._remotes(total)

    def _link_count(self) -> int:
        """The field NVML_FI_DEV_NVLINK_LINK_COUNT, else the links up to the first whose state the driver does
        not give (drivers answer links past the GPU's own with InvalidArgument, up to NVML_NVLINK_MAX_LINKS)."""
        nvml = self._nvml
        count = Fields(nvml, self._handle, [nvml.pynvml.NVML_FI_DEV_NVLINK_LINK_COUNT])()[0]
        if count is not None:
            return int(count)
        probe = nvml.query(nvml.function("nvmlDeviceGetNvLinkState", self._handle))
        for link in range(nvml.pynvml.NVML_NVLINK_MAX_LINKS):
            if probe(link) is None:
                return link
        return int(nvml.pynvml.NVML_NVLINK_MAX_LINKS)

    def _version(self) -> int | None:
        link = self.active_at_open.index(True) if True in self.active_at_open else 0
        enum = self._nvml.ask("nvmlDeviceGetNvLinkVersion", self._handle, link)
        return nvlink_versions(self._nvml.pynvml).get(enum) if enum is not None else None

    def _remotes(self, total: int) -> tuple[str, ...]:
        """NVSWITCH where nvmlDeviceGetNvLinkRemoteDeviceType says so; otherwise the remote PCI bus id, which
        `resolve_remotes` names NVSWITCH when it matches no GPU (a driver or pynvml without the device type)."""
        nvml = self._nvml
        pynvml = nvml.pynvml
        device_type = nvml.query(nvml.function("nvmlDeviceGetNvLinkRemoteDeviceType", self._handle))
        remote_pci = nvml.query(nvml.function("nvmlDeviceGetNvLinkRemotePciInfo", self._handle))
        out = []
        gpus = set()
        for link in range(total):
            kind = device_type(link)
            if kind == pynvml.NVML_NVLINK_DEVICE_TYPE_SWITCH:
                out.append(NVSWITCH)
                continue
            if kind == pynvml.NVML_NVLINK_DEVICE_TYPE_GPU:
                gpus.add(link)
            pci = remote_pci(link)
            out.append(pci.busId if pci is not None else "")
        self.gpu_links = frozenset(gpus)
        return tuple(out)

    def counters(self) -> NvLinkCounters:
        """Links up now and the error counters summed over the links (None where not given: a link whose state
        was not read makes the count unknown, not lower)."""
        if self.total is None:
            return NvLinkCounters()
        states = [self._state(link) for link in range(self.total)]
        active = None if None in states else sum(bool(state) for state in states)
        if not self._errors:
            return NvLinkCounters(active=active)
        sums = self._error_sums()
        if sums is None:
            return NvLinkCounters(active=active)
        return NvLinkCounters(active=active, replay=sums[0], recovery=sums[1], crc=sums[2] + sums[3])

    def _error_sums(self) -> list[int] | None:
        """Replay, recovery, CRC flit, CRC data summed over the links: the driver's totals, else per link."""
        totals = self._error_totals()
        if None not in totals:
            return [int(total or 0) for total in totals]
        pynvml = self._nvml.pynvml
        kinds = (
            pynvml.NVML_NVLINK_ERROR_DL_REPLAY,
            pynvml.NVML_NVLINK_ERROR_DL_RECOVERY,
            pynvml.NVML_NVLINK_ERROR_DL_CRC_FLIT,
            pynvml.NVML_NVLINK_ERROR_DL_CRC_DATA,
        )
        sums = [0, 0, 0, 0]
        for link in range(self.total or 0):
            for i, kind in enumerate(kinds):
                sums[i] += self._error_counter(link, kind) or 0
                if not self._error_counter.available:
                    self._errors = False
                    return None
        return sums

    def traffic(self, now: float) -> GpmValues:
        """nvlink_rx/tx_bytes_s from the cumulative KiB fields over all links; {} where GPM gives them."""
        if not self._traffic:
            return {}
        rx, tx = self._throughput()
        if rx is None or tx is None:
            self._traffic = self._throughput.available
            self._last_traffic = None
            return {"nvlink_rx_bytes_s": None, "nvlink_tx_bytes_s": None}
        reading = (now, int(rx), int(tx))
        last, self._last_traffic = self._last_traffic, reading
        if last is None or now <= last[0] or reading[1] < last[1] or reading[2] < last[2]:
            return {"nvlink_rx_bytes_s": None, "nvlink_tx_bytes_s": None}
        seconds = now - last[0]
        return {
            "nvlink_rx_bytes_s": (reading[1] - last[1]) * KIB / seconds,
            "nvlink_tx_bytes_s": (reading[2] - last[2]) * KIB / seconds,
        }


def resolve_remotes(reader: NvLinkReader | None, gpu_buses: Sequence[str | None]) -> tuple[str, ...] | None:
    """What each link reaches: a GPU's bus id as NVML spells it, or NVSWITCH (also any remote that is no GPU).

    A link the driver says reaches a GPU keeps its bus id when that GPU is not opened (`--gpus`): a bridged
    peer left out of the selection is no NVSwitch, and nvlink_down holds a GPU on NVSwitch to all its links.
    """
    if reader is None or reader.total is None:
        return None
    known = {bus_key(bus): bus for bus in gpu_buses if bus}
    return tuple(
        remote
        if remote in ("", NVSWITCH)
        else known.get(bus_key(remote), remote if link in reader.gpu_links else NVSWITCH)
        for link, remote in enumerate(reader.remotes)
    )


def read_topology(
    nvml: Nvml,
    handles: Sequence[Any | None],
    links: Sequence[NvLinkReader | None],
    gpu_buses: Sequence[str | None],
    numa_nodes: int | None = None,
) -> Topology:
    """The matrix, P2P, NUMA node and nearby CPUs for the GPUs opened; a lost GPU (handle None, or GpuIsLost
    here) has None in its entries. `numa_nodes` is the host's count (sysfs), which NVML does not give."""
    count = len(handles)
    alive = [handle is not None for handle in handles]
    numa: list[int | None] = [None] * count
    affinity: list[str | None] = [None] * count
    words = math.ceil((os.cpu_count() or 1) / 64)
    for i, handle in enumerate(handles):
        if handle is None:
            continue
        try:
            numa[i] = nvml.ask("nvmlDeviceGetNumaNodeId", handle)
            mask = nvml.ask("nvmlDeviceGetCpuAffinity", handle, words)
            affinity[i] = cpulist(mask) if mask is not None else None
        except GpuLost:
            alive[i], numa[i] = False, None
    remotes = [resolve_remotes(reader, gpu_buses) if alive[i] else None for i, reader in enumerate(links)]
    matrix: list[list[str | None]] = [[None] * count for _ in range(count)]
    p2p: list[list[bool | None]] = [[None] * count for _ in range(count)]
    for a in range(count):
        matrix[a][a] = "X"
        for b in range(count):
            if a == b or not (alive[a] and alive[b]):
                continue
            try:
                matrix[a][b] = _nvlink_name(a, b, links, remotes, gpu_buses) or _pcie_name(nvml, handles[a], handles[b])
                p2p[a][b] = _p2p(nvml, handles[a], handles[b])
            except GpuLost:
                matrix[a][b] = p2p[a][b] = None
    return Topology(
        matrix=tuple(tuple(row) for row in matrix),
        p2p=tuple(tuple(row) for row in p2p),
        numa_node=tuple(numa),
        cpu_affinity=tuple(affinity),
        numa_nodes=numa_nodes,
    )


def _nvlink_name(
    a: int,
    b: int,
    links: Sequence[NvLinkReader | None],
    remotes: Sequence[tuple[str, ...] | None],
    gpu_buses: Sequence[str | None],
) -> str | None:
    """NV<n>: a's active links to b directly, or, when both reach NVSwitch, the active switch links both have
    (the fewer of the two, so a degraded GPU reads lower in its row and its column)."""
    ra, rb, la, lb = remotes[a], remotes[b], links[a], links[b]
    if ra is None or rb is None or la is None or lb is None:
        return None
    direct = sum(1 for r, up in zip(ra, la.active_at_open, strict=False) if up and r and r == gpu_buses[b])
    if direct:
        return f"NV{direct}"
    switched_a = sum(1 for r, up in zip(ra, la.active_at_open, strict=False) if up and r == NVSWITCH)
    switched_b = sum(1 for r, up in zip(rb, lb.active_at_open, strict=False) if up and r == NVSWITCH)
    shared = min(switched_a, switched_b)
    return f"NV{shared}" if shared else None


def _pcie_name(nvml: Nvml, first: Any, second: Any) -> str | None:
    level = nvml.ask("nvmlDeviceGetTopologyCommonAncestor", first, second)
    return PCIE_PATHS.get(level) if level is not None else None


def _p2p(nvml: Nvml, first: Any, second: Any) -> bool | None:
    """Peer read and write both OK. The indexes are passed as ints: NVML_P2P_CAPS_INDEX_READ is a tuple."""
    read = nvml.ask("nvmlDeviceGetP2PStatus", first, second, 0)
    write = nvml.ask("nvmlDeviceGetP2PStatus", first, second, 1)
    if read is None or write is None:
        return None
    ok = nvml.pynvml.NVML_P2P_STATUS_OK
    return bool(read == ok and write == ok)


def cpulist(words: Sequence[int]) -> str | None:
    """64-bit mask words (CPU 0 is bit 0 of the first) -> "0-31,64-95"; None for an empty mask."""
    cpus = [64 * w + bit for w, word in enumerate(words) for bit in range(64) if int(word) >> bit & 1]
    if not cpus:
        return None
    ranges: list[list[int]] = []
    for cpu in cpus:
        if ranges and cpu == ranges[-1][1] + 1:
            ranges[-1][1] = cpu
        else:
            ranges.append([cpu, cpu])
    return ",".join(f"{lo}-{hi}" if hi > lo else str(lo) for lo, hi in ranges)
