"""Every sentence the diagnostics show, in English and Simplified Chinese, in one place.

Many people who rent GPU servers abroad read Chinese first, so titles, advice, evidence labels and the pane's
own words all come from here. Keys are `<rule>.title[.<variant>]`, `<rule>.advice[.<variant>]`, `ev.<name>`
(evidence labels), `win.<name>` (evidence windows), `sev.<severity>` and `ui.<name>`. Placeholders are
`str.format` fields; both languages use the same ones (a test checks it).
"""

from __future__ import annotations

from collections.abc import Mapping

_EN: dict[str, str] = {
    # -- rules ---------------------------------------------------------------------------------------------
    "thermal_throttle.title": "GPU {gpu}: thermal throttling",
    "thermal_throttle.advice": (
        "The GPU slows itself down to stay under its temperature limit. Improve the airflow (fans running, "
        "nothing blocking intake or exhaust), lower the room temperature, leave a slot free between GPUs, "
        "clean out dust; if one GPU runs much hotter than its neighbours, have its thermal paste redone."
    ),
    "thermal_margin.title": "GPU {gpu}: within {margin} C of thermal slowdown ({slowdown} C)",
    "thermal_margin.advice": (
        "Not throttling yet, but a little more heat will slow it down. Check the airflow and fans, the room "
        "temperature and the space between GPUs before a long run."
    ),
    "power_cap.title.default": "GPU {gpu}: at its default power limit ({limit} W)",
    "power_cap.advice.default": (
        "Normal at full load: the GPU runs as fast as its default power limit allows. Nothing to fix."
    ),
    "power_cap.title.lowered": "GPU {gpu}: power capped at {limit} W, below its default {default} W",
    "power_cap.advice.lowered": (
        "Someone lowered the power limit (an admin, a start-up script or out-of-band management), so the "
        "clocks drop under load. Restore it with `sudo nvidia-smi -i {gpu} -pl {default}`, or ask the "
        "administrator why it was lowered."
    ),
    "hw_slowdown.title": "GPU {gpu}: hardware slowdown",
    "hw_slowdown.advice": (
        "The board itself forces the clocks down: a power supply problem or an external signal. Check the "
        "power supply and the GPU's power cables, and the server's BMC/IPMI event log; report it to the host."
    ),
    "power_brake.title": "GPU {gpu}: hardware power brake",
    "power_brake.advice": (
        "An external power brake signal holds the clocks down: the power supply or the chassis management "
        "asked for it. Check that every PSU works and is plugged in, and the BMC/IPMI event log."
    ),
    "clocks_low.title": "GPU {gpu}: SM clock far below its max {max} MHz, no throttle reason",
    "clocks_low.advice": (
        "Busy, yet far below its max clock with no power or thermal reason: the clocks were locked or set "
        "as application clocks. Check `nvidia-smi -q -d CLOCK`; reset with `sudo nvidia-smi -rgc` and "
        "`sudo nvidia-smi -rac`."
    ),
    "vram_pressure.title": "GPU {gpu}: memory {pct} full and rising",
    "vram_pressure.advice": (
        "Close to running out of GPU memory. Caching allocators (PyTorch) keep freed memory, so a full "
        "reading alone is normal; growth is not. Use a smaller batch, mixed precision (FP16/BF16), "
        "gradient accumulation or activation checkpointing."
    ),
    "pcie_downgrade.title": "GPU {gpu}: PCIe link at {current} under load (max {max})",
    "pcie_downgrade.advice": (
        "The link trained below its maximum while the GPU is busy (at idle this is normal). Reseat the "
        "GPU, try another slot, replace or remove the riser, check the BIOS PCIe settings, and compare "
        "with `nvidia-smi topo -m`."
    ),
    "pcie_slot_limited.title": "GPU {gpu}: the slot allows PCIe Gen{system}, the GPU supports Gen{gpu_max}",
    "pcie_slot_limited.advice": (
        "The slot, riser or BIOS setting limits the link below what the GPU can do. Try another slot, "
        "a riser of the right generation, or the BIOS PCIe speed setting; see `nvidia-smi topo -m`."
    ),
    "pcie_errors.title": "GPU {gpu}: PCIe link errors (+{count} replays)",
    "pcie_errors.advice": (
        "The link keeps retrying transfers. Reseat the GPU, check the riser and the slot, update the BIOS; "
        "steady growth points to a bad slot or riser."
    ),
    "pcie_saturated.title": "GPU {gpu}: PCIe {direction} saturated",
    "pcie_saturated.advice": (
        "Host-GPU copies run at the link's limit. Keep data on the GPU, use pinned memory and larger "
        "transfers, overlap copies with compute, and check the link runs at its full generation and width."
    ),
    "starvation_cpu.title": "GPU {gpu}: starved by the CPU ({name})",
    "starvation_cpu.advice": (
        "The GPU waits for input the CPU cannot prepare fast enough ({children} data-loader workers). Raise "
        "DataLoader num_workers, set pin_memory=True, prefetch (prefetch_factor), and move preprocessing "
        "and augmentation to the GPU."
    ),
    "starvation_io.title": "GPU {gpu}: starved by disk I/O",
    "starvation_io.advice": (
        "The GPU waits for data the disk cannot deliver fast enough. Copy the dataset to a local SSD, cache "
        "it in memory, use more DataLoader workers, and read larger sequential files instead of many small "
        "ones (WebDataset, LMDB, TFRecord)."
    ),
    "starvation_net.title": "GPU {gpu}: starved by the network",
    "starvation_net.advice": (
        "Network receive runs near the link speed while the GPU waits. Stage the data on a local disk, "
        "cache it, compress it, or use a faster link."
    ),
    "gpu_contention.title": "GPU {gpu}: shared by {count} processes ({users})",
    "gpu_contention.advice": (
        "Processes compete for this GPU's time and memory. Move one to a free GPU (CUDA_VISIBLE_DEVICES), "
        "agree with the other user, or stop a forgotten notebook."
    ),
    "cpu_contention.title": "GPU {gpu}: waits while other processes fill the host CPUs",
    "cpu_contention.advice": (
        "The host's CPUs are busy with other work while this GPU waits. Find the busy processes with `top`, "
        "lower their priority (nice) or give the training job its own cores (taskset)."
    ),
    "imbalance.title": "GPUs {gpus}: one job, uneven load",
    "imbalance.advice": (
        "One job uses its GPUs unevenly. With DataParallel the first GPU gathers the outputs: switch to "
        "DistributedDataParallel; otherwise balance the batch or the model split across the GPUs."
    ),
    "host_swap.title": "Host is swapping",
    "host_swap.advice": (
        "The host ran out of memory and pages to disk. Use fewer DataLoader workers or a smaller prefetch, "
        "cache less data in RAM, or add memory."
    ),
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
    "nvml_unavailable.title": "The NVIDIA driver cannot be read",
    "nvml_unavailable.advice": (
        "Check that the NVIDIA driver is installed and loaded (`nvidia-smi`); after a driver update, reboot or "
        "reload the kernel module; in a container, start it with GPU access (e.g. `docker run --gpus all`)."
    ),
    "ecc_errors.title": "GPU {gpu}: uncorrected memory errors",
    "ecc_errors.advice": (
        "Uncorrected ECC errors or pending page retirement: results on this GPU may be wrong. Drain the "
        "jobs, reset the GPU (`sudo nvidia-smi -i {gpu} -r`) or reboot; if it comes back, replace the board."
    ),
    "gpu_lost.title": "GPU {gpu} fell off the bus",
    "gpu_lost.advice": (
        "The driver can no longer reach this GPU (GpuIsLost): jobs on it have failed or hang. Check the kernel "
        "log (`sudo dmesg | grep -i xid`, XID 79), then power, cooling and the PCIe seating or riser; a reset "
        "(`sudo nvidia-smi -i {gpu} -r`) or a reboot brings it back. If it happens again, report the board."
    ),
    "xid.title": "GPU {gpu}: XID error {codes}",
    "xid.advice": (
        "The driver reported an XID error. Look the code up in NVIDIA's XID catalog and the kernel log "
        "(`sudo dmesg | grep -i xid`): 79 means the GPU fell off the bus, 48/63/64/94/95 memory errors, "
        "13/31/43 are usually faults of the application."
    ),
    "idle_allocation.title": "GPU {gpu}: {name} holds {memory} and does nothing",
    "idle_allocation.advice": (
        "A process has held GPU memory at 0% utilization for minutes: a forgotten notebook or a job that "
        "did not exit. Stop it or restart its kernel to free the GPU."
    ),
    # -- evidence --------------------------------------------------------------------------------------------
    "ev.temperature": "temperature",
    "ev.slowdown_threshold": "slowdown threshold",
    "ev.throttled_share": "time throttled",
    "ev.sm_clock": "SM clock",
    "ev.max_sm_clock": "max SM clock",
    "ev.power": "power draw",
    "ev.power_limit": "enforced power limit",
    "ev.default_power_limit": "default power limit",
    "ev.memory_used": "memory used",
    "ev.memory_growth": "memory growth",
    "ev.pcie_link": "PCIe link",
    "ev.pcie_max_link": "max PCIe link",
    "ev.pcie_gpu_max_gen": "GPU's own max PCIe generation",
    "ev.link_bandwidth": "link bandwidth (theory)",
    "ev.pcie_replays": "PCIe replays",
    "ev.pcie_tx": "PCIe TX",
    "ev.pcie_rx": "PCIe RX",
    "ev.saturated_share": "time above the limit",
    "ev.gpu_util": "GPU utilization",
    "ev.process": "process",
    "ev.process_cpu": "process CPU (100 = one core)",
    "ev.workers": "data-loader workers",
    "ev.host_cpu": "host CPU",
    "ev.others_cpu": "CPU used by other processes",
    "ev.iowait": "iowait",
    "ev.disk_busy": "disk busy",
    "ev.disk_read": "disk read",
    "ev.process_read": "process read",
    "ev.net_rx": "network receive",
    "ev.net_link": "link speed",
    "ev.processes": "processes",
    "ev.users": "users",
    "ev.util_spread": "utilization spread",
    "ev.gpu_utils": "utilization per GPU",
    "ev.swap_in": "swap in",
    "ev.swap_out": "swap out",
    "ev.torch_cuda": "torch built for CUDA",
    "ev.driver_cuda": "driver supports CUDA",
    "ev.xid_codes": "XID codes",
    "ev.gpu_error": "driver error",
    "ev.ecc_uncorrected": "uncorrected ECC errors",
    "ev.retired_pending": "page retirement pending",
    "ev.process_memory": "process GPU memory",
    "ev.reason": "reason",
    "win.now": "now",
    "win.mean": "mean over {seconds} s",
    "win.max": "max over {seconds} s",
    "win.change": "change over {seconds} s",
    "win.share": "of the last {seconds} s",
    "win.static": "fixed",
    # -- severities and the pane ---------------------------------------------------------------------------
    "sev.critical": "CRIT",
    "sev.warning": "WARN",
    "sev.info": "INFO",
    "ui.title": "Diagnostics",
    "ui.none": "No findings: nothing slows the GPUs right now.",
    "ui.count.critical": "{count} critical",
    "ui.count.warning": "{count} warning",
    "ui.count.info": "{count} info",
    "ui.history": "cleared",
    "ui.advice": "Advice",
    "ui.lasted": "lasted {duration}",
    "ui.hint": "up/down: choose  enter: advice",
    # -- the diagnose command ------------------------------------------------------------------------------
    "cli.simulated": "SIMULATED data (scenario: {scenario}); not this machine",
    "cli.sampled": "{host}: sampled {seconds} s",
    "cli.none": "No findings above info: the GPUs look healthy.",
    "cli.advice": "advice",
    "cli.since": "for {duration}",
}

_ZH: dict[str, str] = {
    "thermal_throttle.title": "GPU {gpu}：过热降频",
    "thermal_throttle.advice": (
        "GPU 为了不超过温度上限而主动降低频率。请改善风道（风扇正常运转，进出风口无遮挡），降低机房温度，"
        "GPU 之间留出空槽，清理灰尘；如果某一块 GPU 明显比相邻的更热，请重新涂抹导热硅脂。"
    ),
    "thermal_margin.title": "GPU {gpu}：距离过热降频（{slowdown} C）不到 {margin} C",
    "thermal_margin.advice": ("还没有降频，但再热一点就会降频。长时间训练前请检查风道和风扇、机房温度以及 GPU 间距。"),
    "power_cap.title.default": "GPU {gpu}：达到默认功耗上限（{limit} W）",
    "power_cap.advice.default": "满载时属于正常现象：GPU 在默认功耗上限内全速运行，无需处理。",
    "power_cap.title.lowered": "GPU {gpu}：功耗被限制在 {limit} W，低于默认的 {default} W",
    "power_cap.advice.lowered": (
        "功耗上限被调低了（管理员、开机脚本或带外管理），负载下频率会下降。可用 "
        "`sudo nvidia-smi -i {gpu} -pl {default}` 恢复，或询问管理员为何调低。"
    ),
    "hw_slowdown.title": "GPU {gpu}：硬件强制降频",
    "hw_slowdown.advice": (
        "板卡本身在强制降频：电源问题或外部信号。请检查电源和 GPU 供电线，以及服务器 BMC/IPMI 事件日志，"
        "并报告给机房或服务商。"
    ),
    "power_brake.title": "GPU {gpu}：硬件功率制动",
    "power_brake.advice": (
        "外部功率制动信号压低了频率：由电源或机箱管理发出。请检查每个电源是否正常并已接好，以及 BMC/IPMI 事件日志。"
    ),
    "clocks_low.title": "GPU {gpu}：SM 频率远低于最大值 {max} MHz，且没有降频原因",
    "clocks_low.advice": (
        "GPU 正忙，但频率远低于最大值，又没有功耗或温度原因：频率被锁定或设置了应用频率。请查看 "
        "`nvidia-smi -q -d CLOCK`，用 `sudo nvidia-smi -rgc` 和 `sudo nvidia-smi -rac` 复位。"
    ),
    "vram_pressure.title": "GPU {gpu}：显存已用 {pct} 且仍在增长",
    "vram_pressure.advice": (
        "显存快要耗尽。缓存分配器（PyTorch）会保留已释放的显存，所以单看占满是正常的，但持续增长不正常。"
        "请减小 batch size，使用混合精度（FP16/BF16）、梯度累积或激活检查点（activation checkpointing）。"
    ),
    "pcie_downgrade.title": "GPU {gpu}：负载下 PCIe 链路只有 {current}（最大 {max}）",
    "pcie_downgrade.advice": (
        "GPU 忙碌时链路低于最大速率（空闲时降速是正常的）。请重新插拔 GPU、换一个插槽、更换或去掉转接卡（riser），"
        "检查 BIOS 中的 PCIe 设置，并用 `nvidia-smi topo -m` 对比。"
    ),
    "pcie_slot_limited.title": "GPU {gpu}：插槽只支持 PCIe Gen{system}，GPU 支持 Gen{gpu_max}",
    "pcie_slot_limited.advice": (
        "插槽、转接卡或 BIOS 设置限制了链路速率。请换插槽、使用对应代数的转接卡或调整 BIOS 的 PCIe 速率；"
        "参见 `nvidia-smi topo -m`。"
    ),
    "pcie_errors.title": "GPU {gpu}：PCIe 链路错误（重传 +{count}）",
    "pcie_errors.advice": (
        "链路在不断重传。请重新插拔 GPU，检查转接卡和插槽，更新 BIOS；持续增长说明插槽或转接卡有问题。"
    ),
    "pcie_saturated.title": "GPU {gpu}：PCIe {direction} 饱和",
    "pcie_saturated.advice": (
        "主机与 GPU 之间的拷贝已达到链路上限。请尽量把数据留在 GPU 上，使用锁页内存（pinned memory）和更大的传输，"
        "让拷贝与计算重叠，并确认链路运行在满代数和满宽度。"
    ),
    "starvation_cpu.title": "GPU {gpu}：被 CPU 拖慢（{name}）",
    "starvation_cpu.advice": (
        "GPU 在等 CPU 准备数据（数据加载 worker 数：{children}）。请增大 DataLoader 的 num_workers，"
        "设置 pin_memory=True，开启预取（prefetch_factor），并把预处理和数据增强移到 GPU 上。"
    ),
    "starvation_io.title": "GPU {gpu}：被磁盘 I/O 拖慢",
    "starvation_io.advice": (
        "GPU 在等磁盘读数据。请把数据集拷到本地 SSD，缓存到内存，增加 DataLoader worker，"
        "并改用大的顺序读文件代替大量小文件（WebDataset、LMDB、TFRecord）。"
    ),
    "starvation_net.title": "GPU {gpu}：被网络拖慢",
    "starvation_net.advice": (
        "GPU 等待时网络接收接近链路速率。请先把数据放到本地磁盘、做缓存、压缩，或使用更快的网络。"
    ),
    "gpu_contention.title": "GPU {gpu}：被 {count} 个进程共用（{users}）",
    "gpu_contention.advice": (
        "多个进程在争用这块 GPU 的算力和显存。请把其中一个移到空闲的 GPU（CUDA_VISIBLE_DEVICES），"
        "与其他用户协商，或关掉遗忘的 notebook。"
    ),
    "cpu_contention.title": "GPU {gpu}：主机 CPU 被其他进程占满",
    "cpu_contention.advice": (
        "GPU 等待时主机 CPU 被其他任务占满。请用 `top` 找出这些进程，降低其优先级（nice），"
        "或为训练任务绑定专用核心（taskset）。"
    ),
    "imbalance.title": "GPU {gpus}：同一任务负载不均",
    "imbalance.advice": (
        "同一个任务的各 GPU 负载不均。使用 DataParallel 时第一块 GPU 负责汇总输出：请改用 "
        "DistributedDataParallel；否则请在各 GPU 间平衡 batch 或模型切分。"
    ),
    "host_swap.title": "主机正在使用交换分区",
    "host_swap.advice": (
        "主机内存不足，正在换页到磁盘。请减少 DataLoader worker 或预取量，少在内存中缓存数据，或增加内存。"
    ),
    "cuda_mismatch.title.major": "torch 基于 CUDA {torch} 构建，驱动只支持 CUDA {driver}",
    "cuda_mismatch.advice.major": (
        "这个 torch 无法在当前驱动上运行。请安装基于 CUDA {driver} 或更早版本构建的 torch，或升级 NVIDIA 驱动。"
    ),
    "cuda_mismatch.title.minor": "torch 基于 CUDA {torch} 构建，驱动只支持 CUDA {driver}",
    "cuda_mismatch.advice.minor": (
        "可以在 CUDA 小版本兼容模式下运行，但功能受限（需要 PTX JIT 的内核会失败）。请升级驱动，"
        "或安装基于 CUDA {driver} 构建的 torch。"
    ),
    "nvml_unavailable.title": "无法读取 NVIDIA 驱动",
    "nvml_unavailable.advice": (
        "请确认 NVIDIA 驱动已安装并已加载（`nvidia-smi`）；更新驱动后请重启或重新加载内核模块；"
        "在容器中请以 GPU 权限启动（例如 `docker run --gpus all`）。"
    ),
    "ecc_errors.title": "GPU {gpu}：存在不可纠正的显存错误",
    "ecc_errors.advice": (
        "存在不可纠正的 ECC 错误或待退役的页：这块 GPU 的计算结果可能出错。请迁走任务，复位 GPU"
        "（`sudo nvidia-smi -i {gpu} -r`）或重启；如果再次出现，请更换板卡。"
    ),
    "gpu_lost.title": "GPU {gpu} 已掉卡（驱动无法访问）",
    "gpu_lost.advice": (
        "驱动已无法访问这块 GPU（GpuIsLost）：其上的任务已失败或卡住。请查看内核日志"
        "（`sudo dmesg | grep -i xid`，XID 79），再检查供电、散热以及 PCIe 插槽或转接卡是否插好；"
        "复位（`sudo nvidia-smi -i {gpu} -r`）或重启可恢复。如果再次发生，请向机房报告这块板卡。"
    ),
    "xid.title": "GPU {gpu}：XID 错误 {codes}",
    "xid.advice": (
        "驱动报告了 XID 错误。请在 NVIDIA 的 XID 列表和内核日志（`sudo dmesg | grep -i xid`）中查找该代码："
        "79 表示 GPU 掉卡，48/63/64/94/95 为显存错误，13/31/43 通常是应用程序的错误。"
    ),
    "idle_allocation.title": "GPU {gpu}：{name} 占用 {memory} 显存却没有在计算",
    "idle_allocation.advice": (
        "有进程占用显存且利用率为 0% 已持续数分钟：可能是遗忘的 notebook 或没有退出的任务。"
        "请结束它或重启其内核以释放 GPU。"
    ),
    "ev.temperature": "温度",
    "ev.slowdown_threshold": "降频温度阈值",
    "ev.throttled_share": "降频时间占比",
    "ev.sm_clock": "SM 频率",
    "ev.max_sm_clock": "最大 SM 频率",
    "ev.power": "功耗",
    "ev.power_limit": "当前功耗上限",
    "ev.default_power_limit": "默认功耗上限",
    "ev.memory_used": "显存已用",
    "ev.memory_growth": "显存增长",
    "ev.pcie_link": "PCIe 链路",
    "ev.pcie_max_link": "PCIe 最大链路",
    "ev.pcie_gpu_max_gen": "GPU 自身支持的 PCIe 代数",
    "ev.link_bandwidth": "链路带宽（理论值）",
    "ev.pcie_replays": "PCIe 重传次数",
    "ev.pcie_tx": "PCIe 发送",
    "ev.pcie_rx": "PCIe 接收",
    "ev.saturated_share": "超过上限的时间",
    "ev.gpu_util": "GPU 利用率",
    "ev.process": "进程",
    "ev.process_cpu": "进程 CPU（100 = 一个核心）",
    "ev.workers": "数据加载 worker 数",
    "ev.host_cpu": "主机 CPU",
    "ev.others_cpu": "其他进程的 CPU",
    "ev.iowait": "iowait",
    "ev.disk_busy": "磁盘繁忙",
    "ev.disk_read": "磁盘读取",
    "ev.process_read": "进程读取",
    "ev.net_rx": "网络接收",
    "ev.net_link": "链路速率",
    "ev.processes": "进程",
    "ev.users": "用户",
    "ev.util_spread": "利用率差距",
    "ev.gpu_utils": "各 GPU 利用率",
    "ev.swap_in": "换入",
    "ev.swap_out": "换出",
    "ev.torch_cuda": "torch 构建所用 CUDA",
    "ev.driver_cuda": "驱动支持的 CUDA",
    "ev.xid_codes": "XID 代码",
    "ev.gpu_error": "驱动错误",
    "ev.ecc_uncorrected": "不可纠正 ECC 错误",
    "ev.retired_pending": "待退役页",
    "ev.process_memory": "进程显存",
    "ev.reason": "原因",
    "win.now": "当前",
    "win.mean": "{seconds} 秒平均",
    "win.max": "{seconds} 秒最大",
    "win.change": "{seconds} 秒内变化",
    "win.share": "最近 {seconds} 秒",
    "win.static": "固定",
    "sev.critical": "严重",
    "sev.warning": "警告",
    "sev.info": "提示",
    "ui.title": "诊断",
    "ui.none": "没有发现问题：目前没有什么拖慢 GPU。",
    "ui.count.critical": "严重 {count}",
    "ui.count.warning": "警告 {count}",
    "ui.count.info": "提示 {count}",
    "ui.history": "已解除",
    "ui.advice": "建议",
    "ui.lasted": "持续 {duration}",
    "ui.hint": "上/下：选择  回车：查看建议",
    "cli.simulated": "SIMULATED 模拟数据（场景：{scenario}），并非本机",
    "cli.sampled": "{host}：采样 {seconds} 秒",
    "cli.none": "没有高于提示级别的问题：GPU 状态良好。",
    "cli.advice": "建议",
    "cli.since": "持续 {duration}",
}

MESSAGES: Mapping[str, Mapping[str, str]] = {"en": _EN, "zh": _ZH}


def text(key: str, lang: str = "en", **params: object) -> str:
    """The message `key` in `lang` with its placeholders filled; English when a language lacks it."""
    table = MESSAGES.get(lang, _EN)
    template = table.get(key) or _EN[key]
    return template.format(**params) if params else template
