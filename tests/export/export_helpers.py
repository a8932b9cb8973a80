"""Hand-made machines for the exporter tests and helpers to scrape and read an exposition."""

from __future__ import annotations

import signal
import socket
import subprocess
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from gputui.diagnostics.findings import Finding, Severity
from gputui.export.metrics import ExportState
from gputui.export.page import SnapshotCollector
from gputui.metric_schema import HOSTNAME_LABEL, HostnameLabel
from gputui.model import ContainerSample, GpuInfo, GpuProcess, GpuSample, ProcSample, PsiSample, Snapshot, SystemInfo
from tests.snapshots import MIB, gpu, gpu_info, host, proc, snapshot, system_info

T0 = 1_767_225_600.0

SYSTEM = system_info(hostname="gpu01", gpu_count=3, cpu_count=4, kernel="6.8.0")


def make_snapshot(system: SystemInfo = SYSTEM, t: float = T0) -> Snapshot:
    """GPU 0 reports everything (GPM too), GPU 1 reports little (None must stay None), GPU 2 fell off the bus."""
    info0 = gpu_info(
        0,
        uuid="GPU-0781f3bb-da15-f334-d5db-37b3f19542d0",
        serial="1650123456789",
        pci_bus_id="00000000:18:00.0",
        memory_total_bytes=81559 * MIB,
        max_graphics_clock_mhz=1980,
        default_app_sm_clock_mhz=1755,
        default_app_memory_clock_mhz=2619,
        power_min_limit_w=200.0,
        power_max_limit_w=700.0,
        temperature_shutdown_c=92,
        temperature_gpu_max_c=87,
        temperature_memory_max_c=95,
        persistence_mode=True,
        compute_mode="Default",
        mig_mode=False,
        ecc_mode=True,
    )
    info1 = GpuInfo(index=1, name="NVIDIA GeForce RTX 4090")
    info2 = GpuInfo(index=2, name="NVIDIA H100 80GB HBM3", uuid="GPU-lost")
    gpu0 = gpu(
        0,
        utilization_memory_pct=41.0,
        sm_clock_mhz=1755,
        graphics_clock_mhz=1755,
        temperature_c=71.0,
        memory_temperature_c=63.0,
        power_w=612.5,
        memory_used_bytes=70000 * MIB,
        memory_reserved_bytes=512 * MIB,
        memory_free_bytes=11047 * MIB,
        pcie_tx_bytes_s=1.5e9,
        pcie_rx_bytes_s=2.25e9,
        pcie_replay_count=3,
        clock_event_reasons_mask=0x4 | 0x20,
        power_violation_ns=5_000_000_000,
        thermal_violation_ns=1_234_000,
        energy_mj=123_456_789_012,
        xid_events=(13, 79),
        encoder_pct=0.0,
        decoder_pct=0.0,
        gr_engine_active_pct=96.0,
        sm_active_pct=81.5,
        sm_occupancy_pct=37.5,
        tensor_active_pct=62.5,
        dram_bw_pct=44.0,
        fp32_active_pct=12.5,
        fp16_active_pct=3.0,
        fp64_active_pct=0.0,
        nvlink_rx_bytes_s=2.5e10,
        nvlink_tx_bytes_s=1.25e10,
        processes=(
            GpuProcess(pid=4242, used_memory_bytes=69000 * MIB, sm_pct=88.0, mem_pct=40.0),
            GpuProcess(pid=4300, used_memory_bytes=None),
        ),
    )
    gpu1 = GpuSample(index=1, timestamp=t, utilization_gpu_pct=0.0, temperature_c=35.0, fan_pct=30)
    gpu2 = GpuSample(index=2, timestamp=t, lost=True, error="GPU is lost")
    trainer = proc(
        4242,
        name="python",
        cmdline="python train.py --secret-token=abc",
        cpu_pct=99.5,
        threads=48,
        children=0,
        read_bytes_s=1.25e8,
        rss_bytes=30 << 30,
        state="R",
        pod="train-0",
        namespace="ml",
        k8s_container="trainer",
    )
    machine = host(
        [trainer, ProcSample(pid=4300, name="pt_data_worker", job_id="4711")],
        cpu_pct_per_core=(100.0, 12.5, 0.0, 50.0),
        iowait_pct=7.5,
        load_avg=(3.5, 2.25, 1.0),
        memory_used_bytes=64 << 30,
        memory_total_bytes=512 << 30,
        swap_used_bytes=0,
        swap_total_bytes=8 << 30,
        disk_read_bytes_s=4.5e8,
        disk_write_bytes_s=1e6,
        disk_busy_pct=88.0,
        net_rx_bytes_s=1e8,
        net_tx_bytes_s=2e7,
        container=ContainerSample(
            cpu_throttled_pct=25.0, memory_used_bytes=60 << 30, memory_limit_bytes=64 << 30, oom_kills=2
        ),
        psi=PsiSample(cpu_some_pct=50.0, io_some_pct=12.5, io_full_pct=None, memory_some_pct=0.0, memory_full_pct=0.0),
    )
    return snapshot(t, (gpu0, gpu1, gpu2), (info0, info1, info2), machine, system)


FINDINGS = (
    Finding(rule="thermal", severity=Severity.CRITICAL, title="GPU 0 is throttling", advice="cool it", gpus=(0,)),
    Finding(rule="starved-io", severity=Severity.WARNING, title="input bound", advice="more workers", gpus=(0, 1)),
    Finding(rule="swap", severity=Severity.INFO, title="host swaps", advice="add memory"),
)


class FakeSource:
    """A Source that hands out prepared snapshots (the last one repeats), or raises what it is given."""

    def __init__(self, snapshot: Snapshot | None = None, *, hostname: str = "gpu01") -> None:
        base = snapshot or make_snapshot(replace(SYSTEM, hostname=hostname))
        self.snapshots: list[Snapshot | Exception] = [base]
        self.calls = 0
        self.sampled = threading.Event()

    @property
    def system(self) -> SystemInfo:
        first = self.snapshots[0]
        assert isinstance(first, Snapshot)
        return first.system

    def open(self) -> SystemInfo:
        return self.system

    def sample(self) -> Snapshot:
        item = self.snapshots[min(self.calls, len(self.snapshots) - 1)]
        self.calls += 1
        self.sampled.set()
        if isinstance(item, Exception):
            raise item
        return replace(item, timestamp=item.timestamp + self.calls)

    def close(self) -> None:
        pass


Series = dict[str, list[tuple[dict[str, str], float]]]


def render(state: ExportState) -> str:
    """The exposition text one scrape of `state` gets, without a server."""
    return render_with(state, HOSTNAME_LABEL)


def render_with(state: ExportState, hostname_label: HostnameLabel) -> str:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SnapshotCollector(lambda: state, hostname_label=hostname_label))
    return generate_latest(registry).decode()


def parse(text: str) -> tuple[Series, dict[str, str]]:
    """Exposition text -> (series by sample name, type by family name), with prometheus-client's own parser."""
    series: Series = {}
    types: dict[str, str] = {}
    for family in text_string_to_metric_families(text):
        types[family.name] = family.type
        for sample in family.samples:
            series.setdefault(sample.name, []).append((dict(sample.labels), sample.value))
    return series, types


def fetch(url: str) -> tuple[str, str]:
    """(body, content type) of one scrape, straight from the socket (no proxy)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=5) as response:
        return response.read().decode(), response.headers["Content-Type"]


def one(series: Series, metric: str, **labels: str) -> float:
    """The value of the single series of `metric` whose labels include `labels`."""
    found = [v for lab, v in series.get(metric, []) if all(lab.get(k) == want for k, want in labels.items())]
    assert len(found) == 1, f"{metric}{labels}: {found}"
    return found[0]


@contextmanager
def stopped_at_the_end(child: subprocess.Popen[Any], stop: signal.Signals = signal.SIGTERM) -> Iterator[None]:
    """A `gputui export` child for the block: `stop` ends it cleanly (exit 0) once the block is done; killed and
    reaped where the block failed first or the signal did not end it."""
    try:
        yield
        child.send_signal(stop)
        assert child.wait(timeout=10) == 0
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def wait_until(condition: Callable[[], bool], seconds: float = 10.0) -> bool:
    """Whether `condition` holds within `seconds` (checked every 10 ms): a bounded wait on the state a test asserts."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def accept_queue(port: int) -> int:
    """Connections that wait in the kernel's backlog of the socket listening on 127.0.0.1:`port`, not yet accepted
    (for a listening socket, /proc/net/tcp's rx_queue is its accept queue)."""
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[1] == f"0100007F:{port:04X}" and fields[3] == "0A":  # 0A: LISTEN
            return int(fields[4].split(":")[1], 16)
    raise AssertionError(f"nothing listens on 127.0.0.1:{port}")


def idle_connections(port: int, count: int) -> list[socket.socket]:
    """`count` connections to 127.0.0.1:`port` that send nothing: each connect returns once the kernel has queued it,
    accepted or not."""
    return [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(count)]


def closed_by_peer(conn: socket.socket) -> bool:
    """Whether the other end has closed `conn`: reads up to its end (or a reset) within the socket's timeout."""
    try:
        while conn.recv(65536):
            pass
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
    return True
