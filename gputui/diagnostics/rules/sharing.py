"""How work is spread: several processes on one GPU (`gpu_contention`), one job's GPUs unevenly used."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator

from gputui.diagnostics.findings import Severity
from gputui.diagnostics.rules.base import Hit, Rule, Window, ev
from gputui.diagnostics.thresholds import Thresholds

# Launchers pass each rank its own `--local-rank N`; without it the ranks of one job share a command line.
_RANK_ARG = re.compile(r"\s--local[-_]rank[= ]\d+")


def gpu_contention(w: Window, th: Thresholds) -> Iterator[Hit]:
    for g in w.gpus():
        pids = w.pids(g)
        if len(pids) < 2:
            continue
        procs = [w.host.process(pid) for pid in pids]
        users = sorted({p.user for p in procs if p is not None and p.user})
        names = ", ".join(f"{p.name if p else '?'} ({pid})" for pid, p in zip(pids, procs, strict=True))
        yield Hit(
            gpus=(g.index,),
            pids=pids,
            value=len(pids),
            params={"gpu": g.index, "count": len(pids), "users": ", ".join(users) or "?"},
            evidence=(ev("processes", names), ev("users", ", ".join(users) or None)),
        )


def _job_key(w: Window, pid: int) -> tuple[str, ...]:
    """Processes of one job: one user running one command line (ranks differ only in their rank argument)."""
    proc = w.host.process(pid)
    if proc is None or proc.cmdline is None:
        return (str(pid),)
    return (proc.user or "", _without_rank(proc.cmdline))


@functools.lru_cache(maxsize=256)
def _without_rank(cmdline: str) -> str:
    """The same few command lines come back every tick."""
    return _RANK_ARG.sub("", cmdline)


def imbalance(w: Window, th: Thresholds) -> Iterator[Hit]:
    jobs: dict[tuple[str, ...], tuple[set[int], set[int]]] = {}
    for g in w.gpus():
        for pid in w.pids(g):
            gpus, pids = jobs.setdefault(_job_key(w, pid), (set(), set()))
            gpus.add(g.index)
            pids.add(pid)
    for gpus, pids in jobs.values():
        if len(gpus) < 2:
            continue
        utils = {i: w.mean(i, "utilization_gpu_pct") for i in sorted(gpus)}
        known = {i: u for i, u in utils.items() if u is not None}
        if len(known) < 2:
            continue
        spread = max(known.values()) - min(known.values())
        if spread <= th.imbalance_points:
            continue
        order = tuple(sorted(gpus))
        yield Hit(
            gpus=order,
            pids=tuple(sorted(pids)),
            value=round(spread, 1),
            params={"gpus": ",".join(map(str, order))},
            evidence=(
                ev("util_spread", round(spread, 1), "points", "mean"),
                ev("gpu_utils", ", ".join(f"{i}: {u:.0f}%" for i, u in known.items()), "", "mean"),
            ),
        )


RULES = (
    Rule("gpu_contention", Severity.WARNING, gpu_contention),
    Rule("imbalance", Severity.WARNING, imbalance, metric="utilization_gpu_pct"),
)
