"""The diagnostics pane in a tiny app: what it lists, choosing a finding, and skipping idle repaints."""

from __future__ import annotations

from dataclasses import replace

from rich.text import Text
from textual.app import App, ComposeResult
from textual.containers import Container

from gputui.diagnostics.findings import Evidence, Finding, Severity
from gputui.ui.widgets.diagnostics import DiagnosticsPane

HOT = Finding(
    rule="thermal_throttle",
    severity=Severity.CRITICAL,
    title="GPU 1: thermal throttling at 90 C",
    advice="Improve the airflow.",
    gpus=(1,),
    evidence=(Evidence("temperature", 90.2, "C", "now", key="temperature"),),
    started_at=100.0,
    duration_s=125.0,
    metric="temperature_c",
)
SHARED = Finding(
    rule="gpu_contention",
    severity=Severity.WARNING,
    title="GPU 0: shared by 2 processes (alice, bob)",
    advice="Move one to a free GPU.",
    gpus=(0,),
    started_at=110.0,
    duration_s=12.0,
)
OLD = Finding(
    rule="thermal_margin",
    severity=Severity.WARNING,
    title="GPU 1: 3 C below thermal slowdown",
    advice="Check the fans.",
    gpus=(1,),
    started_at=90.0,
    duration_s=8.0,
    ended_at=98.0,
)


class PaneApp(App[None]):
    CSS = "#slot { height: 8; }"

    def __init__(self, lang: str = "en", slot: bool = False) -> None:
        super().__init__()
        self.lang = lang
        self.slot = slot
        self.selected: list[Finding] = []

    def compose(self) -> ComposeResult:
        if self.slot:
            with Container(id="slot"):
                yield DiagnosticsPane(lang=self.lang)
        else:
            yield DiagnosticsPane(lang=self.lang)

    def on_diagnostics_pane_finding_selected(self, message: DiagnosticsPane.FindingSelected) -> None:
        self.selected.append(message.finding)


def plain(pane: DiagnosticsPane) -> str:
    return "\n".join(line.plain for line in pane.render().renderables if isinstance(line, Text))


async def test_lists_findings_worst_first_with_gpu_duration_evidence_and_history() -> None:
    app = PaneApp()
    async with app.run_test(size=(100, 20)):
        pane = app.query_one(DiagnosticsPane)
        pane.show_findings([HOT, SHARED], [OLD])
        lines = plain(pane).splitlines()
        assert lines[0].endswith("1 critical, 1 warning")
        hot = next(i for i, line in enumerate(lines) if "thermal throttling" in line)
        shared = next(i for i, line in enumerate(lines) if "shared by 2" in line)
        old = next(i for i, line in enumerate(lines) if "below thermal slowdown" in line)
        assert hot < shared < old
        assert "CRIT" in lines[hot] and "GPU 1:" in lines[hot] and "2m05s" in lines[hot]
        assert "temperature 90.2 C" in lines[hot + 1] and "(now)" not in lines[hot + 1]
        assert "-- cleared --" in lines[old - 1]
        assert "lasted 8s" in lines[old]
        assert "Improve the airflow" not in plain(pane)


async def test_no_findings_says_so() -> None:
    app = PaneApp()
    async with app.run_test(size=(100, 20)):
        pane = app.query_one(DiagnosticsPane)
        pane.show_findings([], [])
        assert "No findings" in plain(pane)


async def test_keys_choose_a_finding_show_its_advice_and_post_a_message() -> None:
    app = PaneApp()
    async with app.run_test(size=(100, 20)) as pilot:
        pane = app.query_one(DiagnosticsPane)
        pane.show_findings([HOT, SHARED], [OLD])
        pane.focus()
        await pilot.press("down", "enter")
        await pilot.pause()
        assert [f.rule for f in app.selected] == ["gpu_contention"]
        assert "Move one to a free GPU." in plain(pane)
        await pilot.press("up", "enter")
        await pilot.pause()
        assert app.selected[-1].metric == "temperature_c"
        assert "Improve the airflow." in plain(pane)


def cursor_marked(pane: DiagnosticsPane) -> bool:
    lines = [line for line in pane.render().renderables if isinstance(line, Text)]
    return any(line.style == "reverse" for line in lines)


async def test_the_cursor_is_marked_only_while_the_pane_has_focus() -> None:
    app = PaneApp()
    async with app.run_test(size=(100, 20)) as pilot:
        pane = app.query_one(DiagnosticsPane)
        pane.show_findings([HOT, SHARED], [])
        await pilot.pause()
        assert pane.has_focus and cursor_marked(pane)
        app.set_focus(None)
        await pilot.pause()
        assert not cursor_marked(pane)
        pane.focus()
        await pilot.pause()
        assert cursor_marked(pane)


async def test_the_hint_names_the_keys_that_reach_the_pane_now() -> None:
    app = PaneApp()
    async with app.run_test(size=(100, 20)) as pilot:
        pane = app.query_one(DiagnosticsPane)
        pane.show_findings([HOT, SHARED], [])
        app.set_focus(None)  # alone in this app, the pane has focus from the start
        await pilot.pause()
        assert plain(pane).splitlines()[-1] == "d: choose a finding, then enter: advice"
        pane.focus()
        await pilot.pause()
        assert plain(pane).splitlines()[-1] == "up/down: choose  enter: advice"


async def test_cursor_follows_its_finding_when_the_list_reorders() -> None:
    app = PaneApp()
    async with app.run_test(size=(100, 20)) as pilot:
        pane = app.query_one(DiagnosticsPane)
        pane.show_findings([SHARED], [])
        pane.focus()
        pane.show_findings([HOT, SHARED], [])
        await pilot.press("enter")
        await pilot.pause()
        assert app.selected[-1].rule == "gpu_contention"


async def test_click_chooses_the_finding_under_the_mouse() -> None:
    app = PaneApp()
    async with app.run_test(size=(100, 20)) as pilot:
        pane = app.query_one(DiagnosticsPane)
        pane.show_findings([HOT, SHARED], [])
        await pilot.pause()
        row = next(i for i, line in enumerate(plain(pane).splitlines()) if "shared by 2" in line)
        await pilot.click(DiagnosticsPane, offset=(5, row))
        await pilot.pause()
        assert [f.rule for f in app.selected] == ["gpu_contention"]


def alike(count: int) -> list[Finding]:
    """The same finding on `count` GPUs, as a rule makes it: its words from the same placeholders."""
    return [replace(HOT, gpus=(i,), title=f"GPU {i}: thermal throttling", params=(("gpu", i),)) for i in range(count)]


async def test_findings_alike_on_several_gpus_are_one_row_with_the_advice_once() -> None:
    app = PaneApp()
    async with app.run_test(size=(100, 20)) as pilot:
        pane = app.query_one(DiagnosticsPane)
        pane.show_findings([*alike(8), SHARED], [])
        pane.focus()
        await pilot.press("enter")
        lines = plain(pane).splitlines()
        assert lines[0].endswith("1 critical, 1 warning")  # rows, in words
        assert [row.gpus for row in pane.entries] == [tuple(range(8)), (0,)]
        assert sum("thermal throttling" in line for line in lines) == 2  # the row and its advice's title
        assert any(line.startswith("> CRIT GPUs 0-7: thermal throttling") for line in lines)
        assert plain(pane).count("Improve the airflow.") == 1
        assert app.selected[-1].gpus == tuple(range(8))


async def test_what_does_not_fit_is_counted() -> None:
    app = PaneApp(slot=True)
    async with app.run_test(size=(100, 30)):
        pane = app.query_one(DiagnosticsPane)
        pane.show_findings(many(9), [])
        lines = plain(pane).splitlines()
        # Short of room, titles before evidence and before the keys' hint: 6 rows shown, 3 counted.
        assert lines[-1] == "+3 findings (up/down)" and len(lines) == 8
        assert [line.split(":")[0] for line in lines[1:-1]] == [
            f"{'>' if i == 0 else ' '} WARN GPU {i}" for i in range(6)
        ]


async def test_unchanged_findings_do_not_rebuild() -> None:
    app = PaneApp()
    async with app.run_test(size=(100, 20)):
        pane = app.query_one(DiagnosticsPane)
        pane.show_findings([HOT], [])
        first = pane.render()
        pane.show_findings([HOT], [])
        assert pane.render() is first
        pane.show_findings([replace(HOT, duration_s=126.0)], [])
        assert pane.render() is not first


async def test_chinese_pane_uses_the_catalog() -> None:
    app = PaneApp(lang="zh")
    async with app.run_test(size=(100, 20)):
        pane = app.query_one(DiagnosticsPane)
        pane.show_findings([HOT], [])
        text = plain(pane)
        assert "诊断" in text and "严重" in text


def many(count: int) -> list[Finding]:
    return [replace(SHARED, gpus=(i,), title=f"GPU {i}: shared by 2 processes") for i in range(count)]


async def test_a_short_slot_scrolls_to_keep_the_cursor_in_view() -> None:
    app = PaneApp(slot=True)
    async with app.run_test(size=(100, 30)) as pilot:
        pane = app.query_one(DiagnosticsPane)
        pane.show_findings(many(9), [])
        pane.focus()
        await pilot.pause()
        assert pane.size.height == 8
        assert "GPU 8:" not in plain(pane)
        await pilot.press(*["down"] * 8)
        text = plain(pane)
        assert "> WARN GPU 8:" in text and "GPU 0:" not in text
        assert text.splitlines()[0].startswith("Diagnostics")
        row = next(i for i, line in enumerate(text.splitlines()) if "GPU 7:" in line)
        await pilot.click(DiagnosticsPane, offset=(5, row))
        await pilot.pause()
        assert app.selected[-1].gpus == (7,)


async def test_findings_given_before_mount_are_shown() -> None:
    pane = DiagnosticsPane()
    pane.show_findings([HOT], [])

    class Early(App[None]):
        def compose(self) -> ComposeResult:
            yield pane

    async with Early().run_test(size=(100, 20)):
        assert "thermal throttling" in plain(pane)
