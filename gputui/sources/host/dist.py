"""A process's place in a torch.distributed job, from what is there: its environment and its parent.

torchrun's elastic agent starts each worker as its child with RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR,
MASTER_PORT and TORCHELASTIC_RUN_ID in its environment (torch/distributed/elastic/agent/server); other launchers
(mpirun with a wrapper, Slurm scripts, `torch.multiprocessing.spawn` beside an explicit init) set the same
MASTER_ADDR/MASTER_PORT and RANK by convention. The ranks of one job on a machine share their run id and their
master's address: that is the job's key, whoever launched it.

/proc/PID/environ is the process's environment as it started (it does not change, so it is read once per process,
by the host source that follows it) and is readable only with ptrace access: where the kernel refuses it, the
process is `unreadable` and nothing is guessed. Everything in it is the process owner's to write: numbers are
taken only as integers in range, names are cleaned (gputui.foreign_text) and cut short, and the read is bounded
(attribution.ENVIRON_MAX_BYTES).
"""

from __future__ import annotations

import os
from pathlib import Path

from gputui.foreign_text import clean
from gputui.model import DistRank
from gputui.sources.host.attribution import read_environ

# The variables read, as torchrun's agent sets them (FACTS: "Distributed jobs and hangs").
_KEYS = (b"RANK", b"LOCAL_RANK", b"WORLD_SIZE", b"MASTER_ADDR", b"MASTER_PORT", b"TORCHELASTIC_RUN_ID")
# Far above any job (the largest runs are ~10^5 ranks); a value beyond is not a rank.
MAX_WORLD = 1 << 20
# How much of a name (run id, master address) is kept: a host name is at most 253 characters.
MAX_NAME = 64
# How much of the parent's command line is read to tell torchrun's agent.
_CMDLINE_MAX = 4096
# What torchrun's agent runs as: the `torchrun` script, `python -m torch.distributed.run` (or the older `.launch`).
_LAUNCHERS = (b"torchrun", b"torch.distributed.run", b"torch.distributed.launch")
# torchrun's default rendezvous id: every standalone-less run shares it, so it tells no job apart.
_DEFAULT_RUN_ID = "none"


def read_dist(pid: int, ppid: int | None, root: Path = Path("/")) -> DistRank | None:
    """Process `pid`'s place in a torch.distributed job; None where its environment names none (no RANK and no
    MASTER_ADDR), DistRank(unreadable=True) where the kernel refuses its environment."""
    environ = read_environ(pid, root)
    if environ is None:
        return DistRank(unreadable=True) if _refused(pid, root) else None
    values = {key: environ[key] for key in _KEYS if key in environ}
    if b"RANK" not in values and b"MASTER_ADDR" not in values:
        return None
    world = _int(values.get(b"WORLD_SIZE"), 1, MAX_WORLD)
    launcher = ppid if ppid is not None and _is_launcher(ppid, root) else None
    return DistRank(
        rank=_int(values.get(b"RANK"), 0, MAX_WORLD - 1),
        local_rank=_int(values.get(b"LOCAL_RANK"), 0, MAX_WORLD - 1),
        world_size=world,
        job=_job(values.get(b"TORCHELASTIC_RUN_ID"), values.get(b"MASTER_ADDR"), values.get(b"MASTER_PORT")),
        launcher_pid=launcher,
    )


def _refused(pid: int, root: Path) -> bool:
    """Whether the kernel refuses this reader process `pid`'s environment (EACCES, EPERM), rather than it being gone."""
    try:
        os.close(os.open(f"{root}/proc/{pid}/environ", os.O_RDONLY))
    except PermissionError:
        return True
    except OSError:
        return False
    return False


def _int(value: bytes | None, low: int, high: int) -> int | None:
    """A decimal integer from `low` to `high`; None for anything else (a hostile value is no rank)."""
    if value is None or not value.strip().isdigit() or len(value) > 8:
        return None
    number = int(value)
    return number if low <= number <= high else None


def _name(value: bytes | None) -> str | None:
    """A name from the environment, cleaned and cut to MAX_NAME; None where empty."""
    if not value:
        return None
    text = clean(value[: MAX_NAME * 4].decode("utf-8", "replace").strip())[:MAX_NAME]
    return text or None


def _job(run_id: bytes | None, addr: bytes | None, port: bytes | None) -> str | None:
    """What the ranks of one job share: its run id (but torchrun's default, which every such run shares) and its
    master's address and port, as much of it as is set."""
    run = _name(run_id)
    host = _name(addr)
    number = _int(port, 1, 65535)
    master = f"{host}:{number}" if host and number is not None else host
    parts = [*([f"run {run}"] if run and run != _DEFAULT_RUN_ID else []), *([f"at {master}"] if master else [])]
    return " ".join(parts) or None


def _is_launcher(ppid: int, root: Path) -> bool:
    """Whether process `ppid` is torchrun's elastic agent, by its command line's first few KiB."""
    try:
        fd = os.open(f"{root}/proc/{ppid}/cmdline", os.O_RDONLY)
    except OSError:
        return False
    try:
        head = os.read(fd, _CMDLINE_MAX)
    except OSError:
        return False
    finally:
        os.close(fd)
    words = head.split(b"\0")[:3]  # the interpreter, `-m` or the script, the module
    return any(word.endswith(launcher) for word in words for launcher in _LAUNCHERS)
