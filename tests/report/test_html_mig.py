"""The HTML report of a MIG machine: each instance's activity charted where the GPU's utilization would be,
named for the instance, in its GPU's colour and selection; a table of the instances under the charts; and a
page without MIG exactly as before."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from gputui.model import GpuSample, Snapshot
from gputui.record.reader import load_recording
from gputui.report.charts import MIG_ACTIVITY_TITLE, UTILIZATION, gpu_colour
from gputui.report.html import HOW_TO_READ_MIG, MIG_COLUMNS, MIG_TABLE_TITLE, render_html
from gputui.report.lanes import VERDICT_TITLE
from gputui.report.mig_lines import InstanceSeries
from gputui.report.summary import build_report
from tests.record.migdata import instance, mig_gpu, mig_snapshot
from tests.record.recdata import T0, gpu_sample, record_simulated, snapshot, write_recording
from tests.report.plotpage import plot, row_axis

_TICKS = 6


def _page(tmp_path: Path, ticks: list[Snapshot]) -> str:
    recording = load_recording(write_recording(tmp_path / "mig.jsonl", ticks))
    return render_html(recording, build_report(recording))


def _titles(layout: dict[str, Any]) -> list[str]:
    return [a["text"] for a in layout["annotations"] if a["xref"] == "paper"]


def _lines(traces: list[dict[str, Any]], layout: dict[str, Any], title: str) -> list[dict[str, Any]]:
    axis = row_axis(layout, title)
    return [t for t in traces if t["yaxis"] == axis and t.get("hoverinfo") != "skip"]


def _busy_and_quiet(t: float, gpu: int = 0) -> GpuSample:
    """GI 1 busy and rising (80, 81, ...), GI 2 quiet, a GPU in MIG mode."""
    i = round(t - T0)
    busy = instance(gpu, 0, 1, sm_active_pct=80.0 + i)
    quiet = instance(gpu, 1, 2, sm_active_pct=10.0)
    return mig_gpu(gpu, t, (busy, quiet))


def _mig_ticks(n_gpus: int = 2) -> list[Snapshot]:
    ticks = []
    for i in range(_TICKS):
        snap = mig_snapshot(T0 + i, n_gpus)
        ticks.append(dataclasses.replace(snap, gpus=tuple(_busy_and_quiet(T0 + i, g) for g in range(n_gpus))))
    return ticks


def test_each_instance_is_charted_where_the_utilization_of_the_gpu_would_be(tmp_path: Path) -> None:
    traces, layout = plot(_page(tmp_path, _mig_ticks()))
    titles = _titles(layout)
    assert UTILIZATION.title not in titles  # a GPU in MIG mode has none: no empty chart
    assert titles[titles.index(VERDICT_TITLE) + 1] == MIG_ACTIVITY_TITLE  # the first chart, as utilization was
    lines = _lines(traces, layout, MIG_ACTIVITY_TITLE)
    names = ["GPU 0 GI 1 3g.40gb", "GPU 0 GI 2 3g.40gb", "GPU 1 GI 1 3g.40gb", "GPU 1 GI 2 3g.40gb"]
    assert [t["name"] for t in lines] == names
    assert lines[0]["y"] == [v for i in range(_TICKS) for v in (80.0 + i, 80.0 + i)]  # SM active, tick by tick
    assert set(lines[1]["y"]) == {10.0}
    assert [t["line"]["color"] for t in lines] == [gpu_colour(0)] * 2 + [gpu_colour(1)] * 2
    assert lines[0]["line"]["dash"] != lines[1]["line"]["dash"]  # two instances of one GPU told apart
    assert all(t["legendgroup"] == f"gpu{t['name'][4]}" and t["legend"] == "legend" for t in lines)
    assert layout["yaxis" + row_axis(layout, MIG_ACTIVITY_TITLE).removeprefix("y")]["range"] == [0, 100]


def test_the_gpu_selector_shows_one_gpus_instances(tmp_path: Path) -> None:
    traces, layout = plot(_page(tmp_path, _mig_ticks()))
    [menu] = layout["updatemenus"]
    gpu1 = next(b for b in menu["buttons"] if b["label"] == "GPU 1 only")
    visible = gpu1["args"][0]["visible"]
    shown = [t for t, v in zip(traces, visible, strict=True) if v]
    axis = row_axis(layout, MIG_ACTIVITY_TITLE)
    assert [t["name"] for t in shown if t["yaxis"] == axis] == ["GPU 1 GI 1 3g.40gb", "GPU 1 GI 2 3g.40gb"]


def test_the_page_sums_up_each_instance_in_a_table_under_the_charts(tmp_path: Path) -> None:
    silent = instance(0, 1, 2, sm_active_pct=None, tensor_active_pct=None, dram_bw_pct=None, gr_engine_active_pct=None)
    ticks = []
    for i in range(_TICKS):
        busy = instance(0, 0, 1, sm_active_pct=80.0 + i)
        ticks.append(dataclasses.replace(mig_snapshot(T0 + i, 1), gpus=(mig_gpu(0, T0 + i, (busy, silent)),)))
    page = _page(tmp_path, ticks)
    assert HOW_TO_READ_MIG in page[: page.index("<script")]
    table = page[page.rindex("Plotly.newPlot(") : page.index("<details>")]  # after the charts, before the text
    assert MIG_TABLE_TITLE.replace("'", "&#x27;") in table
    assert "".join(f"<th>{c}</th>" for c in MIG_COLUMNS) in table
    assert (
        "<tr><td>GPU 0</td><td>3g.40gb (GI 1)</td><td>0</td><td>6</td><td>82.5%</td><td>44.0%</td><td>51.5%</td>"
        "<td>30.0 / 37.7 GiB</td></tr>"
    ) in table
    assert "<td>3g.40gb (GI 2)</td><td>0</td><td>6</td><td>n/a</td><td>n/a</td><td>n/a</td>" in table  # never 0
    traces, layout = plot(page)
    names = [t["name"] for t in _lines(traces, layout, MIG_ACTIVITY_TITLE)]
    assert names == ["GPU 0 GI 1 3g.40gb"]  # an instance that reported no activity has no line: the table says n/a


def test_an_instance_without_sm_activity_is_charted_by_its_graphics_engine_and_says_so(tmp_path: Path) -> None:
    ticks = []
    for i in range(_TICKS):
        engine_only = instance(0, 0, 1, sm_active_pct=None, gr_engine_active_pct=60.0 + i)
        both = instance(0, 1, 2, sm_active_pct=20.0, gr_engine_active_pct=99.0)
        ticks.append(dataclasses.replace(mig_snapshot(T0 + i, 1), gpus=(mig_gpu(0, T0 + i, (engine_only, both)),)))
    traces, layout = plot(_page(tmp_path, ticks))
    first, second = _lines(traces, layout, MIG_ACTIVITY_TITLE)
    assert first["name"] == "GPU 0 GI 1 3g.40gb (gr engine)" and first["y"][:4] == [60.0, 60.0, 61.0, 61.0]
    assert second["name"] == "GPU 0 GI 2 3g.40gb" and set(second["y"]) == {20.0}  # SM active where it is given


def test_a_machine_with_and_without_mig_keeps_utilization_and_adds_the_instances_after_it(tmp_path: Path) -> None:
    ticks = []
    for i in range(_TICKS):
        snap = mig_snapshot(T0 + i, 2)
        ticks.append(dataclasses.replace(snap, gpus=(gpu_sample(0, T0 + i), _busy_and_quiet(T0 + i, 1))))
    traces, layout = plot(_page(tmp_path, ticks))
    titles = _titles(layout)
    assert titles.index(MIG_ACTIVITY_TITLE) == titles.index(UTILIZATION.title) + 1
    assert [t["name"] for t in _lines(traces, layout, UTILIZATION.title)] == ["GPU 0", "GPU 1"]
    assert [t["name"] for t in _lines(traces, layout, MIG_ACTIVITY_TITLE)] == [
        "GPU 1 GI 1 3g.40gb",
        "GPU 1 GI 2 3g.40gb",
    ]


def test_a_page_without_mig_has_no_instances(tmp_path: Path) -> None:
    page = _page(tmp_path, [snapshot(T0 + i, 2) for i in range(3)])
    assert MIG_ACTIVITY_TITLE not in page and 'class="mig"' not in page and HOW_TO_READ_MIG not in page
    _, layout = plot(page)
    assert UTILIZATION.title in _titles(layout)


def test_an_instance_made_half_way_is_a_gap_before_it_existed() -> None:
    series = InstanceSeries()
    for i in range(4):
        devices = (instance(0, 0, 1, sm_active_pct=50.0),) + (
            (instance(0, 1, 2, sm_active_pct=70.0),) if i >= 2 else ()
        )
        series.add({0: mig_gpu(0, T0 + i, devices)})
    first, second = series.lines()
    assert first.values == (50.0,) * 4 and second.values == (None, None, 70.0, 70.0)


def test_two_compute_instances_of_one_gpu_instance_are_named_apart() -> None:
    series = InstanceSeries()
    series.add({0: mig_gpu(0, T0, (instance(0, 0, 1), instance(0, 1, 1, compute_instance_id=1)))})
    assert [line.name for line in series.lines()] == ["GPU 0 GI 1 CI 0 3g.40gb", "GPU 0 GI 1 CI 1 3g.40gb"]


def test_a_simulated_starving_slice_reads_low_beside_its_busy_neighbours(tmp_path: Path) -> None:
    recording = load_recording(record_simulated(tmp_path / "sim.jsonl", "mig-starving", gpus=2, seconds=30))
    page = render_html(recording, build_report(recording))
    traces, layout = plot(page)
    lines = {t["name"]: [v for v in t["y"] if v is not None] for t in _lines(traces, layout, MIG_ACTIVITY_TITLE)}
    assert len(lines) == 4 and all(name.startswith(("GPU 0 GI", "GPU 1 GI")) for name in lines)
    means = sorted(sum(v) / len(v) for v in lines.values())
    assert means[0] < 50 < means[1]  # one slice starves while the others run
    assert page.count("<tr><td>GPU ") == 4
