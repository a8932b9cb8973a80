"""A snapshot as plain text tables: what `gputui snapshot` prints, readable over a slow SSH link.

Only ASCII characters (terminals and fonts on rented servers vary), and "n/a" for every value the driver did
not report, so a missing reading is never mistaken for a zero.
"""

from __future__ import annotations

import datetime
import textwrap
from collections.abc import Callable, Sequence
from typing import TypeVar

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from gputui.formatting import (
    HIDDEN_PROCESS,
    NA,
    fmt_bytes,
    fmt_bytes_pair,
    fmt_num,
    fmt_owner,
    fmt_pct,
    fmt_ranges,
    fmt_rate,
    fmt_unreadable,
)
from gputui.model import GpuInfo, GpuProcess, GpuSample, HostSample, MigDevice, ProcSample, Snapshot, SystemInfo
from gputui.sources.sim.job import is_job_scenario, job_banner
from gputui.sources.sim.scenarios import SCENARIO_DESCRIPTIONS
from gputui.text import topology_text as topo
from gputui.text.activity_text import detail_lines

T = TypeVar("T")


def _or_na(value: T | None, fmt: Callable[[T], str]) -> str:
    return NA if value is None else fmt(value)


def _pair(current: str, maximum: str, unit: str = "") -> str:
    return f"{current} / {maximum}{unit}"


def _link(gen: int | None, width: int | None) -> str:
    return f"Gen{fmt_num(gen)} x{fmt_num(width)}"


def banner(system: SystemInfo) -> Text | None:
    """The label simulated and replayed data always carry; None for live data."""
    if system.is_live:
        return None
    simulated = "simulated" in (system.source, system.remote_source, system.recorded_source)
    parts: list[str] = [system.source] if simulated and system.source != "simulated" else []
    if system.scenario:
        parts.append(f"scenario {system.scenario}")
    label = "SIMULATED" if simulated else system.source.upper()
    if parts:
        label += f" ({', '.join(parts)})"
    line = Text(label, style="bold reverse yellow")
    if is_job_scenario(system.scenario) and system.source == "simulated":
        line.append(" - the GPU is simulated; the host and the job are this machine's", style="yellow")
    else:
        line.append(" - not live data from this machine", style="yellow")
    return line


def banner_details(system: SystemInfo) -> list[str]:
    """What the scenario shows, and why the real driver was not read when the simulation stands in for it."""
    lines = []
    if is_job_scenario(system.scenario) and system.source == "simulated":
        lines.append(job_banner(system))
    if system.scenario in SCENARIO_DESCRIPTIONS:
        lines.append(f"{system.scenario}: {SCENARIO_DESCRIPTIONS[system.scenario]}")
    if system.fallback_reason:
        lines.append(f"the NVIDIA driver could not be read: {system.fallback_reason}")
    return lines


def pack(label: str, fields: Sequence[str], width: int, sep: str = "  ") -> list[str]:
    """`label` then the fields, `sep` apart, on as many lines of `width` as they need, each further line indented
    under the first field: a phrase ("memory 38.0 / 64.0 GiB") is never split across two lines."""
    indent = " " * len(label)
    lines: list[str] = []
    line, empty = label, True  # `empty`: no field on this line yet
    for field in fields:
        joined = line + field if empty else f"{line}{sep}{field}"
        if len(joined) > width and not empty:
            lines.append(line)
            joined = indent + field
        line, empty = joined, False
    lines.append(line)
    return lines


def _system_lines(snapshot: Snapshot, width: int) -> list[str]:
    system = snapshot.system
    when = datetime.datetime.fromtimestamp(snapshot.timestamp, tz=datetime.timezone.utc)
    return pack(
        "",
        [
            system.hostname,
            f"driver {system.driver_version or NA}",
            f"CUDA {system.cuda_driver_version or NA}",
            f"{system.gpu_count} GPUs",
            f"{system.cpu_count} CPUs",
            f"{when:%Y-%m-%d %H:%M:%S}Z",
        ],
        width,
    )


def gpu_table(info: GpuInfo | None, gpu: GpuSample) -> Table:
    """One GPU: current values beside their limits, two metrics per row, clock event reasons below."""
    name = info.name if info is not None else NA
    # Text, not a markup string: a remote exporter names the GPU (its modelName label), and Rich parses a str title.
    table = Table(box=box.ASCII, show_header=False, title=Text(f"GPU {gpu.index}  {name}"), title_justify="left")
    for _ in range(2):
        table.add_column(style="bold", no_wrap=True)
        table.add_column(no_wrap=True)
    if gpu.lost:
        table.add_row("lost", Text(gpu.error or "the GPU fell off the bus"), "", "")
        return table
    reasons = gpu.clock_event_reasons
    table.caption = f"clock events: {NA if reasons is None else (', '.join(reasons) or 'none')}"
    table.caption_justify = "left"
    mem_total = info.memory_total_bytes if info else None
    mem_pct = None
    if gpu.memory_used_bytes is not None and mem_total:
        mem_pct = 100.0 * gpu.memory_used_bytes / mem_total
    max_link = _link(info.pcie_max_gen, info.pcie_max_width) if info else _link(None, None)
    util = (
        "MIG: per instance, below"
        if gpu.in_mig_mode
        else f"{fmt_pct(gpu.utilization_gpu_pct)} (mem {fmt_pct(gpu.utilization_memory_pct)})"
    )
    rows = [
        ("util", util),
        ("SM clock", _pair(fmt_num(gpu.sm_clock_mhz), fmt_num(info.max_sm_clock_mhz if info else None), " MHz")),
        ("temp", f"{fmt_num(gpu.temperature_c)} C (slowdown {fmt_num(info.temperature_slowdown_c if info else None)})"),
        (
            "power",
            _pair(fmt_num(gpu.power_w), fmt_num(gpu.power_limit_w), " W")
            + f", default {fmt_num(info.power_default_limit_w if info else None)}",
        ),
        ("VRAM", f"{fmt_bytes_pair(gpu.memory_used_bytes, mem_total)} ({fmt_pct(mem_pct)})"),
        ("PCIe", _pair(_link(gpu.pcie_gen, gpu.pcie_width), max_link)),
        ("PCIe tx/rx", f"{fmt_rate(gpu.pcie_tx_bytes_s)} / {fmt_rate(gpu.pcie_rx_bytes_s)}"),
        ("fan", fmt_pct(gpu.fan_pct)),
        ("P-state", _or_na(gpu.pstate, lambda p: f"P{p}")),
        ("replays", fmt_num(gpu.pcie_replay_count)),
        ("SM active", f"{fmt_pct(gpu.sm_active_pct)} (occupancy {fmt_pct(gpu.sm_occupancy_pct)})"),
        ("tensor", fmt_pct(gpu.tensor_active_pct)),
        ("DRAM bw", fmt_pct(gpu.dram_bw_pct)),
        (
            "FP32/16/64",
            " / ".join(fmt_pct(v) for v in (gpu.fp32_active_pct, gpu.fp16_active_pct, gpu.fp64_active_pct)),
        ),
    ]
    for left, right in zip(rows[0::2], rows[1::2], strict=True):
        table.add_row(*left, *right)
    return table


def mig_lines(gpu: GpuSample, width: int = 120) -> list[str]:
    """A MIG GPU's mode and instances under its table: in MIG mode the instances hold the activity, the memory
    and the processes; the GPU itself has no utilization."""
    mig = gpu.mig
    if mig is None or gpu.lost:
        return []
    lines = []
    if mig.change_pending:
        lines.append(f"MIG mode {_on_off(mig.mode)} now, {_on_off(mig.pending_mode)} after the next GPU reset")
    if mig.mode and not mig.devices:
        lines.append("MIG mode on, and no MIG instance is visible")
    for device in mig.devices:
        activity = (
            f"SM active {fmt_pct(device.sm_active_pct)} (tensor {fmt_pct(device.tensor_active_pct)}, "
            f"DRAM {fmt_pct(device.dram_bw_pct)})"
            if device.sm_active_pct is not None or device.gr_engine_active_pct is None
            else f"engine active {fmt_pct(device.gr_engine_active_pct)}"
        )
        count = len(device.processes)
        fields = (
            f"{fmt_num(device.sm_count)} SMs",
            activity,
            f"VRAM {fmt_bytes_pair(device.memory_used_bytes, device.memory_total_bytes)}",
            f"{count} process{'' if count == 1 else 'es'}",
            device.uuid or NA,
        )
        lines += pack(f"  MIG {device.label}  ", fields, width)
    return lines


def _on_off(mode: bool | None) -> str:
    return NA if mode is None else ("on" if mode else "off")


def host_lines(host: HostSample, width: int = 120) -> list[str]:
    cores = host.cpu_pct_per_core
    cpu = f"CPU {fmt_pct(host.cpu_pct)} of {len(cores)} cores (busiest {max(cores):.0f}%)" if cores else f"CPU {NA}"
    load = " ".join(f"{v:.1f}" for v in host.load_avg) if host.load_avg else NA
    return pack(
        "host  ",
        [
            cpu,
            f"iowait {fmt_pct(host.iowait_pct)}",
            f"steal {fmt_pct(host.steal_pct)}",
            f"load {load}",
            f"memory {fmt_bytes_pair(host.memory_used_bytes, host.memory_total_bytes)}",
            f"swap {fmt_bytes_pair(host.swap_used_bytes, host.swap_total_bytes)}",
            f"swap in {fmt_rate(host.swap_in_bytes_s)} out {fmt_rate(host.swap_out_bytes_s)}",
            f"disk read {fmt_rate(host.disk_read_bytes_s)} write {fmt_rate(host.disk_write_bytes_s)}",
            f"disk busy {fmt_pct(host.disk_busy_pct)}",
            f"net rx {fmt_rate(host.net_rx_bytes_s)} tx {fmt_rate(host.net_tx_bytes_s)}",
            f"(link {fmt_rate(host.net_link_bytes_s)})",
        ],
        width,
    )


def container_lines(snapshot: Snapshot, width: int = 120) -> list[str]:
    """The cgroup gputui runs in, its limits and its figures now, and PSI; nothing where none is known."""
    limits, group, psi = snapshot.system.container, snapshot.host.container, snapshot.host.psi
    lines: list[str] = []
    cgroup: list[str] = []
    if limits is not None:
        where = limits.runtime or "no container"
        if limits.recognised_by:
            where += f" ({limits.recognised_by})"
        cpuset = fmt_ranges(limits.cpuset_cpus) if limits.cpuset_cpus else NA
        cgroup += [
            where,
            f"v{fmt_num(limits.cgroup_version)}",
            f"CPU quota {fmt_num(limits.cpu_quota_cores, 1)}",
            f"cpuset {cpuset}",
            f"memory limit {fmt_bytes(limits.memory_limit_bytes)}",
            f"/dev/shm {fmt_bytes(limits.shm_bytes)} (used {fmt_bytes(snapshot.host.shm_used_bytes)})",
        ]
    if group is not None:
        cgroup += [
            f"CPU {fmt_pct(group.cpu_pct_of_quota)} of quota",
            f"throttled {fmt_pct(group.cpu_throttled_pct)} of periods",
            f"memory {fmt_bytes_pair(group.memory_used_bytes, group.memory_limit_bytes)}",
            f"OOM kills {fmt_num(group.oom_kills)}",
        ]
    if cgroup:
        lines += pack("cgroup  ", cgroup, width, sep=", ")
    if psi is not None:
        lines += pack(
            "PSI     ",
            [
                f"cpu some {fmt_pct(psi.cpu_some_pct)}",
                f"io some {fmt_pct(psi.io_some_pct)} full {fmt_pct(psi.io_full_pct)}",
                f"memory some {fmt_pct(psi.memory_some_pct)} full {fmt_pct(psi.memory_full_pct)}",
            ],
            width,
        )
    return lines


def _shorten(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def process_lines(snapshot: Snapshot, width: int = 120) -> list[str]:
    """The processes on the GPUs, joined with what the host knows of them.

    Each command goes at the end of its row when the terminal is wide enough, else on a line of its own; under
    it, where its stacks were sampled, what its main thread did (its activity) and the top frame.
    """
    layout = "{:>3} {:>7} {:<8} {:>9} {:>4} {:>5} {:>7} {:>8} {:>10} {:<5}"
    header = layout.format("GPU", "PID", "user", "GPU mem", "SM", "CPU", "threads", "children", "read", "state")
    inline = width - len(header) - 2 >= 30
    lines = ["GPU processes", f"{header}  command" if inline else header.rstrip()]
    for gpu in snapshot.gpus:
        for proc in gpu.processes:
            host = snapshot.host.process(proc.pid) if proc.seen != "hidden" else None
            row = layout.format(
                gpu.index,
                f"{proc.pid}*" if proc.seen == "device" else proc.pid,
                _shorten((host.user if host else None) or NA, 8),
                fmt_bytes(proc.used_memory_bytes),
                fmt_pct(proc.sm_pct),
                fmt_pct(host.cpu_pct if host else None),
                fmt_num(host.threads if host else None),
                fmt_num(host.children if host else None),
                fmt_rate(host.read_bytes_s if host else None),
                _shorten((host.state if host else None) or NA, 5),
            ).rstrip()
            command = (host.cmdline or host.name) if host else NA
            command = _joined(proc, host, command, gpu.instance_of(proc))
            if inline:
                lines.append(f"{row}  {_shorten(command, width - len(row) - 3)}")
            else:
                lines.extend((row, f"    {_shorten(command, width - 5)}"))
            if host is not None and host.activity is not None:
                # Wrapped, not cut: why no stack was read ends with what to do.
                for line in detail_lines(host.activity, snapshot.timestamp):
                    lines += textwrap.wrap(line, max(20, width - 1), initial_indent="    ", subsequent_indent="      ")
    return lines if len(lines) > 2 else []


def _joined(proc: GpuProcess, host: ProcSample | None, command: str, instance: MigDevice | None = None) -> str:
    """The command, with how the process was matched when that is not by NVML's own PID here."""
    if proc.seen == "hidden":
        return HIDDEN_PROCESS
    notes = [] if instance is None else [f"MIG {instance.label}"]
    if proc.seen == "device":
        host_pid = f"host PID {proc.host_pid}" if proc.host_pid is not None else "host PID n/a"
        notes.append(f"found through /dev/nvidia*, {host_pid}")
    if host is not None and host.container:
        inner = f" PID {host.container_pid}" if host.container_pid is not None else ""
        notes.append(f"container {host.container}{inner}")
    owner = fmt_owner(host.pod, host.namespace, host.job_id) if host is not None else None
    if host is not None and owner is not None:
        in_container = f" container {host.k8s_container}" if host.k8s_container else ""
        notes.append(f"pod {owner}{in_container}" if host.pod is not None else owner)
    refused = fmt_unreadable(host.unreadable) if host is not None else None
    if refused is not None:
        notes.append(refused)
    return f"[{'; '.join(notes)}] {command}" if notes else command


def print_snapshot(snapshot: Snapshot, console: Console | None = None) -> None:
    """Print one snapshot: the simulated label first, then each GPU, the host and the GPU processes."""
    console = console or Console(highlight=False)
    label = banner(snapshot.system)
    if label is not None:
        console.print(label)
        for line in banner_details(snapshot.system):
            console.print(Text(line, style="yellow"))
    width = console.width
    for line in _system_lines(snapshot, width):
        console.print(Text(line))
    for event in snapshot.events:
        console.print(Text(f"notice: {event}"))
    for gpu in snapshot.gpus:
        console.print(gpu_table(snapshot.info(gpu.index), gpu))
        for line in mig_lines(gpu, width):
            console.print(Text(line))
    for line in host_lines(snapshot.host, width) + container_lines(snapshot, width):
        console.print(Text(line))
    for line in process_lines(snapshot, width):
        console.print(Text(line))
    if label is not None:
        console.print(label)


NO_TOPOLOGY = (
    "No topology: this source did not read how the GPUs connect (remote exporters and older recordings do not)."
)


def _columns(rows: list[list[str]]) -> list[str]:
    """Rows of cells as left-aligned columns, two spaces apart, trailing spaces dropped."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]


def topology_lines(snapshot: Snapshot) -> list[str]:
    """What `nvidia-smi topo -m` and `nvidia-smi nvlink -s` say: the matrix, its legend, P2P per pair."""
    topology = snapshot.system.topology
    if topology is None:
        return [NO_TOPOLOGY]
    names = topo.labels(snapshot.gpu_info)
    samples = {gpu.index: gpu for gpu in snapshot.gpus}
    matrix = [["", *names, "NUMA", "CPU affinity", "NVLink"]]
    p2p = [["", *names]]
    for row, info in enumerate(snapshot.gpu_info):
        cells = [topo.cell_text(topo.matrix_cell(topology, row, col)) for col in range(len(names))]
        near = [topo.numa_text(topology, row), topo.affinity_text(topology, row)]
        matrix.append([names[row], *cells, *near, topo.links_text(info, samples.get(info.index))])
        p2p.append([names[row], *(topo.p2p_cell(topology, row, col) for col in range(len(names)))])
    lines = [*_columns(matrix), "", "Legend:"]
    lines += [f"  {key:<4}  {meaning}" for key, meaning in topo.LEGEND]
    lines += ["", "NVLink: links active / links the GPU has; n/a where the GPU has none or it was not read.", ""]
    if len(names) < 2:
        return [*lines, "P2P: no GPU pairs (one GPU)."]
    return [*lines, "P2P (peer read and write between the pair): OK, no, n/a (not read)", *_columns(p2p)]


def print_topology(snapshot: Snapshot, console: Console | None = None) -> None:
    """Print the topology: the simulated label first and last, as every view of simulated data."""
    console = console or Console(highlight=False)
    label = banner(snapshot.system)
    if label is not None:
        console.print(label)
    width = console.width
    for line in _system_lines(snapshot, width):
        console.print(Text(line))
    for line in topology_lines(snapshot):
        console.print(Text(line), soft_wrap=True)
    if label is not None:
        console.print(label)
