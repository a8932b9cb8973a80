"""The software stack against the driver: `cuda_mismatch` (torch built for a newer CUDA than the driver), and
`nvml_unavailable` (no driver to read)."""

from __future__ import annotations

from collections.abc import Iterator

from gputui.diagnostics.findings import Severity
from gputui.diagnostics.locale import Texts
from gputui.diagnostics.rules.base import Hit, Rule, Window, at_once, ev
from gputui.diagnostics.thresholds import Thresholds


def parse_cuda(version: str | None) -> tuple[int, int] | None:
    """'12.4' -> (12, 4); None for a CPU-only torch or anything unreadable."""
    if not version:
        return None
    parts = version.strip().split(".")
    try:
        return int(parts[0]), int(parts[1]) if len(parts) > 1 else 0
    except ValueError:
        return None


def cuda_mismatch(w: Window, th: Thresholds) -> Iterator[Hit]:
    """A newer major fails outright; the same major with a newer minor runs with a limited feature set (NVIDIA's
    CUDA Compatibility guide, "Minor Version Compatibility")."""
    system = w.latest.system
    torch, driver = parse_cuda(system.torch_cuda_version), parse_cuda(system.cuda_driver_version)
    if torch is None or driver is None or torch <= driver:
        return
    major = torch[0] > driver[0]
    yield Hit(
        gpus=(),
        severity=Severity.CRITICAL if major else Severity.WARNING,
        variant="major" if major else "minor",
        params={"torch": system.torch_cuda_version, "driver": system.cuda_driver_version},
        evidence=(
            ev("torch_cuda", system.torch_cuda_version, "", "static"),
            ev("driver_cuda", system.cuda_driver_version, "", "static"),
        ),
    )


RULES: tuple[Rule, ...] = (Rule(cuda_mismatch, Severity.CRITICAL, open_after=at_once),)

# The driver cannot be read at all: not evaluated on snapshots, the engine builds it where there are none
# (engine.unavailable_finding).
NVML_UNAVAILABLE = "nvml_unavailable"

TEXTS: Texts = {
    "en": {
        "cuda_mismatch.title.major": "torch is built for CUDA {torch}; the driver supports CUDA {driver}",
        "cuda_mismatch.advice.major": (
            "This torch will not run on this driver. Install a torch built for CUDA {driver} or older, or "
            "upgrade the NVIDIA driver."
        ),
        "cuda_mismatch.title.minor": "torch is built for CUDA {torch}; the driver supports CUDA {driver}",
        "cuda_mismatch.advice.minor": (
            "It runs under CUDA minor-version compatibility with a limited feature set (some kernels that need "
            "PTX JIT fail). Upgrade the driver, or install a torch built for CUDA {driver}."
        ),
        "cuda_mismatch.cause": "a driver older than torch's CUDA",
        "nvml_unavailable.title": "The NVIDIA driver cannot be read",
        "nvml_unavailable.advice": (
            "Check that the NVIDIA driver is installed and loaded (`nvidia-smi`); after a driver update, reboot or "
            "reload the kernel module; in a container, start it with GPU access (e.g. `docker run --gpus all`)."
        ),
        "nvml_unavailable.cause": "the NVIDIA driver cannot be read",
        "ev.torch_cuda": "torch built for CUDA",
        "ev.driver_cuda": "driver supports CUDA",
        "ev.reason": "reason",
    },
    "zh": {
        "cuda_mismatch.title.major": "torch 基于 CUDA {torch} 构建，驱动只支持 CUDA {driver}",
        "cuda_mismatch.advice.major": (
            "这个 torch 无法在当前驱动上运行。请安装基于 CUDA {driver} 或更早版本构建的 torch，或升级 NVIDIA 驱动。"
        ),
        "cuda_mismatch.title.minor": "torch 基于 CUDA {torch} 构建，驱动只支持 CUDA {driver}",
        "cuda_mismatch.advice.minor": (
            "可以在 CUDA 小版本兼容模式下运行，但功能受限（需要 PTX JIT 的内核会失败）。请升级驱动，"
            "或安装基于 CUDA {driver} 构建的 torch。"
        ),
        "cuda_mismatch.cause": "驱动比 torch 的 CUDA 旧",
        "nvml_unavailable.title": "无法读取 NVIDIA 驱动",
        "nvml_unavailable.advice": (
            "请确认 NVIDIA 驱动已安装并已加载（`nvidia-smi`）；更新驱动后请重启或重新加载内核模块；"
            "在容器中请以 GPU 权限启动（例如 `docker run --gpus all`）。"
        ),
        "nvml_unavailable.cause": "无法读取 NVIDIA 驱动",
        "ev.torch_cuda": "torch 构建所用 CUDA",
        "ev.driver_cuda": "驱动支持的 CUDA",
        "ev.reason": "原因",
    },
}
