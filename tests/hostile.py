"""Text another user chose to attack whoever reads it: every kind of character gputui.foreign_text cleans, and
the markup of each output that parses some (Rich's `[/]`, Slack's `<!channel>`), for the tests of every place
such text enters and every output it could reach."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

from gputui.foreign_text import clean
from gputui.model import ActivityFrame, ActivityShares, JobActivity, Snapshot

# A new terminal title, BEL, a cleared screen; a C1 CSI; a bidi override; DEL; a newline that forges a line; a
# lone surrogate (an undecodable byte as psutil reads it); Rich markup closing nothing; Slack's broadcast.
HOSTILE = "\x1b]0;PWNED\x07\x1b[2J\x9b31m\u202egnp.exe\x7f\nFORGED\udc9b[/]<!channel>"
SHOWN = clean(HOSTILE)  # as every output must show it: the escapes visible
# Raw, what must reach no output: the sequences and characters above, as text and as UTF-8 bytes.
RAW = ("\x1b]0;PWNED", "\x07", "\x1b[2J", "\x9b", "\u202e", "\x7f", "\nFORGED")
# In the bytes written to a terminal, which hold the terminal's own sequences too (Textual ends an OSC with BEL).
RAW_BYTES = (b"\x1b]0;PWNED", b"PWNED\x07", b"\x07\x1b[2J", b"\xc2\x9b", b"\xe2\x80\xae", b"\x7f", b"\nFORGED")


def strings(value: Any) -> Iterator[str]:
    """Every string in a model value (dataclasses, tuples, lists, dicts), keys included."""
    if isinstance(value, str):
        yield value
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            yield from strings(getattr(value, field.name))
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from strings(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from strings(key)
            yield from strings(item)


def hostile_activity(taken_at: float) -> JobActivity:
    """A stack window whose function, file and error texts are the job's to choose."""
    return JobActivity(
        source="in-process",
        taken_at=taken_at,
        window_s=4.0,
        samples=80,
        shares=ActivityShares(data=0.7, cpu=0.3),
        top=(
            ActivityFrame("data", f"next_{HOSTILE}", f"/home/eve/{HOSTILE}.py", 7, 0.7),
            ActivityFrame("cpu", HOSTILE, "train.py", 88, 0.3),
        ),
        error=None,
    )


def hostile_snapshot(snapshot: Snapshot) -> Snapshot:
    """`snapshot` with every text field another user or server chooses made HOSTILE: the host's name, the source's
    notices, and each process's name, user, command line, pod, namespace, container, job and stack activity."""
    processes = tuple(
        dataclasses.replace(
            proc,
            name=f"py{HOSTILE}",
            user=f"eve{HOSTILE}",
            cmdline=f"python {HOSTILE} --lr 3e-4",
            pod=f"pod{HOSTILE}",
            namespace=f"ns{HOSTILE}",
            k8s_container=f"c{HOSTILE}",
            job_id=f"42{HOSTILE}",
            activity=hostile_activity(snapshot.timestamp),
        )
        for proc in snapshot.host.processes
    )
    return dataclasses.replace(
        snapshot,
        system=dataclasses.replace(snapshot.system, hostname=f"gpu{HOSTILE}"),
        host=dataclasses.replace(snapshot.host, processes=processes),
        events=(f"notice from {HOSTILE}",),
    )
