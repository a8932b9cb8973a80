"""What the live monitor costs: CPU, bytes sent to the terminal, start-up time, memory.

Runs `gputui --demo SCENARIO --demo-gpus N --interval S` under a real pty of COLSxROWS (TERM=xterm-256color,
no COLORTERM: what an SSH session usually gets), waits for the first full frame, then measures over
`--seconds`:
  cpu_pct      CPU time of the whole app process (all threads, utime+stime from /proc) / wall time, in % of
               one core; the budget is 1%
  bytes_per_s  bytes the app wrote to the terminal per second; the budget is 5 KB/s (5000 B/s)
  first_frame  seconds from the spawn to the first frame that shows GPU panels and processes
  peak_rss     the process's peak resident memory (VmHWM)
  ui_thread    CPU of the UI (main) thread, in ms a second, from /proc/PID/task/TID/schedstat (ns, not ticks)
  other_threads  the same for the sampling, input and output threads together
  wakeups      voluntary context switches of all threads a second: each is a sleep ended (idle wake-ups count)
  history_s    with --store: seconds from the spawn to the since-you-looked line, the store's last hour read
               after the first frame (--store-hours H first fills DIR with H hours of the scenario's ticks ending
               now; without --store the monitor reads no history, --no-history)
Usage: python benchmarks/bench_ui.py [--seconds 60] [--gpus 8] [--interval 1] [--size 120x40] [--store DIR
       [--store-hours H]]
"""

from __future__ import annotations

import argparse
import fcntl
import os
import select
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

# Both appear only once the first sample is drawn: a panel line and a process row.
FIRST_FRAME_MARKERS = (b"H100 80GB", b"train.py")  # shown in every panel layout
# The since-you-looked line: the history store has been read.
HISTORY_MARKERS = (b"since ", b"no recorder ran")


def fill_store(directory: Path, scenario: str, gpus: int, hours: float) -> None:
    """`hours` of 1 s ticks of the simulated scenario, with its findings and verdicts, ending now."""
    from gputui.diagnostics.engine import DiagnosticsEngine
    from gputui.sources.sim.source import FIXED_EPOCH, SimulatedSource
    from gputui.store.writer import StoreWriter

    seconds = int(hours * 3600)
    start = time.time() - seconds
    now = [0.0]
    source = SimulatedSource(scenario, gpu_count=gpus, clock=lambda: now[0])
    source.open()
    engine = DiagnosticsEngine()
    writer = StoreWriter(directory, interval_s=1.0)
    try:
        for i in range(seconds):
            now[0] = start - FIXED_EPOCH + i
            snapshot = source.sample()
            state = engine.update(snapshot)
            writer.record(snapshot, state.active, state.verdict)
    finally:
        writer.close()
        source.close()


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    utime, stime = int(fields[11]), int(fields[12])
    return (utime + stime) / os.sysconf("SC_CLK_TCK")


def thread_times(pid: int) -> dict[int, tuple[int, int]]:
    """Each thread's CPU time in ns and its voluntary context switches so far."""
    found = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            ns = int(Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[0])
            status = Path(f"/proc/{pid}/task/{tid}/status").read_text()
        except OSError:  # the thread ended
            continue
        switches = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("voluntary_"))
        found[int(tid)] = (ns, switches)
    return found


def peak_rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc status")


def drain(fd: int, timeout: float) -> bytes:
    """What the app wrote within `timeout` seconds (b'' when nothing)."""
    ready, _, _ = select.select([fd], [], [], timeout)
    if not ready:
        return b""
    try:
        return os.read(fd, 65536)
    except OSError:  # the app closed the terminal
        return b""


def quit_monitor(proc: subprocess.Popen[bytes], master: int, timeout: float = 5.0) -> None:
    """`q` to the monitor in its pty, its whole group killed where it does not quit within `timeout`; the pty
    closed."""
    os.write(master, b"q")
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    os.close(master)


def run(args: argparse.Namespace) -> int:
    cols, rows = (int(v) for v in args.size.lower().split("x"))
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    # PYTHONDONTWRITEBYTECODE (set on some build machines) would compile every gputui module again at each start:
    # an installed gputui has its bytecode cached, so the first run writes it and the rounds after it read it.
    dropped = ("COLORTERM", "TEXTUAL", "NO_COLOR", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env["TERM"] = args.term
    command = [
        sys.executable,
        "-m",
        "gputui",
        "--demo",
        args.scenario,
        "--demo-gpus",
        str(args.gpus),
        "--interval",
        str(args.interval),
        *(["--store", str(args.store)] if args.store is not None else ["--no-history"]),
    ]
    if args.store is not None and args.store_hours:
        fill_store(args.store, args.scenario, args.gpus, args.store_hours)
    state = tempfile.TemporaryDirectory(prefix="bench-ui-state-")  # when "you last looked": not the user's own file
    env["XDG_STATE_HOME"] = state.name
    started = time.monotonic()
    proc = subprocess.Popen(command, stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True)
    os.close(slave)
    seen = b""
    try:
        while not all(marker in seen for marker in FIRST_FRAME_MARKERS):
            if time.monotonic() - started > 30 or proc.poll() is not None:
                print(seen[-2000:].decode(errors="replace"), file=sys.stderr)
                print("bench_ui: no first frame within 30 s", file=sys.stderr)
                return 1
            seen += drain(master, 0.05)
        first_frame = time.monotonic() - started
        history = None
        while args.store is not None and not any(marker in seen for marker in HISTORY_MARKERS):
            if time.monotonic() - started > 60 or proc.poll() is not None:
                print("bench_ui: the history was not read within 60 s", file=sys.stderr)
                break
            seen += drain(master, 0.05)
        else:
            history = time.monotonic() - started if args.store is not None else None
        # Let the start-up settle (imports, first layout) before the steady state is measured.
        settle_end = time.monotonic() + 2.0
        while time.monotonic() < settle_end:
            drain(master, 0.1)
        cpu_start, wall_start, written = cpu_seconds(proc.pid), time.monotonic(), 0
        threads_start = thread_times(proc.pid)
        end = wall_start + args.seconds
        while time.monotonic() < end:
            written += len(drain(master, min(0.5, max(0.0, end - time.monotonic()))))
        wall = time.monotonic() - wall_start
        cpu = cpu_seconds(proc.pid) - cpu_start
        threads_end = thread_times(proc.pid)
        rss = peak_rss_bytes(proc.pid)
    finally:
        quit_monitor(proc, master)
        state.cleanup()
    label = f"{args.gpus} GPUs, {args.interval:g} s, {cols}x{rows}, TERM={args.term}, {wall:.0f} s"
    print(f"cpu_pct      {100.0 * cpu / wall:.2f} % of one core   ({label})")
    print(f"bytes_per_s  {written / wall:.0f} B/s   ({written} bytes)")
    print(f"first_frame  {first_frame:.2f} s")
    if history is not None:
        print(f"history_s    {history:.2f} s (the store's last hour read and joined)")
    print(f"peak_rss     {rss / 2**20:.1f} MiB")
    spent = {
        tid: (ns - threads_start.get(tid, (0, 0))[0], n - threads_start.get(tid, (0, 0))[1])
        for tid, (ns, n) in threads_end.items()
    }
    ui = spent.get(proc.pid, (0, 0))[0]
    others = sum(ns for tid, (ns, _) in spent.items() if tid != proc.pid)
    print(f"ui_thread    {ui / 1e6 / wall:.2f} ms of CPU a second")
    print(f"other_threads  {others / 1e6 / wall:.2f} ms of CPU a second ({len(spent) - 1} threads)")
    print(f"wakeups      {sum(n for _, n in spent.values()) / wall:.1f} a second")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--scenario", default="healthy")
    parser.add_argument("--size", default="120x40")
    parser.add_argument("--term", default="xterm-256color")
    parser.add_argument("--store", type=Path, default=None)
    parser.add_argument("--store-hours", type=float, default=0.0)
    return run(parser.parse_args())


if __name__ == "__main__":
    sys.exit(main())
