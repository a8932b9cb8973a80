"""Why the kernel would refuse (or did refuse) to let this process read another's memory (ptrace access mode
ATTACH, what py-spy needs), in the user's words and with what to do about it.

The kernel's checks (ptrace(2), "Ptrace access mode checking"; Documentation/admin-guide/LSM/Yama.rst):
- Yama's kernel.yama.ptrace_scope: 0 classic, 1 only a process's ancestors (or one it named with PR_SET_PTRACER),
  2 only a tracer with CAP_SYS_PTRACE, 3 no one at all until reboot;
- without CAP_SYS_PTRACE, only a process of one's own user (its real, effective and saved uids all one's own).
  Root without it is root in a container: Docker and Kubernetes drop CAP_SYS_PTRACE by default.
Every read is under `proc` (tests point it at a fake tree): /proc/sys/kernel/yama/ptrace_scope, /proc/self/status
for this process's uid and capabilities, /proc/PID/status for the target's.
"""

from __future__ import annotations

import pwd
from pathlib import Path

CAP_SYS_PTRACE = 19  # bit of CapEff (include/uapi/linux/capability.h)

_TRACE_AS_CHILD = "or start the job with `gputui run -- CMD ...`, which reads its stacks from inside without ptrace"
_IN_A_CONTAINER = (
    "give the container CAP_SYS_PTRACE: `docker run --cap-add SYS_PTRACE`, a pod's "
    "`securityContext.capabilities.add: [SYS_PTRACE]`, or `kubectl debug --profile=general`; "
    "or run gputui as root on the host"
)
_SCOPES = {
    1: "kernel.yama.ptrace_scope is 1: only a process's ancestors may read it",
    2: "kernel.yama.ptrace_scope is 2: only a reader with CAP_SYS_PTRACE (root on the host) may read a process",
    3: "kernel.yama.ptrace_scope is 3: no process may read another's until the machine reboots",
}


def _status(path: Path) -> dict[str, str]:
    """A /proc status file's fields; {} when it cannot be read."""
    try:
        text = path.read_text(errors="replace")  # the Name field is the process owner's, in any bytes
    except OSError:
        return {}
    return {name: value.strip() for name, _, value in (line.partition(":") for line in text.splitlines())}


def _ids(field: str | None) -> tuple[int, ...]:
    return tuple(int(value) for value in field.split()) if field else ()


def ptrace_scope(proc: Path = Path("/proc")) -> int:
    """Yama's ptrace_scope; 0 (classic ptrace rules) where the kernel has no Yama."""
    try:
        return int((proc / "sys/kernel/yama/ptrace_scope").read_text())
    except (OSError, ValueError):
        return 0


def user_name(uid: int) -> str:
    """The user's name as the system's user database has it (root's to write); "uid N" where it has none."""
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def _is_descendant(pid: int, ancestor: int, proc: Path) -> bool:
    seen = set()
    while pid > 1 and pid not in seen:
        seen.add(pid)
        parent = _status(proc / str(pid) / "status").get("PPid")
        if parent is None:
            return False
        pid = int(parent)
        if pid == ancestor:
            return True
    return False


def ptrace_refusal(pid: int, proc: Path = Path("/proc")) -> str | None:
    """Why reading process `pid`'s stacks from outside would be refused, and what to do; None when nothing here
    says it would be (the kernel may still refuse: refusal_notice words that). Starts with "ptrace_refused: "."""
    scope = ptrace_scope(proc)
    if scope == 3:
        return f"ptrace_refused: {_SCOPES[3]}; {_TRACE_AS_CHILD.removeprefix('or ')}"
    own = _status(proc / "self/status")
    target = _status(proc / str(pid) / "status")
    if not own or not target:
        return None  # gone, or no /proc to tell by: the attempt says
    capabilities = int(own.get("CapEff", "0"), 16)
    if capabilities >> CAP_SYS_PTRACE & 1:
        return None  # scopes 0-2 all let CAP_SYS_PTRACE through
    uid = _ids(own.get("Uid"))[:1]
    target_uids = set(_ids(target.get("Uid"))[:3])
    if set(uid) != target_uids:
        owner = user_name(min(target_uids)) if target_uids else "another user"
        if uid == (0,):
            return (
                f"ptrace_refused: process {pid} ({owner}'s) may not be read: gputui runs as root without "
                f"CAP_SYS_PTRACE, as in a container by default; {_IN_A_CONTAINER}; {_TRACE_AS_CHILD}"
            )
        return (
            f"ptrace_refused: process {pid} is {owner}'s, and only root may read another user's process; "
            f"run gputui as root on the host (sudo), {_TRACE_AS_CHILD}"
        )
    if scope == 2 or (scope == 1 and not _is_descendant(pid, int(own.get("Pid", "0")), proc)):
        return f"ptrace_refused: {_SCOPES[scope]}; run gputui as root on the host (sudo), {_TRACE_AS_CHILD}"
    return None


def refusal_notice(pid: int, proc: Path = Path("/proc")) -> str:
    """The words for a refusal that happened: why, where that can be told, and what to do either way."""
    return ptrace_refusal(pid, proc) or (
        f"ptrace_refused: the kernel refused to let gputui read process {pid} (ptrace); run gputui as root on the "
        f"host, in a container with CAP_SYS_PTRACE (`docker run --cap-add SYS_PTRACE`, a pod's "
        f"`securityContext.capabilities.add: [SYS_PTRACE]`, `kubectl debug --profile=general`), {_TRACE_AS_CHILD}"
    )
