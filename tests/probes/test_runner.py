"""The real worker through the real runner, on the CPU with tiny sizes: results, crashes, cancel, timeout.

Each probe that needs torch costs one child process importing it (a few seconds here), so each is run once.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from gputui.probes.protocol import BadLine, Error, Progress, Result
from gputui.probes.runner import ProbeRequest, ProbeRunner, run_probe
from gputui.probes.worker import EXIT_NO_TORCH, FAULT_ENV

Message = Progress | BadLine | Result | Error


def alive(pid: int) -> bool:
    """A zombie waiting for a parent that does not reap is as dead as a process gets."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def wait_gone(pid: int, within_s: float = 10.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


async def collect(runner: ProbeRunner) -> list[Message]:
    return [message async for message in runner]


async def test_stress_on_the_cpu_reports_each_second_and_checks_results() -> None:
    runner = ProbeRunner(ProbeRequest("stress", cpu=True, seconds=1.2, size=64, dtype="fp32"))
    messages = await collect(runner)
    final = messages[-1]
    assert isinstance(final, Result), final
    assert final.device == "cpu" and final.ok and not final.faulty
    assert final.verdict.startswith("cpu run: no CUDA device")
    assert final.figures["mismatches"] == 0 and (final.figures["results_checked"] or 0) > 10
    assert final.figures["peak_tflops"] is None
    progress = [m for m in messages if isinstance(m, Progress)]
    # One report a second plus the final one; a loaded machine may merge them, so only the final one is certain.
    assert 1 <= len(progress) <= 2 and progress[-1].fraction == 1.0 and progress[0].unit == "TFLOP/s"
    assert all(m.device == "cpu" for m in progress)
    assert runner.returncode == 0 and not alive(runner.pid or 0)


async def test_pcie_on_the_cpu_is_labelled_a_host_copy() -> None:
    messages = await collect(ProbeRunner(ProbeRequest("pcie", cpu=True, max_bytes=256 * 1024, reps=2)))
    final = messages[-1]
    assert isinstance(final, Result), final
    assert final.device == "cpu" and "not a PCIe link" in final.verdict
    assert set(final.figures) == {"copy_64kib_gb_s", "copy_256kib_gb_s", "copy_gb_s"}
    progress = [m for m in messages if isinstance(m, Progress)]
    assert [m.message for m in progress] == ["host memory copy 64 KiB", "host memory copy 256 KiB"]
    assert all(m.on_cpu for m in progress)  # a CPU run says so from its first figure on


async def test_membw_on_the_cpu_has_no_peak() -> None:
    messages = await collect(ProbeRunner(ProbeRequest("membw", cpu=True, max_bytes=1024 * 1024, reps=3)))
    final = messages[-1]
    assert isinstance(final, Result), final
    assert final.figures["bytes"] == 1024 * 1024 and (final.figures["copy_gb_s"] or 0) > 0
    assert final.figures["peak_gb_s"] is None and final.ok
    assert sum(isinstance(m, Progress) for m in messages) == 3


async def test_a_result_mismatch_marks_the_gpu_faulty() -> None:
    request = ProbeRequest("stress", cpu=True, seconds=0.3, size=32, dtype="fp32")
    messages = await collect(ProbeRunner(request, env={FAULT_ENV: "mismatch"}))
    final = messages[-1]
    assert isinstance(final, Result), final
    assert final.faulty and not final.ok
    assert final.figures["mismatches"] == 1
    assert final.verdict.startswith("FAULTY: 1 of ")


async def test_disk_through_the_runner(tmp_path: Path) -> None:
    (tmp_path / "data.bin").write_bytes(os.urandom(64 * 1024))
    messages = await collect(ProbeRunner(ProbeRequest("disk", path=str(tmp_path), max_bytes=10**6)))
    final = messages[-1]
    assert isinstance(final, Result), final
    assert final.figures["bytes"] == 64 * 1024


async def test_cancel_stops_a_running_probe_and_leaves_no_process() -> None:
    runner = ProbeRunner(ProbeRequest("stress", cpu=True, seconds=60, size=64, dtype="fp32"))
    messages: list[Message] = []
    async for message in runner:
        messages.append(message)
        if isinstance(message, Progress):
            await runner.cancel()
    final = messages[-1]
    assert isinstance(final, Error) and final.code == "cancelled", final
    assert runner.pid is not None
    with pytest.raises(ProcessLookupError):
        os.kill(runner.pid, 0)


async def test_a_worker_ignoring_sigterm_is_killed_with_its_helper_process() -> None:
    runner = ProbeRunner(ProbeRequest("disk"), env={FAULT_ENV: "stuck"}, kill_grace_s=0.3)
    helper_pid = None
    messages: list[Message] = []
    async for message in runner:
        messages.append(message)
        if isinstance(message, Progress):
            helper_pid = int(message.figure or 0)
            await runner.cancel()
    assert isinstance(messages[-1], Error) and messages[-1].code == "cancelled"
    assert runner.returncode == -9
    assert helper_pid and wait_gone(helper_pid, 3.0)


async def test_timeout_stops_the_worker() -> None:
    runner = ProbeRunner(ProbeRequest("disk"), env={FAULT_ENV: "stuck"}, timeout_s=0.5, kill_grace_s=0.2)
    messages = await collect(runner)
    final = messages[-1]
    assert isinstance(final, Error) and final.code == "timeout", final
    assert "no result within 0 s" in final.message or "no result within 1 s" in final.message
    assert runner.pid is not None and not alive(runner.pid)


async def test_a_crash_gives_an_error_with_the_stderr_tail() -> None:
    messages = await collect(ProbeRunner(ProbeRequest("disk"), env={FAULT_ENV: "crash"}))
    final = messages[-1]
    assert isinstance(final, Error) and final.code == "crashed", final
    assert "signal SIGABRT" in final.message and "no result" in final.message
    assert "simulated crash in the probe worker" in final.stderr_tail


async def test_an_exception_in_the_probe_is_reported_with_its_traceback() -> None:
    messages = await collect(ProbeRunner(ProbeRequest("disk"), env={FAULT_ENV: "raise"}))
    final = messages[-1]
    assert isinstance(final, Error) and final.code == "failed", final
    assert final.message == "RuntimeError: simulated failure inside the probe"
    assert "Traceback" in final.stderr_tail


async def test_garbage_stdout_is_reported_not_fatal(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"x" * 100)
    runner = ProbeRunner(ProbeRequest("disk", path=str(tmp_path)), env={FAULT_ENV: "garbage"})
    messages = await collect(runner)
    assert isinstance(messages[0], BadLine)
    assert messages[0].line == "this line is not JSON" and "not JSON" in messages[0].reason
    assert isinstance(messages[-1], Result)


async def test_bad_arguments_come_back_as_an_error(tmp_path: Path) -> None:
    messages = await collect(ProbeRunner(ProbeRequest("disk", path=str(tmp_path / "nope"))))
    final = messages[-1]
    assert isinstance(final, Error) and final.code == "bad_args"
    assert final.message == f"no such directory: {tmp_path / 'nope'}"


async def test_missing_torch_says_how_to_install_it(tmp_path: Path) -> None:
    shim = tmp_path / "shim" / "torch"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text("raise ImportError(\"No module named 'torch'\")\n")
    env = {"PYTHONPATH": os.pathsep.join([str(shim.parent), os.environ.get("PYTHONPATH", "")])}
    runner = ProbeRunner(ProbeRequest("pcie", cpu=True), env=env)
    final = (await collect(runner))[-1]
    assert isinstance(final, Error) and final.code == "no_torch", final
    assert ".venv/bin/pip install torch" in final.message
    assert runner.returncode == EXIT_NO_TORCH


async def test_a_worker_that_cannot_start_is_an_error(tmp_path: Path) -> None:
    runner = ProbeRunner(ProbeRequest("disk"), python=str(tmp_path / "no-python"))
    messages = await collect(runner)
    assert len(messages) == 1 and isinstance(messages[0], Error)
    assert messages[0].code == "crashed" and "could not start the probe worker" in messages[0].message
    assert runner.final == messages[0]
    await runner.cancel()  # nothing to stop: must not raise


def test_no_orphan_when_the_monitor_dies_without_cleaning_up() -> None:
    parent = textwrap.dedent(
        """
        import asyncio, os
        from gputui.probes.protocol import parse_line
        from gputui.probes.runner import ProbeRequest, ProbeRunner

        async def main():
            runner = ProbeRunner(ProbeRequest("disk"))
            await runner.start()
            # The worker is past its start and stuck (its first line names its helper): only its watch helps.
            line = await runner._proc.stdout.readline()
            print(runner.pid, int(parse_line(line.decode()).figure), flush=True)
            os._exit(0)

        asyncio.run(main())
        """
    )
    env = {**os.environ, FAULT_ENV: "stuck"}
    out = subprocess.run(
        [sys.executable, "-c", parent], capture_output=True, text=True, timeout=30, check=True, env=env
    )
    pid, helper_pid = (int(word) for word in out.stdout.split())
    assert wait_gone(pid), f"worker {pid} survived its parent"
    assert wait_gone(helper_pid), f"the worker's helper {helper_pid} survived"


def test_run_probe_sync_wrapper_polls_and_reports_updates(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"x" * 100)
    updates: list[object] = []
    polls: list[int] = []
    final = run_probe(
        ProbeRequest("disk", path=str(tmp_path)),
        on_update=updates.append,
        poll=lambda: polls.append(1),
        env={FAULT_ENV: "garbage"},
    )
    assert isinstance(final, Result)
    assert len(updates) == 1 and isinstance(updates[0], BadLine)
    assert polls


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"probe": "burn"}, "unknown probe 'burn'"),
        ({"probe": "stress", "dtype": "int8"}, "unknown dtype 'int8'"),
        ({"probe": "stress", "gpu": -1}, "GPU index must be 0 or more"),
        ({"probe": "stress", "seconds": 0}, "seconds must be greater than 0"),
        ({"probe": "pcie", "max_bytes": -5}, "max_bytes must be greater than 0"),
    ],
)
def test_bad_requests_are_refused_before_starting(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ProbeRequest(**kwargs)  # type: ignore[arg-type]


def test_request_argv() -> None:
    from gputui.probes.reference import PcieLink

    request = ProbeRequest("pcie", gpu=1, max_bytes=2**20, link=PcieLink(gen=4, width=16, max_gen=5))
    assert request.argv() == [
        "pcie", "--gpu", "1", "--dtype", "bf16", "--watch-stdin", "--max-bytes", "1048576",
        "--link-gen", "4", "--link-width", "16", "--link-max-gen", "5",
    ]  # fmt: skip
    assert ProbeRequest("stress", seconds=30).default_timeout_s() > 30


def test_a_probe_on_a_mig_instance_names_it_to_cuda_and_runs_on_its_device_0() -> None:
    request = ProbeRequest("stress", gpu=3, mig_device="MIG-1f2e")
    assert request.argv()[:3] == ["stress", "--gpu", "0"]  # CUDA sees the instance alone
    assert request.child_env() == {"CUDA_VISIBLE_DEVICES": "MIG-1f2e"}
    whole = ProbeRequest("stress", gpu=3)
    assert whole.argv()[:3] == ["stress", "--gpu", "3"] and whole.child_env() == {}


async def test_the_worker_starts_with_the_mig_instance_as_its_only_cuda_device(tmp_path: Path) -> None:
    seen = tmp_path / "env"
    fake_python = tmp_path / "python"
    fake_python.write_text(f'#!/bin/sh\nprintf %s "$CUDA_VISIBLE_DEVICES" > {seen}\n')
    fake_python.chmod(0o755)
    runner = ProbeRunner(ProbeRequest("stress", gpu=1, mig_device="MIG-1f2e"), python=str(fake_python))
    messages = await collect(runner)
    assert isinstance(messages[-1], Error)  # it printed no result: what matters is what it was started with
    assert seen.read_text() == "MIG-1f2e"
