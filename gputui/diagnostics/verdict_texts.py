"""The verdict's words, en and zh: a label per class and one sentence each (catalog.py merges them).

Keys: `verdict.<class>` (the label), `verdict.<class>.summary[.<variant>]` (the sentence after it),
`verdict.<class>.short` (its few words inside a `mixed` sentence), `verdict.line` and `verdict.separator`,
`verdict.gpus.*` (GPU lists). What a finding's cause is called inside a sentence (`<rule>.cause`) is its rule's
word, in its family module.
"""

from __future__ import annotations

from gputui.diagnostics.locale import Texts

TEXTS: Texts = {
    "en": {
        "verdict.line": "{label}: {summary}",
        "verdict.separator": "; ",
        "verdict.list_separator": ", ",  # between the names of MIG instances
        "verdict.gpu_bound": "GPU-bound",
        "verdict.gpu_bound.summary": (
            "{gpus} {util} busy at {clock} of max clock; nothing on this machine holds them back: speed-ups must "
            "come from the job (batch size, mixed precision, torch.compile)"
        ),
        "verdict.gpu_bound.summary.open": (
            "{gpus} {util} busy at {clock} of max clock; open here, not holding them back now: {causes}"
        ),
        "verdict.gpu_bound.summary.watching": (
            "{gpus} {util} busy at {clock} of max clock; watching, not yet held long enough to be a finding: {causes}"
        ),
        "verdict.gpu_bound.short": "{gpus} {util} busy",
        "verdict.underused": "Underused",
        "verdict.underused.summary": (
            "{gpus} only {util} busy, and nothing on this machine explains the waiting: look inside the job "
            "(synchronisation, small batches, a slow Python step, other nodes)"
        ),
        "verdict.underused.summary.open": (
            "{gpus} only {util} busy; what is open here ({causes}) is not known to cause the waiting: look inside "
            "the job (synchronisation, small batches, a slow Python step, other nodes)"
        ),
        "verdict.underused.summary.cause": "{gpus} only {util} busy, waiting because of {causes}",
        "verdict.underused.summary.watching": (
            "{gpus} only {util} busy; watching, not yet held long enough to be a finding: {causes}"
        ),
        "verdict.underused.summary.unsampled": (
            "{gpus} only {util} busy, and nothing on this machine explains the waiting: look inside the job "
            "(synchronisation, small batches, a slow Python step, other nodes); no stack of its main thread "
            "sampled yet"
        ),
        "verdict.underused.summary.unread": (
            "{gpus} only {util} busy, and nothing on this machine explains the waiting: look inside the job "
            "(synchronisation, small batches, a slow Python step, other nodes); its stacks could not be read: "
            "{why}"
        ),
        "verdict.underused.summary.stack": (
            "{gpus} only {util} busy, and nothing on this machine explains the waiting; its main thread's "
            "{samples} stack samples: {shares}"
        ),
        "verdict.underused.summary.gpu_sync": (
            "{gpus} only {util} busy while its main thread waits for the GPU in {share} of {samples} stack "
            "samples: each step waits on the GPU, not on its input; look at copies between host and GPU "
            "(pin_memory, non_blocking) and at synchronisation in the step (.item(), .cpu())"
        ),
        "verdict.underused.short": "{gpus} only {util} busy, not explained here",
        "verdict.underused.short.cause": "{gpus} only {util} busy ({causes})",
        "verdict.input_bound": "Input-bound",
        "verdict.input_bound.summary": "{gpus} only {util} busy, waiting for data ({causes})",
        "verdict.input_bound.short": "{gpus} waiting for data ({causes})",
        "verdict.throttled": "Throttled",
        "verdict.throttled.summary": "{lost} of the clock lost on {gpus}, mean over {seconds} s ({causes})",
        "verdict.throttled.short": "{gpus} {lost} of the clock lost, mean over {seconds} s ({causes})",
        "verdict.memory_bound_gpu": "Memory-bandwidth-bound",
        "verdict.memory_bound_gpu.summary": "DRAM bandwidth at {dram} of peak on {gpus}: the math waits on memory",
        "verdict.memory_bound_gpu.short": "{gpus} DRAM at {dram}",
        "verdict.stopped": "Stopped",
        "verdict.stopped.summary": "{gpus} make no progress: {causes}",
        "verdict.stopped.short": "{gpus} no progress",
        "verdict.inefficient": "Busy, not efficient",
        "verdict.inefficient.summary": "{gpus} {util} busy, but SM activity {sm}, tensor cores {tensor} ({causes})",
        "verdict.inefficient.short": "{gpus} SM activity {sm}, tensor {tensor}",
        "verdict.interconnect": "Interconnect",
        "verdict.interconnect.summary": "{causes} on {gpus}",
        "verdict.interconnect.short": "{gpus} ({causes})",
        "verdict.contended": "Contended",
        "verdict.contended.summary": "{gpus} shared with {causes}",
        "verdict.contended.short": "{gpus} shared",
        "verdict.idle": "Idle",
        "verdict.idle.summary": "no job on {gpus}",
        "verdict.idle.summary.all": "no job on any of the {count} GPUs",
        "verdict.idle.summary.open": "no job on {gpus}; open here: {causes}",
        "verdict.idle.summary.all.open": "no job on any of the {count} GPUs; open here: {causes}",
        "verdict.idle.summary.watching": "no job on {gpus}; watching here: {causes}",
        "verdict.idle.summary.all.watching": "no job on any of the {count} GPUs; watching here: {causes}",
        "verdict.idle.short": "{gpus}",
        "verdict.degraded": "Degraded",
        "verdict.degraded.summary": "{causes}",
        "verdict.degraded.short": "{gpus} ({causes})",
        "verdict.mixed": "Mixed",
        "verdict.mixed.summary": "{groups}",
        "verdict.unknown": "Not known yet",
        "verdict.unknown.summary": "collecting readings: a verdict in {seconds} s",
        "verdict.unknown.summary.open": "collecting readings: a verdict in {seconds} s; open already: {causes}",
        "verdict.gpus.all": "all {count} GPUs",
        "verdict.gpus.one": "GPU {list}",
        "verdict.gpus.some": "GPUs {list}",
        "verdict.gpus.instances.one": "every MIG instance of GPU {list}",
        "verdict.gpus.instances.some": "every MIG instance of GPUs {list}",
    },
    "zh": {
        "verdict.line": "{label}：{summary}",
        "verdict.separator": "；",
        "verdict.list_separator": "、",
        "verdict.gpu_bound": "GPU 算力瓶颈",
        "verdict.gpu_bound.summary": (
            "{gpus} 利用率 {util}，频率为最大值的 {clock}；本机没有任何因素拖慢它们：提速只能来自任务本身"
            "（batch 大小、混合精度、torch.compile）"
        ),
        "verdict.gpu_bound.summary.open": (
            "{gpus} 利用率 {util}，频率为最大值的 {clock}；此处有未解决的问题，但目前没有拖慢它们：{causes}"
        ),
        "verdict.gpu_bound.summary.watching": (
            "{gpus} 利用率 {util}，频率为最大值的 {clock}；正在观察、尚未持续到足以成为问题：{causes}"
        ),
        "verdict.gpu_bound.short": "{gpus} 利用率 {util}",
        "verdict.underused": "未充分利用",
        "verdict.underused.summary": (
            "{gpus} 利用率只有 {util}，本机上没有任何因素能解释这些等待：请检查任务内部"
            "（同步、batch 太小、缓慢的 Python 步骤、其他节点）"
        ),
        "verdict.underused.summary.open": (
            "{gpus} 利用率只有 {util}；此处未解决的问题（{causes}）并不能解释这些等待：请检查任务内部"
            "（同步、batch 太小、缓慢的 Python 步骤、其他节点）"
        ),
        "verdict.underused.summary.cause": "{gpus} 利用率只有 {util}，在等待，原因：{causes}",
        "verdict.underused.summary.watching": "{gpus} 利用率只有 {util}；正在观察、尚未持续到足以成为问题：{causes}",
        "verdict.underused.summary.unsampled": (
            "{gpus} 利用率只有 {util}，本机上没有任何因素能解释这些等待：请检查任务内部"
            "（同步、batch 太小、缓慢的 Python 步骤、其他节点）；尚未采样其主线程的栈"
        ),
        "verdict.underused.summary.unread": (
            "{gpus} 利用率只有 {util}，本机上没有任何因素能解释这些等待：请检查任务内部"
            "（同步、batch 太小、缓慢的 Python 步骤、其他节点）；无法读取它的栈：{why}"
        ),
        "verdict.underused.summary.stack": (
            "{gpus} 利用率只有 {util}，本机上没有任何因素能解释这些等待；其主线程的 {samples} 个栈采样：{shares}"
        ),
        "verdict.underused.summary.gpu_sync": (
            "{gpus} 利用率只有 {util}，而其主线程在 {samples} 个栈采样中有 {share} 在等 GPU：每一步都在等 GPU，"
            "而不是在等输入；请检查主机与 GPU 之间的拷贝（pin_memory、non_blocking）和训练步中的同步"
            "（.item()、.cpu()）"
        ),
        "verdict.underused.short": "{gpus} 利用率只有 {util}，本机无法解释",
        "verdict.underused.short.cause": "{gpus} 利用率只有 {util}（{causes}）",
        "verdict.input_bound": "输入瓶颈",
        "verdict.input_bound.summary": "{gpus} 利用率只有 {util}，在等数据（{causes}）",
        "verdict.input_bound.short": "{gpus} 在等数据（{causes}）",
        "verdict.throttled": "降频",
        "verdict.throttled.summary": "{gpus} 损失了 {lost} 的频率，{seconds} 秒平均（{causes}）",
        "verdict.throttled.short": "{gpus} 频率损失 {lost}，{seconds} 秒平均（{causes}）",
        "verdict.memory_bound_gpu": "显存带宽瓶颈",
        "verdict.memory_bound_gpu.summary": "{gpus} 显存带宽达到峰值的 {dram}：计算在等显存",
        "verdict.memory_bound_gpu.short": "{gpus} 显存带宽 {dram}",
        "verdict.stopped": "已停止",
        "verdict.stopped.summary": "{gpus} 没有进展：{causes}",
        "verdict.stopped.short": "{gpus} 无进展",
        "verdict.inefficient": "忙碌但低效",
        "verdict.inefficient.summary": "{gpus} 利用率 {util}，但 SM 活跃度 {sm}，Tensor Core {tensor}（{causes}）",
        "verdict.inefficient.short": "{gpus} SM 活跃度 {sm}，Tensor Core {tensor}",
        "verdict.interconnect": "互联瓶颈",
        "verdict.interconnect.summary": "{gpus}：{causes}",
        "verdict.interconnect.short": "{gpus}（{causes}）",
        "verdict.contended": "资源争用",
        "verdict.contended.summary": "{gpus} 与{causes}共用",
        "verdict.contended.short": "{gpus} 被共用",
        "verdict.idle": "空闲",
        "verdict.idle.summary": "{gpus} 上没有任务",
        "verdict.idle.summary.all": "{count} 块 GPU 上都没有任务",
        "verdict.idle.summary.open": "{gpus} 上没有任务；此处有未解决的问题：{causes}",
        "verdict.idle.summary.all.open": "{count} 块 GPU 上都没有任务；此处有未解决的问题：{causes}",
        "verdict.idle.summary.watching": "{gpus} 上没有任务；正在观察：{causes}",
        "verdict.idle.summary.all.watching": "{count} 块 GPU 上都没有任务；正在观察：{causes}",
        "verdict.idle.short": "{gpus}",
        "verdict.degraded": "硬件异常",
        "verdict.degraded.summary": "{causes}",
        "verdict.degraded.short": "{gpus}（{causes}）",
        "verdict.mixed": "各 GPU 不同",
        "verdict.mixed.summary": "{groups}",
        "verdict.unknown": "尚无结论",
        "verdict.unknown.summary": "正在收集数据：{seconds} 秒后给出结论",
        "verdict.unknown.summary.open": "正在收集数据：{seconds} 秒后给出结论；已发现的问题：{causes}",
        "verdict.gpus.all": "全部 {count} 块 GPU",
        "verdict.gpus.one": "GPU {list}",
        "verdict.gpus.some": "GPU {list}",
        "verdict.gpus.instances.one": "GPU {list} 的全部 MIG 实例",
        "verdict.gpus.instances.some": "GPU {list} 的全部 MIG 实例",
    },
}
