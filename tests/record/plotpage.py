"""Reading the plotly figure back out of a report page, as a browser would be handed it."""

from __future__ import annotations

import json
from typing import Any


def plot(page: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The traces and the layout the page hands to Plotly.newPlot."""
    decoder = json.JSONDecoder()
    rest = page[page.index("Plotly.newPlot(") + len("Plotly.newPlot(") :]
    args = []
    for _ in range(3):  # the div's id, the traces, the layout
        value, end = decoder.raw_decode(rest.lstrip(" \n,"))
        args.append(value)
        rest = rest.lstrip(" \n,")[end:]
    return args[1], args[2]


def row_axis(layout: dict[str, Any], title: str) -> str:
    """The y axis ("y3") of the chart row under the subplot title `title`."""
    note = next(a for a in layout["annotations"] if a["text"] == title)
    for name, axis in layout.items():
        if name.startswith("yaxis") and axis["domain"][0] <= note["y"] - 0.01 <= axis["domain"][1]:
            return "y" + name.removeprefix("yaxis")
    raise AssertionError(f"no chart under {title!r}")
