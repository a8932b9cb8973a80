"""`gputui run -- CMD`: real child processes, as a user's job is run: its exit status, signals, stdin, stdout,
stderr, inherited descriptors and environment pass through; the sampler inside it publishes what its threads do,
its DataLoader workers' included."""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import select
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from gputui.cli import main
from gputui.commands.run import AGENT_DIR, FORWARDED, passed_on
from gputui.sources.stacks.inprocess import read_published
from gputui.sources.stacks.samples import StackWindow
from tests.agent.published import SPINNER, started, until

ROOT = Path(__file__).resolve().parents[2]
NOBODY = pwd.getpwnam("nobody")
SYSTEM_PYTHON = "/usr/bin/python3"
GPUTUI_RUN = [sys.executable, "-m", "gputui", "run"]

# A job that says which of the forwarded signals it got, and leaves on SIGUSR2 (or the first, with "once").
CATCHER = """
import signal, sys, time
def caught(number, frame):
    print("got", signal.Signals(number).name, flush=True)
    if number == signal.SIGUSR2 or sys.argv[1:] == ["once"]:
        sys.exit(0)
    time.sleep(0.5)  # a second one arriving meanwhile is caught again after it
for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2):
    signal.signal(number, caught)
print("ready", flush=True)
while True:
    signal.pause()
"""

# A job with two DataLoader workers whose samples each cost a little CPU in a function of the job's own.
LOADER = """
import os, sys, time, warnings
warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
import torch
from torch.utils.data import DataLoader, Dataset

class Costly(Dataset):
    def __len__(self):
        return 10**6
    def __getitem__(self, index):
        return make_sample(index)

def make_sample(index):
    end = time.thread_time() + 0.005
    while time.thread_time() < end:
        pass
    return torch.zeros(4)

if __name__ == "__main__":
    torch.set_num_threads(1)
    loader = DataLoader(Costly(), batch_size=4, num_workers=2)
    for batch in loader:
        if os.path.exists(sys.argv[1]):
            break
        time.sleep(0.01)
    del loader, batch
"""


def gputui_environment(**extra: str) -> dict[str, str]:
    """This process's environment, with this tree's gputui first on the path (as the test runs it)."""
    environment = {name: value for name, value in os.environ.items() if not name.startswith("GPUTUI_STACKS_")}
    return {**environment, "PYTHONPATH": str(ROOT), **extra}


def gputui_run(*command: str, **options: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        [*GPUTUI_RUN, "--", *command],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        **{"env": gputui_environment(), **options},
    )


def test_the_commands_exit_status_is_its_own() -> None:
    done = gputui_run("sh", "-c", "exit 3")
    assert (done.returncode, done.stdout, done.stderr) == (3, "", "")


def test_a_command_ended_by_a_signal_exits_as_a_shell_says() -> None:
    assert gputui_run("sh", "-c", "kill -TERM $$").returncode == 128 + signal.SIGTERM


def test_stdin_stdout_and_stderr_are_the_jobs_own_and_nothing_is_added() -> None:
    done = gputui_run("sh", "-c", "read line; printf 'out:%s' \"$line\"; printf err >&2", input="hello\n")
    assert (done.returncode, done.stdout, done.stderr) == (0, "out:hello", "err")


def test_an_inherited_descriptor_reaches_the_job() -> None:
    reader, writer = os.pipe()
    with os.fdopen(reader) as pipe:
        try:
            done = gputui_run(sys.executable, "-c", f"import os; os.write({writer}, b'passed')", pass_fds=(writer,))
        finally:
            os.close(writer)
        assert (done.returncode, pipe.read()) == (0, "passed")


def test_the_environment_is_the_callers_with_the_sampler_first_on_the_path() -> None:
    environment = gputui_environment(JOB_SETTING="kept", PYTHONPATH=f"/user/lib{os.pathsep}{ROOT}")
    done = subprocess.run(
        [*GPUTUI_RUN, "--hz", "40", "--", "env", "-0"], env=environment, capture_output=True, text=True, timeout=60
    )
    seen = dict(entry.split("=", 1) for entry in done.stdout.split("\0") if entry)
    expected = {
        **environment,
        "PYTHONPATH": os.pathsep.join([AGENT_DIR, "/user/lib", str(ROOT)]),
        "GPUTUI_STACKS_HZ": "40",
        "GPUTUI_STACKS_DIR": seen.get("GPUTUI_STACKS_DIR", "not set"),  # its own (the next test)
    }
    assert seen == expected


@pytest.mark.parametrize("number", FORWARDED, ids=lambda number: signal.Signals(number).name)
def test_a_signal_sent_to_gputui_run_is_passed_on(tmp_path: Path, number: int) -> None:
    with started([*GPUTUI_RUN, "--", sys.executable, "-c", CATCHER, "once"], gputui_environment()) as run:
        assert run.stdout is not None
        assert run.stdout.readline() == "ready\n"
        run.send_signal(number)
        assert run.stdout.read() == f"got {signal.Signals(number).name}\n"
        assert run.wait(timeout=30) == 0


def test_the_terminals_ctrl_c_reaches_the_job_once(tmp_path: Path) -> None:
    """Ctrl-C goes to the terminal's whole foreground group, the job included: the job gets it, and gputui run,
    which gets it too, does not send it again (a second SIGINT would cut the job's clean-up short), nor ends.
    SIGUSR2, passed on after it, ends the job."""
    master, slave = os.openpty()
    command = ["setsid", "--ctty", *GPUTUI_RUN, "--", sys.executable, "-c", CATCHER]
    try:
        run = subprocess.Popen(command, stdin=slave, stdout=slave, stderr=slave, env=gputui_environment())
    finally:
        os.close(slave)
    output = b""

    def read_more() -> bytes:
        nonlocal output
        if select.select([master], [], [], 0.05)[0]:
            with contextlib.suppress(OSError):  # EIO: the terminal's other end is closed, all has been read
                output += os.read(master, 1024)
        return output

    try:
        until(read_more, lambda seen: b"ready" in seen, "the job")
        os.write(master, b"\x03")
        until(read_more, lambda seen: b"got SIGINT" in seen, "the job's SIGINT")
        run.send_signal(signal.SIGUSR2)
        until(read_more, lambda seen: b"got SIGUSR2" in seen, "the job's SIGUSR2")
        assert run.wait(timeout=30) == 0
        assert output.count(b"got SIGINT") == 1
    finally:
        if run.poll() is None:  # setsid made gputui run its session's leader: the job is in its group
            with contextlib.suppress(ProcessLookupError):
                os.killpg(run.pid, signal.SIGKILL)
            run.wait(timeout=30)
        os.close(master)


def test_what_the_kernel_sent_is_not_sent_again() -> None:
    """A signal with si_code SI_KERNEL came from the terminal to its whole foreground group, the job included;
    one another process sent (SI_USER, with its pid) came to gputui run alone."""
    from_terminal = signal.struct_siginfo((signal.SIGINT, 0x80, 0, 0, 0, 0, 0))
    from_kill = signal.struct_siginfo((signal.SIGINT, 0, 0, 4242, 0, 0, 0))
    assert (passed_on(from_terminal), passed_on(from_kill)) == (False, True)


def test_no_command_after_the_separator(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--"]) == 127
    assert capsys.readouterr().err == "gputui run: no command after '--'\n"


def test_a_command_that_is_not_there_or_cannot_run(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["run", "--", "gputui-no-such-command", "x"]) == 127
    assert capsys.readouterr().err == "gputui run: gputui-no-such-command: command not found\n"
    assert main(["run", "--", str(tmp_path)]) == 126
    assert capsys.readouterr().err == f"gputui run: {tmp_path}: cannot run it: Permission denied\n"


@pytest.mark.parametrize("argv", [["run"], ["run", "sh", "-c", "true"], ["run", "-v", "true"]])
def test_the_command_must_follow_the_separator(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert capsys.readouterr().err == (
        "gputui: error: the command goes after '--': gputui run [-h] [--hz N] [-v] -- CMD [ARGS ...]\n"
    )


def test_a_rate_above_the_samplers_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--hz", "500", "--", "true"]) == 2
    assert "--hz: at most 100 samples per second, not 500" in capsys.readouterr().err


def test_verbose_says_what_started_and_how_it_ended() -> None:
    done = subprocess.run(
        [*GPUTUI_RUN, "-v", "--", "true"], env=gputui_environment(), capture_output=True, text=True, timeout=60
    )
    started_line, ended_line = done.stderr.splitlines()
    assert re.search(r"started, its stacks published in /(dev/shm|tmp)/gputui-stacks-\w+$", started_line)
    assert ended_line.endswith("exited with status 0")


def test_the_records_go_in_a_directory_made_afresh_for_the_job_and_removed_after_it(tmp_path: Path) -> None:
    """Never one the caller's environment names (root may run this with a user's): made by mkdtemp in a place
    whose sticky bit keeps others from renaming it, private to the job's user, gone once the job has exited."""
    said = 'printf "%s\\n" "$GPUTUI_STACKS_DIR"; stat -c "%a %u %F" "$GPUTUI_STACKS_DIR"'
    done = gputui_run("sh", "-c", said, env=gputui_environment(GPUTUI_STACKS_DIR=str(tmp_path)))
    directory, status = done.stdout.splitlines()
    assert re.fullmatch(r"/(dev/shm|tmp)/gputui-stacks-\w+", directory)
    assert status == f"700 {os.geteuid()} directory"
    assert not os.path.exists(directory)


def test_no_other_user_can_keep_the_sampler_from_starting(tmp_path: Path) -> None:
    """nobody pre-creates, as their own, the directories the sampler once published in for a job of uid 64123
    started with that user's XDG_RUNTIME_DIR: its own runtime directory's and /dev/shm/gputui-stacks-64123. The
    sampler publishes all the same, in the directory `gputui run` made, and root reads it."""
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None:
        pytest.skip("running as two other users needs root and setpriv (util-linux)")
    if not os.path.exists(SYSTEM_PYTHON):
        pytest.skip(f"the job runs {SYSTEM_PYTHON}: this test's own Python may be in a folder only root may enter")
    owner = 64123
    runtime = tmp_path / "run"
    planted = [runtime / "gputui-stacks", Path(f"/dev/shm/gputui-stacks-{owner}")]
    tmp_path.chmod(0o711)
    try:
        for directory in [runtime, *planted]:
            directory.mkdir(mode=0o700)
        for directory in planted:
            os.chown(directory, NOBODY.pw_uid, NOBODY.pw_gid)
        os.chown(runtime, owner, owner)
        environment = gputui_environment(XDG_RUNTIME_DIR=str(runtime))
        as_owner = [setpriv, f"--reuid={owner}", f"--regid={owner}", "--clear-groups", "--"]
        with started([*as_owner, *GPUTUI_RUN, "--", SYSTEM_PYTHON, "-c", SPINNER], environment, cwd="/") as run:
            job = the_job(run)
            window = until(
                lambda: read_published(job.pid, 2.0),
                lambda w: main_stack_functions(w, job.pid)[:1] == ["spin_here"],
                "the job's record",
            )
            assert window is not None and window.source == "in-process"
            ended(run, job)
    finally:
        planted[1].rmdir()


def the_job(run: subprocess.Popen[str]) -> psutil.Process:
    """The process gputui run started, once it runs the job's command: between fork and exec the child still has
    gputui's command line and environment, without the record directory the job is given."""
    wrapper = psutil.Process(run.pid)
    own_command = wrapper.cmdline()

    def execed(children: list[psutil.Process]) -> bool:
        with contextlib.suppress(psutil.Error):
            return len(children) == 1 and children[0].cmdline() != own_command
        return False

    return until(wrapper.children, execed, "the job")[0]


def ended(run: subprocess.Popen[str], job: psutil.Process) -> None:
    """gputui run stopped as a user stops it (SIGTERM, passed on to the job), and the job's record directory gone
    with it."""
    records = Path(job.environ()["GPUTUI_STACKS_DIR"])
    assert records.is_dir()
    run.terminate()
    assert run.wait(timeout=30) == 128 + signal.SIGTERM
    assert not records.exists()


def main_stack_functions(window: StackWindow | None, pid: int) -> list[str]:
    """The innermost functions of `pid`'s main thread's stacks, most samples first."""
    if window is None:
        return []
    return [count.stack[0].function for t in window.threads if t.pid == pid and t.is_main for count in t.stacks]


def test_a_python_job_publishes_what_its_main_thread_does() -> None:
    with started([*GPUTUI_RUN, "--", sys.executable, "-c", SPINNER], gputui_environment()) as run:
        job = the_job(run)
        window = until(
            lambda: read_published(job.pid, 2.0), lambda w: main_stack_functions(w, job.pid)[:1] == ["spin_here"], ""
        )
        assert window is not None and window.source == "in-process"
        ended(run, job)


def test_a_dataloaders_workers_publish_their_own_stacks(tmp_path: Path) -> None:
    stop = tmp_path / "stop"
    with started([*GPUTUI_RUN, "--", sys.executable, "-c", LOADER, str(stop)], gputui_environment()) as run:
        job = the_job(run)
        records = Path(job.environ()["GPUTUI_STACKS_DIR"])

        def in_make_sample(window: StackWindow | None) -> set[int]:
            """The workers seen making a sample."""
            if window is None:
                return set()
            return {
                t.pid
                for t in window.threads
                if t.pid != job.pid and any(f.function == "make_sample" for c in t.stacks for f in c.stack)
            }

        window = until(lambda: read_published(job.pid, 2.0), lambda w: len(in_make_sample(w)) == 2, "2 workers")
        workers = in_make_sample(window)
        assert workers == {child.pid for child in job.children()}
        stop.touch()
        assert run.wait(timeout=60) == 0
    assert not records.exists()  # its records with it
