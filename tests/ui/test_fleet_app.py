"""The fleet view (`gputui --remote`): exporters on loopback started by the test, polls driven by the test."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime

import pytest

from gputui.cli import main
from gputui.diagnostics.findings import Finding, Severity
from gputui.diagnostics.fleet_rules import FleetFinding
from gputui.diagnostics.verdict import Verdict
from gputui.export.server import Exporter
from gputui.model import GpuSample, Snapshot
from gputui.session.diagnose import new_diagnose
from gputui.session.fleet_poll import FleetPoller, HostState, fleet_interval, judge_fleet
from gputui.session.sampling import Sampler
from gputui.sources.sim.source import SimulatedSource
from gputui.ui.fleet_app import FleetApp, header_parts
from gputui.ui.widgets.fleet_block import FleetBlock, block_lines, findings_line
from gputui.ui.widgets.lines import Line
from tests.conftest import Clock
from tests.snapshots import MIB, gpu, gpu_info, host, snapshot, system_info
from tests.ui.monitor_helpers import MARKS

SIZE = (120, 40)
FIXED_NOW = datetime(2026, 1, 1, 12, 0, 0)


def plain(lines: list[Line] | object) -> str:
    assert isinstance(lines, list | tuple)
    return "\n".join("".join(text for text, _ in line) for line in lines)


def block_text(app: FleetApp, which: int | str) -> str:
    """The block at a place on screen, or the one of the server whose name (or address) starts it."""
    texts = [plain(list(block.lines)) for block in app.query(FleetBlock) if block.display]
    if isinstance(which, int):
        return texts[which]
    return next(text for text in texts if text.startswith(which))


@pytest.fixture
def exporters(clock: Clock) -> Iterator[list[Exporter]]:
    """Two simulated servers on free loopback ports; the long interval leaves every reading to the test. Each
    machine has its own clock that moves 2 s on every read, so every exporter reading is a new one (the shared
    Clock's class, reached through its fixture: conftest modules cannot be imported by name)."""
    started = []
    for scenario in ("healthy", "thermal"):
        source = SimulatedSource(scenario=scenario, gpu_count=2, clock=type(clock)(now=1000.0, step=2.0))
        exporter = Exporter(Sampler(source, new_diagnose()), source.open(), port=0, interval=3600)
        exporter.start()
        started.append(exporter)
    yield started
    for exporter in started:
        exporter.stop()


def targets(exporters: list[Exporter]) -> list[str]:
    return [f"127.0.0.1:{e.address[1]}" for e in exporters if e.address is not None]


async def test_each_server_shown_then_a_stopped_one_unreachable_while_the_other_updates(
    exporters: list[Exporter],
) -> None:
    wall = itertools.count(5000.0, 3.0)
    poller = FleetPoller(targets(exporters), timeout=1, clock=lambda: next(wall))
    app = FleetApp(poller, auto_poll=False, clock=lambda: 5100.0, now=lambda: FIXED_NOW)
    async with app.run_test(size=SIZE) as pilot:
        assert "connecting..." in block_text(app, 0)
        await app.poll_now()
        await pilot.pause()
        healthy, thermal = block_text(app, "sim-healthy"), block_text(app, "sim-thermal")
        assert healthy.splitlines()[0].startswith("sim-healthy   SIMULATED: healthy ")
        assert thermal.splitlines()[0].startswith("sim-thermal   SIMULATED: thermal ")
        for text in (healthy, thermal):
            assert "CPU" in text and "iowait" in text and "2 GPUs" in text
            gpu_lines = [line for line in text.splitlines() if " CLK " in line]
            assert len(gpu_lines) == 2
            assert all("W  VRAM" in line and "Gen" in line for line in gpu_lines)
        header = plain([app.header.lines[0]])
        assert "2 servers" in header and "SIMULATED data on 2" in header and "UNREACHABLE" not in header

        exporters[1].stop()
        first = app.states[0].snapshot
        exporters[0].sampler.sample_once()
        await app.poll_now()
        await pilot.pause()
        thermal = block_text(app, 0)  # what needs attention comes first
        # the hostname last seen is kept
        assert thermal.splitlines()[0].startswith("sim-thermal   UNREACHABLE   last seen ")
        assert targets(exporters)[1] in thermal
        assert "connection refused" in thermal and "retried every poll" in thermal
        assert " SM " not in thermal  # no stale reading shown as current
        assert "1 UNREACHABLE" in plain([app.header.lines[0]])
        second = app.states[0].snapshot
        assert first is not None and second is not None and second.timestamp > first.timestamp
        assert "SIMULATED: healthy" in block_text(app, 1)

        await app.poll_now()  # tried again: still down, and the time since it answered grows
        assert app.states[1].last_attempt is not None and app.states[1].last_ok is not None
        assert app.states[1].last_attempt > app.states[1].last_ok


async def test_the_diagnostics_run_on_each_servers_data(exporters: list[Exporter]) -> None:
    """The thermal server's own engine (in the poller) finds the throttling; the healthy one stays clean."""
    app = FleetApp(FleetPoller(targets(exporters), timeout=2), auto_poll=False, now=lambda: FIXED_NOW)
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(40):
            states = await app.poll_now()
            if states[1].findings:
                break
            for exporter in exporters:
                exporter.sampler.sample_once()
        await pilot.pause()
        last_line = block_text(app, "sim-thermal").splitlines()[-1]
        assert "CRIT thermal_throttle GPU 1" in last_line
        assert block_text(app, "sim-healthy").splitlines()[-1].strip() == "no findings"


class FakePoller:
    """Hands out prepared states; counts polls and whether it was closed."""

    def __init__(self, *rounds: tuple[HostState, ...]) -> None:
        self.rounds = list(rounds)
        self.polls = 0
        self.closed = False

    @property
    def states(self) -> tuple[HostState, ...]:
        return tuple(HostState(s.target, s.url, None) for s in self.rounds[0])

    def poll(self) -> tuple[HostState, ...]:
        self.polls += 1
        return self.rounds[min(self.polls, len(self.rounds)) - 1]

    def close(self) -> None:
        self.closed = True


T = 1_767_268_800.0


def remote_snapshot(hostname: str = "gpu01") -> Snapshot:
    """A remote exporter's real driver: GPU 0 hot and throttling, GPU 1 on a cut link reporting little."""
    system = system_info(
        hostname=hostname,
        source="remote",
        nvml_version=None,
        gpu_count=2,
        cpu_count=4,
        kernel="6.8.0",
        remote_source="nvml",
    )
    info = gpu_info(memory_total_bytes=81559 * MIB)
    hot = gpu(
        sm_clock_mhz=1410,
        temperature_c=88.0,
        power_w=612.5,
        memory_used_bytes=70000 * MIB,
        clock_event_reasons_mask=0x4 | 0x20,
    )
    cut = GpuSample(index=1, timestamp=T, utilization_gpu_pct=40.0, pcie_gen=3, pcie_width=8)
    cores = host(cpu_pct_per_core=(100.0, 50.0, 0.0, 10.0), iowait_pct=12.5)
    return snapshot(T, (hot, cut), (info, replace(info, index=1)), cores, system)


FINDINGS = (
    Finding(rule="pcie_downgrade", severity=Severity.WARNING, title="", advice="", gpus=(1,)),
    Finding(rule="thermal_throttle", severity=Severity.CRITICAL, title="", advice="", gpus=(0,)),
    Finding(rule="host_swap", severity=Severity.INFO, title="", advice=""),
)
URL = "http://gpu01:9400/metrics"
UP = HostState("gpu01:9400", URL, remote_snapshot(), FINDINGS, last_ok=T, last_attempt=T)
DOWN = HostState(
    "10.0.0.7:9400",
    "http://10.0.0.7:9400/metrics",
    None,
    error="10.0.0.7:9400: unreachable (timed out)",
    last_ok=T - 42,
    last_attempt=T,
)


def fake_app(poller: FakePoller) -> FleetApp:
    return FleetApp(poller, auto_poll=False, clock=lambda: T, now=lambda: FIXED_NOW)


def test_fleet_view_snapshot(snap_compare: object) -> None:
    async def poll(pilot: object) -> None:
        await app.poll_now()

    app = fake_app(FakePoller((UP, DOWN)))
    assert snap_compare(app, terminal_size=SIZE, run_before=poll)  # type: ignore[operator]


def test_a_block_reads_every_gpu_field_and_the_worst_finding_first() -> None:
    lines = block_lines(UP, 120, T, MARKS)
    title, hot, cut, found = (plain([line]) for line in lines)
    assert title.startswith("gpu01  CPU  40%  iowait 12.5%  2 GPUs  drv 570.133.20  CUDA 12.8")
    assert "SIMULATED" not in title  # a real remote driver gets no badge
    assert hot.endswith(
        "[||||||||||]  97% CLK 1410/1980   88/89C   612/700W  VRAM   68.4/80G  Gen5 x16 THERMAL PWR-CAP"
    )
    assert "n/a/1980" in cut and "n/a/89C" in cut and "n/a/n/aW" in cut  # not reported is n/a, never 0
    assert "Gen3 x8 of Gen5 x16" in cut
    assert found == "   CRIT thermal_throttle GPU 0  WARN pcie_downgrade GPU 1  INFO host_swap"


def test_a_block_gives_the_servers_verdict_and_the_findings_that_closed() -> None:
    verdict = Verdict("throttled", "Throttled", (0,), "21% of the clock lost on GPU 0 (heat)", "")
    was = replace(FINDINGS[0], rule="starvation_io", gpus=(0,), started_at=T - 90, ended_at=T - 60)
    lines = plain(block_lines(replace(UP, verdict=verdict, closed=(was,)), 120, T, MARKS)).splitlines()
    assert lines[1] == "   Throttled: 21% of the clock lost on GPU 0 (heat)"
    assert lines[-1].endswith("INFO host_swap  was WARN starvation_io GPU 0")


def test_findings_that_do_not_fit_are_counted() -> None:
    line = plain([findings_line(FINDINGS, 50)])
    assert line == "   CRIT thermal_throttle GPU 0  +2 more"


def test_a_scenario_alone_marks_a_server_simulated() -> None:
    snapshot = remote_snapshot()
    snapshot = replace(snapshot, system=replace(snapshot.system, remote_source=None, scenario="thermal"))
    title = plain([block_lines(replace(UP, snapshot=snapshot), 120, T, MARKS)[0]])
    assert title.startswith("gpu01   SIMULATED: thermal ")


def test_an_unreachable_server_never_seen() -> None:
    state = replace(DOWN, last_ok=None)
    assert plain(block_lines(state, 120, T, MARKS)) == (
        "10.0.0.7:9400   UNREACHABLE   never reached\n   unreachable (timed out)  (retried every poll)"
    )


def test_a_narrow_terminal_drops_the_bar_not_the_readings() -> None:
    hot = plain([block_lines(UP, 100, T, MARKS)[1]])
    assert "[" not in hot
    assert hot.startswith("    0 H100 80GB HBM3    97% CLK 1410/1980   88/89C   612/700W  VRAM   68.4/80G")
    assert hot.endswith("THERMAL PWR-CAP")


def test_header_counts_unreachable_and_simulated_servers() -> None:
    text = plain([header_parts((UP, DOWN), "12:00:00", 2.0, paused=True)])
    assert text == "12:00:00  gputui fleet   PAUSED   2 servers   1 UNREACHABLE   every 2s"


async def test_keys_pause_help_quit_and_the_poller_is_closed() -> None:
    poller = FakePoller((UP, DOWN), (replace(UP, findings=()), DOWN))
    app = fake_app(poller)
    async with app.run_test(size=SIZE) as pilot:
        await app.poll_now()
        await pilot.press("p")
        assert app.paused and "PAUSED" in plain([app.header.lines[0]])
        await app.poll_now()
        await pilot.pause()
        assert "CRIT thermal_throttle" in block_text(app, "gpu01")  # drawing waits while paused...
        await pilot.press("p")
        await pilot.pause()
        assert "no findings" in block_text(app, "gpu01")  # ...and catches up on resume
        await pilot.press("question_mark")
        assert type(app.screen).__name__ == "FleetHelp"
        await pilot.press("escape")
        await pilot.press("q")
    assert poller.closed and app.return_code in (None, 0)


async def test_live_polling_starts_at_once_then_waits_the_interval() -> None:
    poller = FakePoller((UP, DOWN))
    app = FleetApp(poller, interval=1.0, clock=lambda: T, now=lambda: FIXED_NOW)
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(50):
            await pilot.pause(0.02)
            if poller.polls:
                break
        await pilot.pause()
        assert poller.polls == 1  # the first poll at once; the next one waits the interval
        assert "UNREACHABLE" in block_text(app, 0)
    assert poller.closed


def test_the_remote_interval_is_floored_at_one_second() -> None:
    assert fleet_interval(0.25) == 1.0
    assert fleet_interval(5.0) == 5.0


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("gpu01:notaport", "bad port in 'gpu01:notaport'"),
        (" , ", "no exporter given"),
        ("ftp://gpu01", "not an http(s) address"),
    ],
)
def test_bad_remote_targets_are_one_line_usage_errors(
    value: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--remote", value])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and err.startswith("gputui: error: argument --remote")


class BrokenPoller(FakePoller):
    def poll(self) -> tuple[HostState, ...]:
        self.polls += 1
        raise RuntimeError("a bug in the poller")


async def test_a_failed_poll_is_shown_and_the_app_goes_on() -> None:
    poller = BrokenPoller((UP, DOWN))
    app = FleetApp(poller, interval=1.0, clock=lambda: T, now=lambda: FIXED_NOW)
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(50):
            await pilot.pause(0.02)
            if "polling failed" in plain([app.header.lines[0]]):
                break
        assert "polling failed: RuntimeError: a bug in the poller" in plain([app.header.lines[0]])
        assert "connecting..." in block_text(app, 0)
        assert app.is_running
    assert poller.closed


def test_remote_runs_the_fleet_view_on_the_given_exporters(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[tuple[str, ...], float]] = []

    def fake_run_fleet(targets: tuple[str, ...], interval: float) -> int:
        calls.append((targets, interval))
        return 0

    monkeypatch.setattr("gputui.ui.fleet_app.run_fleet", fake_run_fleet)
    assert main(["--remote", "gpu01,gpu02:9500", "--interval", "3"]) == 0
    assert calls == [(("http://gpu01:9400/metrics", "http://gpu02:9500/metrics"), 3.0)]


def test_remote_polls_every_two_seconds_unless_told_otherwise(monkeypatch: pytest.MonkeyPatch) -> None:
    intervals: list[float] = []
    monkeypatch.setattr("gputui.ui.fleet_app.run_fleet", lambda targets, interval: intervals.append(interval) or 0)
    assert main(["--remote", "gpu01"]) == 0
    assert main(["--remote", "gpu01", "--interval", "1"]) == 0
    assert intervals == [2.0, 1.0]


# -- many servers: a line each, what needs attention first, the fleet findings pane --------------------------------

BIG = (160, 50)


def fleet_of(count: int) -> tuple[HostState, ...]:
    """`count` eight-GPU servers, busy and healthy, each with a window of eight readings two seconds apart;
    gpu03's GPU 1 runs at 1410 MHz (a straggler), gpu05 has a warning, gpu07 a critical finding, gpu09 is down."""
    states = []
    for n in range(1, count + 1):
        name = f"gpu{n:02d}"
        slow = n == 3
        recent = tuple(
            replace(
                snapshot(
                    T - 14 + 2 * i,
                    [gpu(g, sm_clock_mhz=1410 if slow and g == 1 else 1980) for g in range(8)],
                    [gpu_info(g) for g in range(8)],
                ),
                system=system_info(hostname=name, source="remote", remote_source="nvml", gpu_count=8),
            )
            for i in range(8)
        )
        findings: tuple[Finding, ...] = ()
        if n == 5:
            findings = (FINDINGS[0],)
        if n == 7:
            findings = (FINDINGS[1],)
        url = f"http://{name}:9400/metrics"
        if n == 9:
            states.append(replace(DOWN, target=f"{name}:9400", url=url))
            continue
        states.append(HostState(f"{name}:9400", url, recent[-1], findings, last_ok=T, last_attempt=T, recent=recent))
    return tuple(states)


def host_rows(app: FleetApp) -> list[str]:
    return plain(list(app.host_lines.lines)).splitlines()


async def test_forty_servers_are_all_on_the_first_screen_at_160x50_what_needs_attention_first() -> None:
    app = fake_app(FakePoller(fleet_of(40)))
    async with app.run_test(size=BIG) as pilot:
        await app.poll_now()
        await pilot.pause()
        assert not app.whole and app.host_lines.display
        assert not any(block.display for block in app.query(FleetBlock))
        rows = host_rows(app)
        assert len(rows) == 40
        assert app.query_one("#fleet").max_scroll_y == 0  # nothing below the fold
        assert app.host_lines.region.bottom <= BIG[1] - 1  # above the footer
        names = [row.split()[0] for row in rows]
        assert sorted(names) == sorted(f"gpu{n:02d}" + (":9400" if n == 9 else "") for n in range(1, 41))
        # unreachable, critical, warning, named by a fleet finding, then the rest in the order given
        assert rows[0].startswith("gpu09:9400") and "UNREACHABLE" in rows[0]
        assert rows[1].startswith("gpu07") and " CRIT" in rows[1]
        assert rows[2].startswith("gpu05") and " WARN" in rows[2]
        assert rows[3].startswith("gpu03") and " FLEET" in rows[3]
        assert names[4:7] == ["gpu01", "gpu02", "gpu04"]
        assert "thermal_throttle GPU 0" in rows[1] and " 8 GPUs" in rows[4] and "util  97%" in rows[4]
        pane = plain(list(app.pane.lines)).splitlines()
        assert pane[0] == "Fleet findings (1)"
        assert pane[1].startswith("WARN gpu03 GPU 1: slower than the fleet's 312 busy NVIDIA H100 80GB HBM3 GPUs")
        assert app.pane.region.bottom <= app.host_lines.region.y


async def test_a_few_servers_stay_whole_blocks_under_the_pane() -> None:
    app = fake_app(FakePoller(fleet_of(3)))
    async with app.run_test(size=BIG) as pilot:
        await app.poll_now()
        await pilot.pause()
        assert app.whole and not app.host_lines.display
        assert block_text(app, 0).startswith("gpu03") and "FLEET" not in block_text(app, 0)
        assert plain(list(app.pane.lines)).startswith("Fleet findings (1)\nWARN gpu03 GPU 1")


async def test_no_fleet_findings_is_one_line_and_the_pane_speaks_chinese() -> None:
    poller = FakePoller((UP, DOWN))
    app = FleetApp(poller, auto_poll=False, clock=lambda: T, now=lambda: FIXED_NOW, lang="zh")
    async with app.run_test(size=BIG) as pilot:
        await app.poll_now()
        await pilot.pause()
        assert plain(list(app.pane.lines)) == "集群诊断  集群没有发现问题：没有掉队的 GPU，也没有被占用却空闲的 GPU。"
        app.show_states(fleet_of(3), fleet_judged(fleet_of(3), "zh"))
        await pilot.pause()
        assert plain(list(app.pane.lines)).startswith("集群诊断 (1)\n警告 gpu03 的 GPU 1：")


def fleet_judged(states: tuple[HostState, ...], lang: str) -> tuple[FleetFinding, ...]:
    return judge_fleet(states, lang)


async def test_forty_servers_at_80x24_still_render_and_scroll() -> None:
    app = fake_app(FakePoller(fleet_of(40)))
    async with app.run_test(size=(80, 24)) as pilot:
        await app.poll_now()
        await pilot.pause()
        assert not app.whole and len(host_rows(app)) == 40
        assert app.query_one("#fleet").max_scroll_y > 0  # the rest is a scroll away
        assert len(plain(list(app.pane.lines)).splitlines()) == 2  # title and the finding: the pane yields first
        await pilot.press("down")


async def test_live_polling_delivers_the_fleet_findings() -> None:
    poller = FakePoller(fleet_of(4))
    app = FleetApp(poller, interval=1.0, clock=lambda: T, now=lambda: FIXED_NOW)
    async with app.run_test(size=BIG) as pilot:
        for _ in range(50):
            await pilot.pause(0.02)
            if app.findings:
                break
        assert [f.rule for f in app.findings] == ["straggler"]
    assert poller.closed


async def test_a_poller_that_finds_more_servers_gets_more_blocks() -> None:
    poller = FakePoller(fleet_of(2), fleet_of(4))
    app = fake_app(poller)
    async with app.run_test(size=BIG) as pilot:
        await app.poll_now()
        await app.poll_now()
        await pilot.pause()
        assert len([b for b in app.query(FleetBlock) if b.display]) == 4


def test_a_mig_gpu_in_the_fleet_says_mig_and_each_instance_s_activity() -> None:
    """The complaint of the MIG issue was "util n/a" on a split GPU: a fleet line says MIG and carries the
    instances' activity instead; a whole GPU keeps its utilization."""
    from gputui.ui.widgets.fleet_block import gpu_line
    from tests.ui.monitor_helpers import mig_snapshot

    snap = mig_snapshot(1_000.0, gpus=2)
    first = "".join(text for text, _ in gpu_line(snap.gpu_info[0], snap.gpus[0], MARKS))
    second = "".join(text for text, _ in gpu_line(snap.gpu_info[1], snap.gpus[1], MARKS, with_bar=False))
    assert " MIG CLK " in first and first.endswith("GI1 n/a GI2 12%")  # GI 1 has no GPM reading: n/a, not 0
    assert second.endswith("GI1 86% GI2 81%") and "n/a  SM" not in second


def _watched(scenario: str, seconds: int) -> HostState:
    """A simulated server of four GPUs as the fleet view holds it after `seconds` of polls two seconds apart."""
    clock = Clock(now=1000.0)
    source = SimulatedSource(scenario=scenario, gpu_count=4, clock=clock)
    sampler = Sampler(source, new_diagnose())
    state = HostState(f"sim-{scenario}:9400", f"http://sim-{scenario}:9400/metrics", None)
    source.open()
    for t in range(0, seconds + 1, 2):
        clock.now = 1000.0 + t
        state = state.judged(sampler.take(), clock.now)
    source.close()
    return state


def test_the_clock_figures_on_one_fleet_screen_each_name_their_window() -> None:
    """A thermal server beside a healthy one showed `12% of the clock lost` (its verdict), `SM clock 17% below the
    median` (the straggler) and `SM 1560/1980` (the reading now) on one screen, the two means not saying over
    what: the verdict's is over its node's 10 s, the straggler's over the fleet's window. Each says so now."""
    states = (_watched("healthy", 40), _watched("thermal", 40))
    [straggler] = [f for f in judge_fleet(states) if f.rule == "straggler"]
    assert re.search(r", SM clock \d+% below the median, mean over 40 s \(heat\)$", straggler.title), straggler.title
    thermal = plain(block_lines(states[1], 120, 1040.0, MARKS, "sim-thermal")).splitlines()
    assert re.search(r"Throttled GPU 1 \d+% of the clock lost, mean over 10 s \(heat\)", thermal[1]), thermal[1]


def test_a_blocks_findings_name_their_gpus_as_the_verdict_does() -> None:
    """One vocabulary (issue 38): a row on four GPUs read `GPU 0-3` in a block under a verdict that says `GPUs 0-3`."""
    hot = [replace(FINDINGS[1], gpus=(g,)) for g in range(4)]
    assert plain([findings_line(hot, 120)]) == "   CRIT thermal_throttle GPUs 0-3"
