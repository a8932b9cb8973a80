"""Every sentence the diagnostics show, in English and Simplified Chinese, looked up by key.

Many people who rent GPU servers abroad read Chinese first, so titles, advice, evidence labels and the pane's
own words all come from here. A rule's title, advice, cause and the evidence labels only its family uses live in
its family module (`rules/<family>.py`, `TEXTS`); this module holds the words no single family owns, the labels of
the probes' figures, and merges them all. Keys are `<rule>.title[.<variant>]`, `<rule>.advice[.<variant>]`,
`<rule>.cause[.<variant>]` (the cause as the verdict names it), `ev.<name>` (evidence labels), `win.<name>`
(evidence windows), `sev.<severity>`, `ui.<name>`, `cli.<name>`, `quiet.<name>` (said where no finding is, and
"healthy" cannot be), the verdict's (`verdict_texts.py`) and the fleet findings' (`fleet_texts.py`).
Placeholders are `str.format` fields; both languages use the same ones (a test checks it).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

from rich.cells import cell_len

from gputui.diagnostics.account_texts import TEXTS as ACCOUNT_TEXTS
from gputui.diagnostics.findings import Evidence, Severity
from gputui.diagnostics.fleet_texts import TEXTS as FLEET_TEXTS
from gputui.diagnostics.locale import LANGS, Texts
from gputui.diagnostics.rules import RULE_TEXTS
from gputui.diagnostics.verdict_texts import TEXTS as VERDICT_TEXTS

SHARED: Texts = {
    "en": {
        # -- evidence labels more than one family uses ---------------------------------------------------------
        "ev.temperature": "temperature",
        "ev.throttled_share": "time throttled",
        "ev.sm_clock": "SM clock",
        "ev.max_sm_clock": "max SM clock",
        "ev.clock_of_max": "SM clock, share of its max",
        "ev.slowdown_threshold": "slowdown threshold",
        "ev.clock_events": "why the driver slows the clock",
        "ev.gpu_util": "GPU utilization",
        "ev.sm_active": "SM activity",
        "ev.processes": "processes",
        "ev.process": "process",
        "ev.cpu_quota": "CPU quota",
        "ev.quota_used": "CPU used of the quota",
        "ev.throttled_periods": "periods the quota ran out",
        "ev.psi_cpu": "time tasks waited for a CPU",
        # -- what a job's main thread did, from its stack samples (rules/stacks.py) -------------------------------
        "ev.stack_data": "main thread waiting for the next batch",
        "ev.stack_loading": "main thread loading data itself (the dataset's code)",
        "ev.stack_cpu": "main thread running the job's own Python",
        "ev.stack_gpu_sync": "main thread waiting for the GPU",
        "ev.stack_collective": "main thread waiting on other ranks",
        "ev.stack_checkpoint": "main thread writing a checkpoint",
        "ev.stack_compile": "main thread compiling (torch.compile)",
        "ev.stack_io": "main thread reading files",
        "ev.stack_idle": "main thread blocked",
        "ev.stack_frame": "where (the frame most samples held)",
        "ev.stack_waited_on": "whom its waits waited for (their top frame, their share running)",
        "ev.stack_source_line": "read from its source line (the sync has no Python frame)",
        "ev.rank": "rank (RANK)",
        # -- evidence windows ----------------------------------------------------------------------------------
        "win.now": "now",
        "win.moment": "latest reading",  # a moment beside a mean of the same reading (diagnostics/figures.py)
        "win.mean": "mean over {seconds} s",
        "win.max": "max over {seconds} s",
        "win.change": "change over {seconds} s",
        "win.share": "of the last {seconds} s",
        "win.static": "",  # a board's fixed figure (its max clock, its slowdown threshold) needs no window
        "win.worst": "at its worst",
        "win.last_seen": "when last seen",  # an open finding whose condition lapsed this tick (engine.py)
        "win.stack.py-spy": "of {samples} stack samples, py-spy over {sampled_s} s",
        "win.stack.in-process": "of {samples} stack samples, gputui run's sampler over {sampled_s} s",
        # -- severities and the pane ---------------------------------------------------------------------------
        "sev.critical": "CRIT",
        "sev.warning": "WARN",
        "sev.info": "INFO",
        "ui.title": "Diagnostics",
        "ui.none": "No findings: nothing slows the GPUs right now.",
        "ui.count.critical": "{count} critical",
        "ui.count.warning": "{count} warning",
        "ui.count.warning.plural": "{count} warnings",
        "ui.count.info": "{count} info",
        "ui.gpus": "GPUs {list}",
        "ui.history": "cleared",
        "ui.more": "+{count} findings (up/down)",
        "ui.more.one": "+1 finding (up/down)",
        "ui.advice": "Advice",
        "ui.lasted": "lasted {duration}",
        "ui.hint": "up/down: choose  enter: advice",
        "ui.hint.unfocused": "d: choose a finding, then enter: advice",
        # -- the diagnose command ------------------------------------------------------------------------------
        "cli.simulated": "SIMULATED data (scenario: {scenario}); not this machine",
        "cli.sampled": "{host}: sampled {seconds} s",
        "cli.sampled.warm": "{host}: sampled {seconds} s, after {warm_up} s of collecting readings for the verdict",
        "cli.none": "No findings above info: the GPUs look healthy.",
        # -- what is said in place of "healthy" while gputui cannot say so (gputui/text/quiet_text.py) ----------
        "quiet.collecting": "No findings yet: {summary}; not known to be healthy before then.",
        "quiet.unjudged": "No findings and no verdict yet: nothing has been judged.",
        "quiet.verdict": "No findings above info, but the verdict is not a healthy one: {label}.",
        "quiet.watching": "watching: {title} (opens in {seconds} s if it holds)",
        "cli.advice": "advice",
        "cli.since": "for {duration}",
        "cli.was": "was: {span}",
        "cli.notice": "notice: {notice}",
        "cli.unreadable": (
            "notice: PID {pid} ({name}, user {user}) holds a GPU, but the kernel refuses gputui its {files}: it is "
            "another user's process and gputui runs unprivileged, or gputui lacks CAP_SYS_PTRACE. Its CPU, threads "
            "and workers are read; its disk reads and Slurm job read n/a, and its GPU is the driver's word, "
            "unchecked. Run gputui as root, or give it CAP_SYS_PTRACE (docker --cap-add SYS_PTRACE), to read them."
        ),
        "cli.unreadable.fd": "open files",
        "cli.unreadable.io": "I/O counters",
        "cli.unreadable.environ": "environment",
        "cli.and": ", ",
        "cli.activity": "activity of PID {pid} ({name}): {activity}",
        "cli.verdict": "VERDICT  {line}",
        "cli.fleet": "{url}: {nodes} nodes, the last {since} every {step}",
        "cli.node": "== {host} ({source}, {readings} readings)",
        "cli.node.empty": "no readings in the window",
        "cli.dcgm_only": "host CPU, memory and processes: not available from dcgm-exporter",
        "cli.fleet.findings": "== the fleet",
        "cli.fleet.none": "No fleet findings.",
    },
    "zh": {
        "ev.temperature": "温度",
        "ev.throttled_share": "降频时间占比",
        "ev.sm_clock": "SM 频率",
        "ev.max_sm_clock": "最大 SM 频率",
        "ev.clock_of_max": "SM 频率占最大值",
        "ev.slowdown_threshold": "降频温度阈值",
        "ev.clock_events": "驱动降频的原因",
        "ev.gpu_util": "GPU 利用率",
        "ev.sm_active": "SM 活跃度",
        "ev.processes": "进程",
        "ev.process": "进程",
        "ev.cpu_quota": "CPU 配额",
        "ev.quota_used": "已用配额",
        "ev.throttled_periods": "配额用尽的周期",
        "ev.psi_cpu": "任务等待 CPU 的时间",
        "ev.stack_data": "主线程在等下一个 batch",
        "ev.stack_loading": "主线程自己加载数据（数据集代码）",
        "ev.stack_cpu": "主线程在运行任务自己的 Python 代码",
        "ev.stack_gpu_sync": "主线程在等 GPU",
        "ev.stack_collective": "主线程在等其他 rank",
        "ev.stack_checkpoint": "主线程在写 checkpoint",
        "ev.stack_compile": "主线程在编译（torch.compile）",
        "ev.stack_io": "主线程在读文件",
        "ev.stack_idle": "主线程被阻塞",
        "ev.stack_frame": "位置（采样最多的栈帧）",
        "ev.stack_waited_on": "它等待的对象（其栈顶帧、运行占比）",
        "ev.stack_source_line": "从源码行读出（同步没有 Python 栈帧）",
        "ev.rank": "rank（RANK）",
        "win.now": "当前",
        "win.moment": "最新读数",
        "win.mean": "{seconds} 秒平均",
        "win.max": "{seconds} 秒最大",
        "win.change": "{seconds} 秒内变化",
        "win.share": "最近 {seconds} 秒",
        "win.static": "",
        "win.worst": "最严重时",
        "win.last_seen": "最后一次出现时",
        "win.stack.py-spy": "共 {samples} 个栈采样，py-spy 采样 {sampled_s} 秒",
        "win.stack.in-process": "共 {samples} 个栈采样，gputui run 的进程内采样 {sampled_s} 秒",
        "sev.critical": "严重",
        "sev.warning": "警告",
        "sev.info": "提示",
        "ui.title": "诊断",
        "ui.none": "没有发现问题：目前没有什么拖慢 GPU。",
        "ui.count.critical": "严重 {count}",
        "ui.count.warning": "警告 {count}",
        "ui.count.warning.plural": "警告 {count}",
        "ui.count.info": "提示 {count}",
        "ui.gpus": "GPU {list}",
        "ui.history": "已解除",
        "ui.more": "+{count} 项发现（上/下）",
        "ui.more.one": "+1 项发现（上/下）",
        "ui.advice": "建议",
        "ui.lasted": "持续 {duration}",
        "ui.hint": "上/下：选择  回车：查看建议",
        "ui.hint.unfocused": "按 d 选择一项，再按回车查看建议",
        "cli.simulated": "SIMULATED 模拟数据（场景：{scenario}），并非本机",
        "cli.sampled": "{host}：采样 {seconds} 秒",
        "cli.sampled.warm": "{host}：先收集 {warm_up} 秒数据以给出结论，之后采样 {seconds} 秒",
        "cli.none": "没有高于提示级别的问题：GPU 状态良好。",
        "quiet.collecting": "尚无发现：{summary}；在此之前不能断定 GPU 状态良好。",
        "quiet.unjudged": "尚无发现，也尚无结论：还没有作出任何判断。",
        "quiet.verdict": "没有高于提示级别的问题，但结论并非正常：{label}。",
        "quiet.watching": "观察中：{title}（若持续，{seconds} 秒后确认）",
        "cli.advice": "建议",
        "cli.since": "持续 {duration}",
        "cli.was": "曾出现：{span}",
        "cli.notice": "提示：{notice}",
        "cli.unreadable": (
            "提示：PID {pid}（{name}，用户 {user}）占用着 GPU，但内核不允许 gputui 读取它的{files}：它属于其他用户"
            "而 gputui 以普通用户运行，或者 gputui 没有 CAP_SYS_PTRACE 权限。它的 CPU、线程和 worker 照常读取；"
            "它的磁盘读取和 Slurm 作业显示为 n/a，它占用的 GPU 以驱动的报告为准，未经核对。请以 root 运行 gputui，"
            "或授予它 CAP_SYS_PTRACE（docker --cap-add SYS_PTRACE）以读取这些信息。"
        ),
        "cli.unreadable.fd": "打开的文件",
        "cli.unreadable.io": "I/O 计数",
        "cli.unreadable.environ": "环境变量",
        "cli.and": "、",
        "cli.activity": "PID {pid}（{name}）的运行状态：{activity}",
        "cli.verdict": "结论  {line}",
        "cli.fleet": "{url}：{nodes} 个节点，最近 {since}，每 {step} 一个读数",
        "cli.node": "== {host}（{source}，{readings} 个读数）",
        "cli.node.empty": "窗口内没有读数",
        "cli.dcgm_only": "主机 CPU、内存和进程：dcgm-exporter 不提供",
        "cli.fleet.findings": "== 整个集群",
        "cli.fleet.none": "没有集群级别的问题。",
    },
}

# The evidence labels of the probes' findings (gputui/probes/result_finding.py): a probe is no rule family's.
PROBE_TEXTS: Texts = {
    "en": {
        "ev.matmul_rate": "matmul rate",
        "ev.share_of_peak": "share of the peak",
        "ev.slowest_second": "slowest second",
        "ev.results_differed": "results that differed",
        "ev.memory_copy": "device memory copy",
        "ev.memory_peak": "memory peak",
        "ev.copy_size": "copy size",
        "ev.h2d_pinned": "host to GPU (pinned)",
        "ev.d2h_pinned": "GPU to host (pinned)",
        "ev.h2d_pageable": "host to GPU (pageable)",
        "ev.link_theory": "the link in theory",
        "ev.host_copy": "host memory copy",
        "ev.sequential_read": "sequential read",
        "ev.page_cache": "from the page cache",
        "ev.data_read": "data read",
        "ev.files_read": "files read",
        "ev.copy_direction": "GPU {src} -> GPU {dst}",
    },
    "zh": {
        "ev.matmul_rate": "矩阵乘法速率",
        "ev.share_of_peak": "占峰值比例",
        "ev.slowest_second": "最慢的一秒",
        "ev.results_differed": "结果不一致次数",
        "ev.memory_copy": "显存拷贝",
        "ev.memory_peak": "显存带宽峰值",
        "ev.copy_size": "拷贝大小",
        "ev.h2d_pinned": "主机到 GPU（锁页内存）",
        "ev.d2h_pinned": "GPU 到主机（锁页内存）",
        "ev.h2d_pageable": "主机到 GPU（可分页内存）",
        "ev.link_theory": "链路理论带宽",
        "ev.host_copy": "主机内存拷贝",
        "ev.sequential_read": "顺序读取",
        "ev.page_cache": "来自页缓存",
        "ev.data_read": "读取数据量",
        "ev.files_read": "读取文件数",
        "ev.copy_direction": "GPU {src} -> GPU {dst}",
    },
}

MESSAGES: Mapping[str, Mapping[str, str]] = {
    lang: {
        **SHARED[lang],
        **PROBE_TEXTS[lang],
        **RULE_TEXTS[lang],
        **VERDICT_TEXTS[lang],
        **FLEET_TEXTS[lang],
        **ACCOUNT_TEXTS[lang],
    }
    for lang in LANGS
}
_EN = MESSAGES["en"]


def text(key: str, lang: str = "en", **params: object) -> str:
    """The message `key` in `lang` with its placeholders filled; English when a language lacks it."""
    table = MESSAGES.get(lang, _EN)
    template = table.get(key) or _EN[key]
    return template.format(**params) if params else template


def has_text(key: str) -> bool:
    """Whether `key` exists (in English, which every key has): for words that only some variants have."""
    return key in _EN


def severity_label(severity: Severity, lang: str, width: int = 4) -> str:
    """CRIT / WARN / INFO (or the Chinese words), padded to `width` terminal cells so columns line up."""
    label = text(f"sev.{severity.label}", lang)
    return label + " " * max(0, width - cell_len(label))


def localize(evidence: Evidence, lang: str, window_s: int) -> Evidence:
    """A rule's evidence (catalog keys) in words: the label and the window it was measured over."""
    label, window = _evidence_words(evidence.key, evidence.window, lang, window_s, evidence.params)
    return Evidence(label=label, value=evidence.value, unit=evidence.unit, window=window, key=evidence.key)


@functools.lru_cache(maxsize=1024)
def _evidence_words(
    key: str, window: str, lang: str, window_s: int, params: tuple[tuple[str, object], ...]
) -> tuple[str, str]:
    """The same few labels and windows are put into words for every open finding on every tick."""
    return text(f"ev.{key}", lang), text(f"win.{window}", lang, seconds=window_s, **dict(params)) if window else ""
