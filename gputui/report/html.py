"""The HTML report: one page that opens offline (plotly.js inline), the verdict and the charts first.

The first screen answers "what held this job back": the SIMULATED label where it applies, the machine and the
span, the verdict over time in a sentence (each class in its lane's colour), the findings counted by
severity, then the figure (report_figure). The text report, which says the same in numbers, is folded under
it for whoever wants to paste it into a ticket.
"""

from __future__ import annotations

import html
from collections import Counter
from pathlib import Path

from gputui.diagnostics.account import Price, account_lines, class_label
from gputui.diagnostics.catalog import text
from gputui.formatting import NA, fmt_bytes_pair, fmt_duration, fmt_pct, fmt_share
from gputui.record.format import RecordingError, format_clock, format_datetime
from gputui.record.reader import Recording
from gputui.report.activity_windows import activity_table
from gputui.report.before_after import comparison_line
from gputui.report.figure import CONFIG, build_figure
from gputui.report.lanes import SEVERITIES, finding_lanes, verdict_colour
from gputui.report.summary import Report, render_text, severity_word

_STYLE = (
    "body{font-family:system-ui,sans-serif;margin:1em 2em}"
    "h1{font-size:1.5em;margin:.3em 0}"
    ".meta{color:#444;margin:.2em 0}"
    ".verdict{font-size:1.1em;margin:.6em 0 .3em}"
    ".chip{display:inline-block;width:.8em;height:.8em;margin:0 .25em 0 .1em;border-radius:2px;"
    "vertical-align:baseline}"
    ".how{color:#666;font-size:.9em;margin:.3em 0 0}"
    "pre{background:#f6f6f6;padding:1em;overflow-x:auto;font-size:13px}"
    "summary{cursor:pointer;font-weight:bold;margin:1em 0 .5em}"
    ".sim{background:#ffd500;color:#000;font-weight:bold;padding:.4em .8em;display:inline-block}"
    "table.mig{border-collapse:collapse;margin:.5em 0 1em;font-size:.95em}"
    "table.mig th,table.mig td{padding:.2em .8em;border-bottom:1px solid #ddd;text-align:right}"
    "table.mig th:nth-child(-n+2),table.mig td:nth-child(-n+2){text-align:left}"
    "table.activity td:nth-child(n+4){text-align:left}"
)
HOW_TO_READ = (
    "Drag across a chart to zoom in time (every chart follows); double-click to zoom out. A finding is drawn "
    "thick and pale, in its severity's colour, over the lines it concerns."
)
HOW_TO_PICK = " The menu at the top left shows one GPU alone."
HOW_TO_READ_MIG = (
    " A GPU in MIG mode has no whole-GPU utilization: each of its instances' activity is charted instead (its SM "
    "activity, or its graphics engine's where the line says gr engine), and summed up in the table under the charts."
)
TEXT_SUMMARY = "The text report (as gputui report prints it)"
MIG_TABLE_TITLE = "MIG instances (means over the recording; memory: the peak against the instance's size)"
MIG_COLUMNS = ("GPU", "instance", "CI", "samples", "SM active", "tensor active", "DRAM bandwidth", "memory peak")


def verdict_sentence(report: Report) -> str:
    """The verdict over time in words, as HTML: each class (its label, as the text report and the account name it)
    with its seconds and share and a chip of its lane's colour, then the longest stretch of the class that held
    most and what the verdict said then."""
    if not report.verdicts:
        return "Verdict: not kept in this recording (an older gputui made it)."
    shares = report.verdict_shares()
    if not shares:
        return "Verdict: one reading, no time to share among the verdicts."
    seconds = report.verdict_seconds()
    parts = []
    for n, (cls, share) in enumerate(shares.items()):
        chip = f'<span class="chip" style="background:{verdict_colour(cls)}"></span>'
        said = f"<b>{html.escape(class_label(cls))}</b> {fmt_duration(seconds[cls])}, {fmt_share(share)}"
        parts.append(chip + said + (" of the time" if n == 0 else ""))
    first = parts[0] + (", then " + ", ".join(parts[1:]) if parts[1:] else "") + "."
    top = next(iter(shares))
    longest = max(
        (s for s in report.verdicts if s.cls == top), key=lambda s: (s.end or report.end) - s.start, default=None
    )
    if longest is None:
        return f"Verdict: {first}"
    clock = report.utc_offset_s
    until = format_clock(longest.end, clock) if longest.end is not None else "the end"
    return (
        f"Verdict: {first} Its longest stretch, {format_clock(longest.start, clock)} to {until}: "
        f"{html.escape(longest.summary or longest.label)}."
    )


def findings_sentence(report: Report) -> str:
    """How many findings of each severity, and where they are drawn."""
    if not report.findings:
        return "Findings: none."
    by_severity = Counter(span.severity for span in report.findings)
    order = [*SEVERITIES, *sorted(set(by_severity) - set(SEVERITIES))]
    counted = ", ".join(f"{by_severity[s]} {severity_word(s)}" for s in order if by_severity[s])
    lanes = len(finding_lanes(report))
    origin = "as recorded" if report.findings_origin == "recorded" else "recomputed from the samples"
    return (
        f"Findings ({origin}): {len(report.findings)} ({counted}) in {lanes} lane{'s' if lanes > 1 else ''} "
        "under the charts, and in the text report."
    )


def _machine(recording: Recording, report: Report) -> str:
    names = Counter(gpu.name for gpu in report.gpus)
    boards = ", ".join(f"{count} × {name}" for name, count in names.items()) or "no GPUs"
    system = recording.header.system
    driver = f", driver {system.driver_version}" if system.driver_version else ""
    return f"{report.hostname} ({report.recorded_source}): {boards}{driver}"


def _span(report: Report) -> str:
    clock = report.utc_offset_s
    return (
        f"{format_datetime(report.start, clock)} to {format_clock(report.end, clock)}, "
        f"{report.duration_s / 60:.1f} min, {report.ticks} ticks every {report.interval_s:g} s; {report.path}"
    )


def instances_table(report: Report) -> str:
    """Each MIG instance's summary, a row each under its GPU, as the text report gives it; "" off MIG."""
    rows = []
    for gpu in report.gpus:
        for inst in gpu.instances:
            cells = (
                f"GPU {gpu.index}",
                inst.label,
                NA if inst.compute_instance_id is None else str(inst.compute_instance_id),
                str(inst.samples),
                fmt_pct(inst.sm_active_pct.mean, 1),
                fmt_pct(inst.tensor_active_pct.mean, 1),
                fmt_pct(inst.dram_bw_pct.mean, 1),
                fmt_bytes_pair(inst.memory_used_peak_bytes, inst.memory_total_bytes),
            )
            rows.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
    if not rows:
        return ""
    head = "".join(f"<th>{html.escape(c)}</th>" for c in MIG_COLUMNS)
    return (
        f'<p class="meta"><b>{html.escape(MIG_TABLE_TITLE)}</b></p>'
        f'<table class="mig"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
    )


def before_after_list(report: Report) -> str:
    """Each mark's before and after, as the text report words it; "" without marks."""
    if not report.before_after:
        return ""
    clock = report.utc_offset_s
    items = "".join(
        f"<li>{html.escape(comparison_line(c, format_clock(c.t, clock)))}</li>" for c in report.before_after
    )
    return (
        f'<p class="meta"><b>{html.escape(text("account.compare.heading", "en"))}</b></p><ul class="marks">{items}</ul>'
    )


def render_html(recording: Recording, report: Report, price: Price | None = None) -> str:
    """One self-contained page: the SIMULATED label when it applies, the header, where the GPU time went (with a
    price, what it cost), before and after each mark, the figure, the MIG instances' table and the jobs' activity
    where there are any, the text report."""
    charts = build_figure(recording, report).to_html(full_html=False, include_plotlyjs=True, config=CONFIG)
    banner = ""
    if report.simulated:
        banner = (
            '<p class="sim">SIMULATED'
            + (f" (scenario {html.escape(report.scenario)})" if report.scenario else "")
            + ": not measured on a real machine</p>"
        )
    title = f"gputui report: {html.escape(report.hostname)}"
    mig = any(gpu.instances for gpu in report.gpus)
    account = "<br>".join(html.escape(line) for line in account_lines(report.account, price))
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        f"<title>{'SIMULATED · ' if report.simulated else ''}{title}</title><style>{_STYLE}</style></head><body>"
        f"{banner}<h1>{title}</h1>"
        f'<p class="meta">{html.escape(_machine(recording, report))}</p>'
        f'<p class="meta">{html.escape(_span(report))}</p>'
        f'<p class="verdict">{verdict_sentence(report)}</p>'
        f'<p class="meta">{html.escape(findings_sentence(report))}</p>'
        f'<p class="meta">{account}</p>'
        f"{before_after_list(report)}"
        f'<p class="how">{HOW_TO_READ}{HOW_TO_PICK if len(report.gpus) > 1 else ""}{HOW_TO_READ_MIG if mig else ""}</p>'
        f"{charts}{instances_table(report)}{activity_table(report.activities)}"
        f"<details><summary>{TEXT_SUMMARY}</summary><pre>{html.escape(render_text(report, price))}</pre></details>"
        "</body></html>\n"
    )


def write_html(recording: Recording, report: Report, out: Path, price: Price | None = None) -> None:
    """Write the page (a report is made again from its recording, so it may be overwritten)."""
    page = render_html(recording, report, price)
    try:
        out.write_text(page, encoding="utf-8")
    except OSError as exc:
        raise RecordingError(f"cannot write {out}: {exc.strerror or exc}") from exc
