"""A finished probe as a Finding, so the monitor keeps it in the diagnostics pane with the rules' findings.

The finding says it in plain words: a title that is one sentence against the reference ("GPU 0 stress: 781
TFLOP/s, 79% of the H100 SXM dense peak: OK"; "CPU RUN stress: 1.5 GFLOP/s on the CPU (no GPU, not judged)")
and at most four figures as evidence, labelled from the diagnostics catalog. The worker's own names
(copy_64kib_gb_s, bytes) stay in the probe's JSON and the recording's probe_result event, and as each evidence
item's `key`. Titles are English, as the worker's verdicts are; the evidence labels are in every language.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from gputui.diagnostics.catalog import text
from gputui.diagnostics.findings import Evidence, Finding, Severity
from gputui.formatting import fmt_si, fmt_size, si_scaled
from gputui.probes.judge import RunJudgement
from gputui.probes.protocol import INSTALL_HINT, Error, ErrorCode, Final, ProbeName, Result
from gputui.probes.reference import DISK_CACHED_PCT_MAX, gpu_peaks

CPU_RUN = "CPU RUN"
# What the user calls each probe.
PROBE_NAMES: dict[ProbeName, str] = {
    "stress": "stress",
    "pcie": "PCIe",
    "membw": "memory bandwidth",
    "disk": "disk read",
    "p2p": "GPU-to-GPU",
}
# How a probe that gave no result ended, after "<name> probe"; the runner's message follows where it adds to it.
_ERROR_WORDS: dict[ErrorCode, tuple[str, bool]] = {
    "no_torch": ("needs torch", False),
    "cancelled": ("cancelled", False),
    "timeout": ("timed out", True),
    "crashed": ("crashed", True),
    "failed": ("failed", True),
    "bad_args": ("refused its arguments", True),
}
_QUIET_ERRORS = ("no_torch", "cancelled")
_DIRECTION = re.compile(r"gpu(\d+)_to_gpu(\d+)_gb_s")
MAX_EVIDENCE = 4

Figures = dict[str, float | None]


def _rate(figures: Figures, key: str, scale: float, unit: str) -> str:
    value = figures.get(key)
    return fmt_si(None if value is None else value * scale, unit)


def _status(ok: bool) -> str:
    """OK, or LOW: under the pass mark (reference.PASS_FRACTION; the advice says it in full)."""
    return "OK" if ok else "LOW"


def _model(device: str) -> str | None:
    """The reference model of a CUDA device label ("cuda:0 NVIDIA H100 80GB HBM3" -> "H100 SXM")."""
    peaks = gpu_peaks(device.partition(" ")[2])
    return peaks.model if peaks else None


def _against_peak(result: Result, rate: str, on_cpu: str, unjudged: str, peak: str) -> str:
    """`rate` as a share of the peak of the GPU's model (reference.py): "<rate>, 79% of the H100 SXM<peak>: OK",
    or why it is not judged (a CPU run, `on_cpu`; a model with no reference, `<rate><unjudged> (...)`)."""
    if result.on_cpu:
        return f"{rate} {on_cpu} (no GPU, not judged)"
    pct, model = result.figures.get("pct_of_peak"), _model(result.device)
    if pct is None or model is None:
        return f"{rate}{unjudged} (no reference peak for this GPU, not judged)"
    return f"{rate}, {pct:.0f}% of the {model}{peak}: {_status(result.ok)}"


def _stress_title(result: Result) -> str:
    f = result.figures
    if result.faulty:
        return f"FAULTY, {f.get('mismatches') or 0:.0f} of {f.get('results_checked') or 0:.0f} results differed"
    return _against_peak(result, _rate(f, "tflops", 1e12, "FLOP/s"), "on the CPU", "", " dense peak")


def _membw_title(result: Result) -> str:
    f = result.figures
    peak = f"'s {_rate(f, 'peak_gb_s', 1e9, 'B/s')}"
    return _against_peak(result, _rate(f, "copy_gb_s", 1e9, "B/s"), "host memory copy", " device copy", peak)


def _pcie_title(result: Result) -> str:
    f = result.figures
    if result.on_cpu:
        return f"{_rate(f, 'copy_gb_s', 1e9, 'B/s')} host memory copy (no GPU, no PCIe link: not judged)"
    copies = f"H2D {_rate(f, 'h2d_pinned_gb_s', 1e9, 'B/s')}, D2H {_rate(f, 'd2h_pinned_gb_s', 1e9, 'B/s')}"
    # As pcie_verdict judges: against the slot's best when the link trained below it, else the link as it is.
    now, best = f.get("link_gb_s"), f.get("link_max_gb_s")
    link = best if now is None or (best is not None and now < best) else now
    slowest = min((v for v in (f.get("h2d_pinned_gb_s"), f.get("d2h_pinned_gb_s")) if v is not None), default=None)
    if link is None or slowest is None:
        return f"{copies} (link unknown, not judged)"
    return f"{copies}, {100 * slowest / link:.0f}% of the link's {fmt_si(link * 1e9, 'B/s')}: {_status(result.ok)}"


def _directions(figures: Figures) -> list[tuple[int, int, float]]:
    """(src, dst, GB/s) of each direction a p2p run timed, slowest first."""
    found = [(int(m[1]), int(m[2]), v) for k, v in figures.items() if (m := _DIRECTION.fullmatch(k)) and v is not None]
    return sorted(found, key=lambda d: d[2])


def _p2p_title(result: Result) -> str:
    f = result.figures
    directions = _directions(f)
    if not directions:
        return "no copy timed"
    if result.on_cpu:
        best = fmt_si(directions[-1][2] * 1e9, "B/s")
        return f"{best} host memory copies (no two GPUs, not judged)"
    src, dst, slowest = directions[0]
    no_p2p = sum(f.get(f"gpu{a}_to_gpu{b}_p2p") == 0.0 for a, b, _ in directions)
    if no_p2p:
        return f"P2P unavailable for {no_p2p} of {len(directions)} directions, copies through host memory: LOW"
    pct = f.get(f"gpu{src}_to_gpu{dst}_pct_of_link")
    head = f"{len(directions)} directions, slowest GPU {src} -> {dst} at {fmt_si(slowest * 1e9, 'B/s')}"
    if pct is None:
        return f"{head} (link unknown, not judged)"
    return f"{head}, {pct:.0f}% of its link: {_status(result.ok)}"


def _disk_title(result: Result) -> str:
    f = result.figures
    rate = _rate(f, "read_mb_s", 1e6, "B/s")
    cached = f.get("page_cache_pct")
    if cached is None:
        return f"{rate} sequential read (page-cache share unknown)"
    if cached >= 90:
        return f"{rate}, {cached:.0f}% from the page cache: memory speed, not the disk's"
    if cached <= DISK_CACHED_PCT_MAX:
        return f"{rate} sequential read from storage"
    return f"{rate} sequential read, {cached:.0f}% from the page cache: faster than the disk alone"


_TITLES: dict[ProbeName, Callable[[Result], str]] = {
    "stress": _stress_title,
    "membw": _membw_title,
    "pcie": _pcie_title,
    "p2p": _p2p_title,
    "disk": _disk_title,
}


def result_title(result: Result, gpu: int | None, judgement: RunJudgement | None = None) -> str:
    """One sentence: where, which probe, the figure against its reference, and whether it passed."""
    name = PROBE_NAMES[result.probe]
    if result.on_cpu:
        where = f"{CPU_RUN} {name}"
    elif gpu is not None and result.probe not in ("disk", "p2p"):
        where = f"GPU {gpu} {name}"
    else:
        where = name
    title = f"{where}: {_TITLES[result.probe](result)}"
    if judgement is not None and judgement.worsened:
        title += f"; {judgement.headline}"
    return title


def error_title(error: Error) -> str:
    """ "stress probe cancelled", "membw probe crashed: the probe worker ended with signal SIGABRT": each word once."""
    words, with_message = _ERROR_WORDS[error.code]
    title = f"{PROBE_NAMES[error.probe]} probe {words}"
    return f"{title}: {error.message}" if with_message and error.message else title


# Each probe's figures worth a line in the pane, in order: (figure, catalog label, scale to the base unit, unit).
# A unit of "B/s" or "FLOP/s" is shown with an SI prefix; "size" as a buffer size.
_EVIDENCE: dict[ProbeName, tuple[tuple[str, str, float, str], ...]] = {
    "stress": (
        ("tflops", "matmul_rate", 1e12, "FLOP/s"),
        ("pct_of_peak", "share_of_peak", 1.0, "%"),
        ("tflops_worst_second", "slowest_second", 1e12, "FLOP/s"),
        ("mismatches", "results_differed", 1.0, ""),
    ),
    "membw": (
        ("copy_gb_s", "memory_copy", 1e9, "B/s"),
        ("peak_gb_s", "memory_peak", 1e9, "B/s"),
        ("pct_of_peak", "share_of_peak", 1.0, "%"),
        ("bytes", "copy_size", 1.0, "size"),
    ),
    "pcie": (
        ("h2d_pinned_gb_s", "h2d_pinned", 1e9, "B/s"),
        ("d2h_pinned_gb_s", "d2h_pinned", 1e9, "B/s"),
        ("link_gb_s", "link_theory", 1e9, "B/s"),
        ("h2d_pageable_gb_s", "h2d_pageable", 1e9, "B/s"),
        ("copy_gb_s", "host_copy", 1e9, "B/s"),
    ),
    "disk": (
        ("read_mb_s", "sequential_read", 1e6, "B/s"),
        ("page_cache_pct", "page_cache", 1.0, "%"),
        ("bytes", "data_read", 1.0, "size"),
        ("files", "files_read", 1.0, ""),
    ),
    "p2p": (),
}


def _item(key: str, label: str, value: float, scale: float, unit: str) -> Evidence:
    if unit == "size":
        return Evidence(label, fmt_size(value), key=key)
    if unit in ("B/s", "FLOP/s"):
        number, prefixed = si_scaled(value * scale, unit)
        return Evidence(label, number, prefixed, key=key)
    return Evidence(label, value, unit, key=key)


def result_evidence(result: Result, lang: str = "en") -> tuple[Evidence, ...]:
    """A few figures in words and units; membw on the CPU copies host memory, so it is labelled so."""
    if result.probe == "p2p":
        directions: Sequence[tuple[int, int, float]] = _directions(result.figures)
        return tuple(
            _item(f"gpu{a}_to_gpu{b}_gb_s", text("ev.copy_direction", lang, src=a, dst=b), v, 1e9, "B/s")
            if not result.on_cpu
            else _item(f"gpu{a}_to_gpu{b}_gb_s", text("ev.host_copy", lang), v, 1e9, "B/s")
            for a, b, v in directions[:MAX_EVIDENCE]
        )
    items = []
    for key, label, scale, unit in _EVIDENCE[result.probe]:
        value = result.figures.get(key)
        if value is None:
            continue
        if result.on_cpu and label == "memory_copy":
            label = "host_copy"
        items.append(_item(key, text(f"ev.{label}", lang), value, scale, unit))
    return tuple(items[:MAX_EVIDENCE])


def to_finding(
    final: Final, gpu: int | None, at: float, judgement: RunJudgement | None = None, lang: str = "en"
) -> Finding:
    """Severity: critical when the GPU computed wrong answers or fell off the bus, warning when a figure
    failed its check, a slowdown began, or the probe crashed; info otherwise."""
    rule = f"probe_{final.probe}"
    gpus = (gpu,) if gpu is not None else ()
    if isinstance(final, Error):
        severity = Severity.INFO if final.code in _QUIET_ERRORS else Severity.WARNING
        advice = INSTALL_HINT if final.code == "no_torch" else final.stderr_tail.strip()[-400:]
        return Finding(rule, severity, error_title(final), advice, gpus=gpus, started_at=at, ended_at=at)
    severity = Severity.INFO
    if not final.ok or (judgement is not None and judgement.worsened):
        severity = Severity.WARNING
    if final.faulty or (judgement is not None and judgement.lost_after_s is not None):
        severity = Severity.CRITICAL
    advice = final.verdict if judgement is None else f"{final.verdict}. During the run: {judgement.text}"
    return Finding(
        rule,
        severity,
        result_title(final, gpu, judgement),
        advice,
        gpus=gpus,
        evidence=result_evidence(final, lang),
        started_at=at,
        ended_at=at,
    )
