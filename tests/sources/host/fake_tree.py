"""Builders for a fake root (/proc, /sys/fs/cgroup, /dev/shm) under tmp_path, in the shapes the kernel writes.

gputui.sources.host.cgroup and gputui.sources.host.procfs read everything under a `root`; these helpers write just the
files a test needs, so each test says in a line or two which layout it stands on. A directory is a cgroup
only when it holds `cgroup.procs` (as on the kernel), so every group and its ancestors up to the mount point
get one.
"""

from __future__ import annotations

import os
from pathlib import Path

CGROUP_FS = "sys/fs/cgroup"
# cgroup v1's "no memory limit": LONG_MAX rounded down to a page.
V1_NO_LIMIT = "9223372036854771712"


def write(root: Path, relative: str, text: str) -> Path:
    """Write `text` to root/relative, making its parents."""
    path = root / relative.lstrip("/")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def make_group(mount: Path, group: str) -> Path:
    """The group `group` (relative to the mount's root) under mount point `mount`, with `cgroup.procs` in it and
    in every group above it, the mount point (the hierarchy's root group) included."""
    path = mount
    path.mkdir(parents=True, exist_ok=True)
    (path / "cgroup.procs").touch()
    for part in [p for p in group.split("/") if p]:
        path = path / part
        path.mkdir(exist_ok=True)
        (path / "cgroup.procs").touch()
    return path


def _mountinfo_line(number: int, mount_root: str, point: str, fstype: str, options: str) -> str:
    fields = f"{number} 25 0:{number} {mount_root} /{point} rw,nosuid,nodev,noexec,relatime shared:{number}"
    return f"{fields} - {fstype} {fstype} {options}"


def cgroup_v1(
    root: Path,
    group: str = "/docker/abc",
    *,
    comounted: bool = False,
    mount_root: str = "/",
    unified: str | None = None,
) -> dict[str, Path]:
    """A cgroup v1 layout: cpu and cpuacct (separate, or co-mounted as `cpu,cpuacct` the way systemd does),
    cpuset and memory, each mounted at /sys/fs/cgroup/<name> with its root at `mount_root`, this process in
    `group`. Returns {controller: the group's directory}.

    A cgroup namespace (or a container's private mount) is `group="/"` with `mount_root` the real group: the
    mount point itself is the group. `unified` makes it systemd's hybrid layout: a v2 tree with no controllers
    at /sys/fs/cgroup/unified besides, this process in its group `unified` there ("0::<unified>"), returned
    under the key "unified".
    """
    hierarchies: list[tuple[str, tuple[str, ...]]]
    hierarchies = [("cpu,cpuacct", ("cpu", "cpuacct"))] if comounted else [("cpu", ("cpu",)), ("cpuacct", ("cpuacct",))]
    hierarchies += [("cpuset", ("cpuset",)), ("memory", ("memory",))]
    cgroup_lines = ["12:pids:/", "1:name=systemd:/"]
    mount_lines = [f"24 1 0:22 / /{CGROUP_FS} ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755"]
    dirs: dict[str, Path] = {}
    for number, (name, controllers) in enumerate(hierarchies, start=30):
        cgroup_lines.append(f"{number - 28}:{name}:{group}")
        mount_lines.append(_mountinfo_line(number, mount_root, f"{CGROUP_FS}/{name}", "cgroup", f"rw,{name}"))
        path = make_group(root / CGROUP_FS / name, group if mount_root == "/" else "/")
        for controller in controllers:
            dirs[controller] = path
    if comounted:  # systemd links the single names to the co-mounted hierarchy
        for name in ("cpu", "cpuacct"):
            (root / CGROUP_FS / name).symlink_to("cpu,cpuacct")
    if unified is not None:
        cgroup_lines.append(f"0::{unified}")
        mount_lines.append(_mountinfo_line(40, "/", f"{CGROUP_FS}/unified", "cgroup2", "rw,nsdelegate"))
        dirs["unified"] = make_group(root / CGROUP_FS / "unified", unified)
    write(root, "proc/self/cgroup", "\n".join(cgroup_lines) + "\n")
    write(root, "proc/self/mountinfo", "\n".join(mount_lines) + "\n")
    return dirs


def cgroup_v2(root: Path, group: str = "/system.slice/docker-abc.scope", *, mount_root: str = "/") -> Path:
    """A cgroup v2 layout: one tree at /sys/fs/cgroup with its root at `mount_root`, this process in `group`.
    Returns the group's directory (the mount point itself under a cgroup namespace, where `group` is "/")."""
    write(root, "proc/self/cgroup", f"0::{group}\n")
    line = _mountinfo_line(30, mount_root, CGROUP_FS, "cgroup2", "rw,nsdelegate,memory_recursiveprot")
    write(root, "proc/self/mountinfo", "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n" + line + "\n")
    return make_group(root / CGROUP_FS, group if mount_root == "/" else "/")


def v1_limits(
    cpu: Path, quota_us: int = -1, period_us: int = 100_000, memory: Path | None = None, limit: str = V1_NO_LIMIT
) -> None:
    """v1 limit files: cpu.cfs_quota_us/-period_us (-1 is no quota) and memory.limit_in_bytes."""
    (cpu / "cpu.cfs_quota_us").write_text(f"{quota_us}\n")
    (cpu / "cpu.cfs_period_us").write_text(f"{period_us}\n")
    if memory is not None:
        (memory / "memory.limit_in_bytes").write_text(f"{limit}\n")


def v1_counters(cpu: Path, cpuacct: Path, *, usage_ns: int, periods: int, throttled: int, throttled_ns: int) -> None:
    """v1 counters: cpuacct.usage (ns) and cpu.stat (nr_periods, nr_throttled, throttled_time in ns)."""
    (cpuacct / "cpuacct.usage").write_text(f"{usage_ns}\n")
    (cpu / "cpu.stat").write_text(f"nr_periods {periods}\nnr_throttled {throttled}\nthrottled_time {throttled_ns}\n")


def v2_cpu_stat(
    group: Path, *, usage_us: int, periods: int | None = None, throttled: int = 0, throttled_us: int = 0
) -> None:
    """v2 cpu.stat: usage_usec, then nr_periods, nr_throttled, throttled_usec (µs). Without `periods` only the
    three usage lines, as the kernel writes the file of a group whose cpu controller is not enabled (and of the
    root group, since 5.8)."""
    text = f"usage_usec {usage_us}\nuser_usec {usage_us // 2}\nsystem_usec {usage_us // 2}\n"
    if periods is not None:
        text += f"nr_periods {periods}\nnr_throttled {throttled}\nthrottled_usec {throttled_us}\n"
    (group / "cpu.stat").write_text(text)


def pressure(path: Path, some_total_us: int, full_total_us: int | None = None, some_avg10: float = 0.0) -> Path:
    """A PSI file (/proc/pressure/<resource> or a v2 group's <resource>.pressure); `full` only when given
    (the kernel leaves it out of cpu pressure before 5.13)."""
    lines = [f"some avg10={some_avg10:.2f} avg60=0.00 avg300=0.00 total={some_total_us}"]
    if full_total_us is not None:
        lines.append(f"full avg10=0.00 avg60=0.00 avg300=0.00 total={full_total_us}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def process(
    root: Path,
    pid: int,
    fds: dict[int, str] | None = None,
    *,
    nspid: tuple[int, ...] | None = None,
    cgroup: str | None = None,
    schedstat: str | None = None,
    cpus_allowed: str | None = None,
    last_cpu: int | None = None,
) -> Path:
    """/proc/<pid>: fd/<n> symlinks to each target (which need not exist: only the link text is read),
    status with NSpid (and Cpus_allowed_list), cgroup, schedstat and stat when given. Returns the directory."""
    directory = root / "proc" / str(pid)
    (directory / "fd").mkdir(parents=True, exist_ok=True)
    for number, target in (fds or {}).items():
        add_fd(root, pid, number, target)
    ids = nspid if nspid is not None else (pid,)
    status = f"Name:\tpython\nPid:\t{pid}\nNSpid:\t" + "\t".join(map(str, ids)) + "\n"
    if cpus_allowed is not None:
        status += f"Cpus_allowed:\tffffffff\nCpus_allowed_list:\t{cpus_allowed}\n"
    (directory / "status").write_text(status)
    if cgroup is not None:
        (directory / "cgroup").write_text(cgroup)
    if schedstat is not None:
        (directory / "schedstat").write_text(schedstat)
    if last_cpu is not None:
        (directory / "stat").write_text(stat_line(pid, "python3 train.py", ppid=1, processor=last_cpu))
    return directory


def stat_line(
    pid: int, comm: str, *, ppid: int, processor: int = 0, utime: int = 0, stime: int = 0, starttime: int = 0
) -> str:
    """/proc/<pid>/stat as the kernel writes it (52 fields): the command in parentheses, may hold spaces;
    field 4 the parent, 14 and 15 the user and system CPU time and 22 the start time (clock ticks), 39 the CPU
    it last ran on."""
    fields = ["S", str(ppid)] + ["0"] * 34 + [str(processor)] + ["0"] * 13
    fields[11], fields[12], fields[19] = str(utime), str(stime), str(starttime)
    return f"{pid} ({comm}) " + " ".join(fields) + "\n"


def add_fd(root: Path, pid: int, number: int, target: str) -> None:
    """Open (in the fake) fd `number` of `pid` on `target`."""
    os.symlink(target, root / "proc" / str(pid) / "fd" / str(number))


def proc_root(root: Path) -> Path:
    """A /proc with only `self` in it: a machine whose processes the test then adds."""
    (root / "proc/self").mkdir(parents=True, exist_ok=True)
    return root
