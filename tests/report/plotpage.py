"""Reading the plotly figure back out of a report page, as a browser would be handed it."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any


def _arguments(page: str) -> list[Any]:
    """What the page hands to Plotly.newPlot: the div's id, the traces, the layout, the config."""
    decoder = json.JSONDecoder()
    rest = page[page.index("Plotly.newPlot(") + len("Plotly.newPlot(") :]
    args = []
    for _ in range(4):
        value, end = decoder.raw_decode(rest.lstrip(" \n,"))
        args.append(value)
        rest = rest.lstrip(" \n,")[end:]
    return args


def plot(page: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The traces and the layout the page hands to Plotly.newPlot."""
    _, traces, layout, _ = _arguments(page)
    return traces, layout


def config(page: str) -> dict[str, Any]:
    """The config the page hands to Plotly.newPlot (the modebar's settings among them)."""
    return dict(_arguments(page)[3])


def row_axis(layout: dict[str, Any], title: str) -> str:
    """The y axis ("y3") of the chart row under the subplot title `title`."""
    note = next(a for a in layout["annotations"] if a["text"] == title)
    for name, axis in layout.items():
        if name.startswith("yaxis") and axis["domain"][0] <= note["y"] - 0.01 <= axis["domain"][1]:
            return "y" + name.removeprefix("yaxis")
    raise AssertionError(f"no chart under {title!r}")


def times(trace: dict[str, Any]) -> list[float]:
    """The times (epoch seconds, for recordings made in UTC) of a line given as a start and a step."""
    start = datetime.strptime(trace["x0"], "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=timezone.utc).timestamp()
    return [round(start + n * trace["dx"] / 1000, 3) for n in range(len(trace["y"]))]
