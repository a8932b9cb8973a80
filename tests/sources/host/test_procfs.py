"""gputui.sources.host.procfs over a fake /proc: who holds which GPU's device file, the scan's cache of non-users,
a process's container, its PID inside its namespace, its run-queue wait, its CPU time and state, and where it
may run and last ran."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gputui.sources.host.procfs import (
    CLOCK_TICKS,
    DeviceCheck,
    GpuUsers,
    container_of,
    cpu_seconds,
    cpus_allowed,
    device_minors,
    holds_device,
    inner_pid,
    last_cpu,
    parent_pid,
    schedstat,
    state,
)
from tests.conftest import Clock
from tests.sources.host.fake_tree import add_fd, proc_root, process, stat_line, write

CUDA_COMMON = {0: "/dev/null", 1: "pipe:[4242]", 2: "socket:[777]", 3: "/dev/nvidiactl", 4: "/dev/nvidia-uvm"}
HEX64 = "4f1e2d3c" * 8


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return proc_root(tmp_path)


# --- device_minors / holds_device -------------------------------------------------------------------------


def test_the_gpu_device_counts_the_shared_ones_do_not(root: Path) -> None:
    process(root, 100, {**CUDA_COMMON, 5: "/dev/nvidia0", 6: "/dev/nvidia0"})
    assert device_minors(100, root) == frozenset({0})
    assert holds_device(100, 0, root) is True
    assert holds_device(100, 1, root) is False


def test_only_the_shared_devices_is_no_gpu(root: Path) -> None:
    """A process that initialised CUDA (nvidiactl, nvidia-uvm, modeset, uvm-tools) but opened no GPU."""
    process(root, 100, {**CUDA_COMMON, 7: "/dev/nvidia-modeset", 8: "/dev/nvidia-uvm-tools", 9: "/dev/nvidia0x"})
    assert device_minors(100, root) == frozenset()
    assert holds_device(100, 0, root) is False


def test_several_gpus(root: Path) -> None:
    process(root, 100, {**CUDA_COMMON, 5: "/dev/nvidia3", 6: "/dev/nvidia12", 7: "/dev/nvidia0"})
    assert device_minors(100, root) == frozenset({0, 3, 12})


def test_a_missing_process_holds_nothing(root: Path) -> None:
    assert holds_device(4321, 0, root) is False
    assert device_minors(4321, root) is None


def test_unreadable_fds_cannot_tell(root: Path) -> None:
    """Another user's process without root: /proc/PID exists, its fd directory cannot be listed."""
    (root / "proc/100").mkdir()
    (root / "proc/100/fd").write_text("")  # not a directory: listing it fails as EACCES would
    assert device_minors(100, root) is None
    assert holds_device(100, 0, root) is None


def test_fd_directory_without_permission_cannot_tell(root: Path) -> None:
    fd_dir = process(root, 100, {5: "/dev/nvidia0"}) / "fd"
    fd_dir.chmod(0)
    try:
        if os.access(fd_dir, os.R_OK):
            pytest.skip("running as root: mode 000 does not stop this process reading the directory")
        assert holds_device(100, 0, root) is None
    finally:
        fd_dir.chmod(0o700)


def test_no_proc_at_all_cannot_tell(tmp_path: Path, clock: Clock) -> None:
    assert holds_device(1, 0, tmp_path) is None
    assert device_minors(1, tmp_path) is None
    assert GpuUsers(tmp_path, clock).scan() == {}


# --- GpuUsers.scan ----------------------------------------------------------------------------------------


def test_scan_finds_users_by_minor(root: Path, clock: Clock) -> None:
    process(root, 100, {**CUDA_COMMON, 5: "/dev/nvidia0"})
    process(root, 101, {**CUDA_COMMON, 5: "/dev/nvidia0"})  # two ranks on one GPU (or a worker with a context)
    process(root, 200, {**CUDA_COMMON, 5: "/dev/nvidia1", 6: "/dev/nvidia2"})
    process(root, 300, CUDA_COMMON)
    process(root, 400)
    write(root, "proc/uptime", "1.0 1.0\n")  # not a process
    assert GpuUsers(root, clock).scan() == {0: (100, 101), 1: (200,), 2: (200,)}


def test_a_user_is_read_again_on_every_scan(root: Path, clock: Clock) -> None:
    process(root, 100, {**CUDA_COMMON, 5: "/dev/nvidia0"})
    users = GpuUsers(root, clock, recheck_s=30.0)
    assert users.scan() == {0: (100,)}
    (root / "proc/100/fd/5").unlink()  # it closed the device
    assert users.scan() == {}
    add_fd(root, 100, 6, "/dev/nvidia1")
    assert users.scan() == {}  # a non-user now, so not re-read ...
    clock.advance(30.0)
    assert users.scan() == {1: (100,)}  # ... until recheck_s has passed


def test_a_non_user_is_not_read_again_before_recheck(root: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    process(root, 300, CUDA_COMMON)
    process(root, 100, {5: "/dev/nvidia0"})
    listed: list[str] = []
    real_listdir = os.listdir

    def counting(path: str | os.PathLike[str]) -> list[str]:
        listed.append(os.fspath(path))
        return real_listdir(path)

    monkeypatch.setattr(os, "listdir", counting)  # procfs calls os.listdir through the module
    users = GpuUsers(root, clock, recheck_s=10.0)
    users.scan()
    fd_300, fd_100 = os.fspath(root / "proc/300/fd"), os.fspath(root / "proc/100/fd")
    assert listed.count(fd_300) == 1 and listed.count(fd_100) == 1

    add_fd(root, 300, 5, "/dev/nvidia3")  # it opens a GPU after the first scan
    clock.advance(9.9)
    assert users.scan() == {0: (100,)}  # not seen yet
    assert listed.count(fd_300) == 1 and listed.count(fd_100) == 2
    clock.advance(0.2)
    assert users.scan() == {0: (100,), 3: (300,)}
    assert listed.count(fd_300) == 2


def test_a_pid_that_vanishes_is_forgotten(root: Path, clock: Clock) -> None:
    """A non-user that exits and whose PID comes back (reused) as a GPU process is read anew, not skipped
    for the rest of recheck_s, provided a scan saw it gone."""
    process(root, 300, CUDA_COMMON)
    users = GpuUsers(root, clock, recheck_s=60.0)
    assert users.scan() == {}
    shutil.rmtree(root / "proc/300")
    clock.advance(1.0)
    assert users.scan() == {}
    process(root, 300, {5: "/dev/nvidia0"})
    clock.advance(1.0)
    assert users.scan() == {0: (300,)}


def test_a_reused_pid_without_the_device_is_not_a_user(root: Path, clock: Clock) -> None:
    process(root, 100, {**CUDA_COMMON, 5: "/dev/nvidia0"})
    users = GpuUsers(root, clock)
    assert users.scan() == {0: (100,)}
    shutil.rmtree(root / "proc/100")
    assert users.scan() == {}
    process(root, 100, CUDA_COMMON)  # the PID is reused by a process without a GPU
    assert users.scan() == {}


def test_a_user_whose_fds_become_unreadable_is_dropped(root: Path, clock: Clock) -> None:
    """An fd directory that cannot be read is no evidence of a GPU: the process is left out, not kept."""
    process(root, 100, {5: "/dev/nvidia0"})
    users = GpuUsers(root, clock)
    assert users.scan() == {0: (100,)}
    shutil.rmtree(root / "proc/100/fd")
    (root / "proc/100/fd").write_text("")
    assert users.scan() == {}


# --- container_of, inner_pid, schedstat ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cgroup", "container"),
    [
        (f"0::/docker/{HEX64}\n", HEX64[:12]),
        (f"0::/system.slice/docker-{HEX64}.scope\n", HEX64[:12]),
        (f"12:cpu,cpuacct:/system.slice/containerd.service/cri-containerd-{HEX64}.scope\n", HEX64[:12]),
        (
            "0::/kubepods.slice/kubepods-burstable.slice/"
            f"kubepods-burstable-pod0a1b2c3d_4e5f_6a7b_8c9d_0e1f2a3b4c5d.slice/cri-containerd-{HEX64}.scope\n",
            "pod 0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d",
        ),
        (
            "11:memory:/kubepods/besteffort/pod0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d/" + HEX64 + "\n",
            "pod 0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d",
        ),
        ("0::/user.slice/user-1000.slice/session-2.scope\n", None),
        ("0::/system.slice/docker.service\n", None),
        ("", None),
    ],
)
def test_container_of(root: Path, cgroup: str, container: str | None) -> None:
    process(root, 100, cgroup=cgroup)
    assert container_of(100, root) == container


def test_container_of_a_missing_process(root: Path) -> None:
    assert container_of(100, root) is None


@pytest.mark.parametrize(
    ("nspid", "inner"),
    [((81234, 41), 41), ((81234, 900, 1), 1), ((81234,), None)],
)
def test_inner_pid(root: Path, nspid: tuple[int, ...], inner: int | None) -> None:
    process(root, 81234, nspid=nspid)
    assert inner_pid(81234, root) == inner


def test_inner_pid_reads_the_status_line(root: Path) -> None:
    write(root, "proc/81234/status", "Name:\tpython\nNSpid:\t81234\t41\nNSpgid:\t81234\t41\n")
    assert inner_pid(81234, root) == 41
    write(root, "proc/81235/status", "Name:\tpython\nPid:\t81235\n")  # a kernel before 4.1: no NSpid
    assert inner_pid(81235, root) is None
    assert inner_pid(99999, root) is None


def test_schedstat(root: Path) -> None:
    process(root, 100, schedstat="123456789 987654 42\n")
    assert schedstat(100, root) == (123456789, 987654)
    process(root, 101, schedstat="garbage\n")
    assert schedstat(101, root) is None
    assert schedstat(102, root) is None


@pytest.mark.parametrize(
    ("cpulist", "cpus"),
    [("0-3,64-67", (0, 1, 2, 3, 64, 65, 66, 67)), ("3", (3,)), ("0-1,5,7-8", (0, 1, 5, 7, 8)), ("", None)],
    ids=["two-sockets", "one", "mixed", "empty"],
)
def test_cpus_allowed(root: Path, cpulist: str, cpus: tuple[int, ...] | None) -> None:
    process(root, 100, cpus_allowed=cpulist)
    assert cpus_allowed(100, root) == cpus


def test_cpus_allowed_unknown_without_the_line_or_the_process(root: Path) -> None:
    process(root, 100)  # a status without Cpus_allowed_list (not Linux's, or cut short)
    assert cpus_allowed(100, root) is None
    assert cpus_allowed(101, root) is None


def test_last_cpu_is_field_39_even_with_spaces_and_parentheses_in_the_command(root: Path) -> None:
    process(root, 100, last_cpu=71)
    assert last_cpu(100, root) == 71
    write(root, "proc/101/stat", stat_line(101, "evil) 1 2 (x", ppid=1, processor=5))
    assert last_cpu(101, root) == 5
    write(root, "proc/102/stat", "102 (python3) S 1 102 102 0 -1\n")  # cut short
    assert last_cpu(102, root) is None
    assert last_cpu(103, root) is None


def test_cpu_seconds_are_user_plus_system_time_with_the_start_time(root: Path) -> None:
    write(root, "proc/100/stat", stat_line(100, "pt_data_worker", ppid=1, utime=250, stime=50, starttime=987))
    assert cpu_seconds(100, root) == (987, 300 / CLOCK_TICKS)
    write(root, "proc/101/stat", stat_line(101, "evil) 1 2 (x", ppid=1, utime=7, starttime=3))
    assert cpu_seconds(101, root) == (3, 7 / CLOCK_TICKS)
    write(root, "proc/102/stat", "102 (python3) S 1 102 102 0 -1\n")  # cut short
    assert cpu_seconds(102, root) is None
    assert cpu_seconds(103, root) is None  # gone


def test_cpu_seconds_of_this_process_grow_as_it_works() -> None:
    before = cpu_seconds(os.getpid())
    end = time.process_time() + 0.05
    while time.process_time() < end:
        pass
    after = cpu_seconds(os.getpid())
    assert before is not None and after is not None and before[0] == after[0]
    assert after[1] > before[1]


def test_state(root: Path) -> None:
    write(root, "proc/100/stat", stat_line(100, "python (zombie)", ppid=1).replace(" S ", " Z ", 1))
    assert state(100, root) == "Z"
    assert state(101, root) is None
    assert state(os.getpid()) == "R"


def test_forked_data_loader_workers_are_not_counted_as_gpu_users(root: Path, clock: Clock) -> None:
    """Workers forked from a CUDA process inherit its open /dev/nvidia0: the job is its main process."""
    process(root, 100, {**CUDA_COMMON, 5: "/dev/nvidia0"})
    write(root, "proc/100/stat", "100 (python3 train.py) S 1 100 100 0 -1\n")
    for worker in (101, 102):
        process(root, worker, {**CUDA_COMMON, 5: "/dev/nvidia0"})
        write(root, f"proc/{worker}/stat", f"{worker} (pt_data_worker) S 100 100 100 0 -1\n")
    assert GpuUsers(root, clock).scan() == {0: (100,)}


def test_a_scan_reads_at_most_a_batch_of_processes_besides_the_users(root: Path, clock: Clock) -> None:
    for pid in range(1000, 1010):
        process(root, pid, CUDA_COMMON)
    process(root, 5, {5: "/dev/nvidia0"})  # the oldest PID: read last
    users = GpuUsers(root, clock, batch=4)
    seen = [users.scan() for _ in range(3)]
    assert seen == [{}, {}, {0: (5,)}]  # 4 + 4 + 3 processes read: the newest first


def test_a_reused_pid_is_read_at_once_even_between_two_scans(
    root: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No scan saw PID 300 gone; /proc gives the new process's directory a new inode, which tells them apart.
    (A fake tree on disk may hand the old inode number back, so the listing's inodes are set here.)"""
    inodes = {"300": 1}
    real_scandir = os.scandir

    class Entry:
        def __init__(self, name: str) -> None:
            self.name = name

        def inode(self) -> int:
            return inodes.get(self.name, 0)

    @contextlib.contextmanager
    def listing(path: str) -> Iterator[list[Entry]]:
        with real_scandir(path) as entries:
            yield [Entry(entry.name) for entry in entries]

    monkeypatch.setattr(os, "scandir", listing)
    process(root, 300, CUDA_COMMON)
    users = GpuUsers(root, clock, recheck_s=60.0)
    assert users.scan() == {}
    add_fd(root, 300, 5, "/dev/nvidia0")  # the same PID, now another process that holds a GPU
    assert users.scan() == {}  # same inode: the same process, not read again before recheck_s
    inodes["300"] = 2
    assert users.scan() == {0: (300,)}


def test_a_device_check_is_kept_while_the_process_is_the_same(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    process(root, 100, {**CUDA_COMMON, 5: "/dev/nvidia0"})
    process(root, 200, CUDA_COMMON)
    check = DeviceCheck(root)
    assert (check(100, 0), check(200, 0), check(999, 0)) == (True, False, False)
    reads: list[str] = []
    real_listdir = os.listdir
    monkeypatch.setattr(os, "listdir", lambda path: reads.append(os.fspath(path)) or real_listdir(path))
    assert (check(100, 0), check(200, 0)) == (True, False)
    assert reads == [os.fspath(root / "proc/200/fd")]  # the holder is not read again; the other one is
    shutil.rmtree(root / "proc/100")
    assert check(100, 0) is False


def test_a_name_that_is_no_utf8_hides_nothing_after_it(tmp_path: Path) -> None:
    """A process's owner chooses its name (comm), which /proc/PID/stat and status hold before every number: a byte
    that is no UTF-8 in it (here 0x9b, CSI to an 8-bit terminal) made the whole file unreadable, so its state,
    parent and CPUs read n/a and the lab's machine took the job for gone. Against the real kernel."""
    link = os.path.join(str(tmp_path).encode(), b"job\x9b\xff")
    os.symlink("/bin/sh", link)  # comm is the name a program is started by
    script = b"echo ready; read line"  # sh waits on its stdin: no child of its own to outlive it
    child = subprocess.Popen([link, b"-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == b"ready"
        assert Path(f"/proc/{child.pid}/comm").read_bytes() == b"job\x9b\xff\n"
        assert state(child.pid) is not None
        assert parent_pid(child.pid) == os.getpid()
        assert last_cpu(child.pid) is not None and cpus_allowed(child.pid) is not None
    finally:
        child.kill()
        child.wait(timeout=10)
