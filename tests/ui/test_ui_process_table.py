"""The process table nvitop users expect (issue 38, item 9): host RSS and %MEM, elapsed time, and the ranks of a
job kept together under one bracket with, where every row fits beside them, each process's data-loader workers on a
line under it; `f` folds the tree into a plain sort. A value not read is n/a, never 0; at 80
columns the table still fits, the host columns left out by width with TIME kept."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from gputui.model import GpuProcess, GpuSample, ProcSample
from gputui.serialize import snapshot_from_dict, snapshot_to_dict
from gputui.ui.widgets.processes import (
    COLUMNS,
    ProcessTable,
    process_jobs,
    process_rows,
    process_workers,
)
from tests.snapshots import GIB, gpu_info, host, proc, snapshot, system_info
from tests.ui.monitor_helpers import FRESH_S, plain, run_ticks, screen_rows, simulated_app

if TYPE_CHECKING:
    from conftest import Clock

KEYS = [column.key for column in COLUMNS]
NOW = 10_000.0


def machine(procs: list[ProcSample], gpus_of: dict[int, int]) -> object:
    """Processes `procs` on the GPUs `gpus_of` names (pid -> GPU), on a host of 512 GiB."""
    samples = [
        GpuSample(index, NOW, processes=tuple(GpuProcess(pid, GIB) for pid, on in gpus_of.items() if on == index))
        for index in sorted(set(gpus_of.values()))
    ]
    infos = [gpu_info(sample.index) for sample in samples]
    box = replace(host(procs), timestamp=NOW, memory_total_bytes=512 * GIB)
    return snapshot(NOW, samples, infos, box, system_info(gpu_count=len(infos)))


def ranks() -> list[ProcSample]:
    """Two ranks of one job (launcher 99) and a notebook of its own, CPU so that a sort by it splits the job."""
    return [
        proc(100, ppid=99, cpu_pct=90.0, rss_bytes=8 * GIB, create_time=NOW - 9005.0),
        proc(101, ppid=99, cpu_pct=10.0, rss_bytes=8 * GIB, create_time=NOW - 65.0),
        proc(200, ppid=1, cpu_pct=50.0, cmdline="python3 -m ipykernel", rss_bytes=None, create_time=None),
    ]


def test_rss_mem_and_the_elapsed_time_are_read_off_the_host_and_n_a_where_not_read() -> None:
    rows = process_rows(machine(ranks(), {100: 0, 101: 1, 200: 0}), FRESH_S)  # type: ignore[arg-type]
    first = rows["0:100"]
    assert first[KEYS.index("rss")].shown == "8.0G" and first[KEYS.index("pmem")].shown == "1.6"
    assert first[KEYS.index("time")].shown == "2h30m" and rows["1:101"][KEYS.index("time")].shown == "1m"
    unread = rows["0:200"]
    assert [unread[KEYS.index(key)].shown for key in ("rss", "pmem", "time")] == ["n/a"] * 3


def test_the_ranks_of_a_job_stay_together_under_a_bracket_and_f_folds_them() -> None:
    snap = machine(ranks(), {100: 0, 101: 1, 200: 0})
    jobs = process_jobs(snap)  # type: ignore[arg-type]
    assert jobs == {"0:100": 99, "1:101": 99}  # the notebook, alone under its parent, is no job
    table = ProcessTable()
    table.show_rows(process_rows(snap, FRESH_S), jobs=jobs)  # type: ignore[arg-type]
    table.known_height = 10
    table.sort_by(KEYS.index("cpu"))
    table.sort_by(KEYS.index("cpu"))  # busiest first: 100 (90%), 200 (50%), 101 (10%)
    assert table.order == ["0:100", "1:101", "0:200"]
    text = plain(table.build_lines(120)).splitlines()
    assert "┌ python3 train.py" in text[1] and "└ python3 train.py" in text[2] and "python3 -m ipykernel" in text[3]
    table.toggle_tree()
    assert table.order == ["0:100", "0:200", "1:101"]
    assert not any(mark in plain(table.build_lines(120)) for mark in "┌├└")


async def test_the_simulated_job_is_a_tree_at_80_columns_with_time_and_f_folds_it(clock: Clock) -> None:
    app = simulated_app("thermal", gpus=4, clock=clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await run_ticks(app, clock, 2)
        await pilot.pause()
        table = app.main.table
        rows = screen_rows(app)[table.region.y : table.region.bottom]
        assert rows[0].split()[:6] == ["GPU", "PID", "CPU%", "UTIL", "GPU", "MEM"] and " TIME " in rows[0]
        ranks = [row for row in rows if row[:3].strip().isdigit()]
        assert [row.split("  ")[-1].strip()[:1] for row in ranks] == ["┌", "├", "├", "└"]
        # With room, each rank's data-loader workers on a line under its PID.
        workers = [row.strip() for row in rows if row.startswith("        └ ")]
        assert len(workers) == 4 and all(w.startswith("└ 8 data-loader workers, CPU ") for w in workers)
        assert all(len(row.rstrip()) <= 80 for row in rows)
        await pilot.press("f")
        await pilot.pause()
        assert not any(mark in "\n".join(screen_rows(app)) for mark in "┌├└")


def test_the_workers_lines_show_only_where_every_row_fits_beside_them() -> None:
    snap = machine(ranks(), {100: 0, 101: 1, 200: 0})
    workers = process_workers(snap)  # type: ignore[arg-type]
    assert workers == {"0:100": (8, None), "1:101": (8, None), "0:200": (8, None)}  # CPU not read: n/a
    table = ProcessTable()
    table.show_rows(process_rows(snap, FRESH_S), jobs=process_jobs(snap), workers=workers)  # type: ignore[arg-type]
    table.known_height = 7  # the header, 3 rows and 3 workers' lines
    text = plain(table.build_lines(120))
    assert text.count("└ 8 data-loader workers, CPU n/a together") == 3
    table.known_height = 6  # one short: the rows first, no workers' line
    text = plain(table.build_lines(120))
    assert "workers" not in text and len(text.splitlines()) == 4
    table.toggle_tree()  # folded: rows only
    table.known_height = 10
    assert "workers" not in plain(table.build_lines(120))


def test_a_recording_made_before_the_parent_was_kept_reads_it_as_unavailable() -> None:
    snap = machine(ranks(), {100: 0, 101: 1, 200: 0})
    data = snapshot_to_dict(snap)  # type: ignore[arg-type]
    for process in data["host"]["processes"]:
        del process["ppid"]
    again = snapshot_from_dict(data)
    assert [p.ppid for p in again.host.processes] == [None, None, None]
