"""Whose job a GPU process is: pod uid and container id from the cgroup lines the kubelet's two drivers and the
container runtimes write, the Slurm job from its cgroup (v1 and v2) or its environment, read through a fake
/proc and through the real one (a child started with SLURM_JOB_ID)."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gputui.model import ProcSample
from gputui.sources.host.attribution import (
    ENVIRON_MAX_BYTES,
    Attribution,
    Attributor,
    environ_values,
    read_origin,
    slurm_job,
    user_name,
)
from gputui.sources.host.procfs import cgroup_ids, container_of
from gputui.sources.host.source import HostSource
from tests.sources.host.fake_tree import proc_root, process, stat_line, write

HEX64 = "4f1e2d3c" * 8
UID = "0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d"
SYSTEMD_UID = UID.replace("-", "_")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return proc_root(tmp_path)


# --- Kubernetes: the pod uid and container id in the cgroup, as each driver and runtime writes them ----------

K8S_LINES = [
    # systemd driver, cgroup v2, containerd, a Burstable pod
    f"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{SYSTEMD_UID}.slice/cri-containerd-{HEX64}.scope\n",
    # systemd driver, cgroup v2, CRI-O, a Guaranteed pod (no QoS slice)
    f"0::/kubepods.slice/kubepods-pod{SYSTEMD_UID}.slice/crio-{HEX64}.scope\n",
    # systemd driver, cgroup v1, dockershim (cri-dockerd), a BestEffort pod: one line per hierarchy
    "".join(
        f"{n}:{name}:/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{SYSTEMD_UID}.slice/"
        f"docker-{HEX64}.scope\n"
        for n, name in ((12, "memory"), (4, "cpu,cpuacct"), (1, "name=systemd"))
    ),
    # cgroupfs driver, cgroup v1, containerd: the uid keeps its dashes, the id is a directory of its own
    f"11:memory:/kubepods/burstable/pod{UID}/{HEX64}\n4:cpu,cpuacct:/kubepods/burstable/pod{UID}/{HEX64}\n",
    # cgroupfs driver, cgroup v2, a Guaranteed pod
    f"0::/kubepods/pod{UID}/{HEX64}\n",
]


@pytest.mark.parametrize("line", K8S_LINES)
def test_pod_uid_and_container_id_from_each_driver_and_runtime(line: str) -> None:
    ids = cgroup_ids(line)
    assert (ids.pod_uid, ids.container_id) == (UID, HEX64)


def test_a_static_pods_uid_has_no_dashes() -> None:
    ids = cgroup_ids("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + "d2c8" * 8 + ".slice\n")
    assert (ids.pod_uid, ids.container_id) == ("d2c8" * 8, None)


@pytest.mark.parametrize(
    ("line", "container"),
    [
        (f"0::/system.slice/docker-{HEX64}.scope\n", HEX64),
        (f"0::/docker/{HEX64}\n", HEX64),
        ("0::/user.slice/user-1000.slice/session-2.scope\n", None),
        ("0::/\n", None),
    ],
)
def test_outside_kubernetes_no_pod(line: str, container: str | None) -> None:
    assert cgroup_ids(line).pod_uid is None
    assert cgroup_ids(line).container_id == container


def test_container_of_reads_through_the_same_parser(root: Path) -> None:
    process(root, 100, cgroup=K8S_LINES[0])
    process(root, 101, cgroup=f"0::/system.slice/docker-{HEX64}.scope\n")
    assert container_of(100, root) == f"pod {UID}"
    assert container_of(101, root) == HEX64[:12]


# --- Slurm ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "job"),
    [
        # cgroup/v1 plugin: one line per controller Slurm constrains
        (
            "10:devices:/slurm/uid_1000/job_4242/step_0/task_0\n"
            "5:memory:/slurm/uid_1000/job_4242/step_0/task_0\n"
            "3:cpuset:/slurm/uid_1000/job_4242/step_0\n",
            ("4242", 1000),
        ),
        # the batch step, and a node of a multiple-slurmd setup (slurm_<node>)
        ("5:memory:/slurm_node07/uid_1001/job_17/step_batch/task_0\n", ("17", 1001)),
        # a v2 tree laid out the same
        ("0::/slurm/uid_1000/job_4242/step_0/user/task_0\n", ("4242", 1000)),
        # Slurm's cgroup/v2 plugin: the job under slurmstepd's scope, no uid in the path
        ("0::/system.slice/slurmstepd.scope/job_4242/step_0/user/task_0\n", ("4242", None)),
        ("0::/system.slice/node07_slurmstepd.scope/job_99/step_extern/user\n", ("99", None)),
        # not a job: slurmd itself, a user's session, the job's parent group alone
        ("0::/system.slice/slurmd.service\n", (None, None)),
        ("0::/user.slice/user-1000.slice/session-2.scope\n", (None, None)),
        ("5:memory:/slurm/uid_1000\n", (None, None)),
        ("", (None, None)),
    ],
)
def test_slurm_job_from_the_cgroup(text: str, job: tuple[str | None, int | None]) -> None:
    assert slurm_job(text) == job


def test_the_job_and_its_owner_come_from_the_cgroup_before_the_environment(root: Path) -> None:
    process(root, 200, cgroup="5:memory:/slurm/uid_0/job_4242/step_0/task_0\n")
    write(root, "proc/200/environ", "SLURM_JOB_ID=1\0SLURM_JOB_USER=mallory\0")
    origin = read_origin(200, root)
    assert (origin.job_id, origin.slurm_user) == ("4242", user_name(0))
    assert user_name(0) == "root"
    assert user_name(2_000_000_000) == "2000000000"  # no such user here: its number, not nothing


def test_outside_a_slurm_cgroup_the_environment_says(root: Path) -> None:
    process(root, 201, cgroup="0::/user.slice/user-1000.slice/session-2.scope\n")
    write(root, "proc/201/environ", "PATH=/usr/bin\0SLURM_JOB_ID=77\0SLURM_JOB_USER=alice\0HOME=/home/alice\0")
    origin = read_origin(201, root)
    assert (origin.job_id, origin.slurm_user) == ("77", "alice")


def test_the_job_owner_a_process_wrote_in_its_environment_is_cleaned(root: Path) -> None:
    """SLURM_JOB_USER is the process's own to write: a terminal escape in it reaches no view."""
    process(root, 203, cgroup="0::/user.slice\n")
    write(root, "proc/203/environ", "SLURM_JOB_ID=77\0SLURM_JOB_USER=\x1b]0;PWNED\x07\u202eeve\0")
    assert read_origin(203, root).slurm_user == "\\x1b]0;PWNED\\x07\\u202eeve"


def test_no_environment_to_read_is_no_job_and_no_error(root: Path) -> None:
    process(root, 202, cgroup="0::/user.slice\n")  # no environ file: another user's process without root
    assert read_origin(202, root).job_id is None
    assert environ_values(999_999, (b"SLURM_JOB_ID",), root) == {}


def test_a_job_id_that_is_no_number_is_no_job(root: Path) -> None:
    process(root, 203, cgroup="0::/\n")
    write(root, "proc/203/environ", "SLURM_JOB_ID=$(rm -rf)\0")
    assert read_origin(203, root).job_id is None


def test_the_environment_is_read_only_so_far(root: Path) -> None:
    process(root, 204, cgroup="0::/\n")
    write(root, "proc/204/environ", "X=" + "x" * ENVIRON_MAX_BYTES + "\0SLURM_JOB_ID=5\0")
    assert read_origin(204, root).job_id is None


def test_a_pod_is_not_looked_for_in_the_environment(root: Path) -> None:
    process(root, 205, cgroup=K8S_LINES[0])
    write(root, "proc/205/environ", "SLURM_JOB_ID=5\0")
    assert read_origin(205, root).job_id is None


# --- the Attributor: once per process, without names from the kubelet -------------------------------------------


def test_without_the_kubelet_the_pod_is_its_uid_and_the_container_its_short_id(root: Path) -> None:
    process(root, 300, cgroup=K8S_LINES[3])
    assert Attributor(root).attribute(300, ["GPU-1"]) == Attribution(pod=UID, k8s_container=HEX64[:12])


def test_an_attribution_gives_a_proc_sample_its_fields_of_the_same_names_but_the_user() -> None:
    sample = {f.name: f.type for f in dataclasses.fields(ProcSample)}
    for f in dataclasses.fields(Attribution):
        assert sample.get(f.name) == f.type, f.name
    given = Attribution(pod="llm-0", namespace="research", k8s_container="worker", job_id="7", user="ana")
    assert ProcSample(pid=1, name="python", **given.sample_fields()) == ProcSample(
        pid=1, name="python", pod="llm-0", namespace="research", k8s_container="worker", job_id="7"
    )


def test_what_proc_says_is_read_once_per_process(root: Path) -> None:
    process(root, 301, cgroup="0::/system.slice/slurmstepd.scope/job_1/step_0\n")
    write(root, "proc/301/stat", stat_line(301, "python", ppid=1, starttime=1000))
    attributor = Attributor(root)
    assert attributor.attribute(301).job_id == "1"
    write(root, "proc/301/cgroup", "0::/system.slice/slurmstepd.scope/job_2/step_0\n")
    assert attributor.attribute(301).job_id == "1"  # the same process: not read again
    write(root, "proc/301/stat", stat_line(301, "python", ppid=1, starttime=2000))
    assert attributor.attribute(301).job_id == "2"  # the PID reused by another process: read again
    attributor.retain([])
    write(root, "proc/301/cgroup", "0::/system.slice/slurmstepd.scope/job_3/step_0\n")
    assert attributor.attribute(301).job_id == "3"  # forgotten once it left the GPUs


# --- real processes, through the real /proc --------------------------------------------------------------------


@pytest.fixture
def slurm_child() -> Iterator[subprocess.Popen[bytes]]:
    """A child started as srun would start a task: SLURM_JOB_ID and SLURM_JOB_USER in its environment."""
    env = {**os.environ, "SLURM_JOB_ID": "918273", "SLURM_JOB_USER": "alice"}
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], env=env)
    try:
        yield child
    finally:
        child.kill()
        child.wait(timeout=10)


def test_a_real_childs_job_is_read_from_its_environment(slurm_child: subprocess.Popen[bytes]) -> None:
    if slurm_job(Path(f"/proc/{slurm_child.pid}/cgroup").read_text())[0] is not None:
        pytest.skip("this machine runs the tests inside a Slurm job: its cgroup names the job, not the environment")
    origin = read_origin(slurm_child.pid)
    assert (origin.job_id, origin.slurm_user) == ("918273", "alice")
    assert read_origin(os.getpid()).job_id == os.environ.get("SLURM_JOB_ID")  # this process: none set by us


def test_the_host_source_shows_a_real_childs_job(slurm_child: subprocess.Popen[bytes]) -> None:
    if slurm_job(Path(f"/proc/{slurm_child.pid}/cgroup").read_text())[0] is not None:
        pytest.skip("this machine runs the tests inside a Slurm job: its cgroup names the job, not the environment")
    source = HostSource(pod_resources_socket=Path("/nonexistent/kubelet.sock"))
    source.open()
    try:
        sample = source.sample([slurm_child.pid], time.time())
    finally:
        source.close()
    proc = sample.process(slurm_child.pid)
    assert proc is not None
    assert (proc.job_id, proc.pod, proc.namespace, proc.k8s_container) == ("918273", None, None, None)
