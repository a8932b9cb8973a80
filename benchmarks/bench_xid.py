"""What the XID watch costs while nothing happens: the CPU of an idle NvmlSource (8 GPUs, fake pynvml) whose
XID thread waits 200 ms per call (short commands) against 5 s (the monitor and the exporter).

Each wait that times out is a driver call and an NVMLError; with the fake the driver's part is a condition
wait, so the figures are our side of it. Both run at once, for the same wall time.

Run: .venv/bin/python benchmarks/bench_xid.py [--seconds S]
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from fake_psutil import NO_PROC, FakePsutil
from fake_pynvml import FakeGpu, FakeNvml

from gputui.sources.host.source import HostSource
from gputui.sources.nvml.events import DEFAULT_WAIT_MS, LONG_WAIT_MS, THREAD
from gputui.sources.nvml.source import NvmlSource

GPUS = 8


def idle_cpu_pct(wait_ms: int, seconds: float) -> float:
    """CPU time of the XID thread over `seconds` of idling, in % of one core."""
    nvml = FakeNvml([FakeGpu() for _ in range(GPUS)])
    host = HostSource(psutil_module=FakePsutil(), root=NO_PROC)  # type: ignore[arg-type]
    source = NvmlSource(pynvml=nvml, host=host, root=NO_PROC, xid_wait_ms=wait_ms)
    source.open()
    watcher = source.xid_watcher
    assert watcher is not None and watcher.alive, "the XID thread should be running"
    thread = next(t for t in threading.enumerate() if t.name == THREAD and t.is_alive())
    clock = time.pthread_getcpuclockid(thread.ident or 0)
    start = time.clock_gettime(clock)
    time.sleep(seconds)
    used = time.clock_gettime(clock) - start
    source.close()
    return 100.0 * used / seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=10.0, help="idle time per wait (default 10)")
    args = parser.parse_args()
    for wait_ms in (DEFAULT_WAIT_MS, LONG_WAIT_MS):
        print(
            f"XID thread, {GPUS} GPUs idle, {wait_ms} ms waits: {idle_cpu_pct(wait_ms, args.seconds):.4f} % of a core"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
