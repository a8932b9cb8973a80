"""GPM metrics and per-process utilization through NvmlSource, against a fake that answers as pynvml does."""

from __future__ import annotations

import pynvml
import pytest

from gputui.model import GpuSample
from gputui.serialize import snapshot_to_dict
from gputui.sources.host.source import HostSource
from gputui.sources.nvml.efficiency import GPM_METRICS
from gputui.sources.nvml.source import NvmlSource
from tests.conftest import Clock
from tests.fake_psutil import NO_PROC, FakePsutil
from tests.fake_pynvml import GPM_FUNCTIONS, MIB, FakeGpu, FakeNvml, consumer_gpu

GPM_KEYS = tuple(key for key, _ in GPM_METRICS)


def opened(nvml: FakeNvml, clock: Clock, slow_every: int = 1) -> NvmlSource:
    host = HostSource(clock=clock, psutil_module=FakePsutil(), root=NO_PROC)  # type: ignore[arg-type]
    source = NvmlSource(pynvml=nvml, host=host, clock=clock, root=NO_PROC, slow_every=slow_every, watch_xid=False)
    source.open()
    return source


def ticks(source: NvmlSource, clock: Clock, n: int, every: float = 1.0) -> list[GpuSample]:
    """The first GPU's samples over n ticks `every` seconds apart."""
    out = []
    for _ in range(n):
        out.append(source.sample().gpus[0])
        clock.advance(every)
    return out


def gpm(sample: GpuSample) -> dict[str, float | None]:
    return {key: getattr(sample, key) for key in GPM_KEYS}


def test_hopper_reports_gpm_from_the_second_sample_on(clock: Clock) -> None:
    nvml = FakeNvml([FakeGpu()])
    first, second, third = ticks(opened(nvml, clock), clock, 3)
    assert set(gpm(first).values()) == {None}  # one sample is not a pair yet: n/a, not 0
    assert (second.sm_active_pct, second.tensor_active_pct, second.dram_bw_pct) == (86.0, 48.0, 55.0)
    assert (second.sm_occupancy_pct, second.gr_engine_active_pct) == (41.0, 97.0)
    assert (second.fp32_active_pct, second.fp16_active_pct, second.fp64_active_pct) == (12.0, 3.0, 0.0)
    assert second.nvlink_rx_bytes_s == 20_480 * MIB  # GPM reports MiB/s
    assert second.nvlink_tx_bytes_s == 19_456 * MIB
    assert gpm(third) == gpm(second)
    assert nvml.count("nvmlGpmSampleAlloc") == 2  # two buffers for the whole session, alternating
    assert nvml.count("nvmlGpmSampleGet") == 3
    assert nvml.count("nvmlGpmMetricsGet") == 2


def test_samples_closer_than_100_ms_keep_the_last_metrics(clock: Clock) -> None:
    nvml = FakeNvml([FakeGpu()])
    source = opened(nvml, clock)
    ticks(source, clock, 2)
    values = nvml.gpus[0].gpm
    assert values is not None
    values[pynvml.NVML_GPM_METRIC_SM_UTIL] = 20.0
    quick = ticks(source, clock, 3, every=0.05)
    assert [s.sm_active_pct for s in quick] == [20.0, 20.0, 20.0]
    assert nvml.count("nvmlGpmSampleGet") == 3  # no sample is taken within 100 ms of the last
    clock.advance(0.2)
    values[pynvml.NVML_GPM_METRIC_SM_UTIL] = 55.0
    assert source.sample().gpus[0].sm_active_pct == 55.0


@pytest.mark.parametrize(
    ("nvml", "asked"),
    [
        pytest.param(FakeNvml([FakeGpu(name="NVIDIA A100-SXM4-80GB", gpm=None)]), 1, id="pre-Hopper board"),
        pytest.param(FakeNvml([FakeGpu()], old_driver=True), 1, id="driver before GPM"),
        pytest.param(FakeNvml([FakeGpu()], missing=sorted(GPM_FUNCTIONS)), 0, id="pynvml before GPM"),
        pytest.param(
            FakeNvml([FakeGpu(errors={"nvmlGpmQueryDeviceSupport": pynvml.NVML_ERROR_NO_PERMISSION})]),
            1,
            id="no permission",
        ),
        pytest.param(
            FakeNvml([FakeGpu(mig_mode=(pynvml.NVML_DEVICE_MIG_ENABLE, pynvml.NVML_DEVICE_MIG_ENABLE))]),
            0,
            id="MIG mode",
        ),
    ],
)
def test_without_gpm_the_metrics_are_unavailable_and_asked_once(nvml: FakeNvml, asked: int, clock: Clock) -> None:
    samples = ticks(opened(nvml, clock), clock, 4)
    # NVLink traffic then comes from field values instead (tests/sources/nvml/test_links.py)
    assert all({v for k, v in gpm(s).items() if not k.startswith("nvlink")} == {None} for s in samples)
    assert not any(s.lost for s in samples)  # never an error
    in_mig_mode = nvml.gpus[0].in_mig_mode  # which gives no whole-GPU utilization (nvml.h)
    assert all((s.utilization_gpu_pct is None) == in_mig_mode for s in samples)
    assert nvml.count("nvmlGpmQueryDeviceSupport") == asked
    assert nvml.count("nvmlGpmSampleGet") == 0
    assert nvml.gpm_buffers == {}


def test_one_metric_failing_leaves_the_others(clock: Clock) -> None:
    gpu = FakeGpu(gpm_returns={pynvml.NVML_GPM_METRIC_SM_OCCUPANCY: pynvml.NVML_ERROR_NOT_SUPPORTED})
    del gpu.gpm[pynvml.NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC]  # type: ignore[union-attr]
    sample = ticks(opened(FakeNvml([gpu]), clock), clock, 2)[1]
    assert sample.sm_occupancy_pct is None
    assert sample.nvlink_rx_bytes_s is None
    assert (sample.sm_active_pct, sample.tensor_active_pct) == (86.0, 48.0)


def test_a_passing_error_costs_one_tick_then_a_fresh_pair(clock: Clock) -> None:
    nvml = FakeNvml([FakeGpu()])
    source = opened(nvml, clock)
    ticks(source, clock, 2)
    nvml.gpus[0].errors["nvmlGpmMetricsGet"] = pynvml.NVML_ERROR_UNKNOWN
    failed = ticks(source, clock, 1)[0]
    del nvml.gpus[0].errors["nvmlGpmMetricsGet"]
    fresh, paired = ticks(source, clock, 2)
    assert failed.sm_active_pct is None
    assert fresh.sm_active_pct is None  # the first sample of a new pair
    assert paired.sm_active_pct == 86.0


def test_a_gpu_lost_between_two_samples_is_lost_and_the_others_go_on(clock: Clock) -> None:
    nvml = FakeNvml([FakeGpu(), FakeGpu()])
    source = opened(nvml, clock)
    source.sample()
    clock.advance(1.0)
    nvml.gpus[0].errors["nvmlGpmSampleGet"] = pynvml.NVML_ERROR_GPU_IS_LOST
    lost, alive = source.sample().gpus
    assert lost.lost and lost.sm_active_pct is None
    assert "fell off the bus" in (lost.error or "")
    assert alive.sm_active_pct == 86.0
    source.close()
    assert nvml.gpm_buffers == {}  # the lost GPU's buffers are freed too


def test_close_frees_every_gpm_buffer_before_shutdown(clock: Clock) -> None:
    nvml = FakeNvml([FakeGpu(), FakeGpu(), consumer_gpu()])
    source = opened(nvml, clock)
    ticks(source, clock, 2)
    assert len(nvml.gpm_buffers) == 4  # two per Hopper GPU, none for the consumer board
    source.close()
    assert nvml.gpm_buffers == {}
    assert nvml.count("nvmlGpmSampleFree") == 4
    assert nvml.shutdowns == 1


def test_each_process_gets_its_sm_and_memory_share(clock: Clock) -> None:
    gpu = FakeGpu(
        compute_processes=[(4242, 60_000 * MIB), (5151, 1_000 * MIB)],
        process_samples=[(4242, 100, 70, 30), (4242, 200, 83, 41), (5151, 150, 9, 2)],
    )
    nvml = FakeNvml([gpu])
    source = opened(nvml, clock)
    first = ticks(source, clock, 1)[0]
    shares = {p.pid: (p.sm_pct, p.mem_pct) for p in first.processes}
    assert shares == {4242: (83.0, 41.0), 5151: (9.0, 2.0)}  # the newest sample of each
    again = ticks(source, clock, 1)[0]  # nothing newer than timestamp 200: NotFound
    assert {p.pid: p.sm_pct for p in again.processes} == {4242: None, 5151: None}
    gpu.process_samples.append((5151, 300, 44, 10))  # type: ignore[union-attr]
    later = ticks(source, clock, 1)[0]
    assert {p.pid: p.sm_pct for p in later.processes} == {4242: None, 5151: 44.0}
    out = snapshot_to_dict(source.sample())["gpus"][0]["processes"]
    assert {p["pid"]: (p["sm_pct"], p["mem_pct"]) for p in out} == {4242: (None, None), 5151: (None, None)}


def test_process_utilization_unsupported_is_unavailable_and_asked_once(clock: Clock) -> None:
    nvml = FakeNvml([FakeGpu(process_samples=None)])
    samples = ticks(opened(nvml, clock), clock, 3)
    assert [p.sm_pct for s in samples for p in s.processes] == [None, None, None]
    assert nvml.count("nvmlDeviceGetProcessUtilization") == 1


def test_gpm_fields_are_json_keys_null_when_unsupported(clock: Clock) -> None:
    nvml = FakeNvml([FakeGpu(), consumer_gpu()])
    source = opened(nvml, clock)
    source.sample()
    clock.advance(1.0)
    hopper, geforce = snapshot_to_dict(source.sample())["gpus"]
    assert hopper["sm_active_pct"] == 86.0 and hopper["tensor_active_pct"] == 48.0
    assert {key: geforce[key] for key in GPM_KEYS} == dict.fromkeys(GPM_KEYS)
