"""The model's helpers: clock event decoding, the activity fields shared by name, and the history ring."""

from __future__ import annotations

import dataclasses

import pytest

from gputui.history import History
from gputui.model import (
    ACTIVITY_FIELDS,
    GpmValues,
    GpuSample,
    HostSample,
    MigDevice,
    Snapshot,
    decode_clock_event_reasons,
    encode_clock_event_reasons,
    gpm_activity,
)
from tests.snapshots import snapshot


def snap(t: float, util: float | None, lost: bool = False) -> Snapshot:
    return snapshot(t, [GpuSample(index=0, timestamp=t, utilization_gpu_pct=util, lost=lost)], (), HostSample(t))


def test_decode_names_each_bit_and_keeps_unknown_bits() -> None:
    assert decode_clock_event_reasons(0x4 | 0x40) == ("sw_power_cap", "hw_thermal_slowdown")
    assert decode_clock_event_reasons(0x200 | 0x1) == ("gpu_idle", "0x200")
    assert decode_clock_event_reasons(0) == ()


def test_decode_of_unreported_mask_is_none_not_empty() -> None:
    assert decode_clock_event_reasons(None) is None


def test_encode_inverts_decode() -> None:
    for mask in (0, 0x1, 0x24, 0x1FF, 0x600):
        names = decode_clock_event_reasons(mask)
        assert names is not None
        assert encode_clock_event_reasons(names) == mask


def test_activity_fields_are_fields_of_mig_device_gpu_sample_and_gpm_values() -> None:
    # Copied by name from GPM values into either class, and from an instance into the GPU sample it reads as.
    mig = {f.name: f.type for f in dataclasses.fields(MigDevice)}
    gpu = {f.name: f.type for f in dataclasses.fields(GpuSample)}
    for name in ACTIVITY_FIELDS:
        assert mig.get(name) == gpu.get(name) == "float | None", name
        assert name in GpmValues.__annotations__, name


def test_gpm_activity_leaves_nvlink_out_and_reads_none_where_gpm_lacks_a_value() -> None:
    values: GpmValues = {"sm_active_pct": 41.0, "nvlink_rx_bytes_s": 1e9}
    kwargs = gpm_activity(values)
    assert set(kwargs) == set(ACTIVITY_FIELDS)
    assert kwargs["sm_active_pct"] == 41.0
    assert kwargs["tensor_active_pct"] is None
    assert MigDevice(index=0, **kwargs).sm_active_pct == 41.0


def test_host_cpu_mean_is_none_without_cores() -> None:
    assert HostSample(timestamp=0).cpu_pct is None
    assert HostSample(timestamp=0, cpu_pct_per_core=(100.0, 50.0)).cpu_pct == 75.0


def test_history_is_bounded_and_windows_by_time() -> None:
    history = History(capacity=5)
    for t in range(10):
        history.append(snap(float(t), float(t)))
    assert len(history) == 5
    assert [s.timestamp for s in history.window(2.0)] == [7.0, 8.0, 9.0]
    assert history.latest is not None and history.latest.timestamp == 9.0


def test_history_series_keeps_gaps_for_lost_and_missing_values() -> None:
    history = History()
    history.append(snap(0, 10.0))
    history.append(snap(1, None))
    history.append(snap(2, 30.0, lost=True))
    history.append(snap(3, 40.0))
    assert history.gpu_series(0, lambda g: g.utilization_gpu_pct) == [10.0, None, None, 40.0]
    assert history.gpu_series(0, lambda g: g.utilization_gpu_pct, last=2) == [None, 40.0]
    assert history.gpu_series(5, lambda g: g.utilization_gpu_pct) == [None] * 4


def test_history_rejects_zero_capacity() -> None:
    with pytest.raises(ValueError):
        History(capacity=0)
