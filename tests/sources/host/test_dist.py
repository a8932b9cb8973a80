"""A process's place in a torch.distributed job (issue 40, item 5): RANK, LOCAL_RANK, WORLD_SIZE and the job's key from
its environment, torchrun's agent as its parent, "unreadable" where the kernel refuses the environment; hostile values
neither crash nor pass as ranks. Through a fake /proc, and a real child started as torchrun starts a worker."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gputui.model import DistRank
from gputui.sources.host.attribution import ENVIRON_MAX_BYTES
from gputui.sources.host.dist import MAX_NAME, read_dist
from gputui.sources.host.source import HostSource
from tests.sources.host.fake_tree import proc_root, write

TORCHRUN_ENV = {
    "RANK": "1",
    "LOCAL_RANK": "1",
    "WORLD_SIZE": "2",
    "MASTER_ADDR": "127.0.0.1",
    "MASTER_PORT": "29500",
    "TORCHELASTIC_RUN_ID": "7f3a",
}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return proc_root(tmp_path)


def environ(root: Path, pid: int, values: dict[str, str], before: str = "PATH=/usr/bin\0") -> None:
    write(root, f"proc/{pid}/environ", before + "".join(f"{k}={v}\0" for k, v in values.items()))


def test_a_torchrun_worker_is_its_rank_of_its_job_under_its_agent(root: Path) -> None:
    environ(root, 200, TORCHRUN_ENV)
    write(root, "proc/199/cmdline", "/usr/bin/python3\0/venv/bin/torchrun\0--nproc-per-node\x002\0train.py\0")
    assert read_dist(200, 199, root) == DistRank(
        rank=1, local_rank=1, world_size=2, job="run 7f3a at 127.0.0.1:29500", launcher_pid=199
    )


def test_python_m_torch_distributed_run_is_the_agent_too_and_a_shell_is_not(root: Path) -> None:
    environ(root, 200, TORCHRUN_ENV)
    write(root, "proc/199/cmdline", "python\0-m\0torch.distributed.run\0train.py\0")
    write(root, "proc/198/cmdline", "/bin/bash\0run.sh\0")
    assert read_dist(200, 199, root).launcher_pid == 199  # type: ignore[union-attr]
    assert read_dist(200, 198, root).launcher_pid is None  # type: ignore[union-attr]


def test_ranks_of_one_job_share_its_key_and_another_master_is_another_job(root: Path) -> None:
    environ(root, 200, TORCHRUN_ENV)
    environ(root, 201, {**TORCHRUN_ENV, "RANK": "0", "LOCAL_RANK": "0"})
    environ(root, 202, {**TORCHRUN_ENV, "MASTER_PORT": "29600", "TORCHELASTIC_RUN_ID": "none"})
    keys = [read_dist(pid, None, root).job for pid in (200, 201, 202)]  # type: ignore[union-attr]
    assert keys == ["run 7f3a at 127.0.0.1:29500", "run 7f3a at 127.0.0.1:29500", "at 127.0.0.1:29600"]


def test_no_distributed_variables_is_no_rank(root: Path) -> None:
    environ(root, 200, {"HOME": "/home/alice"})
    assert read_dist(200, None, root) is None


def test_an_environment_the_kernel_refuses_is_unreadable_never_guessed(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    environ(root, 200, TORCHRUN_ENV)
    real_open = os.open

    def refuse(path: str, flags: int, *args: int) -> int:
        if str(path).endswith("/proc/200/environ"):  # as the kernel answers a reader without ptrace rights
            raise PermissionError(13, "Permission denied", path)
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", refuse)
    assert read_dist(200, None, root) == DistRank(unreadable=True)
    assert read_dist(999, None, root) is None  # gone: nothing to say


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({"RANK": "-1", "WORLD_SIZE": "0"}, (None, None)),
        ({"RANK": "99999999999999999999", "WORLD_SIZE": "2"}, (None, 2)),
        ({"RANK": "1e3", "WORLD_SIZE": "0x10"}, (None, None)),
        ({"RANK": "٣", "WORLD_SIZE": "4"}, (None, 4)),  # an Arabic-Indic digit is no rank
    ],
)
def test_hostile_numbers_are_no_ranks(root: Path, values: dict[str, str], expected: tuple[object, object]) -> None:
    environ(root, 200, {**values, "MASTER_ADDR": "h"})
    dist = read_dist(200, None, root)
    assert dist is not None and (dist.rank, dist.world_size) == expected


def test_hostile_names_are_cleaned_and_cut_short(root: Path) -> None:
    environ(root, 200, {"RANK": "0", "MASTER_ADDR": "\x1b]0;PWNED\x07" + "a" * 500, "MASTER_PORT": "29500"})
    job = read_dist(200, None, root).job  # type: ignore[union-attr]
    assert job is not None and "\x1b" not in job and "\\x1b" in job
    assert len(job) <= len("at ") + MAX_NAME + len(":29500")


def test_the_read_is_bounded_whatever_the_environment_holds(root: Path) -> None:
    environ(root, 200, TORCHRUN_ENV, before="JUNK=" + "x" * ENVIRON_MAX_BYTES + "\0")
    assert read_dist(200, None, root) is None  # past the bound: not read, not hung on


@pytest.fixture
def worker() -> Iterator[subprocess.Popen[bytes]]:
    """A child started as torchrun starts a worker."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], env={**os.environ, **TORCHRUN_ENV})
    try:
        yield child
    finally:
        child.kill()
        child.wait(timeout=10)


def test_the_host_source_shows_a_real_workers_rank(worker: subprocess.Popen[bytes]) -> None:
    source = HostSource(pod_resources_socket=Path("/nonexistent/kubelet.sock"))
    source.open()
    try:
        sample = source.sample([worker.pid], time.time())
    finally:
        source.close()
    proc = sample.process(worker.pid)
    assert proc is not None and proc.dist is not None
    assert (proc.dist.rank, proc.dist.world_size, proc.dist.job) == (1, 2, "run 7f3a at 127.0.0.1:29500")
    assert proc.dist.launcher_pid is None  # its parent is pytest, no agent
