"""The check every test runs under (tests/conftest.py): a test that leaves a child process running fails, naming
it, and the process is killed; one whose children ended, or exited unreaped, passes."""

from __future__ import annotations

from pathlib import Path

import psutil
import pytest

pytest_plugins = ["pytester"]

INNER = """
import subprocess
import sys
from pathlib import Path

SLEEPER = [sys.executable, "-c", "import time; time.sleep(60)"]


def test_leaves_a_sleeper():
    child = subprocess.Popen(SLEEPER)
    Path(r"{pid_file}").write_text(str(child.pid))


def test_ends_its_child():
    child = subprocess.Popen(SLEEPER)
    child.kill()
    child.wait()


def test_leaves_an_exited_child_unreaped():
    subprocess.Popen([sys.executable, "-c", "pass"])
"""


def test_a_test_that_leaves_a_process_running_fails_naming_it(pytester: pytest.Pytester, tmp_path: Path) -> None:
    conftest = (Path(__file__).parents[1] / "conftest.py").read_text()
    assert "CHILDREN_GRACE_S = 5.0" in conftest
    pytester.makeconftest(conftest.replace("CHILDREN_GRACE_S = 5.0", "CHILDREN_GRACE_S = 0.5"))
    pid_file = tmp_path / "leaked.pid"
    pytester.makepyfile(test_inner=INNER.format(pid_file=pid_file))
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:textual-snapshot", "-p", "no:asyncio")
    result.assert_outcomes(passed=3, errors=1)
    pid = int(pid_file.read_text())
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_leaves_a_sleeper*",
            f"*the test left 1 process(es) running (killed now): pid {pid}: *time.sleep(60)*",
        ]
    )
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
