"""Synthetic fleet data (SIMULATED): N nodes x 8 GPUs as Prometheus would hold them, for the bench and the tests.

Each node runs one exporter, as Prometheus scraped it (`instance` and `job` labels added):
- `gputui`: the series `gputui export` writes for the simulated 8-GPU H100 server in the `healthy` scenario
  (gputui's own exporter code renders them once, so their names and labels are exactly gputui's, with its
  `gputui_source="simulated"` label), renamed to the node;
- `dcgm-exporter`: the fields of dcgm-exporter 4.x's default counters (etc/default-counters.csv in
  NVIDIA/dcgm-exporter), with its label set (`gpu`, `UUID`, `pci_bus_id`, `device`, `modelName`, `Hostname`,
  `DCGM_FI_DRIVER_VERSION`, then `container`, `namespace`, `pod` on a GPU a pod holds) and its units (FB in MiB,
  PROF ratios 0-1, energy in mJ).

What the fleet findings look for is planted at fixed places, the same for any N: a slow node (every GPU's SM clock
~30 % below its peers, thermal slowdown), a slow GPU on another node, GPUs a job holds and leaves idle, and free
idle GPUs. Values move a little from sample to sample and counters grow, so charts and rate() have something to
show. Everything is deterministic: the same parameters give the same bytes.

Run: python benchmarks/fleet_data.py --nodes 200 --out fleet.om        (OpenMetrics for promtool's backfill)
     python benchmarks/fleet_data.py --dcgm-page                        (one dcgm-exporter scrape, to stdout)
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal, TextIO

GPUS = 8
PAGE_HOST = "dgx-h100-07"
DRIVER = "570.133.20"
MODEL = "NVIDIA H100 80GB HBM3"
FB_TOTAL_MIB = 81559
FB_RESERVED_MIB = 592
BUS_IDS = ("18", "2A", "3A", "5D", "9A", "AB", "BA", "DB")
GpuState = Literal["busy", "slow", "idle_allocated", "idle"]
States = Callable[[int, int], GpuState]  # (node, gpu) -> state
Kind = Literal["gputui", "dcgm-exporter"]


@dataclass(frozen=True, slots=True)
class FleetParams:
    """What the data depends on; `key()` names a cache of it."""

    nodes: int = 200
    minutes: float = 30.0
    step_s: int = 15
    end: int = 0  # unix seconds of the last sample
    gputui_every: int = 2  # node i runs gputui when i % gputui_every == 0, dcgm-exporter otherwise

    @property
    def samples(self) -> int:
        return int(self.minutes * 60 // self.step_s) + 1

    def key(self) -> str:
        """A short hash of everything but `end` (a cached TSDB is reused whatever its age)."""
        fields = {k: v for k, v in asdict(self).items() if k != "end"} | {"version": DATA_VERSION}
        return hashlib.sha256(repr(sorted(fields.items())).encode()).hexdigest()[:12]


def node_name(i: int) -> str:
    return f"node-{i:03d}"


def node_kind(i: int, params: FleetParams) -> Kind:
    return "gputui" if i % params.gputui_every == 0 else "dcgm-exporter"


# Where the findings are planted, as node index modulo 50: on every 50 nodes one slow node, one slow GPU, two
# nodes whose job holds four GPUs and leaves them idle (a dcgm-exporter node, where only its pod labels say who
# holds them, and a gputui node, where its processes do), and one node with two free idle GPUs. All within the
# first 8 nodes, so that a small fleet in a test holds every one of them beside healthy peers of both kinds.
SLOW_NODE, SLOW_GPU_NODE, FREE_GPUS_NODE = 3, 4, 7
IDLE_ALLOCATED_NODES = (5, 6)  # with gputui_every=2: 5 runs dcgm-exporter, 6 gputui
SLOW_GPU = 5
IDLE_ALLOCATED_GPUS = (4, 5, 6, 7)
FREE_GPUS = (6, 7)
# Part of the cache key (FleetParams.key): a change to what is planted or how must not reuse an older TSDB.
DATA_VERSION = 2


def gpu_state(node: int, gpu: int) -> GpuState:
    where = node % 50
    if where == SLOW_NODE or (where == SLOW_GPU_NODE and gpu == SLOW_GPU):
        return "slow"
    if where in IDLE_ALLOCATED_NODES and gpu in IDLE_ALLOCATED_GPUS:
        return "idle_allocated"
    if where == FREE_GPUS_NODE and gpu in FREE_GPUS:
        return "idle"
    return "busy"


def page_state(node: int, gpu: int) -> GpuState:
    """The canned dcgm-exporter page's GPUs: 0-3 busy (a training pod), 4-5 held idle (a notebook), 6-7 free."""
    return "busy" if gpu < 4 else "idle_allocated" if gpu < 6 else "idle"


def pod_of(node: int, state: GpuState) -> tuple[str, str, str] | None:
    """(pod, namespace, container) holding a GPU in `state`, or None for a free GPU."""
    if state == "idle":
        return None
    if state == "idle_allocated":
        return (f"notebook-{node:03d}-0", "research", "jupyter")
    return (f"train-llm-{node // 4}-worker-{node % 4}", "ml-training", "trainer")


def uuid(node: int, gpu: int) -> str:
    digest = hashlib.sha256(f"{node}/{gpu}".encode()).hexdigest()
    return f"GPU-{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


# A series: the text before the value, how the value moves, and whether dcgm writes it as an integer.
@dataclass(frozen=True, slots=True)
class Series:
    prefix: str  # name{labels}
    base: float
    wobble: float = 0.0  # +- this much around base, sample to sample
    rate: float = 0.0  # added per second (counters)
    integer: bool = True
    clock: bool = False  # the value is the sample's own unix time (gputui's reading timestamp)

    def value(self, k: int, step_s: int, seed: int, at: float = 0.0) -> float:
        if self.clock:
            return float(at)
        v = self.base + self.rate * k * step_s
        if self.wobble:
            v += self.wobble * _JITTER[(seed + k * 7) % len(_JITTER)]
        return v


_JITTER = tuple(((i * 37) % 64) / 32.0 - 1.0 for i in range(64))  # -1..1, spread out


# dcgm-exporter 4.x's default counters in its order: (field, Prometheus type, help, integer value?)
DCGM_COUNTERS: tuple[tuple[str, str, str, bool], ...] = (
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", True),
    ("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).", True),
    ("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C).", True),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", True),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", False),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ).", True),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries.", True),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", True),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).", True),
    ("DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilization (in %).", True),
    ("DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %).", True),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).", True),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", True),
    ("DCGM_FI_DEV_FB_RESERVED", "gauge", "Framebuffer memory reserved (in MiB).", True),
    (
        "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
        "counter",
        "Total number of NVLink bandwidth counters for all lanes.",
        True,
    ),
    ("DCGM_FI_DEV_VGPU_LICENSE_STATUS", "gauge", "vGPU License status", True),
    (
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
        "counter",
        "Number of remapped rows for uncorrectable errors",
        True,
    ),
    ("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for correctable errors", True),
    ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed", True),
    ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active.", False),
    ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Ratio of cycles the tensor (HMMA) pipe is active.", False),
    (
        "DCGM_FI_PROF_DRAM_ACTIVE",
        "gauge",
        "Ratio of cycles the device memory interface is active sending or receiving data.",
        False,
    ),
    (
        "DCGM_FI_PROF_PCIE_TX_BYTES",
        "gauge",
        "The rate of data transmitted over the PCIe bus - including both protocol headers and data payloads - "
        "in bytes per second.",
        True,
    ),
    (
        "DCGM_FI_PROF_PCIE_RX_BYTES",
        "gauge",
        "The rate of data received over the PCIe bus - including both protocol headers and data payloads - "
        "in bytes per second.",
        True,
    ),
)

# (base, wobble, rate per second) of each dcgm field by GPU state; H100 SXM5 80GB, 700 W. Absent: base 0.
_DCGM_VALUES: dict[GpuState, dict[str, tuple[float, float, float]]] = {
    "busy": {
        "DCGM_FI_DEV_SM_CLOCK": (1980, 0, 0),
        "DCGM_FI_DEV_MEM_CLOCK": (2619, 0, 0),
        "DCGM_FI_DEV_MEMORY_TEMP": (71, 2, 0),
        "DCGM_FI_DEV_GPU_TEMP": (63, 3, 0),
        "DCGM_FI_DEV_POWER_USAGE": (612.4, 40, 0),
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": (4.1e12, 0, 612_400),
        "DCGM_FI_DEV_GPU_UTIL": (98, 2, 0),
        "DCGM_FI_DEV_MEM_COPY_UTIL": (41, 6, 0),
        "DCGM_FI_DEV_FB_USED": (71_318, 0, 0),
        "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL": (9.3e9, 0, 2.1e5),
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE": (0.962, 0.02, 0),
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": (0.463, 0.04, 0),
        "DCGM_FI_PROF_DRAM_ACTIVE": (0.538, 0.05, 0),
        "DCGM_FI_PROF_PCIE_TX_BYTES": (3.2e8, 8e7, 0),
        "DCGM_FI_PROF_PCIE_RX_BYTES": (9.1e8, 2e8, 0),
    },
    # Thermal slowdown: still reads ~100 % busy, but the SM clock is down ~30 % and the tensor pipes do less.
    "slow": {
        "DCGM_FI_DEV_SM_CLOCK": (1395, 45, 0),
        "DCGM_FI_DEV_MEM_CLOCK": (2619, 0, 0),
        "DCGM_FI_DEV_MEMORY_TEMP": (88, 1, 0),
        "DCGM_FI_DEV_GPU_TEMP": (87, 1, 0),
        "DCGM_FI_DEV_POWER_USAGE": (498.7, 25, 0),
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": (4.0e12, 0, 498_700),
        "DCGM_FI_DEV_GPU_UTIL": (99, 1, 0),
        "DCGM_FI_DEV_MEM_COPY_UTIL": (29, 4, 0),
        "DCGM_FI_DEV_FB_USED": (71_318, 0, 0),
        "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL": (8.9e9, 0, 1.5e5),
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE": (0.975, 0.01, 0),
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": (0.318, 0.03, 0),
        "DCGM_FI_PROF_DRAM_ACTIVE": (0.377, 0.04, 0),
        "DCGM_FI_PROF_PCIE_TX_BYTES": (2.3e8, 5e7, 0),
        "DCGM_FI_PROF_PCIE_RX_BYTES": (6.4e8, 1e8, 0),
    },
    # A notebook holds the GPU with its model loaded and runs nothing.
    "idle_allocated": {
        "DCGM_FI_DEV_SM_CLOCK": (1980, 0, 0),
        "DCGM_FI_DEV_MEM_CLOCK": (2619, 0, 0),
        "DCGM_FI_DEV_MEMORY_TEMP": (38, 1, 0),
        "DCGM_FI_DEV_GPU_TEMP": (34, 1, 0),
        "DCGM_FI_DEV_POWER_USAGE": (118.6, 3, 0),
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": (1.9e12, 0, 118_600),
        "DCGM_FI_DEV_FB_USED": (18_954, 0, 0),
        "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL": (1.2e8, 0, 0),
        "DCGM_FI_PROF_PCIE_TX_BYTES": (1.1e5, 2e4, 0),
        "DCGM_FI_PROF_PCIE_RX_BYTES": (3.0e4, 1e4, 0),
    },
    "idle": {
        "DCGM_FI_DEV_SM_CLOCK": (345, 0, 0),
        "DCGM_FI_DEV_MEM_CLOCK": (2619, 0, 0),
        "DCGM_FI_DEV_MEMORY_TEMP": (33, 1, 0),
        "DCGM_FI_DEV_GPU_TEMP": (29, 1, 0),
        "DCGM_FI_DEV_POWER_USAGE": (69.8, 2, 0),
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": (1.1e12, 0, 69_800),
        "DCGM_FI_DEV_FB_USED": (0, 0, 0),
        "DCGM_FI_PROF_PCIE_TX_BYTES": (4.2e4, 1e4, 0),
        "DCGM_FI_PROF_PCIE_RX_BYTES": (1.3e4, 5e3, 0),
    },
}


def dcgm_labels(node: int, gpu: int, host: str, state: GpuState, extra: str = "") -> str:
    """dcgm-exporter's labels in its order: the GPU's, Hostname, the label fields, then the pod's (sorted)."""
    labels = (
        f'gpu="{gpu}",UUID="{uuid(node, gpu)}",pci_bus_id="00000000:{BUS_IDS[gpu % len(BUS_IDS)]}:00.0",'
        f'device="nvidia{gpu}",modelName="{MODEL}",Hostname="{host}",DCGM_FI_DRIVER_VERSION="{DRIVER}"'
    )
    pod = pod_of(node, state)
    if pod is not None:
        labels += f',container="{pod[2]}",namespace="{pod[1]}",pod="{pod[0]}"'
    return labels + extra


def dcgm_series(node: int, states: States = gpu_state, host: str | None = None, extra: str = "") -> Iterator[Series]:
    """Every series of one dcgm-exporter node, field by field as it writes them."""
    host = host or node_name(node)
    for field, _type, _help, integer in DCGM_COUNTERS:
        for gpu in range(GPUS):
            state = states(node, gpu)
            base, wobble, rate = _DCGM_VALUES[state].get(field, (0.0, 0.0, 0.0))
            if field == "DCGM_FI_DEV_FB_RESERVED":
                base = FB_RESERVED_MIB
            elif field == "DCGM_FI_DEV_FB_FREE":
                used = _DCGM_VALUES[state].get("DCGM_FI_DEV_FB_USED", (0.0, 0.0, 0.0))[0]
                base = FB_TOTAL_MIB - FB_RESERVED_MIB - used
            yield Series(f"{field}{{{dcgm_labels(node, gpu, host, state, extra)}}}", base, wobble, rate, integer)


def dcgm_page(node: int = 7, host: str = PAGE_HOST) -> str:
    """One scrape of dcgm-exporter 4.x on 8 GPUs: HELP and TYPE per field, integers as %d and doubles as %f
    (Go's fmt, as its collector writes them); XID absent, as dcgm-exporter leaves it until the first XID."""
    out: list[str] = []
    series = iter(dcgm_series(node, page_state, host=host))
    for field, prom_type, help_text, integer in DCGM_COUNTERS:
        out.append(f"# HELP {field} {help_text}")
        out.append(f"# TYPE {field} {prom_type}")
        for gpu in range(GPUS):
            s = next(series)
            v = s.value(0, 15, node * 131 + gpu * 11 + len(out))
            out.append(f"{s.prefix} {round(v):d}" if integer else f"{s.prefix} {v:f}")
    return "\n".join(out) + "\n"


def gputui_template() -> list[tuple[str, dict[str, str], float]]:
    """One reading of `gputui export --demo healthy --demo-gpus 8`, as (name, labels, value) per series, rendered
    by gputui's own exporter code (so the names and labels cannot drift from what it writes)."""
    from gputui.export.metrics import metric_families
    from gputui.export.server import ExportSampler
    from gputui.session.sampling import Sampler
    from gputui.sources.sim.source import SimulatedSource

    ticks = iter(range(10**9))
    source = SimulatedSource(scenario="healthy", gpu_count=GPUS, clock=lambda: float(next(ticks)))
    sampler = ExportSampler(Sampler(source), source.open(), interval=3600)
    for _ in range(3):  # rates (PCIe, disk) need two readings
        state = sampler.sample_once()
    return [(s.name, dict(s.labels), float(s.value)) for f in metric_families(state) for s in f.samples]


# How the planted states change gputui's series of a GPU: a factor on the template's busy value, by the model
# attribute the metric carries (gputui/metric_schema.py), so a renamed metric is still found.
_GPUTUI_FACTORS: dict[GpuState, dict[str, float]] = {
    "slow": {
        "sm_clock_mhz": 0.70,
        "graphics_clock_mhz": 0.70,
        "power_w": 0.80,
        "temperature_c": 1.35,
        "sm_active_pct": 0.75,
        "tensor_active_pct": 0.68,
        "dram_bw_pct": 0.70,
    },
    "idle_allocated": {
        "utilization_gpu_pct": 0.0,
        "utilization_memory_pct": 0.0,
        "power_w": 0.19,
        "temperature_c": 0.55,
        "gr_engine_active_pct": 0.0,
        "sm_active_pct": 0.0,
        "sm_occupancy_pct": 0.0,
        "tensor_active_pct": 0.0,
        "dram_bw_pct": 0.0,
        "fp16_active_pct": 0.0,
        "fp32_active_pct": 0.0,
        "fp64_active_pct": 0.0,
        "sm_pct": 0.0,
    },
    "idle": {"memory_used_bytes": 0.0, "sm_clock_mhz": 345 / 1980, "graphics_clock_mhz": 345 / 1980},
}
_SLOW_REASONS = 0x20  # NVML's SW thermal slowdown bit, on a slow GPU
_ENERGY_MJ_PER_S = 612_400.0  # a busy H100's ~612 W
_WOBBLE = {"utilization_gpu_pct": 2.0, "power_w": 30.0, "temperature_c": 2.0}


def gputui_series(node: int, template: list[tuple[str, dict[str, str], float]]) -> Iterator[Series]:
    """The template's series renamed to `node`, with the planted states applied; a free GPU has no process."""
    from gputui.metric_schema import GPU_PROCESS_FIELDS, GPU_SAMPLE_FIELDS, HOSTNAME_LABEL, TIMESTAMP_METRIC

    attr = {f.name: f.attr for f in (*GPU_SAMPLE_FIELDS, *GPU_PROCESS_FIELDS)}
    cumulative = {f.name for f in GPU_SAMPLE_FIELDS if f.cumulative}
    host = node_name(node)
    free_pids = {
        labels["pid"]
        for name, labels, _ in template
        if name == "gputui_gpu_process_info" and gpu_state(node, int(labels["gpu"])) == "idle"
    }
    for name, labels, value in template:
        if labels.get("pid") in free_pids:
            continue
        labels = {**labels, HOSTNAME_LABEL: host, "instance": f"{host}:9400", "job": "gputui"}
        state: GpuState = "busy"
        if "gpu" in labels:
            gpu = int(labels["gpu"])
            labels["UUID"] = uuid(node, gpu)
            state = gpu_state(node, gpu)
        what = attr.get(name, "")
        factors = _GPUTUI_FACTORS.get(state, {})
        if state == "idle":
            factors = {**_GPUTUI_FACTORS["idle_allocated"], **factors}
        value *= factors.get(what, 1.0)
        if what == "clock_event_reasons_mask" and state == "slow":
            value = float(int(value) | _SLOW_REASONS)
        rate = 0.0
        if what == "energy_mj":
            rate = _ENERGY_MJ_PER_S * factors.get("power_w", 1.0)
        body = ",".join(f'{k}="{v}"' for k, v in labels.items())
        wobble = _WOBBLE.get(what, 0.0) if value and name not in cumulative else 0.0
        # The reading's own time moves with every sample, as the exporter's does: the engine's windows are timed
        # by it, and a fixed one would make a node's whole history a single reading.
        yield Series(f"{name}{{{body}}}", value, wobble, rate, False, clock=name == TIMESTAMP_METRIC)


def fleet_series(params: FleetParams) -> Iterator[tuple[int, Series]]:
    """(seed, series) of the whole fleet; the seed spreads the wobble across series."""
    template = gputui_template() if any(node_kind(i, params) == "gputui" for i in range(params.nodes)) else []
    for node in range(params.nodes):
        host = node_name(node)
        if node_kind(node, params) == "gputui":
            many = gputui_series(node, template)
        else:
            many = dcgm_series(node, extra=f',instance="{host}:9400",job="dcgm-exporter"')
        for j, s in enumerate(many):
            yield node * 131 + j, s


def write_openmetrics(out: TextIO, params: FleetParams) -> tuple[int, int]:
    """The fleet over the window ending at `params.end`, time-major (promtool wants each series in time order);
    returns (series, samples)."""
    everything = list(fleet_series(params))
    start = params.end - (params.samples - 1) * params.step_s
    for k in range(params.samples):
        at = start + k * params.step_s
        ts = f" {at}\n"
        out.write(
            "".join(f"{s.prefix} {_fmt(s.value(k, params.step_s, seed, at), s.integer)}{ts}" for seed, s in everything)
        )
    out.write("# EOF\n")
    return len(everything), len(everything) * params.samples


def _fmt(v: float, integer: bool) -> str:
    return str(round(v)) if integer or v.is_integer() else f"{v:.6g}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=200, help="nodes of 8 GPUs (default 200)")
    parser.add_argument("--minutes", type=float, default=30.0, help="window length (default 30)")
    parser.add_argument("--step", type=int, default=15, help="seconds between samples (default 15)")
    parser.add_argument("--end", type=int, default=None, help="unix time of the last sample (default now)")
    parser.add_argument("--out", type=Path, help="OpenMetrics file to write (default stdout)")
    parser.add_argument("--dcgm-page", action="store_true", help="write one dcgm-exporter scrape instead")
    args = parser.parse_args()
    if args.dcgm_page:
        sys.stdout.write(dcgm_page())
        return 0
    params = FleetParams(args.nodes, args.minutes, args.step, args.end or int(time.time()))
    if args.out is None:
        write_openmetrics(sys.stdout, params)
        return 0
    with args.out.open("w") as out:
        series, samples = write_openmetrics(out, params)
    print(f"{args.out}: {series} series, {samples} samples", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
