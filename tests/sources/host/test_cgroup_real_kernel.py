"""gputui.sources.host.cgroup and procfs against the real kernel: a CPU quota that really throttles, and a process in
its own PID namespace holding a file named like a GPU's device.

These need root, a writable cgroup v1 cpu hierarchy and `unshare`; where the machine lacks one each skips, and
its reason (listed by -rs at the end of the run) says which check did not run and why. Everything they create
(a cgroup, a child process, a namespace) is removed in a `finally`, even when an assertion fails. The CPU
figures are measured over a real 1.5 s, so their bounds are wide.
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import pytest

from gputui.sources.host.cgroup import CgroupReader, read_cgroup
from gputui.sources.host.procfs import GpuUsers, device_minors, holds_device, inner_pid
from tests.cgroups import remove_group
from tests.sources.host.fake_tree import write

QUOTA_US, PERIOD_US = 50_000, 100_000
# cpu.shares at its most (the kernel caps it at 2^18): the weight the group competes for a CPU with.
MAX_SHARES = 262_144
# A minor no real machine has (NVIDIA's minors stop at 254: 255 is nvidiactl); it only exists inside the
# test's own mount namespace.
FAKE_MINOR = 250


@dataclass(frozen=True)
class _Mount:
    line: str
    root: str
    point: Path
    controllers: tuple[str, ...]  # which of cpu, cpuacct this hierarchy carries


def _v1_mounts() -> dict[str, _Mount]:
    """{controller: its cgroup v1 mount} for cpu and cpuacct, from this process's mountinfo."""
    out: dict[str, _Mount] = {}
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3 or tail[0] != "cgroup":
            continue
        controllers = tuple(c for c in ("cpu", "cpuacct") if c in tail[2].split(","))
        for controller in controllers:
            out.setdefault(controller, _Mount(line, fields[3], Path(fields[4]), controllers))
    return out


# What each test checks, named in its skip reason: -rs lists a skip under the line that raised it, here a
# fixture's or a helper's, which does not say which test it stopped.
QUOTA_CHECK = "a real cgroup v1 CPU quota throttling a busy child, read through read_cgroup and CgroupReader"
PID_NAMESPACE_CHECK = "a process in its own PID namespace holding /dev/nvidia250, found under its PID here"
DEVICE_NUMBER_CHECK = "device nodes under other names counted by their numbers (195:3 as /dev/gpu3 is GPU 3)"


def _skip(check: str, why: str) -> NoReturn:
    pytest.skip(f"real-kernel check not run: {check}; {why}")


def _require_root(check: str, needs: str) -> None:
    if os.geteuid() != 0:
        _skip(check, f"needs root ({needs}), running as uid {os.geteuid()}")


@dataclass(frozen=True)
class QuotaGroup:
    """A real v1 cpu (and cpuacct) group with a 0.5-core quota and one busy child in it."""

    name: str
    mounts: dict[str, _Mount]
    groups: dict[str, Path]
    child: subprocess.Popen[bytes]


@pytest.fixture
def quota_group() -> Iterator[QuotaGroup]:
    _require_root(QUOTA_CHECK, "creating a cgroup and moving a process into it are privileged")
    mounts = _v1_mounts()
    if "cpu" not in mounts or "cpuacct" not in mounts:
        missing = " and ".join(c for c in ("cpu", "cpuacct") if c not in mounts)
        _skip(QUOTA_CHECK, f"no cgroup v1 {missing} hierarchy is mounted here (a v2-only machine has none)")
    name = f"gputui-test-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    groups: dict[str, Path] = {}
    child: subprocess.Popen[bytes] | None = None
    try:
        for controller in ("cpu", "cpuacct"):
            path = mounts[controller].point / name
            if path not in groups.values():  # co-mounted: one directory for both
                try:
                    path.mkdir()
                except OSError as error:
                    _skip(QUOTA_CHECK, f"cannot make a group in {mounts[controller].point}: {error}")
            groups[controller] = path
        (groups["cpu"] / "cpu.cfs_period_us").write_text(f"{PERIOD_US}\n")
        (groups["cpu"] / "cpu.cfs_quota_us").write_text(f"{QUOTA_US}\n")
        # The group's weight at its most, so that other work on a shared machine does not keep its child under
        # the quota (which alone keeps it to half a core): the quota is what the test reads being used up.
        (groups["cpu"] / "cpu.shares").write_text(f"{MAX_SHARES}\n")
        child = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        for path in set(groups.values()):
            (path / "cgroup.procs").write_text(f"{child.pid}\n")
        yield QuotaGroup(name, mounts, groups, child)
    finally:
        if child is not None:
            child.kill()
            child.wait(timeout=10)
        for path in set(groups.values()):
            remove_group(path, seconds=5.0)  # the group empties once the killed child is reaped


def _root_seeing(group: QuotaGroup, root: Path) -> Path:
    """A root whose /proc/self/cgroup puts "this process" in the test's group, its mountinfo the real cgroup
    mounts and its /sys/fs/cgroup/... links to them: `read_cgroup` then locates and reads the real group."""
    lines, mountinfo = [], []
    for number, mount in enumerate({m.point: m for m in group.mounts.values()}.values(), start=1):
        lines.append(f"{number}:{','.join(mount.controllers)}:{mount.root.rstrip('/')}/{group.name}")
        mountinfo.append(mount.line)
        link = root / str(mount.point).lstrip("/")
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(mount.point)
    write(root, "proc/self/cgroup", "\n".join(lines) + "\n")
    write(root, "proc/self/mountinfo", "\n".join(mountinfo) + "\n")
    if Path("/proc/pressure").is_dir():
        (root / "proc/pressure").symlink_to("/proc/pressure")
    return root


def test_a_real_quota_throttles_and_is_read(quota_group: QuotaGroup, tmp_path: Path) -> None:
    cgroup = read_cgroup(_root_seeing(quota_group, tmp_path))
    assert cgroup.info.cgroup_version == 1
    assert cgroup.info.cpu_quota_cores == QUOTA_US / PERIOD_US
    assert cgroup.dirs.cpu is not None and cgroup.dirs.cpu.resolve() == quota_group.groups["cpu"]
    reader = CgroupReader(cgroup, tmp_path)  # the real monotonic clock
    first, _ = reader.sample()
    assert first is not None and first.cpu_pct_of_quota is None  # no interval yet
    time.sleep(1.5)
    container, psi = reader.sample()
    print(container, psi)  # shown with -s: the measured figures
    assert container is not None
    assert container.cpu_throttled_pct is not None and container.cpu_throttled_pct >= 20
    assert container.cpu_throttled_s is not None and container.cpu_throttled_s > 0
    # ~100 %: the busy child uses its whole quota. The window can take in a part-period's quota at each end (up
    # to +1/15 over 1.5 s) and CFS lets a period overrun a little, so the top is 120; a machine shared with other
    # work may not give the child its full half core every period, so the bottom is 60.
    assert container.cpu_pct_of_quota is not None and 60 <= container.cpu_pct_of_quota <= 120
    if Path("/proc/pressure/cpu").exists():
        assert psi is not None and psi.cpu_some_pct is not None and 0 <= psi.cpu_some_pct <= 100


def _children(pid: int) -> list[int]:
    """The processes whose parent is `pid` (CONFIG_PROC_CHILDREN is not everywhere, so from each status)."""
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            with contextlib.suppress(OSError):
                # errors="replace": another test's process may be named in bytes that are no UTF-8.
                status = Path(f"/proc/{name}/status").read_text(errors="replace")
                if f"\nPPid:\t{pid}\n" in status:
                    out.append(int(name))
    return out


@contextlib.contextmanager
def _namespaced(check: str, setup: str, holder: str) -> Iterator[tuple[int, int]]:
    """Run Python `holder` as the first process of a new PID and mount namespace, after shell `setup` ran there;
    yields (its PID here, its PID there) once it prints "ready <pid>". Skips, naming `check`, when unshare is
    missing or refused.

    Nothing outside changes: the mount namespace is private (`--propagation private`), so what `setup` mounts
    (a tmpfs over /dev) exists there alone and goes when the namespace's last process exits. `--kill-child`
    ends the child when unshare dies; the child is also killed here, and sleeps no more than a minute anyway.
    """
    _require_root(check, "unsharing the PID and mount namespaces and mounting over /dev are privileged")
    missing = [tool for tool in ("unshare", "mount") if shutil.which(tool) is None]
    if missing:
        _skip(check, f"{' and '.join(missing)} not found on PATH")
    command = ["unshare", "--mount", "--propagation", "private", "--pid", "--fork", "--mount-proc", "--kill-child"]
    script = f'{setup} && exec {sys.executable} -c "$0"'
    unshare = subprocess.Popen(
        [*command, "sh", "-c", script, holder + "\nprint('ready', os.getpid(), flush=True)\ntime.sleep(60)\n"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONHASHSEED": "0"},  # no /dev/urandom needed at start-up
    )
    host_pids: list[int] = []
    try:
        assert unshare.stdout is not None and unshare.stderr is not None
        ready, _, _ = select.select([unshare.stdout], [], [], 20)
        line = unshare.stdout.readline().decode() if ready else ""
        if not line.startswith("ready"):
            unshare.kill()
            error = unshare.stderr.read().decode().strip()
            _skip(check, f"unshare is refused here: {error or 'no answer from the child in 20 s'}")
        host_pids = _children(unshare.pid)
        assert len(host_pids) == 1, host_pids
        yield host_pids[0], int(line.split()[1])
    finally:
        for pid in host_pids:  # the namespace's init: the namespace ends with it
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        unshare.kill()  # unshare ignores SIGTERM while it waits
        unshare.wait(timeout=10)


HOLD_PREAMBLE = "import os, time\n"


def test_a_gpu_user_in_its_own_pid_namespace_is_found() -> None:
    """A process in a new PID namespace holds /dev/nvidia250 open; the scan finds it under its PID here, and
    inner_pid gives its PID in the namespace.

    /dev/nvidia250 is a plain file made in the namespace's own tmpfs over /dev, never in the real /dev. The
    kernel writes an fd's link as the path in the holder's mount namespace, so from here it reads
    "/dev/nvidia250" as a real device file's would.
    """
    existed = Path(f"/dev/nvidia{FAKE_MINOR}").exists()
    holder = HOLD_PREAMBLE + f"device = open('/dev/nvidia{FAKE_MINOR}', 'w')"
    with _namespaced(PID_NAMESPACE_CHECK, "mount -t tmpfs gputui-test /dev", holder) as (host_pid, pid_inside):
        assert pid_inside == 1  # sh was the namespace's first process and exec'd python
        assert host_pid != pid_inside
        users = GpuUsers(Path("/")).scan()
        assert host_pid in users.get(FAKE_MINOR, ()), users
        assert inner_pid(host_pid) == pid_inside
        assert holds_device(host_pid, FAKE_MINOR) is True
    assert Path(f"/dev/nvidia{FAKE_MINOR}").exists() == existed  # the real /dev is untouched


def test_a_device_node_counts_by_its_numbers_not_its_name() -> None:
    """A runtime may create a GPU's node under another name: 195:3 as /dev/gpu3 is GPU 3. The shared nodes
    with the same major, /dev/nvidia-modeset (195:254) and /dev/nvidiactl (195:255), are no GPU.

    The nodes are made in the namespace's own tmpfs over /dev and held with O_PATH, which opens no driver (there
    is none for major 195 without an NVIDIA GPU); the kernel still reports their numbers through the fd.
    """
    nodes = {"/dev/gpu3": 3, "/dev/nvidia-modeset": 254, "/dev/nvidiactl": 255}
    setup = " && ".join(["mount -t tmpfs gputui-test /dev"] + [f"mknod {path} c 195 {n}" for path, n in nodes.items()])
    holder = HOLD_PREAMBLE + f"held = [os.open(path, os.O_PATH) for path in {sorted(nodes)!r}]"
    with _namespaced(DEVICE_NUMBER_CHECK, setup, holder) as (host_pid, _):
        assert device_minors(host_pid) == frozenset({3})
        assert holds_device(host_pid, 254) is False
        assert host_pid in GpuUsers(Path("/")).scan().get(3, ())
