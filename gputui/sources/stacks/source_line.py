"""The job's own source line at a frame, read from disk: what tells a wait for the GPU that has no Python frame.

`.item()`, `.cpu()`, `.tolist()`, `.numpy()`, `.to("cpu")` and printing a CUDA tensor synchronize inside C++, so a
stack caught there ends at the user's own line, and the thread runs (CUDA spins by default). Only the line itself
says what it waits for: a main thread running on a line that calls one of these is counted as `gpu_sync`, named by
the line. It is a reading of the source, not a measurement: the line may call it on a CPU tensor, or the file may
have changed since the job started; the views say "read from its source line".

The file is another user's, named by their job's stack: it is read through /proc/<pid>/root (the job's own mount
namespace, a container's files), opened without following a symlink at its last part and without blocking (a FIFO
planted at the path is never waited on), taken only where fstat says it is a regular file, and read no further than
the line asked for, nor past MAX_BYTES. A relative path (which the job's working directory would resolve) is not
read. Each file is opened once per window: a SourceLines lives for one summarize().
"""

from __future__ import annotations

import os
import re
import stat

from gputui.foreign_text import clean

# No more of a file is read than this: a line past it is not read (a generated file, a file that is not source).
MAX_BYTES = 2 * 1024 * 1024
# The longest line text kept (the model's ActivityFrame.source_line).
MAX_LINE_CHARS = 120
_CHUNK = 64 * 1024

# A call that synchronizes with the GPU inside C++. `print(` only with an argument that is not a plain string
# literal (a tensor, an f-string formatting one): `print("epoch", n)` writes text and waits for nothing.
GPU_SYNC_CALL = re.compile(r"""\.(?:item|cpu|tolist|numpy)\(\s*\)|\.to\(\s*['"]cpu['"]|\bprint\(\s*(?![)'"\s])""")


class SourceLines:
    """The lines of the job's files that one window asks for, each file read at most once."""

    def __init__(self, proc: str = "/proc") -> None:
        self._proc = proc
        # (pid, path) -> its lines read so far, and whether that is all that will be read of it; None: unreadable.
        self._files: dict[tuple[int, str], tuple[list[bytes], bool] | None] = {}

    def line(self, pid: int, path: str, number: int | None) -> str | None:
        """Line `number` (from 1) of `path` as process `pid` sees it, cleaned and stripped, at most
        MAX_LINE_CHARS; None where it cannot be read safely."""
        if number is None or number < 1 or not path.startswith("/"):
            return None
        key = (pid, path)
        read = self._files.get(key)
        if key not in self._files or (read is not None and number > len(read[0]) and not read[1]):
            # Not read yet, or read only up to an earlier line: read as far as this one (within MAX_BYTES).
            read = self._files[key] = _read_lines(f"{self._proc}/{pid}/root{path}", number)
        if read is None or number > len(read[0]):
            return None
        lines = read[0]
        text = clean(lines[number - 1].decode("utf-8", errors="replace").strip())
        return text[:MAX_LINE_CHARS] or None

    def gpu_sync_line(self, pid: int, path: str, number: int | None) -> str | None:
        """The line where it calls something that synchronizes with the GPU (GPU_SYNC_CALL); None otherwise."""
        text = self.line(pid, path, number)
        return text if text is not None and GPU_SYNC_CALL.search(text) else None


def _read_lines(path: str, upto: int) -> tuple[list[bytes], bool] | None:
    """The file's first `upto` lines (fewer where it ends, or MAX_BYTES does, first) and whether no more will be
    read (its end or MAX_BYTES reached), or None where it is no regular file, a symlink, or not readable."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = b""
        while data.count(b"\n") < upto and len(data) < MAX_BYTES:
            part = os.read(fd, min(_CHUNK, MAX_BYTES - len(data)))
            if not part:
                break
            data += part
    except OSError:
        return None
    finally:
        os.close(fd)
    lines = data.split(b"\n")
    whole = data.count(b"\n") >= upto
    if not whole and len(data) >= MAX_BYTES:
        lines = lines[:-1]  # the last line was cut at MAX_BYTES: not whole
    return lines[:upto], not whole
