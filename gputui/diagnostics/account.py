"""What the waiting cost: each GPU's seconds in each verdict class, its energy, each job's share, and with a price
per GPU-hour what each class cost.

Fed each tick (the reading and the verdict shown after it), an Accountant adds the time since the last tick to the
class each GPU had: the group of the verdict that names it (the most serious first, for a MIG GPU whose instances
differ), else idle when the driver gives its utilization (idle GPUs beside busy ones are left out of the verdict),
else unknown. One rule for every view (the monitor, diagnose, the exporter, the report and its spans): a verdict
judged on a reading speaks for the time since the reading before, so each GPU's seconds add up to the window. Idle
is told apart: `idle_allocated` (a process or a pod holds the GPU and it does nothing, time paid for and lost) and
`idle_free` (nobody holds it). The lost classes are each named, never summed into one figure. A gap between ticks
longer than `max_gap_s` (a laptop asleep, a paused monitor) counts as `max_gap_s`.

Energy is the difference of NVML's total-energy counter where the driver gives one (a counter that went back, the
driver reloaded, counts from 0 again), else the integral of the power draw, marked as such; None with neither.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gputui.diagnostics.catalog import text
from gputui.diagnostics.verdict import RANKED, Verdict, gpu_list
from gputui.formatting import fmt_duration
from gputui.model import GpuSample, Snapshot

IDLE_ALLOCATED = "idle_allocated"
IDLE_FREE = "idle_free"
# Time paid for and lost, each cause apart: the first lines of a report, the monitor's tally.
LOST: tuple[str, ...] = ("stopped", "input_bound", "underused", "throttled", IDLE_ALLOCATED)
# Every class a GPU's seconds go to, lost first, then the rest most serious first.
ACCOUNT_CLASSES: tuple[str, ...] = (
    *LOST,
    *(c for c in RANKED if c not in LOST and c != "idle"),
    IDLE_FREE,
    "unknown",
)
COUNTER = "counter"
INTEGRATED = "integrated power"
# A gap between ticks counts as at most this many sampling intervals.
MAX_GAP_INTERVALS = 3


@dataclass(frozen=True, slots=True)
class Price:
    """What a GPU-hour costs, and in what: a code ("USD") is written after the amount, a sign ("$") before."""

    per_gpu_hour: float
    currency: str = "USD"

    def format(self, amount: float) -> str:
        figure = f"{amount:,.2f}"
        return f"{figure} {self.currency}" if self.currency[:1].isalpha() else f"{self.currency}{figure}"


@dataclass(frozen=True, slots=True)
class GpuAccount:
    gpu: int
    seconds: Mapping[str, float]
    energy_j: float | None
    energy_source: str | None  # COUNTER or INTEGRATED (INTEGRATED where any interval was); None without energy


@dataclass(frozen=True, slots=True)
class JobAccount:
    """A job's GPU-seconds: each GPU it held, each tick, in that GPU's class; a GPU two jobs share counts for both."""

    owner: str
    gpus: tuple[int, ...]
    seconds: Mapping[str, float]
    energy_j: float | None


@dataclass(frozen=True, slots=True)
class ClassTotal:
    """One class over all GPUs: GPU-seconds, the wall-clock seconds any GPU was in it, and the GPUs that were."""

    cls: str
    gpu_seconds: float
    wall_s: float
    gpus: tuple[int, ...]

    @property
    def gpu_hours(self) -> float:
        return self.gpu_seconds / 3600.0


@dataclass(frozen=True, slots=True)
class Account:
    window_s: float
    gpus: tuple[GpuAccount, ...] = ()
    jobs: tuple[JobAccount, ...] = ()
    totals: tuple[ClassTotal, ...] = ()  # in ACCOUNT_CLASSES order, classes with time only


@dataclass
class _Job:
    gpus: set[int] = field(default_factory=set)
    seconds: dict[str, float] = field(default_factory=dict)
    energy_j: float | None = None


class Accountant:
    """Adds up the ticks of one machine; `add` each reading with the verdict shown after it."""

    def __init__(self, max_gap_s: float) -> None:
        self.max_gap_s = max_gap_s
        self._last: Snapshot | None = None
        self._window_s = 0.0
        self._seconds: dict[int, dict[str, float]] = {}
        self._energy: dict[int, float] = {}
        self._sources: dict[int, set[str]] = {}
        self._jobs: dict[str, _Job] = {}
        self._wall: dict[str, float] = {}
        self._class_gpus: dict[str, set[int]] = {}

    def add(self, snapshot: Snapshot, verdict: Verdict | None) -> None:
        last, self._last = self._last, snapshot
        if last is None:
            return
        dt = min(max(0.0, snapshot.timestamp - last.timestamp), self.max_gap_s)
        self._window_s += dt
        before = {g.index: g for g in last.gpus}
        classes = gpu_classes(snapshot, verdict)
        for cls in set(classes.values()):
            self._wall[cls] = self._wall.get(cls, 0.0) + dt
        for sample in snapshot.gpus:
            cls = classes[sample.index]
            per_gpu = self._seconds.setdefault(sample.index, {})
            per_gpu[cls] = per_gpu.get(cls, 0.0) + dt
            self._class_gpus.setdefault(cls, set()).add(sample.index)
            joules = self._energy_since(before.get(sample.index), sample, dt)
            for owner in holders(snapshot, sample):
                job = self._jobs.setdefault(owner, _Job())
                job.gpus.add(sample.index)
                job.seconds[cls] = job.seconds.get(cls, 0.0) + dt
                if joules is not None:
                    job.energy_j = (job.energy_j or 0.0) + joules

    def _energy_since(self, before: GpuSample | None, now: GpuSample, dt: float) -> float | None:
        if before is not None and before.energy_mj is not None and now.energy_mj is not None:
            # A counter that went back started again from 0 (the driver reloaded): what it holds is since then.
            delta = now.energy_mj - before.energy_mj if now.energy_mj >= before.energy_mj else now.energy_mj
            joules, source = delta / 1000.0, COUNTER
        elif now.power_w is not None:
            joules, source = now.power_w * dt, INTEGRATED
        else:
            return None
        self._energy[now.index] = self._energy.get(now.index, 0.0) + joules
        self._sources.setdefault(now.index, set()).add(source)
        return joules

    def gpu_seconds(self) -> dict[int, dict[str, float]]:
        """Each GPU's seconds in each class so far: what the exporter's counter serves every tick, without the
        rest of the account."""
        return {index: _ordered(seconds) for index, seconds in sorted(self._seconds.items())}

    def account(self) -> Account:
        gpus = tuple(
            GpuAccount(
                gpu=index,
                seconds=seconds,
                energy_j=self._energy.get(index),
                energy_source=_source(self._sources.get(index, set())),
            )
            for index, seconds in self.gpu_seconds().items()
        )
        jobs = tuple(
            JobAccount(owner, tuple(sorted(job.gpus)), _ordered(job.seconds), job.energy_j)
            for owner, job in sorted(self._jobs.items())
        )
        totals = tuple(
            ClassTotal(
                cls,
                sum(g.seconds.get(cls, 0.0) for g in gpus),
                self._wall[cls],
                tuple(sorted(self._class_gpus[cls])),
            )
            for cls in ACCOUNT_CLASSES
            if self._wall.get(cls, 0.0) > 0
        )
        return Account(self._window_s, gpus, jobs, totals)


def _ordered(seconds: Mapping[str, float]) -> dict[str, float]:
    return {cls: seconds[cls] for cls in ACCOUNT_CLASSES if seconds.get(cls, 0.0) > 0}


def _source(sources: set[str]) -> str | None:
    if not sources:
        return None
    return INTEGRATED if INTEGRATED in sources else COUNTER


def gpu_classes(snapshot: Snapshot, verdict: Verdict | None) -> dict[int, str]:
    """Each GPU's class this tick, idle split into allocated and free."""
    named: dict[int, str] = {}
    if verdict is not None:
        for group in verdict.groups or (verdict,):
            for index in group.gpus:
                named.setdefault(index, group.cls)
    whole = verdict is not None and not verdict.gpus and verdict.cls in ("unknown", "degraded")
    out: dict[int, str] = {}
    for sample in snapshot.gpus:
        if whole and verdict is not None:
            cls = verdict.cls
        elif sample.index in named:
            cls = named[sample.index]
        elif verdict is not None and (sample.utilization_gpu_pct is not None or sample.in_mig_mode):
            cls = "idle"
        else:
            cls = "unknown"
        if cls == "idle":
            cls = IDLE_ALLOCATED if holders(snapshot, sample) else IDLE_FREE
        out[sample.index] = cls
    return out


def holders(snapshot: Snapshot, sample: GpuSample) -> tuple[str, ...]:
    """The jobs holding a GPU: each process's pod, else its Slurm job, else the process itself; a pod the exporter
    names where no process is listed."""
    owners: dict[str, None] = {}
    for process in sample.processes:
        proc = snapshot.host.process(process.pid)
        if proc is None:
            owners[f"pid {process.pid}"] = None
        elif proc.pod is not None:
            owners[f"pod {proc.namespace}/{proc.pod}" if proc.namespace else f"pod {proc.pod}"] = None
        elif proc.job_id is not None:
            owners[f"slurm job {proc.job_id}"] = None
        else:
            owners[f"pid {proc.pid} ({proc.user or 'n/a'}) {proc.name}"] = None
    if not owners and sample.pod is not None:
        owners[f"pod {sample.pod}"] = None
    return tuple(owners)


def cost(account: Account, price: Price) -> dict[str, float]:
    """What each class's GPU-hours cost, to the cent."""
    return {t.cls: round(t.gpu_hours * price.per_gpu_hour, 2) for t in account.totals}


def account_to_dict(account: Account, price: Price | None) -> dict[str, Any]:
    """The JSON shape of `diagnose --json`'s `account`; without a price no price, currency or cost (never 0)."""
    out: dict[str, Any] = {
        "window_s": round(account.window_s, 3),
        "gpus": [
            {
                "gpu": g.gpu,
                "seconds": _rounded(g.seconds),
                "energy_j": None if g.energy_j is None else round(g.energy_j, 1),
                "energy_source": g.energy_source,
            }
            for g in account.gpus
        ],
        "jobs": [
            {
                "owner": j.owner,
                "gpus": list(j.gpus),
                "seconds": _rounded(j.seconds),
                "energy_j": None if j.energy_j is None else round(j.energy_j, 1),
            }
            for j in account.jobs
        ],
    }
    if price is not None:
        out |= {"price_per_gpu_hour": price.per_gpu_hour, "currency": price.currency, "cost": cost(account, price)}
    return out


def _rounded(seconds: Mapping[str, float]) -> dict[str, float]:
    return {cls: round(s, 3) for cls, s in seconds.items()}


def class_label(cls: str, lang: str = "en") -> str:
    return text(f"account.class.{cls}" if cls in (IDLE_ALLOCATED, IDLE_FREE) else f"verdict.{cls}", lang)


def account_lines(account: Account, price: Price | None, lang: str = "en") -> list[str]:
    """A heading and a line per class: which GPUs, how long each (GPU-seconds, never a wall-clock time that reads
    as if every GPU had it), the GPU-hours, and with a price their cost: 'GPU-bound GPUs 0,2-3 6s each, GPU 1 1s'."""
    if not account.totals:
        return []
    window = fmt_duration(account.window_s)
    out = [text("account.heading", lang, window=window, gpus=_gpus(len(account.gpus), lang))]
    everyone = tuple(g.gpu for g in account.gpus)
    for total in account.totals:
        params: dict[str, object] = {
            "label": class_label(total.cls, lang),
            "parts": text("account.separator", lang).join(_held(account, total.cls, everyone, lang)),
            "gpu_hours": f"{total.gpu_hours:.3g}",
        }
        if price is None:
            out.append(text("account.line", lang, **params))
        else:
            amount = price.format(total.gpu_hours * price.per_gpu_hour)
            out.append(text("account.line.cost", lang, **params, cost=amount, price=price.format(price.per_gpu_hour)))
    return out


def _held(account: Account, cls: str, everyone: tuple[int, ...], lang: str) -> list[str]:
    """'GPUs 0,2-3 6s each', 'GPU 1 1s': the GPUs that had a class, together where they had it as long (as the
    line says it), the longest first; named as the verdict names GPUs."""
    alike: dict[str, list[int]] = {}
    longest: dict[str, float] = {}
    for g in account.gpus:
        seconds = g.seconds.get(cls, 0.0)
        if seconds > 0:
            duration = fmt_duration(seconds)
            alike.setdefault(duration, []).append(g.gpu)
            longest[duration] = max(longest.get(duration, 0.0), seconds)
    parts = []
    for duration, gpus in sorted(alike.items(), key=lambda item: -longest[item[0]]):
        many = len(gpus) > 1 and set(gpus) == set(everyone)
        named = text("verdict.gpus.all", lang, count=len(gpus)) if many else gpu_list(gpus, lang)
        parts.append(
            text("account.part.each" if len(gpus) > 1 else "account.part", lang, gpus=named, duration=duration)
        )
    return parts


def _gpus(count: int, lang: str) -> str:
    return text("account.gpus.one" if count == 1 else "account.gpus.some", lang, count=count)


def tally_line(account: Account, price: Price, lang: str = "en") -> str:
    """One line: what each class has cost so far, lost classes first."""
    costs = cost(account, price)
    items = text("account.separator", lang).join(
        text("account.tally.item", lang, label=class_label(cls, lang), cost=price.format(amount))
        for cls, amount in costs.items()
    )
    return text("account.tally", lang, items=items)
