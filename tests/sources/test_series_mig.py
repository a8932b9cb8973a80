"""MIG read back from series (`--remote`, `--prometheus`): a series with GPU_I_ID is an instance's, never its GPU's.

Two pages: gputui's own export of a MIG machine (tests/record/migdata.py) and a canned dcgm-exporter page of an
H100 cut into two 3g.40gb instances beside an H100 without MIG (data/dcgm-exporter-mig.prom, in the shape of
dcgm-exporter's render_metrics.go: every series of a MIG GPU per instance, the parent's clocks, temperature and
power repeated on each, Kubernetes pods per instance). Read by scraping, and through a real Prometheus.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from gputui.diagnostics.fleet_rules import NodeWindow, fleet_findings
from gputui.export.metrics import ExportState
from gputui.model import GpuSample, MigDevice, Snapshot
from gputui.sources.prometheus.client import PrometheusClient
from gputui.sources.prometheus.fleet_query import FleetReading, read_fleet, read_history
from gputui.sources.remote import RemoteSource, parse_exposition
from tests.export.export_helpers import render
from tests.record.migdata import INSTANCE_TOTAL, mig_snapshot, pid_of
from tests.sources.prometheus.prom_stub import Behaviour, canned_prometheus, series_of_page
from tests.sources.prometheus.prometheus_server import running_prometheus
from tests.sources.prometheus.targets import served_page
from tests.sources.prometheus.test_prometheus_e2e import eventually

MIG_PAGE = Path(__file__).parent / "prometheus" / "data" / "dcgm-exporter-mig.prom"
MIG_HOST = "dgx-h100-mig-03"
MIB = 1 << 20
T = 1_780_000_000.0


def _gputui_page(n_gpus: int = 2) -> tuple[Snapshot, str]:
    snap = mig_snapshot(T, n_gpus)
    return snap, render(ExportState(system=snap.system, snapshot=snap))


def _same_instance(got: MigDevice, want: MigDevice) -> None:
    """Equal, the profiling ratios to float precision (they travel as 0-1 ratios)."""
    for field in dataclasses.fields(MigDevice):
        a, b = getattr(got, field.name), getattr(want, field.name)
        if isinstance(b, float):
            assert a == pytest.approx(b), field.name
        else:
            assert a == b, field.name


def _check_gputui_mig(gpu: GpuSample, want: GpuSample) -> None:
    assert gpu.mig is not None and want.mig is not None
    assert (gpu.mig.mode, gpu.mig.pending_mode) == (True, True)
    assert len(gpu.mig.devices) == len(want.mig.devices)
    for got, expected in zip(gpu.mig.devices, want.mig.devices, strict=True):
        _same_instance(got, expected)
    # The GPU keeps its own aggregate; the instances' figures never overwrite it.
    assert gpu.memory_used_bytes == want.memory_used_bytes
    assert gpu.utilization_gpu_pct is None and gpu.sm_active_pct is None and gpu.tensor_active_pct is None
    assert [(p.pid, p.gpu_instance_id, p.compute_instance_id) for p in gpu.processes] == [
        (pid_of(gpu.index, 1), 1, 0),
        (pid_of(gpu.index, 2), 2, 0),
    ]


def _check_dcgm_mig(snapshot: Snapshot) -> None:
    mig_gpu, plain = snapshot.gpus
    assert mig_gpu.mig is not None and plain.mig is None
    assert (mig_gpu.mig.mode, mig_gpu.mig.pending_mode) == (True, None)  # dcgm-exporter says no pending mode
    first, second = mig_gpu.mig.devices
    assert (first.index, first.profile, first.gpu_instance_id, second.gpu_instance_id) == (0, "3g.40gb", 1, 2)
    assert first.uuid is None and first.compute_instance_id is None  # dcgm-exporter names neither
    assert first.memory_used_bytes == 30735 * MIB and second.memory_used_bytes == 12303 * MIB
    assert first.memory_total_bytes is None  # no DCGM_FI_DEV_FB_TOTAL on the page: not made up from used + free
    assert first.gr_engine_active_pct == pytest.approx(93.5112)
    assert second.tensor_active_pct == pytest.approx(3.1005) and second.dram_bw_pct == pytest.approx(5.2118)
    assert first.sm_active_pct is None  # not on the page
    # The parent: its own readings, as each instance repeats them; no memory or activity of its own in MIG mode.
    assert (mig_gpu.temperature_c, mig_gpu.power_w, mig_gpu.sm_clock_mhz) == (64.0, pytest.approx(431.807), 1980)
    assert mig_gpu.energy_mj == 918273645512
    assert mig_gpu.memory_used_bytes is None and mig_gpu.memory_free_bytes is None
    assert mig_gpu.memory_reserved_bytes is None
    assert mig_gpu.utilization_gpu_pct is None and mig_gpu.gr_engine_active_pct is None
    # The GPU without MIG reads as before: its zeros are data.
    assert (plain.utilization_gpu_pct, plain.memory_used_bytes, plain.memory_free_bytes) == (0.0, 0, 81004 * MIB)
    assert plain.temperature_c == 41.0
    assert [info.uuid for info in snapshot.gpu_info] == [
        "GPU-7c1d09a2-55e1-4f3b-a0c4-3e2f81d6b901",
        "GPU-0f3e4b1c-9d2a-47e8-b6a5-1c2d3e4f5a6b",
    ]


def test_gputui_export_of_mig_reads_back_whole() -> None:
    snap, page = _gputui_page()
    back = parse_exposition(page, fallback_hostname="x", now=0.0)
    for gpu, want in zip(back.gpus, snap.gpus, strict=True):
        _check_gputui_mig(gpu, want)


def test_instance_series_never_overwrite_the_gpus_memory_whatever_their_order() -> None:
    """Before MIG was read, the last FB_USED series of a GPU won: an instance's 12 GiB became the GPU's figure."""
    snap, page = _gputui_page(1)
    lines = page.splitlines()
    instance_lines = [line for line in lines if line.startswith("DCGM_FI_DEV_FB_USED{GPU_I_ID")]
    reordered = "\n".join([line for line in lines if line not in instance_lines] + instance_lines) + "\n"
    gpu = parse_exposition(reordered, fallback_hostname="x", now=0.0).gpus[0]
    assert gpu.memory_used_bytes == snap.gpus[0].memory_used_bytes
    assert gpu.mig is not None and gpu.mig.devices[1].memory_used_bytes == snap.gpus[0].mig.devices[1].memory_used_bytes  # type: ignore[union-attr]
    assert gpu.mig.devices[0].memory_total_bytes == INSTANCE_TOTAL


def test_an_instance_id_that_is_not_a_number_is_read_as_nobodys() -> None:
    page = MIG_PAGE.read_text().replace('GPU_I_ID="2"', 'GPU_I_ID="x"')
    gpu = parse_exposition(page, fallback_hostname="x", now=0.0).gpus[0]
    assert gpu.mig is not None and [d.gpu_instance_id for d in gpu.mig.devices] == [1]
    assert gpu.memory_used_bytes is None  # the unreadable instance's memory did not become the GPU's


def test_a_dcgm_exporter_mig_page_by_scraping() -> None:
    with served_page(MIG_PAGE) as address:
        snapshot = RemoteSource(address, timeout=5).sample()
    assert snapshot.system.hostname == MIG_HOST
    _check_dcgm_mig(snapshot)


@pytest.mark.usefixtures("prometheus_installed")
def test_both_mig_pages_through_a_real_prometheus(tmp_path: Path) -> None:
    snap, page = _gputui_page()
    gputui_page = tmp_path / "gputui-mig.prom"
    gputui_page.write_text(page)
    with served_page(MIG_PAGE) as dcgm, served_page(gputui_page) as ours, running_prometheus([dcgm, ours]) as prom:
        client = PrometheusClient(prom.url, timeout=5, env={})

        def complete(reading: FleetReading) -> bool:
            hosts = reading.hosts
            return (
                MIG_HOST in hosts
                and snap.system.hostname in hosts
                and len(hosts[MIG_HOST].snapshot.gpus) == 2
                and all(
                    g.mig is not None and len(g.mig.devices) == 2 for g in hosts[snap.system.hostname].snapshot.gpus
                )
            )

        reading = eventually(lambda: read_fleet(client), complete, "both MIG hosts with their instances")
    _check_dcgm_mig(reading.hosts[MIG_HOST].snapshot)
    ours_back = reading.hosts[snap.system.hostname].snapshot
    for gpu, want in zip(ours_back.gpus, snap.gpus, strict=True):
        _check_gputui_mig(gpu, want)
    # Each instance's pod from its own series; the GPU has none, as no series without GPU_I_ID names one.
    mig_host = reading.hosts[MIG_HOST]
    assert _instance_pods(mig_host.snapshot) == ["ml-training/train-llm-2-worker-0", "research/notebook-011-0"]
    assert mig_host.snapshot.gpus[0].pod is None and mig_host.owners == {}
    assert mig_host.instance_owners == {
        (0, 1): {"pod": "train-llm-2-worker-0", "namespace": "ml-training", "container": "trainer"},
        (0, 2): {"pod": "notebook-011-0", "namespace": "research", "container": "jupyter"},
    }


def _instance_pods(snapshot: Snapshot) -> list[str | None]:
    mig = snapshot.gpus[0].mig
    assert mig is not None
    return [d.pod for d in mig.devices]


def _as_service_monitor_scrapes(page: str) -> list[tuple[dict[str, str], float]]:
    """The page as Prometheus stores it when the target has pod labels of its own (a ServiceMonitor, honor_labels
    off): the exporter's pod, namespace and container renamed exported_*."""
    target = {"instance": "10.0.0.3:9400", "job": "dcgm-exporter", "namespace": "gpu-operator", "pod": "dcgm-x1"}
    out = []
    for labels, value in series_of_page(page):
        own = {(f"exported_{k}" if k in ("pod", "namespace", "container") else k): v for k, v in labels.items()}
        out.append(({**own, **target}, value))
    return out


def test_an_idle_instance_of_the_dcgm_page_is_named_with_its_pod() -> None:
    """The canned page over a window, its GI 2 engine idle: idle_allocated names that instance by the pod given it,
    read through a Prometheus query API; GI 1 at work, and GPU 1 (idle, held by nobody), are not named."""
    idle_page = "\n".join(
        line.replace("} 0.120044", "} 0.0") if line.startswith("DCGM_FI_PROF_GR_ENGINE_ACTIVE{") else line
        for line in MIG_PAGE.read_text().splitlines()
    )
    assert idle_page != MIG_PAGE.read_text().rstrip("\n")
    with canned_prometheus(Behaviour(series=_as_service_monitor_scrapes(idle_page + "\n"))) as url:
        history = read_history(PrometheusClient(url, timeout=5, env={}), None, T, T + 210, 30)
    seen = history.hosts[MIG_HOST]
    assert seen.source == "dcgm-exporter" and len(seen.snapshots) == 8
    last = seen.snapshots[-1]
    assert _instance_pods(last) == ["ml-training/train-llm-2-worker-0", "research/notebook-011-0"]
    assert last.gpus[0].pod is None and last.gpus[1].pod is None  # never the exporter's own pod
    window = NodeWindow(host=MIG_HOST, source=seen.source, snapshots=seen.snapshots, findings=())
    (f,) = fleet_findings([window])
    assert f.rule == "idle_allocated" and f.mig_instances == ((MIG_HOST, 0, 2),)
    assert f.title == f"{MIG_HOST} GPU 0 / 3g.40gb (GI 2): held by pod research/notebook-011-0, idle for 3m30s"
