"""`gputui record`: the unattended recorder, as real processes on a real store: it records until SIGTERM or SIGINT
and then exits 0 with the lock released; a second recorder on the store is refused with the first one's PID;
`--detach` returns once the child records, leaving a pid file and a log (issue 39, items 2 and 5)."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from gputui import cli
from gputui.commands.detach import LOG_FILE, PID_FILE, read_pid
from gputui.session import builder
from gputui.sources.base import SourceUnavailable
from gputui.store.reader import Store
from gputui.store.writer import StoreWriter
from tests.agent.published import started, until

RECORD = [sys.executable, "-m", "gputui", "record", "--demo", "thermal", "--gpus", "0,1", "--interval", "0.25"]
START_S = 60.0  # a loaded machine imports slowly; every wait ends as soon as its state is there


def _environment() -> dict[str, str]:
    return {**os.environ, "PYTHONUNBUFFERED": "1"}


@contextlib.contextmanager
def _recorder(
    store: Path, *extra: str, command: tuple[str, ...] = tuple(RECORD), said: str = "gputui: recording"
) -> Iterator[subprocess.Popen[str]]:
    """A foreground recorder, once it said it records (it holds the store's lock then); killed and reaped at the
    end whatever the test did."""
    argv = [*command, "--store", str(store), *extra]
    with started(argv, _environment(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as child:
        assert child.stderr is not None
        deadline = time.monotonic() + START_S
        while True:
            assert time.monotonic() < deadline, "gputui record said nothing of recording"
            ready, _, _ = select.select([child.stderr], [], [], 0.5)
            if ready:
                line = child.stderr.readline()
                assert line, "gputui record exited before it recorded"
                if said in line:
                    break
        yield child


def _second(store: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*RECORD, "--store", str(store), *extra],
        capture_output=True,
        text=True,
        env=_environment(),
        timeout=START_S,
        check=False,
    )


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_records_until_stopped_then_exits_0_with_the_lock_released(tmp_path: Path, stop: signal.Signals) -> None:
    store = tmp_path / "history"
    with _recorder(store) as child:
        assert child.stderr is not None
        child.send_signal(stop)
        assert child.wait(timeout=START_S) == 0
        err = child.stderr.read()
    assert "Traceback" not in err and "readings recorded into" in err
    summary = Store(store).summary()
    assert summary.ticks >= 1 and summary.recorder_pid is None


def test_says_where_it_records_and_the_retention(tmp_path: Path) -> None:
    store = tmp_path / "history"
    child = subprocess.Popen([*RECORD, "--store", str(store)], stderr=subprocess.PIPE, text=True, env=_environment())
    try:
        assert child.stderr is not None
        line = until(child.stderr.readline, lambda text: "recording" in text or not text, "the recorder's first line")
    finally:
        child.terminate()
        child.wait(timeout=START_S)
        assert child.stderr is not None
        child.stderr.close()
    assert f"into {store}" in line and "SIMULATED" in line
    assert "7 days of readings" in line and "90 days of per-minute summaries" in line and "1 GiB" in line


def test_a_second_recorder_on_the_store_is_refused_naming_the_first(tmp_path: Path) -> None:
    store = tmp_path / "history"
    with _recorder(store) as first:
        second = _second(store)
        assert second.returncode != 0
        assert f"another recorder (PID {first.pid}) records into {store}" in second.stderr
        assert first.poll() is None  # the first records on
        assert Store(store).summary().recorder_pid == first.pid


@pytest.mark.usefixtures("no_user_config")
def test_without_a_driver_it_says_so_and_exits_3(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def unavailable(args: object, **_: object) -> None:
        raise SourceUnavailable("NVML Shared Library Not Found")

    monkeypatch.setattr(builder, "open_source", unavailable)
    assert cli.main(["record", "--store", str(tmp_path / "history")]) == 3
    err = capsys.readouterr().err
    assert "NVML Shared Library Not Found" in err and "--demo" in err
    assert not (tmp_path / "history").exists()  # nothing was recorded, nor a store made


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@contextlib.contextmanager
def _detached(store: Path) -> Iterator[subprocess.CompletedProcess[str]]:
    """`record --detach`, and at the end its recorder killed wherever the test left it (it is no child of this
    process once its parent returned: the suite's check for leftover children cannot see it)."""
    started = _second(store, "--detach")
    try:
        yield started
    finally:
        pid = read_pid(store)
        if pid is not None and _alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            until(lambda: _alive(pid), lambda alive: not alive, "the detached recorder to end")


def test_detach_returns_once_the_child_records_and_leaves_a_pid_file_and_a_log(tmp_path: Path) -> None:
    store = tmp_path / "history"
    with _detached(store) as started:
        assert started.returncode == 0, started.stderr
        pid = read_pid(store)
        assert pid is not None and _alive(pid)
        assert f"PID {pid}" in started.stderr and str(store / LOG_FILE) in started.stderr
        assert Store(store).summary().recorder_pid == pid  # it holds the lock
        assert os.getsid(pid) == pid  # a session of its own: no terminal to lose
        log = store / LOG_FILE
        assert stat.S_IMODE(log.stat().st_mode) == 0o600 and "recording SIMULATED data" in log.read_text()

        refused = _second(store, "--detach")
        assert refused.returncode != 0
        assert f"another recorder (PID {pid}) records into {store}" in refused.stderr
        assert read_pid(store) == pid and _alive(pid)

        os.kill(pid, signal.SIGTERM)
        until(lambda: _alive(pid), lambda alive: not alive, "the detached recorder to stop on SIGTERM")
        until(lambda: (store / PID_FILE).exists(), lambda there: not there, "its pid file to go")
    summary = Store(store).summary()
    assert summary.recorder_pid is None and summary.ticks >= 1


def test_detach_says_why_the_child_could_not_start(tmp_path: Path) -> None:
    """A child that exits at once (here: a GPU the simulated machine lacks) is reported with its log's words."""
    store = tmp_path / "history"
    failed = subprocess.run(
        [
            sys.executable,
            "-m",
            "gputui",
            "record",
            "--demo",
            "thermal",
            "--gpus",
            "7",
            "--store",
            str(store),
            "--detach",
        ],
        capture_output=True,
        text=True,
        env=_environment(),
        timeout=START_S,
        check=False,
    )
    assert failed.returncode == 2
    assert "before recording" in failed.stderr and "GPU 7" in failed.stderr
    assert read_pid(store) is None


EXPORT = (sys.executable, "-m", "gputui", "export", "--port", "0", "--demo", "thermal", "--gpus", "0", "--history")


def test_the_exporter_keeps_the_history_as_one_process_per_node(tmp_path: Path) -> None:
    store = tmp_path / "history"
    with _recorder(store, command=EXPORT, said=f"keeping the history in {store}") as exporter:
        refused = _second(store)  # a recorder beside it is the second writer
        assert refused.returncode == 2 and f"another recorder (PID {exporter.pid})" in refused.stderr
        exporter.send_signal(signal.SIGTERM)
        assert exporter.wait(timeout=START_S) == 0
    summary = Store(store).summary()
    assert summary.ticks >= 1 and summary.recorder_pid is None


def test_a_log_planted_as_a_link_is_refused_before_anything_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "history"
    StoreWriter(store, interval_s=1.0).close()  # a store, made by a recorder that ran before
    target = tmp_path / "elsewhere"
    target.write_text("theirs\n")
    (store / LOG_FILE).symlink_to(target)
    assert cli.main(["record", "--detach", "--demo", "thermal", "--store", str(store)]) == 2
    assert f"cannot keep the recorder's log in {store}" in capsys.readouterr().err
    assert target.read_text() == "theirs\n" and read_pid(store) is None


class _Writer:
    """What the recorder's watch reads of the store's writer."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.warning: str | None = None


def test_the_log_says_when_the_history_pauses_and_resumes_and_a_failing_reading_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from gputui.commands.record import _Watch
    from gputui.diagnostics.tick import Tick
    from tests.record.recdata import T0, snapshot

    writer = _Writer(tmp_path)
    started: list[bool] = []
    watch = _Watch(writer, on_first=lambda: started.append(True))  # type: ignore[arg-type]
    tick = Tick(snapshot(T0, 1))
    watch.tick(tick)
    writer.warning = f"history paused: the disk is full ({tmp_path}); sampling goes on"
    watch.tick(tick)
    watch.tick(tick)
    writer.warning = None
    watch.tick(tick)
    for _ in range(3):
        watch.failed(RuntimeError("driver hiccup"))
    said = [record.getMessage() for record in caplog.records]
    assert started == [True]  # said once, at the first reading
    assert said == [
        f"history paused: the disk is full ({tmp_path}); sampling goes on",
        f"history resumed ({tmp_path})",
        "a reading failed: RuntimeError: driver hiccup; sampling goes on",
    ]
