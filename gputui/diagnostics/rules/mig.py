"""MIG mode itself: a mode change waiting for a GPU reset (`mig_pending`), MIG on with no instance (`mig_no_instances`).

The other families judge a MIG GPU's instances each as a GPU (diagnostics/instances.py); these two say what
stands between a MIG GPU and any job at all.
"""

from __future__ import annotations

from collections.abc import Iterator

from gputui.diagnostics.findings import Severity
from gputui.diagnostics.locale import Texts
from gputui.diagnostics.rules.base import Hit, Rule, Window, at_once, ev
from gputui.diagnostics.thresholds import Thresholds


def mig_pending(w: Window, th: Thresholds) -> Iterator[Hit]:
    """nvidia-smi -mig 1 (or 0) takes effect only at the next reset: until then the GPU runs as it did."""
    for g in w.gpus():
        if g.mig is None or not g.mig.change_pending:
            continue
        yield Hit(
            gpus=(g.index,),
            variant="on" if g.mig.pending_mode else "off",
            params={"gpu": g.index},
            evidence=(ev("mig_mode", _mode(g.mig.mode)), ev("mig_pending_mode", _mode(g.mig.pending_mode))),
        )


def mig_no_instances(w: Window, th: Thresholds) -> Iterator[Hit]:
    """In MIG mode CUDA runs only inside an instance: with none visible, no job here can use the GPU. The driver
    lists only the instances this container or user may see, so the words say "visible", not "exists"."""
    for g in w.gpus():
        if g.mig is None or g.mig.mode is not True or g.mig.devices:
            continue
        yield Hit(gpus=(g.index,), params={"gpu": g.index}, evidence=(ev("mig_mode", _mode(True)),))


def _mode(on: bool | None) -> str | None:
    return None if on is None else ("on" if on else "off")


RULES: tuple[Rule, ...] = (
    Rule(mig_pending, Severity.WARNING, open_after=at_once),
    Rule(mig_no_instances, Severity.INFO, open_after=at_once),
)

TEXTS: Texts = {
    "en": {
        "mig_pending.title.on": "GPU {gpu}: MIG mode turns on at the next GPU reset",
        "mig_pending.advice.on": (
            "MIG mode was enabled, but it takes effect only when the GPU is reset; until then the GPU runs whole "
            "and no MIG instance can be made. Stop every process on it and run `nvidia-smi -r -i {gpu}`, or "
            "reboot; then create the instances (`nvidia-smi mig -i {gpu} -cgi <profiles> -C`)."
        ),
        "mig_pending.title.off": "GPU {gpu}: MIG mode turns off at the next GPU reset",
        "mig_pending.advice.off": (
            "MIG mode was disabled, but it takes effect only when the GPU is reset; until then the GPU stays split "
            "into its instances and no job can use it whole. Stop every process on it and run "
            "`nvidia-smi -r -i {gpu}`, or reboot."
        ),
        "mig_pending.cause": "a MIG mode change waiting for a GPU reset",
        "mig_no_instances.title": "GPU {gpu}: MIG mode is on, but no MIG instance is visible",
        "mig_no_instances.advice": (
            "In MIG mode a CUDA job runs only inside a MIG instance, and the driver shows none here: none was "
            "created, or this container or user is given none. If none exists, list the profiles with "
            "`nvidia-smi mig -i {gpu} -lgip`, then create instances with their compute instances, e.g. "
            "`nvidia-smi mig -i {gpu} -cgi 9,9 -C` (two 3g instances on an H100); or turn "
            "MIG off (`nvidia-smi -i {gpu} -mig 0`, then a GPU reset)."
        ),
        "mig_no_instances.cause": "MIG on with no instance visible",
        "ev.mig_mode": "MIG mode",
        "ev.mig_pending_mode": "MIG mode after the reset",
    },
    "zh": {
        "mig_pending.title.on": "GPU {gpu}：MIG 模式将在下次 GPU 重置后开启",
        "mig_pending.advice.on": (
            "已启用 MIG 模式，但要等 GPU 重置后才生效；在此之前 GPU 仍作为整卡运行，无法创建 MIG 实例。"
            "请停止该 GPU 上的所有进程后运行 `nvidia-smi -r -i {gpu}`，或重启机器；然后创建实例"
            "（`nvidia-smi mig -i {gpu} -cgi <profiles> -C`）。"
        ),
        "mig_pending.title.off": "GPU {gpu}：MIG 模式将在下次 GPU 重置后关闭",
        "mig_pending.advice.off": (
            "已关闭 MIG 模式，但要等 GPU 重置后才生效；在此之前 GPU 仍被划分为各个实例，任何作业都无法使用整卡。"
            "请停止该 GPU 上的所有进程后运行 `nvidia-smi -r -i {gpu}`，或重启机器。"
        ),
        "mig_pending.cause": "等待 GPU 重置的 MIG 模式变更",
        "mig_no_instances.title": "GPU {gpu}：MIG 模式已开启，但看不到任何 MIG 实例",
        "mig_no_instances.advice": (
            "MIG 模式下 CUDA 作业只能在 MIG 实例中运行，而驱动在这里看不到任何实例：可能尚未创建，"
            "也可能这个容器或用户没有分到实例。如果确实没有实例，请用 `nvidia-smi mig -i {gpu} -lgip` "
            "列出可用配置，再创建实例及其计算实例，例如 "
            "`nvidia-smi mig -i {gpu} -cgi 9,9 -C`（在 H100 上创建两个 3g 实例）；或关闭 MIG"
            "（`nvidia-smi -i {gpu} -mig 0`，然后重置 GPU）。"
        ),
        "mig_no_instances.cause": "MIG 已开启但看不到实例",
        "ev.mig_mode": "MIG 模式",
        "ev.mig_pending_mode": "重置后的 MIG 模式",
    },
}
