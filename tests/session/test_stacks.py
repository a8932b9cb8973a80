"""When the job stacks are read, and how what is read reaches each reading: one window at a time on a thread of its
own, the main process of a GPU that waits, again only after the cooldown; a refused ptrace said once per reason, a
refused stack record once per user."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gputui.config import ConfigError, StacksConfig, load_config
from gputui.diagnostics.findings import Finding, Severity
from gputui.diagnostics.thresholds import Thresholds
from gputui.diagnostics.tick import Tick
from gputui.diagnostics.verdict import Verdict
from gputui.model import ActivityFrame, ActivityShares, DistRank, JobActivity, Snapshot
from gputui.session.sampling import Sampler
from gputui.session.stacks import JobStacks, held_since, stacks_for, stacks_refusal
from tests.snapshots import gpu, host, proc, snapshot, system_info

SETTLE_S = 10.0  # a bound on waiting for the fake readers' windows, which end at once


def activity(pid: int, taken_at: float = 0.0, error: str | None = None) -> JobActivity:
    """What a fake reader reads of `pid`: its data share names it, so a test can tell whose activity it holds."""
    if error is not None:
        return JobActivity(source="py-spy", taken_at=taken_at, window_s=4.0, samples=0, error=error)
    return JobActivity(source="py-spy", taken_at=taken_at, window_s=4.0, samples=80, shares=ActivityShares(data=1.0))


class Reader:
    """A fake `read`: records each window asked for, and how many ran at once."""

    def __init__(self, errors: dict[int, str] | None = None) -> None:
        self.read: list[int] = []
        self.windows: list[float] = []  # each window's length, in the order asked
        self.errors = errors or {}
        self.running = 0
        self.most_at_once = 0
        self.hold = threading.Event()
        self.hold.set()
        self.entered = threading.Event()  # a window has begun
        self._lock = threading.Lock()

    def __call__(self, pid: int, window_s: float) -> JobActivity:
        with self._lock:
            self.windows.append(window_s)
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
        self.entered.set()
        self.hold.wait(SETTLE_S)
        with self._lock:
            self.running -= 1
            self.read.append(pid)
        return activity(pid, error=self.errors.get(pid))


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def two_jobs() -> Snapshot:
    """GPU 0 held by a training process (300) and a notebook (301) using less CPU; GPU 1 by a process of its own."""
    procs = (proc(300, cpu_pct=95.0), proc(301, cpu_pct=3.0), proc(400, cpu_pct=80.0))
    return snapshot(0.0, gpus=(gpu(0, pids=(300, 301)), gpu(1, pids=(400,))), host_sample=host(procs))


def waiting(*gpus: int, cls: str = "input_bound") -> Tick:
    return Tick(two_jobs(), verdict=Verdict(cls=cls, label="", gpus=gpus, summary="", line=""))


@pytest.fixture(autouse=True)
def closed(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every JobStacks a test makes is closed at its end, its thread joined."""
    made: list[JobStacks] = []
    init = JobStacks.__init__

    def tracked(self: JobStacks, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(JobStacks, "__init__", tracked)
    yield
    for stacks in made:
        stacks.close(timeout=SETTLE_S)


def settled(stacks: JobStacks) -> JobStacks:
    assert stacks.settle(SETTLE_S)
    return stacks


def test_a_waiting_gpu_gets_its_main_process_sampled_once_then_again_after_the_cooldown() -> None:
    reader, clock = Reader(), Clock()
    stacks = JobStacks(StacksConfig(cooldown_s=60.0), read=reader, clock=clock)
    stacks.consider(waiting(0))
    settled(stacks).consider(waiting(0))
    clock.t += 59.0
    settled(stacks).consider(waiting(0))
    assert settled(stacks) and reader.read == [300]  # the busiest of GPU 0's processes, once within the cooldown
    clock.t += 1.0
    stacks.consider(waiting(0))
    assert settled(stacks) and reader.read == [300, 300]


def test_a_wait_that_changes_is_sampled_again_after_the_recheck_not_the_cooldown() -> None:
    """A job that went from waiting for data to waiting on something else may do something else now: its stacks
    are read again a minute on, not five."""
    reader, clock = Reader(), Clock()
    stacks = JobStacks(StacksConfig(cooldown_s=300.0, recheck_s=60.0), read=reader, clock=clock)
    stacks.consider(waiting(0))
    clock.t += 30.0
    settled(stacks).consider(waiting(0, cls="underused"))
    assert settled(stacks) and reader.read == [300]  # changed, but within the recheck
    clock.t += 30.0
    stacks.consider(waiting(0, cls="underused"))
    assert settled(stacks) and reader.read == [300, 300]
    clock.t += 60.0
    stacks.consider(waiting(0, cls="underused"))  # the same wait: the cooldown holds
    assert settled(stacks) and reader.read == [300, 300]


@pytest.mark.parametrize(
    ("tick", "read"),
    [
        (waiting(0, 1, cls="underused"), [300, 400]),
        (
            Tick(
                two_jobs(),
                verdict=Verdict(
                    cls="mixed",
                    label="",
                    gpus=(0, 1),
                    summary="",
                    line="",
                    groups=(
                        Verdict(cls="gpu_bound", label="", gpus=(0,), summary="", line=""),
                        Verdict(cls="input_bound", label="", gpus=(1,), summary="", line=""),
                    ),
                ),
            ),
            [400],
        ),
        (Tick(two_jobs(), active=(Finding("starvation_io", Severity.WARNING, "", "", gpus=(1,)),)), [400]),
        (Tick(two_jobs(), active=(Finding("thermal_throttle", Severity.WARNING, "", "", gpus=(1,)),)), []),
        (waiting(0, 1, cls="gpu_bound"), []),
    ],
    ids=["underused", "a mixed verdict's waiting group", "starvation", "another finding", "gpu-bound"],
)
def test_what_starts_a_window(tick: Tick, read: list[int]) -> None:
    reader = Reader()
    stacks = JobStacks(read=reader)
    stacks.consider(tick)
    assert settled(stacks) and reader.read == read


def stacks_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "gputui-stacks"]


def test_one_window_at_a_time_on_one_thread_started_by_the_first() -> None:
    reader = Reader()
    reader.hold.clear()
    stacks = JobStacks(read=reader)
    before = stacks_threads()
    stacks.attach(two_jobs())
    assert stacks_threads() == before  # nothing asked: no thread
    assert stacks.request(300) is None and stacks.request(400) is None
    assert stacks.request(300) == "the stacks of PID 300 are being read already"
    reader.hold.set()
    assert settled(stacks) and reader.read == [300, 400] and reader.most_at_once == 1
    [thread] = [t for t in stacks_threads() if t not in before]
    reader.hold.clear()
    reader.entered.clear()
    stacks.request(300)
    stacks.request(400)
    assert reader.entered.wait(SETTLE_S)
    stacks.close()
    reader.hold.set()
    thread.join(SETTLE_S)
    assert not thread.is_alive() and reader.read == [300, 400, 300]  # the window in progress ends; 400's is dropped
    assert stacks.request(300) == "stack sampling has ended"


def test_switched_off_it_reads_nothing_and_says_why() -> None:
    reader = Reader()
    stacks = JobStacks(StacksConfig(enabled=False), read=reader)
    stacks.consider(waiting(0))
    assert stacks.request(300) == "stack sampling is off ([stacks] enabled = false in the config file)"
    assert reader.read == [] and not stacks.busy


def test_each_reading_gets_the_latest_activity_of_its_processes_and_forgets_those_gone() -> None:
    stacks = JobStacks(read=Reader())
    stacks.request(300)
    stacks.request(400)
    attached = settled(stacks).attach(two_jobs())
    assert [p.activity for p in attached.host.processes] == [activity(300), None, activity(400)]
    without_400 = snapshot(0.0, gpus=(gpu(0, pids=(300,)),), host_sample=host((proc(300),)))
    stacks.attach(without_400)
    again = stacks.attach(two_jobs())
    assert [p.activity for p in again.host.processes] == [activity(300), None, None]


def test_a_refused_ptrace_is_one_notice_per_reason() -> None:
    refused = "ptrace_refused: PID {pid}: the kernel's Yama ptrace_scope is 2: run gputui as root, or gputui run -- CMD"
    other_user = "ptrace_refused: PID {pid} is another user's: run gputui as root, or gputui run -- CMD"
    reader = Reader({300: refused.format(pid=300), 400: refused.format(pid=400), 301: other_user.format(pid=301)})
    stacks = JobStacks(read=reader)
    stacks.request(300)
    first = settled(stacks).attach(two_jobs())
    stacks.request(400)
    stacks.request(301)
    second = settled(stacks).attach(two_jobs())
    third = stacks.attach(two_jobs())
    assert first.events == (
        "job stacks: PID 300: the kernel's Yama ptrace_scope is 2: run gputui as root, or gputui run -- CMD",
    )
    assert second.events == ("job stacks: PID 301 is another user's: run gputui as root, or gputui run -- CMD",)
    assert third.events == ()
    assert second.host.process(400).activity == activity(400, error=refused.format(pid=400))  # its activity says it


def test_a_refused_stack_record_is_one_notice_per_user(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its user may make one refused for every process: the first of each user's is said, the others are not."""
    owners = {300: "nobody", 400: "nobody", 301: "alice"}

    def read_activity(pid: int, window_s: float, rate_hz: int, *, refused: Any) -> JobActivity:
        refused(owners[pid], f"the stack record of pid {pid} ({owners[pid]}'s) is refused: over 4194304 bytes")
        return activity(pid)

    monkeypatch.setattr("gputui.sources.stacks.activity_reader.read_activity", read_activity)
    stacks = JobStacks()
    stacks.request(300)
    first = settled(stacks).attach(two_jobs())
    stacks.request(400)
    stacks.request(301)
    second = settled(stacks).attach(two_jobs())
    refused = "job stacks: the stack record of pid {} is refused: over 4194304 bytes; read with py-spy instead"
    assert first.events == (refused.format("300 (nobody's)"),)
    assert second.events == (refused.format("301 (alice's)"),)
    assert second.host.process(400).activity == activity(400)  # read all the same


def test_a_reader_that_raises_costs_its_window_not_the_thread() -> None:
    calls: list[int] = []

    def read(pid: int, window_s: float) -> JobActivity:
        calls.append(pid)
        if pid == 300:
            raise RuntimeError("boom")
        return activity(pid)

    stacks = JobStacks(read=read)
    stacks.request(300)
    stacks.request(400)
    attached = settled(stacks).attach(two_jobs())
    failed = attached.host.process(300).activity
    assert (
        failed is not None and failed.samples == 0 and failed.error == "py_spy_failed: reading the stacks failed: boom"
    )
    assert attached.host.process(400).activity == activity(400)


def test_the_sampler_attaches_before_the_diagnostics_judge_and_asks_after() -> None:
    class Source:
        def open(self) -> object:
            return None

        def sample(self) -> Snapshot:
            return two_jobs()

        def close(self) -> None:
            pass

    judged: list[Snapshot] = []

    def diagnose(snap: Snapshot) -> object:
        from gputui.diagnostics.engine import DiagnosticsState

        judged.append(snap)
        return DiagnosticsState(verdict=Verdict(cls="underused", label="", gpus=(1,), summary="", line=""))

    stacks = JobStacks(read=Reader())
    sampler = Sampler(Source(), diagnose, stacks=stacks)  # type: ignore[arg-type]
    sampler.take()
    settled(stacks)
    tick = sampler.take()
    assert tick.snapshot.host.process(400).activity == activity(400)
    assert judged[-1] is tick.snapshot


@pytest.mark.parametrize(
    ("source", "scenario", "allowed"),
    [
        ("nvml", None, True),
        ("simulated", "GPU follows real job pid 4242", True),
        ("simulated", "tour", False),
        ("replay", None, False),
        ("remote", None, False),
    ],
)
def test_only_this_machines_processes_are_read(source: str, scenario: str | None, allowed: bool) -> None:
    system = system_info(source=source, scenario=scenario)
    assert (stacks_refusal(system) is None) is allowed
    assert (stacks_for(system, StacksConfig()) is not None) is allowed


def test_the_config_files_stacks_table(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("[stacks]\nenabled = false\nwindow_s = 2\nrate_hz = 50\ncooldown_s = 300\nrecheck_s = 90\n")
    assert load_config(path).stacks == StacksConfig(False, 2.0, 50, 300.0, 90.0)
    path.write_text("[stacks]\nwindow_s = 'long'\n")
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    assert str(raised.value) == f"{path}:2: 'stacks.window_s' must be a number of seconds, not a string (\"long\")"


@pytest.mark.parametrize(
    ("table", "error"),
    [
        (
            "enabeld = true",
            "unknown key 'stacks.enabeld' (known: enabled, window_s, rate_hz, cooldown_s, recheck_s, hang_recheck_s,"
            " hang_window_s)",
        ),
        ('enabled = "yes"', "'stacks.enabled' must be true or false, not a string (\"yes\")"),
        ("rate_hz = 2.5", "'stacks.rate_hz' must be a whole number from 1 to 1000, not 2.5"),
        ("rate_hz = 0", "'stacks.rate_hz' must be a whole number from 1 to 1000, not 0"),
        ("window_s = 0", "'stacks.window_s' must be a number of seconds above 0, at most 60, not 0"),
        ("cooldown_s = -1", "'stacks.cooldown_s' must be a number of seconds (0 or more), not -1"),
        ("recheck_s = true", "'stacks.recheck_s' must be a number of seconds, not true"),
        ("stacks = [1]", "'stacks' must be a table, not a list ([1])"),
    ],
)
def test_a_bad_stacks_table_is_an_error_naming_the_key(tmp_path: Path, table: str, error: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text(table if table.startswith("stacks =") else f"[stacks]\n{table}\n")
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    assert str(raised.value).split(": ", 1)[1] == error


# --- a job that may have stopped (issue 40, item 5) ---------------------------------------------------------------

JOB = "run 7f3a at 127.0.0.1:29500"


def ranks_of_a_hung_job(*, working: bool = False) -> Tick:
    """torchrun's two ranks (500 on GPU 0 spinning, 501 on GPU 1 idle), a third process of another job, and a
    process of no job on GPU 2 that spins alike. `working`: GPU 0 does real work instead."""
    procs = (
        proc(500, dist=DistRank(rank=0, world_size=2, job=JOB)),
        proc(501, dist=DistRank(rank=1, world_size=2, job=JOB)),
        proc(502, dist=DistRank(rank=0, world_size=1, job="at otherhost:29500")),
        proc(600),
    )
    spin = {"utilization_gpu_pct": 99.5, "sm_active_pct": 3.0, "power_w": 110.0}
    busy = {"utilization_gpu_pct": 98.0, "sm_active_pct": 70.0, "power_w": 560.0}
    gpus = (
        gpu(0, pids=(500,), **(busy if working else spin)),
        gpu(1, pids=(501,), utilization_gpu_pct=0.0, sm_active_pct=0.0, power_w=70.0),
        gpu(2, pids=(502,), **busy),
        gpu(3, pids=(600,), **spin),
    )
    return Tick(snapshot(0.0, gpus=gpus, host_sample=host(procs)))


def test_every_rank_of_a_job_that_may_have_stopped_is_sampled_every_hang_recheck_s() -> None:
    reader, clock = Reader(), Clock()
    config = StacksConfig(cooldown_s=300.0, hang_recheck_s=60.0, window_s=4.0, hang_window_s=1.0)
    stacks = JobStacks(config, read=reader, clock=clock)
    stacks.consider(ranks_of_a_hung_job())
    # the spinning GPUs' main processes, as any waiting GPU's (whole windows); not 502 (another job, at work)
    assert settled(stacks) and sorted(zip(reader.read, reader.windows, strict=True)) == [(500, 4.0), (600, 4.0)]
    clock.t += Thresholds().verdict_settle_s
    settled(stacks).consider(ranks_of_a_hung_job())
    # the job has looked stopped long enough: its rank not read yet gets a short window (a thread held for good
    # shows in every sample); 500's window of 3 s ago serves; 600 is of no job
    assert settled(stacks) and (reader.read[2:], reader.windows[2:]) == ([501], [1.0])
    clock.t += 56.0
    settled(stacks).consider(ranks_of_a_hung_job())
    assert settled(stacks) and len(reader.read) == 3
    clock.t += 1.0  # 60 s after 500's window
    settled(stacks).consider(ranks_of_a_hung_job())
    clock.t += 3.0  # 60 s after 501's
    settled(stacks).consider(ranks_of_a_hung_job())
    assert settled(stacks) and (reader.read[3:], reader.windows[3:]) == ([500, 501], [1.0, 1.0])


def test_a_job_that_looks_stopped_for_one_reading_is_not_rechecked() -> None:
    """A job between steps leaves its GPU idle for a reading now and then (the lab's case j): its ranks are re-read
    only once they have looked stopped at every tick for verdict_settle_s."""
    reader, clock = Reader(), Clock()
    stacks = JobStacks(StacksConfig(cooldown_s=300.0, hang_recheck_s=3.0), read=reader, clock=clock)
    for _ in range(10):
        stacks.consider(ranks_of_a_hung_job(working=True))
        clock.t += 1.0
        stacks.consider(ranks_of_a_hung_job())  # looks stopped for this one reading
        clock.t += 1.0
    # only the spinning GPUs' main processes, as any waiting GPU's, once per cooldown: no rank's short re-check
    assert settled(stacks) and sorted(zip(reader.read, reader.windows, strict=True)) == [(500, 4.0), (600, 4.0)]


def test_a_job_whose_gpu_works_is_not_sampled_as_a_hang() -> None:
    reader = Reader()
    stacks = JobStacks(read=reader)
    stacks.consider(ranks_of_a_hung_job(working=True))
    assert settled(stacks) and reader.read == [600]  # the spinning GPU of no job alone


def window(kind: str, function: str, line: int, taken_at: float, share: float = 1.0) -> JobActivity:
    rest = {"cpu": round(1.0 - share, 6)} if share < 1.0 else {}
    return JobActivity(
        source="py-spy",
        taken_at=taken_at,
        window_s=4.0,
        samples=80,
        shares=ActivityShares(**{kind: share, **rest}),
        top=(ActivityFrame(kind, function, "/job/train.py", line, share),),  # type: ignore[arg-type]
    )


def test_a_main_thread_held_in_one_place_carries_since_when_across_windows() -> None:
    first = window("idle", "wait_forever", 57, 1000.0)
    second = held_since(first, window("idle", "wait_forever", 57, 1060.0))
    third = held_since(second, window("idle", "wait_forever", 57, 1120.0))
    assert (second.unchanged_since, third.unchanged_since) == (996.0, 996.0)  # the first window's start
    assert held_since(None, first).unchanged_since is None


@pytest.mark.parametrize(
    "after",
    [
        window("idle", "wait_forever", 58, 1060.0),  # another line
        window("idle", "other", 57, 1060.0),  # another function
        window("collective", "wait_forever", 57, 1060.0),  # another kind
        window("idle", "wait_forever", 57, 1060.0, share=0.8),  # passing through, not held
    ],
    ids=["line", "function", "kind", "share"],
)
def test_a_main_thread_that_moved_starts_over(after: JobActivity) -> None:
    first = window("idle", "wait_forever", 57, 1000.0)
    assert held_since(first, after).unchanged_since is None


def test_the_sampler_sets_it_on_the_windows_it_takes_and_each_reading_gets_the_rank() -> None:
    clock = Clock()
    taken = iter([window("idle", "wait_forever", 57, 1000.0), window("idle", "wait_forever", 57, 1060.0)])
    stacks = JobStacks(read=lambda pid, window_s: next(taken), clock=clock)
    snap = snapshot(0.0, host_sample=host((proc(100, dist=DistRank(rank=1, job=JOB)),)))
    stacks.request(100)
    settled(stacks)
    stacks.request(100)
    attached = settled(stacks).attach(snap).host.process(100)
    assert attached is not None and attached.activity is not None
    assert (attached.activity.unchanged_since, attached.activity.rank) == (996.0, 1)
