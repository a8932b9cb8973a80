"""Issue 40 item 3: a main thread running on its own line that calls `.item()` (a sync in C++, no Python frame) is
`gpu_sync`, named by that line read from disk; the file is another user's, so a FIFO, a symlink, a huge file, junk
or terminal escapes at the path change nothing but the answer."""

from __future__ import annotations

import dataclasses
import os
import sys
import threading
import time
from pathlib import Path

import pytest

from gputui.foreign_text import is_clean
from gputui.sources.stacks.classify import summarize
from gputui.sources.stacks.inprocess import read_published
from gputui.sources.stacks.samples import StackWindow
from gputui.sources.stacks.source_line import GPU_SYNC_CALL, MAX_BYTES, MAX_LINE_CHARS, SourceLines
from tests.agent.published import job_environment, started, until
from tests.sources.stacks.recorded import FIXTURES, recorded, thread, window

PID = os.getpid()  # the files are read through /proc/<pid>/root: this process's, as a job's own would be


def _moved(recorded_window: StackWindow, source: Path) -> StackWindow:
    """The recorded window as if taken of this process, its job's file at `source`."""
    threads = []
    for t in recorded_window.threads:
        stacks = tuple(
            dataclasses.replace(
                count,
                stack=tuple(
                    dataclasses.replace(f, file=str(source)) if f.file.endswith(source.name) else f for f in count.stack
                ),
            )
            for count in t.stacks
        )
        pid = PID if t.pid == recorded_window.pid else t.pid
        threads.append(dataclasses.replace(t, pid=pid, tid=PID if t.is_main else t.tid, stacks=stacks))
    return dataclasses.replace(recorded_window, pid=PID, threads=tuple(threads))


def test_a_recorded_item_loop_reads_as_gpu_sync_named_by_its_line(tmp_path: Path) -> None:
    source = tmp_path / "itemsync.py"
    source.write_text((FIXTURES / "itemsync.py.txt").read_text())
    activity = summarize(_moved(recorded("itemsync"), source))
    assert activity.leading == "gpu_sync"
    assert activity.shares.gpu_sync > 0.9
    top = activity.top[0]
    assert (top.kind, top.function, top.source_line) == ("gpu_sync", "step", "return (x @ x).sum().item()")


def test_without_its_source_the_same_loop_stays_the_jobs_own_cpu(tmp_path: Path) -> None:
    activity = summarize(_moved(recorded("itemsync"), tmp_path / "itemsync.py"))  # never written
    assert activity.leading == "cpu"
    assert activity.top[0].source_line is None


def _job(tmp_path: Path, line: str, running: int = 10) -> StackWindow:
    source = tmp_path / "train.py"
    source.write_text(f"import torch\n\ndef step(loss):\n    {line}\n")
    return window(PID, thread(PID, PID, f"<module> ({source}:9);step ({source}:4)", samples=10, running=running))


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ("return loss.item()", "gpu_sync"),
        ("host = out.cpu()", "gpu_sync"),
        ("values = out.tolist()", "gpu_sync"),
        ("array = out.detach().numpy()", "gpu_sync"),
        ("host = out.to('cpu')", "gpu_sync"),
        ('host = out.to("cpu", non_blocking=False)', "gpu_sync"),
        ("print(loss)", "gpu_sync"),
        ('print(f"loss {loss}")', "gpu_sync"),
        ('print("epoch done")', "cpu"),  # a plain string waits for nothing
        ("print()", "cpu"),
        ("for key, value in batch.items():", "cpu"),
        ("total = sum(x * x for x in values)", "cpu"),
    ],
)
def test_the_line_decides_with_a_conservative_pattern(tmp_path: Path, line: str, kind: str) -> None:
    activity = summarize(_job(tmp_path, line))
    assert activity.leading == kind
    assert (activity.top[0].source_line is not None) == (kind == "gpu_sync")


def test_a_thread_asleep_on_such_a_line_is_not_a_gpu_wait(tmp_path: Path) -> None:
    """CUDA spins by default: a main thread waiting for the GPU runs. Asleep, it is blocked, as before."""
    activity = summarize(_job(tmp_path, "return loss.item()", running=0))
    assert activity.leading == "idle"


def test_a_fifo_at_the_path_is_never_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "train.py"
    os.mkfifo(fifo)
    done = threading.Event()
    answers: list[str | None] = []

    def read() -> None:
        answers.append(SourceLines().line(PID, str(fifo), 1))
        done.set()

    threading.Thread(target=read, daemon=True).start()
    assert done.wait(5.0), "reading a FIFO blocked"
    assert answers == [None]


def test_a_symlink_at_the_path_is_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "secret.py"
    target.write_text("x.item()\n")
    link = tmp_path / "train.py"
    link.symlink_to(target)
    assert SourceLines().line(PID, str(link), 1) is None
    assert SourceLines().line(PID, str(target), 1) == "x.item()"


def test_a_line_past_the_bounded_prefix_of_a_huge_file_is_not_read(tmp_path: Path) -> None:
    huge = tmp_path / "train.py"
    with huge.open("wb") as out:
        out.write(b"x" * (MAX_BYTES + 10) + b"\nloss.item()\n")
    lines = SourceLines()
    assert lines.line(PID, str(huge), 2) is None
    assert lines.line(PID, str(huge), 1) is None  # cut at MAX_BYTES: not whole, not shown


def test_junk_and_terminal_escapes_come_back_cleaned_and_short(tmp_path: Path) -> None:
    junk = tmp_path / "train.py"
    junk.write_bytes(b"\xff\xfe\x00\x1b]0;owned\x07 loss.item() \x1b[2J" + b"y" * 300 + b"\n")
    text = SourceLines().line(PID, str(junk), 1)
    assert text is not None
    assert is_clean(text)
    assert len(text) <= MAX_LINE_CHARS
    assert "\\x1b]0;owned" in text
    assert GPU_SYNC_CALL.search(text)


def test_a_relative_path_or_a_gone_process_reads_nothing(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("loss.item()\n")
    assert SourceLines().line(PID, "train.py", 1) is None
    assert SourceLines(proc=str(tmp_path / "no-proc")).line(PID, str(tmp_path / "train.py"), 1) is None


def test_each_file_is_read_once_per_window(tmp_path: Path) -> None:
    source = tmp_path / "train.py"
    source.write_text("a = 1\nloss.item()\n")
    lines = SourceLines()
    assert lines.line(PID, str(source), 2) == "loss.item()"
    source.write_text("a = 1\nchanged()\n")
    assert lines.line(PID, str(source), 2) == "loss.item()"  # the window's reading
    assert SourceLines().line(PID, str(source), 2) == "changed()"  # the next window's


# A job whose loop spends its time in a C call on its own line, as `loss.item()` does: array.tolist() has no Python
# frame either. Run under the in-process sampler, which publishes absolute paths.
TOLIST_JOB = """
import array, time
def step(data):
    return data.tolist()
data = array.array("d", range(200000))
print("ready", flush=True)
end = time.time() + 60
while time.time() < end:
    step(data)
"""


def test_the_in_process_samplers_absolute_paths_get_the_same_reading(tmp_path: Path) -> None:
    script = tmp_path / "job.py"
    script.write_text(TOLIST_JOB)
    with started([sys.executable, str(script)], job_environment(tmp_path)) as process:
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"
        ready = time.time()

        def past_its_start(window: StackWindow | None) -> bool:
            """A second of samples, all taken in its loop (none while it imported and built its data)."""
            return window is not None and window.window_s >= 1.0 and window.taken_at - window.window_s >= ready

        window = until(lambda: read_published(process.pid, 1.0), past_its_start, "a second of its loop")
        activity = summarize(window)
    # Its loop's own line (`while`) is `cpu`, and a thread the machine's other work kept off a CPU `idle`: the
    # samples it ran in step's line are `gpu_sync`, named by the line.
    [sync] = [frame for frame in activity.top if frame.kind == "gpu_sync"]
    assert (sync.function, sync.file, sync.line, sync.source_line) == ("step", str(script), 4, "return data.tolist()")
    assert all(frame.source_line is None for frame in activity.top if frame.kind != "gpu_sync")
