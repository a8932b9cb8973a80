"""What gputui relies on in Textual's private modules (gputui/ui/textual_internals.py) is still there and still
behaves so: a Textual release that moves or changes a piece fails here, with a message naming the piece and what
gputui does with it, before it fails somewhere in the monitor's drawing or key handling.

Each test imports the private module itself rather than the adapter, so that a missing name is reported as such
and not as an ImportError of gputui.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import time
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.app import App, ComposeResult
from textual.drivers.linux_driver import LinuxDriver
from textual.geometry import Region
from textual.screen import Screen
from textual.strip import Strip
from textual.widgets import Static

import gputui
from gputui.ui import textual_internals

TEXTUAL = version("textual")
SGR = re.compile(r"\x1b\[[0-9;]*m")

# (module, name, what gputui does with it): everything textual_internals re-exports.
PRIVATE_NAMES = (
    ("textual._compositor", "Compositor", "lean_update.LeanCompositor subclasses it"),
    ("textual._compositor", "ChopsUpdate", "lean_update.LeanChopsUpdate subclasses it"),
    ("textual._compositor", "CompositorUpdate", "tests tell partial updates from repaints by it"),
    ("textual._xterm_parser", "XTermParser", "driver.QuietLinuxDriver parses the terminal's input with it"),
    ("textual._time", "get_time", "driver.QuietLinuxDriver compares the parser's ESC deadline with it"),
)


def _private(module: str, name: str, use: str) -> Any:
    try:
        found = importlib.import_module(module)
    except ImportError:
        pytest.fail(f"Textual {TEXTUAL} has no module {module} ({name}: {use})")
    if not hasattr(found, name):
        pytest.fail(f"Textual {TEXTUAL}: {module}.{name} is gone ({use})")
    return getattr(found, name)


def _parameters(function: Callable[..., object]) -> list[str]:
    return list(inspect.signature(function).parameters)


@pytest.mark.parametrize(("module", "name", "use"), PRIVATE_NAMES, ids=[f"{m}.{n}" for m, n, _ in PRIVATE_NAMES])
def test_each_private_name_is_where_the_adapter_imports_it(module: str, name: str, use: str) -> None:
    assert getattr(textual_internals, name) is _private(module, name, use)


@pytest.mark.parametrize(
    ("owner", "method", "parameters", "use"),
    [
        ("Compositor", "render_partial_update", ["self"], "LeanCompositor overrides it and calls it"),
        ("Compositor", "_get_renders", ["self", "crop"], "LeanCompositor overrides it and calls it"),
        ("ChopsUpdate", "__init__", ["self", "chops", "spans", "chop_ends"], "LeanCompositor builds one"),
        ("ChopsUpdate", "render_segments", ["self", "console"], "LeanChopsUpdate overrides it"),
        ("XTermParser", "__init__", ["self", "debug"], "QuietLinuxDriver builds one"),
        ("XTermParser", "feed", ["self", "data"], "QuietLinuxDriver feeds it what it reads"),
        ("XTermParser", "tick", ["self"], "QuietLinuxDriver ticks it for a lone ESC"),
    ],
)
def test_the_private_methods_take_what_gputui_passes(owner: str, method: str, parameters: list[str], use: str) -> None:
    module = next(m for m, name, _ in PRIVATE_NAMES if name == owner)
    cls = _private(module, owner, use)
    assert hasattr(cls, method), f"Textual {TEXTUAL}: {owner}.{method} is gone ({use})"
    found = _parameters(getattr(cls, method))
    assert found == parameters, f"Textual {TEXTUAL}: {owner}.{method}{tuple(found)}, gputui passes {parameters}"


@pytest.mark.parametrize(
    ("cls", "method", "parameters", "use"),
    [
        (LinuxDriver, "__init__", ["self", "app", "debug", "mouse", "size"], "QuietLinuxDriver passes them on"),
        (LinuxDriver, "run_input_thread", ["self"], "QuietLinuxDriver replaces the input loop"),
        (LinuxDriver, "_sigcont_application", ["self", "_"], "QuietLinuxDriver skips it on a hung-up terminal"),
        (LinuxDriver, "process_message", ["self", "message"], "QuietLinuxDriver hands it each event"),
        (Screen, "_on_timer_update", ["self"], "LeanScreen repaints at once through it"),
    ],
)
def test_the_private_methods_of_public_classes_gputui_overrides_or_calls(
    cls: type, method: str, parameters: list[str], use: str
) -> None:
    assert hasattr(cls, method), f"Textual {TEXTUAL}: {cls.__name__}.{method} is gone ({use})"
    found = _parameters(getattr(cls, method))
    assert found == parameters, f"Textual {TEXTUAL}: {cls.__name__}.{method}{tuple(found)}, gputui has {parameters}"


def test_a_screen_keeps_its_compositor_and_dirty_widgets_where_lean_screen_reaches_them() -> None:
    screen: Screen[None] = Screen()
    assert isinstance(getattr(screen, "_compositor", None), textual_internals.Compositor), (
        f"Textual {TEXTUAL}: Screen._compositor is not a Compositor (LeanScreen replaces it)"
    )
    assert isinstance(getattr(screen, "_dirty_widgets", None), set), (
        f"Textual {TEXTUAL}: Screen._dirty_widgets is not a set (LeanScreen reads it)"
    )
    compositor = textual_internals.Compositor()
    assert isinstance(getattr(compositor, "_dirty_regions", None), set), (
        f"Textual {TEXTUAL}: Compositor._dirty_regions is not a set (LeanCompositor reads it)"
    )
    assert isinstance(inspect.getattr_static(textual_internals.Compositor, "visible_widgets"), property), (
        f"Textual {TEXTUAL}: Compositor.visible_widgets is not a property (LeanCompositor reads it)"
    )


def test_the_parser_turns_bytes_into_the_key_and_mouse_events() -> None:
    parser = textual_internals.XTermParser()
    [up] = parser.feed("\x1b[A")
    [letter] = parser.feed("a")
    [click] = parser.feed("\x1b[<0;5;3M")
    assert isinstance(up, events.Key) and up.key == "up", f"Textual {TEXTUAL}: ESC [ A parsed as {up!r}"
    assert isinstance(letter, events.Key) and letter.character == "a", f"Textual {TEXTUAL}: 'a' parsed as {letter!r}"
    assert isinstance(click, events.MouseDown) and (click.x, click.y) == (4, 2), f"Textual {TEXTUAL}: {click!r}"


def test_a_lone_escape_waits_for_its_deadline_on_get_time_and_then_is_the_escape_key() -> None:
    """The input thread sleeps until `escape_deadline`, read on `get_time`'s clock: both must hold."""
    parser = textual_internals.XTermParser()
    assert textual_internals.escape_deadline(parser) is None
    assert list(parser.feed("\x1b")) == []
    deadline = textual_internals.escape_deadline(parser)
    now = textual_internals.get_time()
    assert deadline is not None and now < deadline <= now + 1.0, (
        f"Textual {TEXTUAL}: the parser's ESC deadline is {deadline}, now is {now} (XTermParser._timeout_time)"
    )
    assert list(parser.tick()) == [], "a tick before the deadline gave the ESC away"
    time.sleep(max(0.0, deadline - textual_internals.get_time()))
    [escape] = parser.tick()
    assert isinstance(escape, events.Key) and escape.key == "escape", f"Textual {TEXTUAL}: {escape!r}"
    assert textual_internals.escape_deadline(parser) is None


def test_get_time_is_the_monotonic_clock() -> None:
    assert abs(textual_internals.get_time() - time.monotonic()) < 1.0


def test_a_chops_update_renders_its_span_as_segments_after_a_cursor_move() -> None:
    console = Console(color_system="truecolor", force_terminal=True, width=20)
    strip = Strip([Segment("hello", Style(color="red")), Segment(" x", None)])
    update = textual_internals.ChopsUpdate([{0: strip}], [(0, 0, 7)], [[7]])
    assert (update.chops, update.spans, update.chop_ends) == ([{0: strip}], [(0, 0, 7)], [[7]])
    assert update.render_segments(console) == "\x1b[1;1H\x1b[31mhello\x1b[0m x"


class _Hello(App[None]):
    def compose(self) -> ComposeResult:
        yield Static("hello world")


async def test_the_compositor_renders_a_dirty_region_as_a_partial_update() -> None:
    """What LeanCompositor builds on: a dirty region becomes a ChopsUpdate of that span, drawn from `_get_renders`."""
    app = _Hello()
    async with app.run_test(size=(20, 3)) as pilot:
        await pilot.pause()
        compositor = app.screen._compositor
        compositor._dirty_regions.add(Region(0, 0, 5, 1))
        update = compositor.render_partial_update()
        assert isinstance(update, textual_internals.ChopsUpdate), f"Textual {TEXTUAL}: {update!r}"
        assert update.spans == [(0, 0, 5)]
        assert SGR.sub("", update.render_segments(app.console)) == "\x1b[1;1Hhello"
        renders = list(compositor._get_renders(Region(0, 0, 5, 1)))
        assert any(strips and strips[0].text.startswith("hello") for _, _, strips in renders)


def test_the_private_rich_parts_lean_update_reads_are_there() -> None:
    """lean_update.py reads a Style's attribute bits and SGR codes, and the console's colour system (Rich, not
    Textual, but upgraded with it)."""
    style = Style(bold=True, color="red")
    assert isinstance(style._attributes, int) and isinstance(style._set_attributes, int)
    assert style._make_ansi_codes(Console(color_system="truecolor")._color_system) == "1;31"


def test_no_module_but_the_adapter_imports_a_private_textual_module() -> None:
    """A private import elsewhere would be missed by these tests and by whoever upgrades Textual."""
    roots = (Path(gputui.__file__).parent, Path(__file__).parents[1])
    adapter = Path(textual_internals.__file__)
    offenders = []
    for path in (p for root in roots for p in root.rglob("*.py") if p != adapter):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            offenders += [f"{path.name}: {name}" for name in names if name.startswith("textual._")]
    assert offenders == []
