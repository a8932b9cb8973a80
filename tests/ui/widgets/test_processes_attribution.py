"""Pod and job where a person or a program reads them: the process table's POD/JOB column (left out first when
narrow), snapshot text and JSON, recordings (older ones read as None), and the export's one info series per GPU
process, read back by the remote source."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from gputui.export.metrics import ExportState
from gputui.formatting import fmt_owner
from gputui.metric_schema import PROCESS_INFO_METRIC
from gputui.model import GpuProcess, ProcSample, Snapshot
from gputui.record.format import dumps, header_to_dict, tick_to_dict
from gputui.record.reader import load_recording
from gputui.serialize import snapshot_from_dict, snapshot_to_dict
from gputui.sources.remote import parse_exposition
from gputui.text.snapshot_text import process_lines
from gputui.ui.widgets.processes import COLUMNS, ProcessTable, process_rows
from tests.export.export_helpers import SYSTEM, make_snapshot, parse, render
from tests.record.recdata import T0, snapshot, system
from tests.ui.monitor_helpers import FRESH_S

POD = {"pod": "train-0", "namespace": "ml", "k8s_container": "trainer"}


def _attributed(snap: Snapshot, **fields: str) -> Snapshot:
    """`snap` with its first host process given these attribution fields."""
    first, *rest = snap.host.processes
    host = dataclasses.replace(snap.host, processes=(dataclasses.replace(first, **fields), *rest))  # type: ignore[arg-type]
    return dataclasses.replace(snap, host=host)


def test_owner_text() -> None:
    assert fmt_owner("train-0", "ml", None) == "ml/train-0"
    assert fmt_owner("0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d", None, None) == "0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d"
    assert fmt_owner(None, None, "4242") == "job 4242"
    assert fmt_owner(None, None, None) is None


# --- the process table ----------------------------------------------------------------------------------------


def _table(rows: dict[str, tuple[object, ...]]) -> ProcessTable:
    table = ProcessTable()
    table.show_rows(rows)  # type: ignore[arg-type]
    return table


def test_the_column_shows_the_pod_or_the_job_only_when_some_process_has_one() -> None:
    plain = snapshot(T0, 2)
    owner = [c.key for c in COLUMNS].index("owner")
    table = _table(process_rows(plain, FRESH_S))  # type: ignore[arg-type]
    assert owner not in table.shown
    rows = process_rows(_attributed(plain, **POD), FRESH_S)
    assert [rows[key][owner].shown for key in sorted(rows)] == ["ml/train-0", ""]
    assert owner in _table(rows).shown  # type: ignore[arg-type]
    rows = process_rows(_attributed(plain, job_id="4242"), FRESH_S)
    assert rows["0:4242"][owner].shown == "job 4242"


def test_the_column_is_left_out_first_when_narrow() -> None:
    rows = process_rows(_attributed(snapshot(T0, 2), **POD), FRESH_S)
    table = _table(rows)  # type: ignore[arg-type]
    owner = [c.key for c in COLUMNS].index("owner")
    wide = dict(table.columns_at(160))
    assert owner in wide
    narrow = table.columns_at(80)
    assert owner not in dict(narrow)
    # The owner first, then the host columns that leave the command too little room (TIME stays).
    host = {"threads", "workers", "rss", "pmem"}
    assert [COLUMNS[n].key for n, _ in narrow] == [
        COLUMNS[n].key for n in table.shown if n != owner and COLUMNS[n].key not in host
    ]
    assert narrow[-1][1] >= 10 and sum(w + 2 for _, w in narrow) - 2 <= 80  # the command still has room


def test_the_filter_finds_a_pod_or_a_job() -> None:
    snap = _attributed(snapshot(T0, 2), **POD)
    assert list(process_rows(snap, FRESH_S, "train-0")) == ["0:4242"]
    assert list(process_rows(_attributed(snapshot(T0, 2), job_id="977"), FRESH_S, "job 977")) == ["0:4242"]


def test_snapshot_text_names_the_pod_and_its_container() -> None:
    text = "\n".join(process_lines(_attributed(snapshot(T0, 2), **POD), width=200))
    assert "pod ml/train-0 container trainer" in text
    text = "\n".join(process_lines(_attributed(snapshot(T0, 2), job_id="4242"), width=200))
    assert "job 4242" in text


def test_a_process_whose_files_are_refused_says_so_and_how_to_read_them() -> None:
    snap = _attributed(snapshot(T0, 2), unreadable=("fd", "io"))  # type: ignore[arg-type]
    note = "may not read its open files, I/O (root or CAP_SYS_PTRACE)"
    assert note in "\n".join(process_lines(snap, width=200))
    command = [c.key for c in COLUMNS].index("command")
    rows = process_rows(snap, FRESH_S)
    assert rows["0:4242"][command].shown.startswith(f"[{note}] ")
    assert not rows["1:4243"][command].shown.startswith("[")  # its files were read
    data = json.loads(json.dumps(snapshot_to_dict(snap)))
    assert data["gpus"][0]["processes"][0]["unreadable"] == ["fd", "io"]
    assert snapshot_from_dict(data).host.processes == snap.host.processes


# --- JSON and recordings --------------------------------------------------------------------------------------


def test_json_carries_the_fields_on_both_process_lists_and_back() -> None:
    snap = _attributed(snapshot(T0, 2), **POD, job_id=None)  # type: ignore[arg-type]
    data = json.loads(json.dumps(snapshot_to_dict(snap)))
    gpu_proc = data["gpus"][0]["processes"][0]
    assert {key: gpu_proc[key] for key in ("pod", "namespace", "k8s_container", "job_id")} == {**POD, "job_id": None}
    assert data["host"]["processes"][0]["pod"] == "train-0"
    assert snapshot_from_dict(data).host.processes == snap.host.processes


def test_recordings_carry_the_fields(tmp_path: Path) -> None:
    snaps = [_attributed(snapshot(T0 + i, 2), **POD) for i in range(2)]
    header = header_to_dict(system(2), snaps[0].gpu_info, interval_s=1.0, started_at=T0)
    path = tmp_path / "r.jsonl"
    path.write_text("".join(dumps(line) for line in [header, *(tick_to_dict(s) for s in snaps)]))
    read = load_recording(path).ticks[1].host.processes[0]
    assert (read.pod, read.namespace, read.k8s_container, read.job_id) == ("train-0", "ml", "trainer", None)


def test_a_recording_written_without_the_fields_reads_them_as_none(tmp_path: Path) -> None:
    header = header_to_dict(system(1), snapshot(T0, 1).gpu_info, interval_s=1.0, started_at=T0)
    # A tick as gputui wrote it before attribution: no pod, namespace, k8s_container or job_id anywhere.
    tick = {
        "type": "tick",
        "timestamp": T0,
        "gpus": [
            {
                "index": 0,
                "timestamp": T0,
                "utilization_gpu_pct": 97.0,
                "processes": [{"pid": 4242, "used_memory_bytes": 1}],
            }
        ],
        "host": {"timestamp": T0, "processes": [{"pid": 4242, "name": "python", "user": "alice", "cpu_pct": 99.0}]},
    }
    path = tmp_path / "old.jsonl"
    path.write_text(dumps(header) + dumps(tick))
    recording = load_recording(path)
    assert recording.warnings == []
    proc = recording.ticks[0].host.processes[0]
    assert proc == ProcSample(pid=4242, name="python", user="alice", cpu_pct=99.0)
    assert (proc.pod, proc.namespace, proc.k8s_container, proc.job_id) == (None, None, None, None)


# --- the export ----------------------------------------------------------------------------------------------


def test_one_info_series_per_gpu_process_and_no_pod_label_elsewhere() -> None:
    snap = make_snapshot()
    # The trainer (4242, pod ml/train-0) on GPUs 0 and 1; the worker (4300, Slurm job 4711) on GPU 0.
    gpu1 = dataclasses.replace(snap.gpus[1], processes=(GpuProcess(pid=4242, used_memory_bytes=1 << 30),))
    snap = dataclasses.replace(snap, gpus=(snap.gpus[0], gpu1, *snap.gpus[2:]))
    series, _ = parse(render(ExportState(system=SYSTEM, snapshot=snap)))
    info = sorted(
        (labels["pid"], labels["gpu"], labels["pod"], labels["namespace"], labels["container"], labels["job_id"], value)
        for labels, value in series[PROCESS_INFO_METRIC]
    )
    assert info == [
        ("4242", "0", "train-0", "ml", "trainer", "", 1.0),
        ("4242", "1", "train-0", "ml", "trainer", "", 1.0),
        ("4300", "0", "", "", "", "4711", 1.0),
    ]
    for name, samples in series.items():
        if name != PROCESS_INFO_METRIC:
            assert not any({"pod", "namespace", "job_id"} & set(labels) for labels, _ in samples), name


def test_the_remote_source_reads_the_fields_back() -> None:
    text = render(ExportState(system=SYSTEM, snapshot=make_snapshot()))
    procs = {p.pid: p for p in parse_exposition(text, fallback_hostname="x:9400", now=0.0).host.processes}
    assert (procs[4242].pod, procs[4242].namespace, procs[4242].k8s_container, procs[4242].job_id) == (
        "train-0",
        "ml",
        "trainer",
        None,
    )
    assert (procs[4300].pod, procs[4300].namespace, procs[4300].job_id) == (None, None, "4711")
