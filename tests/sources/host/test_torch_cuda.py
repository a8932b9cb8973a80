"""The torch CUDA version is read from torch's version.py without importing torch or starting a process;
stand-in torch packages show each way it can end."""

from __future__ import annotations

import sys
from pathlib import Path

from gputui.sources.host.torch_cuda import torch_cuda_version


def fake_torch(tmp_path: Path, version_py: str | None) -> list[str]:
    """A directory holding a package `torch` whose version.py says `version_py` (none when None); its
    __init__ fails loudly, so a test passes only if torch is never imported."""
    package = tmp_path / "torch"
    package.mkdir()
    (package / "__init__.py").write_text("raise RuntimeError('torch must not be imported')\n", encoding="utf-8")
    if version_py is not None:
        (package / "version.py").write_text(version_py, encoding="utf-8")
    return [str(tmp_path)]


def test_reads_the_version_torch_was_built_for(tmp_path: Path) -> None:
    text = "from typing import Optional\n__version__ = '2.5.1+cu124'\ncuda: Optional[str] = '12.4'\nhip = None\n"
    assert torch_cuda_version(fake_torch(tmp_path, text)) == "12.4"
    assert "torch" not in sys.modules


def test_an_older_torch_without_annotations_is_read_too(tmp_path: Path) -> None:
    assert torch_cuda_version(fake_torch(tmp_path, "__version__ = '1.13.1'\ncuda = '11.7'\n")) == "11.7"


def test_cpu_only_torch_is_unknown(tmp_path: Path) -> None:
    assert torch_cuda_version(fake_torch(tmp_path, "cuda: Optional[str] = None\n")) is None


def test_missing_torch_is_unknown(tmp_path: Path) -> None:
    assert torch_cuda_version([str(tmp_path)]) is None


def test_a_torch_without_its_version_file_is_unknown(tmp_path: Path) -> None:
    assert torch_cuda_version(fake_torch(tmp_path, None)) is None


def test_a_version_file_it_does_not_recognise_is_unknown(tmp_path: Path) -> None:
    assert torch_cuda_version(fake_torch(tmp_path, "cuda = get_cuda()\n")) is None


def test_the_cpu_build_in_this_environment_reads_as_unknown() -> None:
    """The torch installed here for the probes is the CPU build: no CUDA version, and nothing imported."""
    assert torch_cuda_version() is None
    assert "torch" not in sys.modules
