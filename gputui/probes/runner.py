"""Runs one probe worker as a child process and turns its stdout into messages, safely.

The worker runs in its own session (process group), so cancel() stops it and anything it started: SIGTERM, then
SIGKILL after a grace period. It also watches its stdin pipe and exits when this process dies without
stopping it. The async iterator always ends with exactly one final message, a Result or an Error: a crash, a
timeout or a cancel becomes an Error with the tail of the worker's stderr, and never an exception.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import signal
import sys
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from types import TracebackType

from gputui.probes.protocol import (
    PROBES,
    BadLine,
    Error,
    Final,
    ProbeName,
    Progress,
    ProtocolError,
    Result,
    parse_line,
)
from gputui.probes.reference import DTYPES, PcieLink, PeerLinks

KILL_GRACE_S = 2.0
# Importing torch and creating a CUDA context can take long on a cold machine (persistence mode off).
STARTUP_ALLOWANCE_S = 90.0
_DEFAULT_WORK_S: dict[ProbeName, float] = {"pcie": 120.0, "stress": 30.0, "membw": 60.0, "disk": 30.0, "p2p": 120.0}
_STDERR_TAIL_LINES = 20
_LINE_LIMIT = 1024**2

Update = Progress | BadLine
Message = Progress | BadLine | Result | Error


@dataclass(frozen=True, slots=True)
class ProbeRequest:
    """What to run, as typed values; `argv()` turns it into the worker's command line."""

    probe: ProbeName
    gpu: int = 0
    cpu: bool = False  # run on the CPU even when CUDA is there
    seconds: float | None = None
    size: int | None = None
    dtype: str = "bf16"
    path: str | None = None
    max_bytes: int | None = None
    reps: int | None = None
    link: PcieLink | None = None  # the link as the monitor reads it, for the pcie verdict
    peer: int | None = None  # p2p: the other GPU of the one pair; None for every pair
    peer_links: PeerLinks | None = None  # p2p: NVLinks and PCIe links as the monitor reads them
    # The MIG instance to run on ("MIG-<uuid>") when `gpu` is in MIG mode: CUDA then sees that instance alone, as
    # its device 0 (a CUDA process runs on one MIG instance; the GPU's index means nothing to it).
    mig_device: str | None = None

    def __post_init__(self) -> None:
        if self.probe not in PROBES:
            raise ValueError(f"unknown probe {self.probe!r} (choose from {', '.join(PROBES)})")
        if self.dtype not in DTYPES:
            raise ValueError(f"unknown dtype {self.dtype!r} (choose from {', '.join(DTYPES)})")
        if self.gpu < 0 or (self.peer is not None and self.peer < 0):
            raise ValueError(f"GPU index must be 0 or more, not {min(self.gpu, self.peer or 0)}")
        if self.peer == self.gpu:
            raise ValueError(f"the peer must be another GPU than {self.gpu}")
        for name in ("seconds", "size", "max_bytes", "reps"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ValueError(f"{name} must be greater than 0, not {value}")

    def argv(self) -> list[str]:
        cuda_index = 0 if self.mig_device is not None else self.gpu
        args = [self.probe, "--gpu", str(cuda_index), "--dtype", self.dtype, "--watch-stdin"]
        if self.cpu:
            args.append("--cpu")
        for flag, value in (
            ("--seconds", self.seconds),
            ("--size", self.size),
            ("--path", self.path),
            ("--max-bytes", self.max_bytes),
            ("--reps", self.reps),
            ("--peer", self.peer),
            ("--peer-links", self.peer_links.to_arg() if self.peer_links else None),
        ):
            if value is not None:
                args += [flag, str(value)]
        if self.link is not None:
            for flag, part in (
                ("--link-gen", self.link.gen),
                ("--link-width", self.link.width),
                ("--link-max-gen", self.link.max_gen),
                ("--link-max-width", self.link.max_width),
            ):
                if part is not None:
                    args += [flag, str(part)]
        return args

    def child_env(self) -> dict[str, str]:
        """What the worker's environment must say for `argv()` to mean this GPU: the MIG instance, if any."""
        return {"CUDA_VISIBLE_DEVICES": self.mig_device} if self.mig_device is not None else {}

    def default_timeout_s(self) -> float:
        work = _DEFAULT_WORK_S[self.probe]
        if self.seconds is not None and self.probe in ("stress", "disk"):
            work = self.seconds
        return STARTUP_ALLOWANCE_S + 2 * work


def _describe_exit(returncode: int | None) -> str:
    if returncode is None:
        return "no exit status"
    if returncode < 0:
        try:
            return f"signal {signal.Signals(-returncode).name}"
        except ValueError:
            return f"signal {-returncode}"
    return f"exit code {returncode}"


class ProbeRunner:
    """One run of one probe. Iterate it (`async for message in runner`) to start it and read its messages.

    Use it as an async context manager, or call cancel() yourself: either way the worker's whole process group
    is gone when the iteration ends, however it ends (result, error, timeout, cancel, the consumer's own
    cancellation). kill_now() is the synchronous last resort for exit handlers.
    """

    def __init__(
        self,
        request: ProbeRequest,
        *,
        timeout_s: float | None = None,
        env: Mapping[str, str] | None = None,
        kill_grace_s: float = KILL_GRACE_S,
        python: str = sys.executable,
    ) -> None:
        self.request = request
        self.timeout_s = timeout_s if timeout_s is not None else request.default_timeout_s()
        self._env = {**os.environ, **request.child_env(), **(env or {})}
        self._kill_grace_s = kill_grace_s
        self._python = python
        self._proc: asyncio.subprocess.Process | None = None
        self._stderr: deque[str] = deque(maxlen=_STDERR_TAIL_LINES)
        self._cancelled = False
        self._timed_out = False
        self._iterated = False
        self.final: Final | None = None

    @property
    def pid(self) -> int | None:
        """The worker's pid (also its process group id) once started."""
        return self._proc.pid if self._proc is not None else None

    @property
    def returncode(self) -> int | None:
        """The worker's exit status once it has ended (negative: killed by that signal)."""
        return self._proc.returncode if self._proc is not None else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.returncode is None

    async def start(self) -> None:
        if self._proc is not None:
            return
        self._proc = await asyncio.create_subprocess_exec(
            self._python,
            "-m",
            "gputui.probes.worker",
            *self.request.argv(),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=self._env,
            start_new_session=True,
            limit=_LINE_LIMIT,
        )

    def __aiter__(self) -> AsyncIterator[Message]:
        return self.messages()

    async def __aenter__(self) -> ProbeRunner:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.cancel()

    async def messages(self) -> AsyncIterator[Message]:
        """Progress and BadLine updates as they come, then exactly one Result or Error."""
        if self._iterated:
            raise RuntimeError("a ProbeRunner can be iterated only once")
        self._iterated = True
        try:
            await self.start()
        except OSError as exc:
            self.final = Error(self.request.probe, "crashed", f"could not start the probe worker: {exc}")
            yield self.final
            return
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        probe = self.request.probe
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout_s
        stderr_task = asyncio.create_task(self._drain_stderr())
        final: Final | None = None
        try:
            while True:
                try:
                    raw = await asyncio.wait_for(proc.stdout.readline(), max(0.0, deadline - loop.time()))
                except asyncio.TimeoutError:
                    self._timed_out = True
                    await self._stop()
                    break
                except ValueError:
                    yield BadLine(probe, "", f"a line longer than {_LINE_LIMIT} bytes")
                    continue
                if not raw:
                    break
                line = raw.decode("utf-8", errors="replace").rstrip("\n")
                try:
                    message = parse_line(line)
                except ProtocolError as exc:
                    if line.strip():
                        yield BadLine(probe, line, str(exc))
                    continue
                if isinstance(message, Progress):
                    yield message
                elif final is None:
                    final = message
                else:
                    yield BadLine(probe, line, "a second final message (ignored)")
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(proc.wait(), max(self._kill_grace_s, deadline - loop.time()))
            await self._stop()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stderr_task, self._kill_grace_s)
            self.final = self._conclude(final, proc.returncode)
            yield self.final
        finally:
            stderr_task.cancel()
            self._signal_group(signal.SIGKILL)
            if proc.stdin is not None:
                proc.stdin.close()

    def _conclude(self, final: Final | None, returncode: int | None) -> Final:
        probe = self.request.probe
        tail = "".join(self._stderr)
        if isinstance(final, Result):
            return final
        if isinstance(final, Error):
            return final if final.stderr_tail or not tail else dataclasses.replace(final, stderr_tail=tail)
        if self._cancelled:
            return Error(probe, "cancelled", "the probe was cancelled", tail)
        if self._timed_out:
            return Error(probe, "timeout", f"no result within {self.timeout_s:.0f} s; the probe was stopped", tail)
        return Error(probe, "crashed", f"the probe worker ended with {_describe_exit(returncode)} and no result", tail)

    async def _drain_stderr(self) -> None:
        """Keep the last lines of stderr, and keep the pipe flowing so a chatty worker never blocks on it."""
        assert self._proc is not None and self._proc.stderr is not None
        stream = self._proc.stderr
        while True:
            try:
                raw = await stream.readline()
            except ValueError:
                continue
            if not raw:
                return
            self._stderr.append(raw.decode("utf-8", errors="replace"))

    async def cancel(self) -> None:
        """Stop the worker: SIGTERM to its process group, SIGKILL after the grace period. Safe to call twice."""
        if self._proc is None:
            return
        if self._proc.returncode is None:
            self._cancelled = True
        await self._stop()

    async def _stop(self) -> None:
        proc = self._proc
        if proc is None:
            return
        if proc.returncode is None:
            self._signal_group(signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), self._kill_grace_s)
            except asyncio.TimeoutError:
                self._signal_group(signal.SIGKILL)
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(proc.wait(), self._kill_grace_s)
        # Anything the worker started and left behind shares its process group.
        self._signal_group(signal.SIGKILL)

    def kill_now(self) -> None:
        """SIGKILL the worker's process group at once, without waiting: for exit handlers and lost terminals."""
        self._signal_group(signal.SIGKILL)

    def _signal_group(self, sig: signal.Signals) -> None:
        if self._proc is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._proc.pid, sig)


def run_probe(
    request: ProbeRequest,
    *,
    timeout_s: float | None = None,
    on_update: Callable[[Update], None] | None = None,
    poll: Callable[[], None] | None = None,
    poll_interval_s: float = 1.0,
    env: Mapping[str, str] | None = None,
) -> Final:
    """Run a probe to its end from synchronous code (the headless command).

    `on_update` sees each progress and bad line; `poll`, a blocking callable, runs in a thread every
    `poll_interval_s` while the probe runs (the command samples the GPU with it). Ctrl-C stops the worker too.
    """

    async def main() -> Final:
        async def poller() -> None:
            assert poll is not None
            while True:
                await asyncio.to_thread(poll)
                await asyncio.sleep(poll_interval_s)

        poll_task = asyncio.create_task(poller()) if poll is not None else None
        try:
            async with ProbeRunner(request, timeout_s=timeout_s, env=env) as runner:
                async for message in runner:
                    if on_update is not None and isinstance(message, (Progress, BadLine)):
                        on_update(message)
        finally:
            if poll_task is not None:
                poll_task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await poll_task
        assert runner.final is not None, "the runner always ends with a final message"
        return runner.final

    return asyncio.run(main())
