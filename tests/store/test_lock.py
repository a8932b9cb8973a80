"""One recorder per store, and readers never wait for it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gputui.store.errors import StoreLocked
from gputui.store.reader import Store
from gputui.store.writer import StoreWriter
from tests.store.storedata import T0, simulate, write_store


def test_a_second_writer_in_another_process_is_refused_naming_the_first(tmp_path: Path) -> None:
    directory = tmp_path / "store"
    first = StoreWriter(directory, interval_s=1.0)
    try:
        script = textwrap.dedent(
            f"""
            import sys
            from pathlib import Path
            from gputui.store.errors import StoreLocked
            from gputui.store.writer import StoreWriter
            try:
                StoreWriter(Path({str(directory)!r}), interval_s=1.0)
            except StoreLocked as exc:
                print(exc, exc.pid)
                sys.exit(3)
            """
        )
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
        assert done.returncode == 3, done.stderr
        assert done.stdout.strip() == f"another recorder (PID {os.getpid()}) records into {directory} {os.getpid()}"
        assert Store(directory).summary().recorder_pid == os.getpid()
    finally:
        first.close()
    assert Store(directory).summary().recorder_pid is None
    StoreWriter(directory, interval_s=1.0).close()  # the lock went with the first


def test_a_second_writer_in_this_process_is_refused_too(tmp_path: Path) -> None:
    first = StoreWriter(tmp_path, interval_s=1.0)
    try:
        with pytest.raises(StoreLocked) as refused:
            StoreWriter(tmp_path, interval_s=1.0)
        assert refused.value.pid == os.getpid()
    finally:
        first.close()


def test_a_reader_reads_what_the_writer_has_written_while_it_holds_the_lock(tmp_path: Path) -> None:
    steps = list(simulate("healthy", gpus=2, seconds=30))
    writer = write_store(tmp_path, steps[:20])
    try:
        store = Store(tmp_path)
        assert len(store.read(T0, T0 + 100).ticks) == 20
        for step in steps[20:]:
            writer.record(step.snapshot, step.active, step.verdict)
        writer.flush()
        assert len(store.read(T0, T0 + 100).ticks) == 30
        assert store.summary().ticks == 30
    finally:
        writer.close()
