"""`gputui diagnose` reads every GPU process's stacks once, by default, and prints what it read; `--no-stacks` and
a machine whose processes are not this one's read none."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from gputui.cli import main
from gputui.model import ActivityShares, JobActivity
from gputui.session import stacks
from gputui.session.loop import SamplingLoop


@pytest.fixture
def read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """No user config; the simulated machine's processes taken for this machine's, their stacks read by a fake
    that records whose it read."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("LANG", "en_US.UTF-8")
    pids: list[int] = []

    def fake(self: stacks.JobStacks, pid: int, window_s: float) -> JobActivity:
        pids.append(pid)
        return JobActivity("py-spy", 1000.0, window_s, 80, ActivityShares(data=0.75, cpu=0.25), rank=pid % 2)

    monkeypatch.setattr(stacks.JobStacks, "_read_activity", fake)
    return pids


def _diagnose(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    main(["diagnose", "--json", "--demo", "starved-cpu", "--seconds", "3", *args])
    out: dict[str, object] = json.loads(capsys.readouterr().out)
    return out


def test_every_gpu_process_is_read_once_and_its_activity_printed(
    read: list[int], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The windows end only once the sampling has: what is printed has them all the same."""
    monkeypatch.setattr(stacks, "stacks_refusal", lambda system: None)
    sampled = threading.Event()
    run, read_activity = SamplingLoop.run, stacks.JobStacks._read_activity

    def run_then_say(loop: SamplingLoop[object], polls: int | None = None) -> None:
        run(loop, polls)
        sampled.set()

    def after_the_sampling(self: stacks.JobStacks, pid: int, window_s: float) -> JobActivity:
        assert sampled.wait(10.0)
        return read_activity(self, pid, window_s)

    monkeypatch.setattr(SamplingLoop, "run", run_then_say)
    monkeypatch.setattr(stacks.JobStacks, "_read_activity", after_the_sampling)
    data = _diagnose(capsys)
    processes = data["processes"]
    assert isinstance(processes, list) and processes
    assert sorted(read) == sorted({p["pid"] for p in processes})
    first = processes[0]
    assert first["activity"] == {
        "source": "py-spy",
        "window_s": 4.0,
        "samples": 80,
        "shares": {
            "data": 0.75,
            "loading": 0.0,
            "cpu": 0.25,
            "gpu_sync": 0.0,
            "collective": 0.0,
            "checkpoint": 0.0,
            "compile": 0.0,
            "io": 0.0,
            "idle": 0.0,
        },
        "top": [],
        "rank": first["pid"] % 2,
        "workers": None,
        "worker_samples": 0,
        "taken_at": 1000.0,
        "error": None,
        "unchanged_since": None,
    }


def test_no_stacks_reads_none(
    read: list[int], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stacks, "stacks_refusal", lambda system: None)
    data = _diagnose(capsys, "--no-stacks")
    assert read == [] and all(p["activity"] is None for p in data["processes"])  # type: ignore[attr-defined]


def test_made_up_processes_are_never_read(read: list[int], capsys: pytest.CaptureFixture[str]) -> None:
    data = _diagnose(capsys)
    assert read == [] and all(p["activity"] is None for p in data["processes"])  # type: ignore[attr-defined]


def test_no_stacks_is_in_the_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["diagnose", "--help"])
    assert "--no-stacks" in capsys.readouterr().out
