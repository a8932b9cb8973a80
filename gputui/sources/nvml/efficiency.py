"""How fully a GPU is used, beyond "a kernel ran": GPM metrics and each process's share, through NVML.

NVML's utilization is the share of time any kernel ran; a job whose kernels fill a tenth of the SMs reads
100%. GPM (GPU Performance Monitoring, Hopper and newer) says how full: SM activity, tensor-core activity,
DRAM bandwidth. Metrics come from two GPM samples taken more than 100 ms apart, so each GPU keeps two
buffers that alternate: every tick fills one and compares it with the other. Per-process utilization says
whose kernels they were. Whether a GPU answers either is found out once: a GPU without it (pre-Hopper, an old
driver or pynvml, no permission) reads None and is never asked again. In MIG mode the whole GPU gives no GPM:
each GPU instance is sampled on its own (nvmlGpmMigSampleGet, through the parent's handle), mig.py keeps one
reader per instance. Every call goes through the query helper (query.py), whose GpuLost reaches the source,
which marks the whole GPU lost.
"""

from __future__ import annotations

import contextlib
from typing import Any, cast

from gputui.model import GpmValues
from gputui.sources.nvml.query import Nvml, Query

MIB = 1024 * 1024
# nvml.h: "the two samples must be more than 100 ms apart"; closer ticks keep the last metrics.
MIN_GPM_INTERVAL_S = 0.1

# GpuSample field -> the pynvml name of its GPM metric id (all 0-100 %, NVLink in MiB/s).
GPM_METRICS: tuple[tuple[str, str], ...] = (
    ("gr_engine_active_pct", "NVML_GPM_METRIC_GRAPHICS_UTIL"),
    ("sm_active_pct", "NVML_GPM_METRIC_SM_UTIL"),
    ("sm_occupancy_pct", "NVML_GPM_METRIC_SM_OCCUPANCY"),
    ("tensor_active_pct", "NVML_GPM_METRIC_ANY_TENSOR_UTIL"),
    ("dram_bw_pct", "NVML_GPM_METRIC_DRAM_BW_UTIL"),
    ("fp32_active_pct", "NVML_GPM_METRIC_FP32_UTIL"),
    ("fp16_active_pct", "NVML_GPM_METRIC_FP16_UTIL"),
    ("fp64_active_pct", "NVML_GPM_METRIC_FP64_UTIL"),
    ("nvlink_rx_bytes_s", "NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC"),
    ("nvlink_tx_bytes_s", "NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC"),
)
_PER_SECOND = frozenset({"nvlink_rx_bytes_s", "nvlink_tx_bytes_s"})
# A MIG GPU instance's metrics (nvmlGpmMigSampleGet): the same, but NVLink belongs to the whole GPU.
INSTANCE_GPM_METRICS = tuple((key, name) for key, name in GPM_METRICS if key not in _PER_SECOND)
# pynvml's structures run a Python __getattribute__ on every field read (to decode bytes); the metrics are
# numbers, read each tick for every GPU, so they are read through ctypes' own attribute access.
_read_field = object.__getattribute__


class GpmReader:
    """One GPU's GPM, or one MIG GPU instance's: support found once, two sample buffers, metrics between
    consecutive samples.

    For a GPU instance, `instance` holds the parent's nvmlGpmMigSampleGet query (shared by its instances, so a
    driver without the function is found out once) and the GPU instance id it is asked with."""

    def __init__(
        self, nvml: Nvml, handle: Any, mig_mode: bool | None, instance: tuple[Query, int] | None = None
    ) -> None:
        self._nvml = nvml
        if instance is None:
            self._sample = nvml.query(nvml.function("nvmlGpmSampleGet", handle))
            self._sample_args: tuple[int, ...] = ()
            self._wanted = GPM_METRICS
        else:
            self._sample, gpu_instance_id = instance
            self._sample_args = (gpu_instance_id,)
            self._wanted = INSTANCE_GPM_METRICS
        self._metrics = nvml.query(nvml.function("nvmlGpmMetricsGet"))
        self._buffers: list[Any] = []
        self._taken: float | None = None  # when the buffer last filled was taken; None: no usable sample
        self._next = 0  # the buffer the next sample goes into
        self._values: GpmValues = {}
        self._request: Any = None
        self._slots: tuple[tuple[str, bool, Any], ...] = ()  # (GpuSample field, per second?, the request's slot)
        self.supported = False
        self.reason: str | None = None  # why not, for the curious; never shown as an error
        if instance is None and mig_mode:
            self.reason = "MIG mode: GPM is read per GPU instance"
            return
        if instance is not None and not self._sample.available:
            self.reason = "this nvidia-ml-py or driver has no GPM per MIG instance"
            return
        self._open(handle)

    def _open(self, handle: Any) -> None:
        nvml = self._nvml
        pynvml = nvml.pynvml
        ids = [getattr(pynvml, name, None) for _, name in self._wanted]
        request_type: Any = getattr(pynvml, "c_nvmlGpmMetricsGet_t", None)
        query_support = nvml.query(nvml.function("nvmlGpmQueryDeviceSupport", handle))
        if request_type is None or None in ids or not query_support.available:
            self.reason = "this nvidia-ml-py has no GPM"
            return
        support = query_support()
        if support is None:
            self.reason = f"the driver gives no GPM: {query_support.failure}"
            return
        if not support.isSupportedDevice:
            self.reason = "this GPU has no GPM (Hopper and newer have it)"
            return
        alloc = nvml.query(nvml.function("nvmlGpmSampleAlloc"))
        self._buffers = [buffer for buffer in (alloc(), alloc()) if buffer is not None]
        if len(self._buffers) < 2:
            self.reason = f"the driver gives no GPM: {alloc.failure}"
            self.close()
            return
        request = request_type()
        request.version = pynvml.NVML_GPM_METRICS_GET_VERSION
        request.numMetrics = len(ids)  # only these are filled and read, whatever NVML_GPM_METRIC_MAX is
        slots = [request.metrics[i] for i in range(len(ids))]  # views into the request, made once
        for slot, metric_id in zip(slots, ids, strict=True):
            slot.metricId = metric_id
        self._slots = tuple((key, key in _PER_SECOND, slot) for (key, _), slot in zip(self._wanted, slots, strict=True))
        self._request = request
        self.supported = True

    def read(self, now: float) -> GpmValues:
        """The metrics since the previous sample; {} where unsupported or no two samples exist yet."""
        if not self.supported:
            return {}
        if self._taken is not None and now - self._taken <= MIN_GPM_INTERVAL_S:
            return self._values
        current = self._buffers[self._next]
        answered = self._sample(*self._sample_args, current)
        if answered is not None and self._taken is not None:
            self._request.sample1 = self._buffers[1 - self._next]
            self._request.sample2 = current
            answered = self._metrics(self._request)
            if answered is not None:
                self._values = self._decode()
        if answered is None:
            if not (self._sample.available and self._metrics.available):
                self.reason = f"the driver stopped giving GPM: {self._sample.failure or self._metrics.failure}"
                self.close()
                return {}
            self._taken = None  # a passing error: start a fresh pair next tick
            self._values = {}
            return {}
        self._taken = now
        self._next = 1 - self._next
        return self._values

    def _decode(self) -> GpmValues:
        ok = self._nvml.success
        values: dict[str, float | None] = {}
        for key, per_second, slot in self._slots:
            if _read_field(slot, "nvmlReturn") != ok:
                values[key] = None
            elif per_second:
                values[key] = float(_read_field(slot, "value")) * MIB
            else:
                values[key] = float(_read_field(slot, "value"))
        return cast(GpmValues, values)  # the keys are GPM_METRICS', which name GpmValues' fields

    def close(self) -> None:
        """Free the sample buffers (before nvmlShutdown); reading stops."""
        self.supported = False
        buffers, self._buffers = self._buffers, []
        pynvml = self._nvml.pynvml
        for buffer in buffers:
            with contextlib.suppress(pynvml.NVMLError):
                pynvml.nvmlGpmSampleFree(buffer)


class ProcessUtilization:
    """Each process's SM and memory-controller share from the driver's samples newer than the last seen."""

    def __init__(self, nvml: Nvml, handle: Any) -> None:
        self._query = nvml.query(nvml.function("nvmlDeviceGetProcessUtilization", handle))
        self._last_seen_us = 0

    @property
    def supported(self) -> bool:
        return self._query.available

    def read(self) -> dict[int, tuple[float, float]]:
        """pid -> (SM %, memory %) from the newest sample of each; {} when none arrived or unsupported (NotFound,
        a passing answer, says no sample is newer than the last seen)."""
        samples = self._query(self._last_seen_us)
        if samples is None:
            return {}
        newest: dict[int, tuple[int, float, float]] = {}
        for sample in samples:
            pid, stamp = int(sample.pid), int(sample.timeStamp)
            if pid not in newest or stamp >= newest[pid][0]:
                newest[pid] = (stamp, float(sample.smUtil), float(sample.memUtil))
            self._last_seen_us = max(self._last_seen_us, stamp)
        return {pid: (sm, mem) for pid, (_, sm, mem) in newest.items()}
