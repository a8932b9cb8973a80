"""The torch CUDA probe runs a child interpreter; stand-in interpreters show each way it can end."""

from __future__ import annotations

import os
from pathlib import Path

from gputui.sources.host.torch_cuda import torch_cuda_version


def fake_python(tmp_path: Path, body: str) -> str:
    path = tmp_path / "python"
    path.write_text(f"#!/bin/sh\n{body}\n", encoding="utf-8")
    os.chmod(path, 0o755)
    return str(path)


def test_reads_the_version_the_child_prints(tmp_path: Path) -> None:
    assert torch_cuda_version(fake_python(tmp_path, 'echo "some warning"; echo 12.4')) == "12.4"


def test_cpu_only_torch_is_unknown(tmp_path: Path) -> None:
    assert torch_cuda_version(fake_python(tmp_path, "echo None")) is None


def test_missing_torch_is_unknown(tmp_path: Path) -> None:
    script = "echo \"ModuleNotFoundError: No module named 'torch'\" >&2; exit 1"
    assert torch_cuda_version(fake_python(tmp_path, script)) is None


def test_a_hanging_child_times_out(tmp_path: Path) -> None:
    assert torch_cuda_version(fake_python(tmp_path, "exec sleep 5"), timeout_s=0.2) is None


def test_no_interpreter_is_unknown(tmp_path: Path) -> None:
    assert torch_cuda_version(str(tmp_path / "nope")) is None
