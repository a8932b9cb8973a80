"""What the monitor's own snapshots say about a probe run: clocks, heat and throttling under the probe's load.

The worker sees only its own figures; the runner side sees the GPU through NVML meanwhile. These pure
functions join the two: how the link looked under load (GPUs downshift PCIe at idle, so the reading before a
probe is no reference), whether clocks sagged or a slowdown began during a stress run, and who else is on the
GPU before a probe would slow their job down.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gputui.model import GpuSample, MigDevice, Snapshot
from gputui.probes.protocol import Result
from gputui.probes.reference import PcieLink, PeerLinks, judge_pcie, nvlink_count

# Clock event reasons worth naming when they begin during a run, with the words a user reads.
_ONSET_LABELS: dict[str, str] = {
    "sw_thermal_slowdown": "thermal slowdown",
    "hw_thermal_slowdown": "hardware thermal slowdown",
    "hw_slowdown": "hardware slowdown",
    "hw_power_brake": "power brake (external, e.g. the PSU)",
    "sw_power_cap": "power cap",
}
# sw_power_cap is normal at full load: named, but it does not make a run "worse".
_HARMFUL = frozenset({"sw_thermal_slowdown", "hw_thermal_slowdown", "hw_slowdown", "hw_power_brake"})
# Below this share of its early value, the SM clock counts as having sagged.
CLOCK_SAG_FRACTION = 0.9
# A sample counts as "under load" at or above this utilization (unknown utilization counts too).
LOADED_UTILIZATION_PCT = 50.0


def _sample(snapshot: Snapshot, gpu: int) -> GpuSample | None:
    return next((s for s in snapshot.gpus if s.index == gpu), None)


def pcie_link(snapshot: Snapshot, gpu: int) -> PcieLink | None:
    """The link of one GPU in one snapshot; None when the GPU is not in it or reports no link at all."""
    sample = _sample(snapshot, gpu)
    info = snapshot.info(gpu)
    link = PcieLink(
        gen=sample.pcie_gen if sample else None,
        width=sample.pcie_width if sample else None,
        max_gen=info.pcie_max_gen if info else None,
        max_width=info.pcie_max_width if info else None,
    )
    return None if link == PcieLink() else link


def peer_links(snapshot: Snapshot) -> PeerLinks:
    """What the p2p verdict needs of a snapshot: the NV<n> pairs of its topology (when read) and each GPU's link."""
    indices = [info.index for info in snapshot.gpu_info]
    topology = snapshot.system.topology
    nvlinks: list[tuple[int, int, int]] = []
    for row, cells in enumerate(topology.matrix if topology else ()):
        for column, cell in enumerate(cells):
            count = nvlink_count(cell)
            if count and row < column < len(indices):
                nvlinks.append((indices[row], indices[column], count))
    pcie = tuple((gpu, link) for gpu in indices if (link := pcie_link(snapshot, gpu)) is not None)
    return PeerLinks(tuple(nvlinks), pcie)


def link_under_load(snapshots: Iterable[Snapshot], gpu: int) -> PcieLink | None:
    """The fastest link reading of a run: a GPU trains its link up under load, so that is its real state."""
    best: PcieLink | None = None
    for snapshot in snapshots:
        link = pcie_link(snapshot, gpu)
        if link is None:
            continue
        if best is None or (link.current_gb_s or 0.0) > (best.current_gb_s or 0.0):
            best = link
    return best


def rejudge_pcie(result: Result, link: PcieLink | None) -> Result:
    """The pcie result judged against `link` (e.g. link_under_load), keeping the measured figures."""
    h2d_figure = result.figures.get("h2d_pinned_gb_s")
    d2h_figure = result.figures.get("d2h_pinned_gb_s")
    if result.probe != "pcie" or result.on_cpu or h2d_figure is None or d2h_figure is None:
        return result
    judged = judge_pcie(h2d_figure, d2h_figure, link)
    figures = {**result.figures, **judged.figures}
    return dataclasses.replace(result, ok=judged.ok, figures=figures, verdict=judged.verdict)


@dataclass(frozen=True, slots=True)
class Onset:
    """A clock event reason that was not set when the run began, and when it first appeared."""

    reason: str
    after_s: float


@dataclass(frozen=True, slots=True)
class RunJudgement:
    """How the GPU behaved during a probe, from the monitor's snapshots."""

    text: str  # "thermal slowdown began after 41 s; SM clock 1980 -> 1410 MHz; temperature 45 -> 83 °C"
    worsened: bool  # a harmful slowdown began, the clock sagged, or the GPU was lost
    samples: int
    onsets: tuple[Onset, ...] = ()
    sm_clock_start_mhz: int | None = None
    sm_clock_end_mhz: int | None = None
    temperature_start_c: float | None = None
    temperature_max_c: float | None = None
    power_max_w: float | None = None
    lost_after_s: float | None = None
    headline: str = ""  # what made it worse, the gravest first: "thermal slowdown began after 41 s"


def judge_run(snapshots: Sequence[Snapshot], gpu: int, started_at: float) -> RunJudgement:
    """Judge the snapshots taken while a probe ran on `gpu` since `started_at` (snapshot timestamps)."""
    samples = [s for snap in snapshots if snap.timestamp >= started_at and (s := _sample(snap, gpu)) is not None]
    if not samples:
        return RunJudgement("no GPU readings during the run: clocks and throttling not judged", False, 0)
    parts: list[str] = []
    lost = next((s for s in samples if s.lost), None)
    lost_after = lost.timestamp - started_at if lost else None
    if lost_after is not None:
        parts.append(f"the GPU fell off the bus after {lost_after:.0f} s")
    live = [s for s in samples if not s.lost]
    onsets = _onsets(live, started_at)
    parts += [f"{_ONSET_LABELS[o.reason]} began after {o.after_s:.0f} s" for o in onsets]
    already = sorted({r for r in (live[0].clock_event_reasons or ()) if r in _HARMFUL} if live else set())
    if already:
        parts.append("already held back at the start: " + ", ".join(_ONSET_LABELS[r] for r in already))
    start_mhz, end_mhz = _clock_span(live)
    sagged = start_mhz is not None and end_mhz is not None and end_mhz < CLOCK_SAG_FRACTION * start_mhz
    if start_mhz is not None and end_mhz is not None:
        parts.append(f"SM clock {start_mhz} -> {end_mhz} MHz" if sagged else f"SM clock held at {end_mhz} MHz")
    temps = [s.temperature_c for s in live if s.temperature_c is not None]
    if temps:
        parts.append(f"temperature {temps[0]:.0f} -> {max(temps):.0f} °C (max)")
    powers = [s.power_w for s in live if s.power_w is not None]
    xids = sorted({x for s in live for x in s.xid_events})
    if xids:
        parts.append("XID " + ", ".join(str(x) for x in xids) + " during the run")
    worse = [parts[0]] if lost_after is not None else []
    worse += [f"{_ONSET_LABELS[o.reason]} began after {o.after_s:.0f} s" for o in onsets if o.reason in _HARMFUL]
    if sagged:
        worse.append(f"SM clock {start_mhz} -> {end_mhz} MHz")
    if xids:
        worse.append("XID " + ", ".join(str(x) for x in xids) + " during the run")
    return RunJudgement(
        text="; ".join(parts) if parts else "no clock, temperature or throttle readings during the run",
        worsened=bool(worse),
        headline=worse[0] if worse else "",
        samples=len(samples),
        onsets=onsets,
        sm_clock_start_mhz=start_mhz,
        sm_clock_end_mhz=end_mhz,
        temperature_start_c=temps[0] if temps else None,
        temperature_max_c=max(temps) if temps else None,
        power_max_w=max(powers) if powers else None,
        lost_after_s=lost_after,
    )


def _onsets(samples: Sequence[GpuSample], started_at: float) -> tuple[Onset, ...]:
    if not samples:
        return ()
    initially = set(samples[0].clock_event_reasons or ())
    found: dict[str, Onset] = {}
    for sample in samples[1:]:
        for reason in sample.clock_event_reasons or ():
            if reason in _ONSET_LABELS and reason not in initially and reason not in found:
                found[reason] = Onset(reason, sample.timestamp - started_at)
    return tuple(sorted(found.values(), key=lambda o: o.after_s))


def _clock_span(samples: Sequence[GpuSample]) -> tuple[int | None, int | None]:
    """The SM clock early under load (the best of the first few loaded samples) and at the end (median of the
    last three): the first readings may still be idle clocks while the worker starts."""
    loaded = [
        s.sm_clock_mhz
        for s in samples
        if s.sm_clock_mhz is not None
        and (s.utilization_gpu_pct is None or s.utilization_gpu_pct >= LOADED_UTILIZATION_PCT)
    ]
    if len(loaded) < 2:
        return None, None
    early = max(loaded[: max(1, min(5, len(loaded) // 2))])
    late = int(statistics.median(loaded[-3:]))
    return early, late


def mig_device(snapshot: Snapshot, gpu: int) -> MigDevice | None:
    """The MIG instance a probe on `gpu` runs on when the GPU is in MIG mode: the one this process was given
    (`SystemInfo.mig_slice`), else the GPU's first instance that has a UUID; None for a whole GPU."""
    sample = _sample(snapshot, gpu)
    if sample is None or sample.mig is None or not sample.in_mig_mode:
        return None
    named = [device for device in sample.mig.devices if device.uuid is not None]
    given = [device for device in named if device.uuid == snapshot.system.mig_slice]
    chosen = given or named
    return chosen[0] if chosen else None


def other_users(snapshot: Snapshot, gpu: int, own_pids: Iterable[int] = ()) -> tuple[int, ...]:
    """PIDs of other processes on `gpu`: a stress or bandwidth probe would slow them, so ask first. On a MIG GPU
    only those in the instance the probe runs on: MIG isolates the others' SMs and memory."""
    sample = _sample(snapshot, gpu)
    if sample is None:
        return ()
    mine = set(own_pids)
    instance = mig_device(snapshot, gpu)
    processes = instance.processes if instance is not None else sample.processes
    return tuple(sorted({p.pid for p in processes if p.pid not in mine}))
