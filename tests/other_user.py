"""The other tenant of a shared machine, for the tests of what gputui running as root takes from, or leaves to,
another user: `nobody`, real to the kernel, and a folder both may write to, world-writable and sticky like /tmp."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

OTHER_USER = "nobody"


def other_user() -> pwd.struct_passwd:
    """`nobody`'s entry; skips the test where it cannot play its part (not root, or no such user)."""
    if os.geteuid() != 0:
        pytest.skip("needs root: the case is root's, beside another user")
    try:
        return pwd.getpwnam(OTHER_USER)
    except KeyError:
        pytest.skip(f"no user {OTHER_USER} to play the other tenant")


def as_other_user(*argv: str) -> None:
    """Run `argv` (a plain command: ln, mkfifo, sh -c) as `nobody`, with no supplementary group."""
    user = other_user()
    subprocess.run(argv, user=user.pw_uid, group=user.pw_gid, extra_groups=[], check=True, timeout=30)


@contextmanager
def shared_sticky_dir() -> Iterator[Path]:
    """A new folder mode 1777 in the temporary directory, which `nobody` can reach (else the test skips)."""
    other_user()
    folder = Path(tempfile.mkdtemp(prefix="gputui-shared-"))
    try:
        folder.chmod(0o1777)
        try:
            as_other_user("test", "-w", str(folder))
        except subprocess.CalledProcessError:
            pytest.skip(f"{OTHER_USER} cannot reach {folder} (a temporary directory inside a private one)")
        yield folder
    finally:
        shutil.rmtree(folder)


def owned_by_other_user(path: Path) -> Path:
    """`path` (and nothing under it) handed to `nobody`."""
    user = other_user()
    os.chown(path, user.pw_uid, user.pw_gid)
    return path
