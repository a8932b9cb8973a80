"""A recorder killed with SIGKILL loses at most its open frame; a full disk pauses the history, never the
sampling, and it resumes (and says so) once there is room again. Real processes, a real small filesystem."""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gputui.store.reader import Store
from gputui.store.writer import StoreWriter
from tests.store.storedata import T0, simulate

WAIT_S = 60.0  # a bound never reached when all is well

RECORDER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from gputui.store.writer import StoreWriter
    from tests.store.storedata import simulate
    writer = StoreWriter(Path(sys.argv[1]), interval_s=1.0)
    started = time.monotonic()
    for step in simulate("tour", gpus=2, seconds=100_000):
        writer.record(step.snapshot, step.active, step.verdict)
        writer.drain()
        print(step.snapshot.timestamp, flush=True)  # recorded and handled by the writer's thread
        if time.monotonic() - started > 60:
            break
        time.sleep(0.005)
    """
)


def test_a_recorder_killed_with_sigkill_loses_at_most_its_open_frame(tmp_path: Path) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", RECORDER, str(tmp_path)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    try:
        assert child.stdout is not None
        handled = []
        deadline = time.monotonic() + WAIT_S
        while len(handled) < 37 and time.monotonic() < deadline:  # past three whole frames, into the fourth
            handled.append(float(child.stdout.readline()))
        child.send_signal(signal.SIGKILL)
        handled += [float(line) for line in child.stdout.read().split()]
    finally:
        child.kill()
        child.wait(timeout=WAIT_S)
    assert child.returncode == -signal.SIGKILL
    store = Store(tmp_path)
    times = [snap.timestamp for snap in store.read(T0, T0 + 1e6).ticks]
    last = handled[-1]
    assert times == [T0 + i for i in range(len(times))]  # all of them up to the open frame, none skipped
    assert last - 10 < times[-1] + 1 <= last + 1  # what is lost: the open frame, fewer than 10 ticks
    assert len(times) % 10 == 0 and len(times) >= 30
    assert store.summary().recorder_pid is None  # the kernel dropped the lock with the process


@contextlib.contextmanager
def _tiny_filesystem(where: Path) -> Iterator[Path]:
    where.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(where)], capture_output=True, text=True, timeout=30
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs to fill (needs root): {mounted.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], capture_output=True, timeout=30, check=True)


def _fill(path: Path) -> None:
    """Fill the filesystem holding `path` to the last byte."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        block = os.urandom(4096)
        while True:
            try:
                os.write(fd, block)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
                break
    finally:
        os.close(fd)


def test_a_full_disk_pauses_the_history_keeps_sampling_and_resumes(tmp_path: Path) -> None:
    """After the disk fills, a frame may still fit in the slack of the chunk's last page: frames go on until one
    does not (within three), then that frame is dropped and counted, the chunk left whole."""
    steps = list(simulate("tour", gpus=8, seconds=80))
    with _tiny_filesystem(tmp_path / "disk") as disk:
        writer = StoreWriter(disk / "store", interval_s=1.0)

        def frame(first: int) -> None:
            for step in steps[first : first + 10]:
                writer.record(step.snapshot, step.active, step.verdict)
            writer.flush()

        try:
            frame(0)
            frame(10)
            assert writer.warning is None and writer.ticks_written == 20
            _fill(disk / "filler")
            lost = None
            for first in (20, 30, 40):
                frame(first)
                if writer.warning is not None:
                    lost = first
                    break
            assert lost is not None, "three frames fit in the slack of a full disk"
            assert writer.warning == f"history paused: the disk holding {disk / 'store'} is full; sampling goes on"
            assert writer.stopped is False and writer.ticks_written == lost and writer.ticks_dropped == 10
            (disk / "filler").unlink()
            frame(lost + 10)
            assert writer.warning == "history resumed: 10 s lost to the full disk"
            frame(lost + 20)
            assert writer.warning is None and writer.ticks_written == lost + 20
        finally:
            writer.close()
        recording = Store(disk / "store").read(T0, T0 + 100)
        written = [float(i) for i in range(lost + 30) if not lost <= i < lost + 10]
        assert [s.timestamp - T0 for s in recording.ticks] == written
        assert recording.warnings == []  # cut back to whole frames: nothing damaged is left behind
