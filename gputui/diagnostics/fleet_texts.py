"""The fleet findings' words, en and zh (catalog.py merges them): `straggler` and `idle_allocated` (of GPUs and of
MIG instances), the evidence labels only they use, the pieces their titles are made of (`fleet.*`) and the fleet
pane's own words (`ui.fleet.*`).

Apart from fleet_rules.py, as verdict_texts.py is from verdict.py: the catalog merges these and fleet_rules.py looks
them up through the catalog, so keeping them in fleet_rules.py would make each import the other.
"""

from __future__ import annotations

from gputui.diagnostics.locale import Texts

TEXTS: Texts = {
    "en": {
        "straggler.title": (
            "{where}: slower than the fleet's {peers} busy {model} GPUs, {lag}, mean over {seconds} s ({cause})"
        ),
        "straggler.advice": (
            "One slow GPU holds back every rank of a synchronous job: the others wait for it at each step. Fix "
            "what its node's own findings name (cooling, a power cap, a PCIe or NVLink link, data loading). With "
            "none found, compare its clocks and errors with a peer's (nvidia-smi -q -d PERFORMANCE,CLOCK,ECC), "
            "or drain the node and run the job without it."
        ),
        "straggler.title.mig": (
            "{where}: slower than the fleet's {peers} busy {model} GPUs in MIG mode, {lag}, mean over {seconds} s "
            "({cause})"
        ),
        "straggler.advice.mig": (
            "A slow board slows every MIG instance on it, and one slow instance holds back every rank of a "
            "synchronous job. Fix what its node's own findings name (cooling, a power cap, a PCIe link). With "
            "none found, compare its clocks and errors with a peer's (nvidia-smi -q -d PERFORMANCE,CLOCK,ECC), "
            "or move the jobs on its instances to another GPU."
        ),
        "idle_allocated.title": "{where}: held by {owner}, idle for {duration}",
        "idle_allocated.title.mig": "{where}: held by {owner}, idle for {duration}",
        "idle_allocated.advice": (
            "A process holds these GPUs and has not used them for minutes: a job that hangs, waits on another "
            "node, or was left running in a notebook. Ask its owner, and release GPUs it does not need: other "
            "jobs queue for them."
        ),
        "idle_allocated.advice.mig": (
            "A process holds these MIG instances and has not used them for minutes: a job that hangs, waits on "
            "another node, or was left running in a notebook. Ask its owner, and release instances it does not "
            "need: other jobs queue for a slice of this size."
        ),
        "fleet.where": "{host} GPU {gpus}",
        "fleet.where.plural": "{host} GPUs {gpus}",
        "fleet.where.instances": "{host} {instances}",
        "fleet.instance": "GPU {gpu} / {label}",
        "fleet.and": ", ",
        "fleet.no_cause": "no cause found on the node",
        "fleet.lag.sm_clock": "SM clock {amount} below the median",
        "fleet.lag.gpu_util": "utilization {amount} points below the median",
        "fleet.lag.sm_active": "SM activity {amount} below the median",
        "fleet.owner.pod": "pod {pod}",
        "fleet.owner.job": "Slurm job {job}",
        "fleet.owner.job_user": "Slurm job {job} ({user})",
        "fleet.owner.process": "{name} ({pid})",
        "fleet.owner.pid": "PID {pid}",
        "hung_job.title.rank": "{hosts}: job stopped: rank {stuck} on {host}",
        "hung_job.advice.rank": (
            "Its ranks made no progress for {duration}: the one named is held outside the collective and every "
            "other waits for it, their GPUs idle or spinning. Look at it on {host} (py-spy dump --pid, its log, "
            "the NCCL flight recorder: TORCH_NCCL_TRACE_BUFFER_SIZE, TORCH_NCCL_DUMP_ON_TIMEOUT), then kill the "
            "job and restart it from its last checkpoint."
        ),
        "hung_job.title.elsewhere": "{hosts}: job stopped: every rank read waits in the collective",
        "hung_job.advice.elsewhere": (
            "Its ranks made no progress for {duration}, and all those on the nodes read wait in the collective: the "
            "rank that does not arrive runs on a node this fleet does not read (or whose stacks could not be "
            "read). Run gputui there, or py-spy dump --pid on its ranks; then kill the job and restart it from its "
            "last checkpoint."
        ),
        "ev.gpu_model": "model",
        "ev.busy_peers": "busy GPUs of its model",
        "ev.median_sm_clock": "their median SM clock",
        "ev.median_gpu_util": "their median utilization",
        "ev.median_sm_active": "their median SM activity",
        "ev.slow_share": "time below the median by the margin",
        "ev.node_findings": "its node's findings",
        "ev.owner": "held by",
        "ev.idle_span": "idle for",
        "ev.instance_activity": "instance activity",
        "ui.fleet.title": "Fleet findings",
        "ui.fleet.none": "No fleet findings: no straggler, no GPU held and idle.",
        "ui.fleet.more": "+{count} more",
    },
    "zh": {
        "straggler.title": "{where}：比集群中 {peers} 块繁忙的 {model} 慢，{lag}，{seconds} 秒平均（{cause}）",
        "straggler.advice": (
            "同步训练中一块慢 GPU 会拖住所有 rank：其他 GPU 每一步都要等它。请先处理该节点自身诊断指出的问题"
            "（散热、功率上限、PCIe 或 NVLink 链路、数据加载）。如果没有找到原因，请将它的频率和错误计数与同型号"
            "GPU 对比（nvidia-smi -q -d PERFORMANCE,CLOCK,ECC），或者把该节点下线，让作业在其他节点上运行。"
        ),
        "straggler.title.mig": (
            "{where}：比集群中 {peers} 块 MIG 模式下繁忙的 {model} 慢，{lag}，{seconds} 秒平均（{cause}）"
        ),
        "straggler.advice.mig": (
            "一块慢 GPU 会拖慢它上面的每个 MIG 实例，而同步训练中一个慢实例会拖住所有 rank。请先处理该节点自身"
            "诊断指出的问题（散热、功率上限、PCIe 链路）。如果没有找到原因，请将它的频率和错误计数与同型号 GPU "
            "对比（nvidia-smi -q -d PERFORMANCE,CLOCK,ECC），或者把它各实例上的作业移到其他 GPU。"
        ),
        "idle_allocated.title": "{where}：被 {owner} 占用，已空闲 {duration}",
        "idle_allocated.title.mig": "{where}：被 {owner} 占用，已空闲 {duration}",
        "idle_allocated.advice": (
            "有进程占着这些 GPU，却已经好几分钟没有使用：可能是卡住的作业、在等待其他节点的作业，或者忘记关闭的"
            " notebook。请联系占用者，释放不需要的 GPU：其他作业正在排队等待。"
        ),
        "idle_allocated.advice.mig": (
            "有进程占着这些 MIG 实例，却已经好几分钟没有使用：可能是卡住的作业、在等待其他节点的作业，或者忘记"
            "关闭的 notebook。请联系占用者，释放不需要的实例：其他作业正在排队等待这种大小的切片。"
        ),
        "fleet.where": "{host} 的 GPU {gpus}",
        "fleet.where.plural": "{host} 的 GPU {gpus}",
        "fleet.where.instances": "{host} 的 {instances}",
        "fleet.instance": "GPU {gpu} / {label}",
        "fleet.and": "、",
        "fleet.no_cause": "该节点上没有找到原因",
        "fleet.lag.sm_clock": "SM 频率比中位数低 {amount}",
        "fleet.lag.gpu_util": "利用率比中位数低 {amount} 个百分点",
        "fleet.lag.sm_active": "SM 活跃度比中位数低 {amount}",
        "fleet.owner.pod": "Pod {pod}",
        "fleet.owner.job": "Slurm 作业 {job}",
        "fleet.owner.job_user": "Slurm 作业 {job}（{user}）",
        "fleet.owner.process": "{name}（{pid}）",
        "fleet.owner.pid": "PID {pid}",
        "hung_job.title.rank": "{hosts}：任务已停止：{host} 上的 rank {stuck}",
        "hung_job.advice.rank": (
            "它的各 rank 已有 {duration} 没有进展：上面指出的 rank 停在集合通信之外，其余 rank 都在等它，"
            "它们的 GPU 空闲或在空转。请到 {host} 上查看它（py-spy dump --pid、它的日志、NCCL flight recorder："
            "TORCH_NCCL_TRACE_BUFFER_SIZE、TORCH_NCCL_DUMP_ON_TIMEOUT），然后终止任务，从最近的 checkpoint 重新开始。"
        ),
        "hung_job.title.elsewhere": "{hosts}：任务已停止：读到的所有 rank 都在集合通信中等待",
        "hung_job.advice.elsewhere": (
            "它的各 rank 已有 {duration} 没有进展，所读节点上的 rank 都在集合通信中等待：没有到达的 rank 运行在"
            "本集群视图未读取（或无法读取其栈）的节点上。请在那里运行 gputui，或对其 rank 执行 py-spy dump --pid；"
            "然后终止任务，从最近的 checkpoint 重新开始。"
        ),
        "ev.gpu_model": "型号",
        "ev.busy_peers": "同型号繁忙 GPU 数",
        "ev.median_sm_clock": "它们的 SM 频率中位数",
        "ev.median_gpu_util": "它们的利用率中位数",
        "ev.median_sm_active": "它们的 SM 活跃度中位数",
        "ev.slow_share": "低于中位数超过阈值的时间",
        "ev.node_findings": "该节点自身的诊断",
        "ev.owner": "占用者",
        "ev.idle_span": "空闲时长",
        "ev.instance_activity": "实例活跃度",
        "ui.fleet.title": "集群诊断",
        "ui.fleet.none": "集群没有发现问题：没有掉队的 GPU，也没有被占用却空闲的 GPU。",
        "ui.fleet.more": "还有 {count} 项",
    },
}
