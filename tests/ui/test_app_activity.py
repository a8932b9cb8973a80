"""The monitor shows what a job's main thread does (its activity) on its row and in the detail, and `a` on the process
table asks the session to read the selected process's stacks now: refused, and not offered, in a replay and on the
simulated machine."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from gputui.model import Snapshot
from gputui.session.stacks import REMOTE_REFUSAL, REPLAY_REFUSAL, SIMULATED_REFUSAL
from gputui.sources.sim.job import job_scenario
from gputui.sources.sim.source import SimulatedSource
from gputui.ui.app import ACTIVITY_HINT, ACTIVITY_OFF, GpuTuiApp
from gputui.ui.screens.detail import DetailScreen
from gputui.ui.screens.topo import TopoScreen
from tests.activities import job_snapshot, unreadable
from tests.ui.monitor_helpers import FIXED_NOW, ScriptedSource, screen_rows, session_of, until
from tests.ui.test_record_replay_keys import footer, record, replay_app

if TYPE_CHECKING:  # the instance comes from the `clock` fixture: tests/conftest.py cannot be imported by name
    from conftest import Clock

SIZE = (120, 40)


def job_app(snap: Snapshot | None = None, request: Callable[[int], str | None] | None = None) -> GpuTuiApp:
    source = ScriptedSource([snap or job_snapshot()])
    app = GpuTuiApp(session_of(source), auto_sample=False, now=lambda: FIXED_NOW)
    app.request_activity = request  # in the place of the session's JobStacks.request: what `a` asks
    return app


def notices(app: GpuTuiApp) -> list[str]:
    return [notice.report.text for notice in app.notices.rows()]


async def test_the_row_shows_the_leading_kind_before_the_command() -> None:
    app = job_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await app.tick()
        await pilot.pause()
        rows = screen_rows(app)
        row = next(r for r in rows if " 4242 " in r)
        assert "data 71% pytho" in row
        assert "data" not in next(r for r in rows if " 4243 " in r)  # never sampled: nothing said


async def test_enter_on_a_process_opens_its_gpu_with_its_activity() -> None:
    app = job_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.tick()
        app.main.table.focus()
        await pilot.press("enter")
        await until(lambda: isinstance(app.screen, DetailScreen), pilot)
        await pilot.pause()
        text = "\n".join(screen_rows(app))
        assert "ACTIVITY  PID 4242  python train.py --workers 2" in text
        assert "py-spy, 4 s, 80 samples, 4 s ago" in text and "_next_data" in text
        assert "workers, 160 samples pooled" in text


async def test_the_detail_of_a_process_never_sampled_says_so() -> None:
    app = job_app(request=lambda pid: None)
    async with app.run_test(size=SIZE) as pilot:
        await app.tick()
        app.main.table.focus()
        await pilot.press("down", "enter")
        await until(lambda: isinstance(app.screen, DetailScreen), pilot)
        await pilot.pause()
        text = "\n".join(screen_rows(app))
        assert "ACTIVITY  PID 4243" in text and "activity: not sampled yet" in text


async def test_the_detail_from_the_gpu_list_shows_the_process_sampled_last() -> None:
    app = job_app(job_snapshot(5.0, unreadable()))
    async with app.run_test(size=SIZE) as pilot:
        await app.tick()
        await pilot.press("enter")
        await until(lambda: isinstance(app.screen, DetailScreen), pilot)
        await pilot.pause()
        text = " ".join(row.strip() for row in screen_rows(app))
        assert "ACTIVITY  PID 4242" in text and "no stack could be read: the kernel refuses gputui ptrace" in text


async def test_a_asks_the_session_for_the_selected_process_and_says_what_came_of_it() -> None:
    asked: list[int] = []
    answers = iter([None, "cooldown: PID 4243 was sampled 20 s ago; again in 40 s"])

    def request(pid: int) -> str | None:
        asked.append(pid)
        return next(answers)

    app = job_app(request=request)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.tick()
        app.main.table.focus()
        await pilot.press("a")
        await until(lambda: any("reading PID 4242's stacks" in n for n in notices(app)), pilot)
        await pilot.press("down", "a")
        await until(lambda: any("PID 4243: no stacks read: cooldown: PID 4243 was" in n for n in notices(app)), pilot)
        assert asked == [4242, 4243]


async def test_a_on_the_detail_samples_the_process_it_shows() -> None:
    asked: list[int] = []

    def request(pid: int) -> str | None:
        asked.append(pid)
        return None

    app = job_app(request=request)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.tick()
        await pilot.press("enter")  # from the GPU list: the process sampled last
        await until(lambda: isinstance(app.screen, DetailScreen) and "a Activity" in footer(app, 80), pilot)
        assert footer(app, 80)[-1] == "? Help"
        await pilot.press("a")
        await until(lambda: asked == [4242], pilot)


async def test_the_footer_offers_a_on_the_process_table_in_topologys_place() -> None:
    """Both do not fit 80 columns beside `? Help`: `t` still opens the topology, unlisted."""
    app = job_app(request=lambda pid: None)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.tick()
        await pilot.pause()
        assert "a Activity" not in footer(app, 10_000) and "enter t Views" in footer(app, 80)
        await pilot.press("a")
        await pilot.pause()
        assert ACTIVITY_HINT in notices(app)
        app.main.table.focus()
        await pilot.pause()
        entries = footer(app, 80)
        assert "a Activity" in entries and "K Signal" in entries and entries[-1] == "? Help", entries
        assert "sample_activity" in {b.action for b in app.help_bindings()}
        await pilot.press("t")
        await until(lambda: isinstance(app.screen, TopoScreen), pilot)


async def test_a_replay_does_not_offer_a_and_says_why(tmp_path: Path, clock: Clock) -> None:
    app, _ = replay_app(record(tmp_path / "r.jsonl", 5), clock)
    app.request_activity = lambda pid: None  # even where the session could sample
    async with app.run_test(size=SIZE) as pilot:
        await app.tick()
        app.main.table.focus()
        await pilot.pause()
        assert not any(entry.startswith("a ") for entry in footer(app, 10_000))
        await pilot.press("a")
        await pilot.pause()
        assert REPLAY_REFUSAL in notices(app)
        # Listed still, with why not here: `?` lists every key, and a key that cannot act says why.
        assert app.help_refusals()["sample_activity"] == REPLAY_REFUSAL


async def test_the_simulated_machine_does_not_sample_its_made_up_processes() -> None:
    source = SimulatedSource(scenario="healthy", gpu_count=2, seed=0, clock=lambda: 1.0)
    app = GpuTuiApp(session_of(source), auto_sample=False, now=lambda: FIXED_NOW)
    app.request_activity = lambda p: None
    async with app.run_test(size=SIZE) as pilot:
        await app.tick()
        app.main.table.focus()
        await pilot.press("a")
        await pilot.pause()
        assert SIMULATED_REFUSAL in notices(app)


async def test_the_labs_machine_samples_the_real_job_it_follows() -> None:
    """--demo-job: the GPU is simulated, its process is the real job on this machine, whose stacks may be read."""
    asked: list[int] = []

    def request(pid: int) -> str | None:
        asked.append(pid)
        return None

    app = job_app(job_snapshot(source="simulated", scenario=job_scenario(4242)), request=request)
    async with app.run_test(size=SIZE) as pilot:
        await app.tick()
        app.main.table.focus()
        await pilot.press("a")
        await until(lambda: asked == [4242], pilot)


async def test_another_machines_processes_and_a_session_without_sampling_are_refused() -> None:
    asked: list[int] = []
    for snap, refusal in ((job_snapshot(source="remote"), REMOTE_REFUSAL), (job_snapshot(), ACTIVITY_OFF)):
        request = asked.append if refusal == REMOTE_REFUSAL else None
        app = job_app(snap, request=request)  # type: ignore[arg-type]
        async with app.run_test(size=SIZE) as pilot:
            await app.tick()
            app.main.table.focus()
            await pilot.press("a")
            await pilot.pause()
            assert refusal in notices(app)
    assert asked == []
