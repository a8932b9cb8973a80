"""Many GPUs, one job: NVLinks down (`nvlink_down`) or erring (`nvlink_errors`), a rank on the far CPU socket
(`numa_mismatch`), GPUs that cannot copy to each other directly (`p2p_unavailable`).

The topology (`SystemInfo.topology`) is read once, its tables in the order of `Snapshot.gpu_info`; link counts
and error counters come on the slow cadence. Boards without NVLink report None and the NVLink rules say
nothing of them. On an NVSwitch board every link of every GPU reaches the fabric, so a GPU short of any link
is degraded, even when all are short alike (a failed NVSwitch or fabric manager looks like that). GPUs bridged
directly to each other are judged against their peers instead: a board or SKU that wires fewer links than
NVML lists (every GPU short alike) is how the machine is built, not a fault.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator

from gputui.diagnostics.findings import Severity
from gputui.diagnostics.locale import Texts
from gputui.diagnostics.rules.base import Hit, Rule, Window, ev, rounded
from gputui.diagnostics.rules.sharing import jobs
from gputui.diagnostics.thresholds import Thresholds
from gputui.formatting import fmt_ranges
from gputui.model import NVSWITCH, GpuSample, Topology, parse_cpus

_NV = re.compile(r"NV(\d+)")


def _topology(w: Window) -> tuple[Topology, dict[int, int]] | None:
    """The topology and each GPU's place in its tables; None when not read or not of these GPUs."""
    topo = w.latest.system.topology
    order = [info.index for info in w.latest.gpu_info]
    if topo is None or len(topo.matrix) != len(order) or len(topo.p2p) != len(order):
        return None
    return topo, {index: at for at, index in enumerate(order)}


def _nv(path: str | None) -> int | None:
    match = _NV.fullmatch(path or "")
    return int(match.group(1)) if match else None


def nvlink_down(w: Window, th: Thresholds) -> Iterator[Hit]:
    links: dict[int, tuple[int, int]] = {}  # GPU -> (active, total), where both are known
    switched: set[int] = set()  # links reach an NVSwitch; a GPU with none up may read no remote: peers judge it
    for g in w.gpus():
        info = w.info(g.index)
        if info is not None and info.nvlink_links_total and g.nvlink_links_active is not None:
            links[g.index] = (g.nvlink_links_active, info.nvlink_links_total)
            if NVSWITCH in (info.nvlink_remote or ()):
                switched.add(g.index)
    for index, (active, total) in links.items():
        peers = {i: counts for i, counts in links.items() if i != index}
        full_peer = any(a >= t for a, t in peers.values())
        if active >= total or not (full_peer or index in switched):
            continue  # all up, or bridged and no peer has all its links either: the board's wiring, not a fault
        yield Hit(
            gpus=(index,),
            pids=_pids(w, index),
            value=active,
            variant="" if full_peer else "fabric" if peers else "switch",
            params={"gpu": index, "active": active, "total": total},
            evidence=(
                ev("nvlink_links", f"{active}/{total}"),
                ev("board_links", _by_gpu(links) if peers else None),
            ),
        )
    yield from _short_in_matrix(w, set(links))


def _by_gpu(links: dict[int, tuple[int, int]]) -> str:
    """Every GPU's links up, GPUs alike as one range: "0-2,4-7: 18/18; 3: 16/18". The same words for each GPU
    of the board, so findings grouped over GPUs show them once, and each figure says whose it is."""
    gpus: dict[str, list[int]] = {}
    for index, (active, total) in sorted(links.items()):
        gpus.setdefault(f"{active}/{total}", []).append(index)
    return "; ".join(f"{fmt_ranges(members)}: {figure}" for figure, members in gpus.items())


def _short_in_matrix(w: Window, counted: set[int]) -> Iterator[Hit]:
    """Where live link counts are missing: a GPU whose pairs are all NV<n> below the NV<m> every pair without it
    has. Read once, the matrix says how the links stood at start. Direct-wired boards (a hybrid cube mesh) have
    pairs of different counts by design: the pairs without the GPU then differ too, and nothing is said."""
    found = _topology(w)
    if found is None:
        return
    topo, place = found
    gpus = [g.index for g in w.gpus() if g.index not in counted and g.index in place]
    for index in gpus:
        me = place[index]
        others = [at for at in place.values() if at != me]
        mine = [_nv(topo.matrix[me][at]) for at in others]
        rest = {_nv(topo.matrix[a][b]) for a in others for b in others if a < b}
        if len(rest) != 1:
            continue  # pairs without this GPU differ (or there are none): no count to hold it against
        full = rest.pop()
        if full is None or any(n is None or n >= full for n in mine):
            continue
        yield Hit(
            gpus=(index,),
            pids=_pids(w, index),
            variant="matrix",
            value=min(n for n in mine if n is not None),
            params={"gpu": index, "mine": topo.matrix[me][others[0]], "full": f"NV{full}"},
            evidence=(
                ev("pair_links", ", ".join(f"{_gpu_at(w, at)}: {topo.matrix[me][at]}" for at in others), "", "static"),
                ev("other_pairs", f"NV{full}", "", "static"),
            ),
        )


def _gpu_at(w: Window, at: int) -> int:
    return w.latest.gpu_info[at].index


def _pids(w: Window, index: int) -> tuple[int, ...]:
    sample = next((g for g in w.gpus() if g.index == index), None)
    return w.pids(sample) if sample is not None else ()


def nvlink_errors(w: Window, th: Thresholds) -> Iterator[Hit]:
    for g in w.gpus():
        series = w.series(g.index)
        replay = _rise(series, "nvlink_replay_errors")
        recovery = _rise(series, "nvlink_recovery_errors")
        crc = _rise(series, "nvlink_crc_errors")
        count = sum(n for n in (replay, recovery, crc) if n)
        if not count:
            continue
        yield Hit(
            gpus=(g.index,),
            pids=w.pids(g),
            value=count,
            params={"gpu": g.index, "count": count},
            evidence=(
                ev("nvlink_replay_rise", replay, "", "change"),
                ev("nvlink_recovery_rise", recovery, "", "change"),
                ev("nvlink_crc_rise", crc, "", "change"),
            ),
        )


def _rise(series: list[GpuSample], field: str) -> int | None:
    """How much a cumulative counter rose from the window's first reading to its last; None when it was not
    read twice, 0 when it went back (a reset)."""
    first = next((i for i, sample in enumerate(series) if getattr(sample, field) is not None), None)
    last = next((i for i in range(len(series) - 1, -1, -1) if getattr(series[i], field) is not None), None)
    if first is None or last is None or first == last:
        return None
    rise: int = getattr(series[last], field) - getattr(series[first], field)
    return max(0, rise)


def numa_mismatch(w: Window, th: Thresholds) -> Iterator[Hit]:
    """A rank fed from the other socket: pinned there (a warning), or run there most of the window while its GPU
    waited (a warning: each copy crosses the link between the sockets); one the scheduler only moves between the
    sockets, or that keeps its GPU busy anyway, gets the advice at info level. A process that drives GPUs on both
    sockets (nn.DataParallel, one process for the whole box) cannot sit near all of them: it is far only when
    it runs away from every one. A host with one NUMA node has no other socket: whatever CPUs the driver's
    affinity mask names, none is away from the GPU."""
    found = _topology(w)
    if found is None or found[0].numa_nodes == 1:
        return
    topo, place = found
    near_of = {i: _near(topo, at) for i, at in place.items()}
    holders: dict[int, set[int]] = {}
    for g in w.gpus():
        for pid in w.pids(g):
            holders.setdefault(pid, set()).add(g.index)
    for g in w.gpus():
        at = place.get(g.index)
        near = near_of.get(g.index)
        if at is None or near is None:
            continue
        util = w.mean(g.index, "utilization_gpu_pct")
        waited = util is not None and util < th.verdict_busy_util_pct
        for pid in w.pids(g):
            reach = frozenset().union(*(near_of.get(i) or () for i in holders[pid]))  # near included: pid holds g
            far, pinned = _placement(w, pid, reach)
            if pinned >= th.sustained_share:
                variant, severity = "", None
            elif far >= th.sustained_share and waited:
                variant, severity = "far", None
            elif far >= th.numa_drift_share:
                variant, severity = "drift", Severity.INFO
            else:
                continue
            proc = w.host.process(pid)
            allowed = proc.cpus_allowed if proc is not None else None
            node = topo.numa_node[at] if at < len(topo.numa_node) else None
            yield Hit(
                gpus=(g.index,),
                pids=(pid,),
                value=round(100.0 * far, 1),
                severity=severity,
                variant=variant,
                params={"gpu": g.index, "node": "?" if node is None else node},
                evidence=(
                    ev("gpu_cpus", topo.cpu_affinity[at], "", "static"),
                    ev("last_cpu", proc.last_cpu if proc is not None else None),
                    ev("allowed_near", None if allowed is None else f"{len(near & set(allowed))}/{len(allowed)}"),
                    ev("far_share", round(100.0 * far, 1), "%", "share"),
                    ev("gpu_util", rounded(util), "%", "mean"),
                ),
            )


def _near(topo: Topology, at: int) -> frozenset[int] | None:
    """The CPUs near the GPU at position `at` of the topology's tables; None when not reported."""
    return _cpu_set(topo.cpu_affinity[at]) if at < len(topo.cpu_affinity) else None


@functools.lru_cache(maxsize=64)
def _cpu_set(cpulist: str) -> frozenset[int] | None:
    """A cpulist as a set, parsed once: the topology is read once, and judged every tick."""
    cpus = parse_cpus(cpulist)
    return frozenset(cpus) if cpus is not None else None


def _placement(w: Window, pid: int, near: frozenset[int]) -> tuple[float, float]:
    """Shares of the window in which the process ran away from the GPU's CPUs (it last ran outside them, or may
    run only outside them), and in which it was pinned away (taskset, numactl, a cpuset: far whatever the
    scheduler does)."""
    far = pinned = 0
    outside: dict[int, bool] = {}  # by id: a process's CPU list is one tuple from one read to the next
    for proc in w.proc_series(pid):
        allowed, away = proc.cpus_allowed, False
        if allowed is not None:
            known = outside.get(id(allowed))
            away = outside[id(allowed)] = near.isdisjoint(allowed) if known is None else known
        pinned += away
        far += away or (proc.last_cpu is not None and proc.last_cpu not in near)
    return far / len(w.snapshots), pinned / len(w.snapshots)


def p2p_unavailable(w: Window, th: Thresholds) -> Iterator[Hit]:
    found = _topology(w)
    if found is None:
        return
    topo, place = found
    for gpus, pids in jobs(w):
        order = sorted(i for i in gpus if i in place)
        pairs = [(a, b) for n, a in enumerate(order) for b in order[n + 1 :]]
        blocked = [(a, b) for a, b in pairs if topo.p2p[place[a]][place[b]] is False]
        across = [(a, b) for a, b in pairs if topo.matrix[place[a]][place[b]] == "SYS"]
        if not blocked and not (across and all(topo.p2p[place[a]][place[b]] for a, b in pairs)):
            continue
        shown = blocked or across
        yield Hit(
            gpus=tuple(order),
            pids=tuple(sorted(pids)),
            value=len(shown),
            severity=None if blocked else Severity.INFO,
            variant="" if blocked else "sys",
            params={"gpus": fmt_ranges(order), "pairs": len(shown)},
            evidence=(
                ev("no_p2p_pairs", _pairs(blocked) or None, "", "static"),
                ev(
                    "pair_paths",
                    ", ".join(f"{a}-{b}: {topo.matrix[place[a]][place[b]]}" for a, b in shown),
                    "",
                    "static",
                ),
            ),
        )


def _pairs(pairs: list[tuple[int, int]]) -> str:
    return ", ".join(f"{a}-{b}" for a, b in pairs)


RULES: tuple[Rule, ...] = (
    Rule(nvlink_down, Severity.CRITICAL, metric="nvlink_links_active", higher_is_worse=False, bound="interconnect"),
    Rule(nvlink_errors, Severity.WARNING),
    Rule(numa_mismatch, Severity.WARNING, bound="input_bound"),
    Rule(p2p_unavailable, Severity.WARNING, bound="interconnect"),
)

TEXTS: Texts = {
    "en": {
        "nvlink_down.title": "GPU {gpu}: {active} of {total} NVLinks up, its peers have all theirs",
        "nvlink_down.title.matrix": "GPU {gpu}: {mine} to its peers, {full} between the others",
        "nvlink_down.advice": (
            "Links of this GPU are down, so NCCL all-reduce crawls while every GPU reads busy. Check the fabric "
            "manager on NVSwitch machines (systemctl status nvidia-fabricmanager; nvidia-smi nvlink -s), reseat "
            "the GPU or its bridge, and report the GPU to the host provider."
        ),
        "nvlink_down.advice.matrix": (
            "This GPU had fewer NVLinks to its peers than the others when gputui started. Check the fabric "
            "manager on NVSwitch machines (systemctl status nvidia-fabricmanager; nvidia-smi nvlink -s), reseat "
            "the GPU or its bridge, and report the GPU to the host provider."
        ),
        "nvlink_down.title.fabric": (
            "GPU {gpu}: {active} of {total} NVLinks up, every peer short too: the NVSwitch fabric"
        ),
        "nvlink_down.advice.fabric": (
            "Every GPU here reaches the others through NVSwitches, and none has all its links up: a fault in the "
            "fabric (an NVSwitch, its baseboard or the fabric manager) rather than in one GPU. NCCL all-reduce "
            "crawls while every GPU reads busy. Check systemctl status nvidia-fabricmanager and its log, and "
            "nvidia-smi nvlink -s on every GPU; restart the fabric manager, and report the board to the host "
            "provider if links stay down."
        ),
        "nvlink_down.title.switch": "GPU {gpu}: {active} of {total} NVLinks to the NVSwitches up",
        "nvlink_down.advice.switch": (
            "On an NVSwitch board every link of a GPU should be up; NCCL runs at the pace of the slowest GPU. "
            "Check the fabric manager (systemctl status nvidia-fabricmanager; nvidia-smi nvlink -s), compare with "
            "the other GPUs of the board, reseat the GPU, and report it to the host provider."
        ),
        "nvlink_down.cause": "NVLinks down",
        "nvlink_errors.title": "GPU {gpu}: {count} new NVLink errors",
        "nvlink_errors.advice": (
            "Replays and recoveries resend data, so the links run slower; CRC errors that keep rising point to "
            "a bad link or connector. Watch nvidia-smi nvlink -e; if they keep rising, report the GPU to the "
            "host provider."
        ),
        "nvlink_errors.cause": "NVLink errors",
        "numa_mismatch.title": "GPU {gpu}: its process is pinned to CPUs away from the GPU (NUMA node {node})",
        "numa_mismatch.title.far": "GPU {gpu}: its process runs on CPUs away from the GPU (NUMA node {node}) while "
        "the GPU waits",
        "numa_mismatch.title.drift": "GPU {gpu}: its process moves between CPUs near and away from the GPU (NUMA node "
        "{node})",
        "numa_mismatch.advice": (
            "Every copy between host and GPU crosses the link between the CPU sockets. Bind each rank to the "
            "CPUs near its GPU: numactl --cpunodebind={node}, or taskset -c with the GPU's CPUs; with torchrun, "
            "keep CUDA_VISIBLE_DEVICES in the order of the ranks and bind each local rank to its GPU's node."
        ),
        "numa_mismatch.advice.far": (
            "The scheduler ran this process on the other CPU socket most of the time while its GPU waited, so its "
            "copies cross the link between the sockets. Bind each rank to the CPUs near its GPU: numactl "
            "--cpunodebind={node}, or taskset -c with the GPU's CPUs (torchrun: one node per local rank)."
        ),
        "numa_mismatch.advice.drift": (
            "Not slowing the GPU now: the scheduler moves this unpinned process between the CPU sockets. For steady "
            "copies, bind it to the CPUs near its GPU (numactl --cpunodebind={node}, or taskset -c)."
        ),
        "numa_mismatch.cause": "a rank on CPUs away from its GPU",
        "p2p_unavailable.title": "GPUs {gpus}: one job, no P2P between {pairs} pairs",
        "p2p_unavailable.title.sys": "GPUs {gpus}: one job, P2P across CPU sockets on {pairs} pairs",
        "p2p_unavailable.advice": (
            "These GPUs cannot copy to each other directly: every gradient goes through host memory and NCCL "
            "slows (as with NCCL_P2P_DISABLE=1). Run the job on GPUs that have P2P (nvidia-smi topo -p2p r), "
            "or on one NVLink or PCIe switch; check that IOMMU/ACS settings do not block P2P."
        ),
        "p2p_unavailable.advice.sys": (
            "P2P works, but these pairs cross the link between the CPU sockets (SYS), slower than a PCIe switch. "
            "Where the job fits, keep its GPUs on one socket (nvidia-smi topo -m)."
        ),
        "p2p_unavailable.cause": "no GPU-to-GPU P2P",
        "ev.nvlink_links": "NVLinks up",
        "ev.board_links": "NVLinks up by GPU",
        "ev.pair_links": "links to each peer",
        "ev.other_pairs": "links between the others",
        "ev.nvlink_replay_rise": "NVLink replays",
        "ev.nvlink_recovery_rise": "NVLink recoveries",
        "ev.nvlink_crc_rise": "NVLink CRC errors",
        "ev.gpu_cpus": "CPUs near the GPU",
        "ev.last_cpu": "last ran on CPU",
        "ev.allowed_near": "allowed CPUs near the GPU",
        "ev.far_share": "away from the GPU's CPUs",
        "ev.no_p2p_pairs": "pairs without P2P",
        "ev.pair_paths": "paths",
    },
    "zh": {
        "nvlink_down.title": "GPU {gpu}：只有 {active}/{total} 条 NVLink 在线，其他 GPU 的全部在线",
        "nvlink_down.title.matrix": "GPU {gpu}：与其他 GPU 之间为 {mine}，其余 GPU 之间为 {full}",
        "nvlink_down.advice": (
            "这块 GPU 有 NVLink 断开，NCCL all-reduce 会变得很慢，而每块 GPU 看起来都很忙。NVSwitch 机器请检查 "
            "fabric manager（systemctl status nvidia-fabricmanager；nvidia-smi nvlink -s），重新插拔 GPU 或其桥接器，"
            "并向主机提供商报告这块 GPU。"
        ),
        "nvlink_down.advice.matrix": (
            "gputui 启动时，这块 GPU 与其他 GPU 之间的 NVLink 比其余 GPU 之间少。NVSwitch 机器请检查 fabric manager"
            "（systemctl status nvidia-fabricmanager；nvidia-smi nvlink -s），重新插拔 GPU 或其桥接器，"
            "并向主机提供商报告这块 GPU。"
        ),
        "nvlink_down.title.fabric": (
            "GPU {gpu}：只有 {active}/{total} 条 NVLink 在线，其他 GPU 也都缺链路：问题在 NVSwitch 互连"
        ),
        "nvlink_down.advice.fabric": (
            "这里的每块 GPU 都经由 NVSwitch 互连，而没有一块的链路全部在线：故障在互连网络（某个 NVSwitch、"
            "其基板或 fabric manager），而不在某一块 GPU。NCCL all-reduce 会变得很慢，而每块 GPU 看起来都很忙。"
            "请检查 systemctl status nvidia-fabricmanager 及其日志，并在每块 GPU 上运行 nvidia-smi nvlink -s；"
            "重启 fabric manager，若链路仍然断开，请向主机提供商报告这块基板。"
        ),
        "nvlink_down.title.switch": "GPU {gpu}：通往 NVSwitch 的 NVLink 只有 {active}/{total} 条在线",
        "nvlink_down.advice.switch": (
            "在 NVSwitch 基板上，GPU 的每条链路都应在线；NCCL 的速度取决于最慢的 GPU。请检查 fabric manager"
            "（systemctl status nvidia-fabricmanager；nvidia-smi nvlink -s），与基板上其他 GPU 对比，"
            "重新插拔这块 GPU，并向主机提供商报告。"
        ),
        "nvlink_down.cause": "NVLink 断开",
        "nvlink_errors.title": "GPU {gpu}：新增 {count} 个 NVLink 错误",
        "nvlink_errors.advice": (
            "重放和恢复会重发数据，链路因此变慢；CRC 错误持续增加说明链路或连接器有问题。请用 nvidia-smi nvlink -e "
            "观察；若持续增加，请向主机提供商报告这块 GPU。"
        ),
        "nvlink_errors.cause": "NVLink 错误",
        "numa_mismatch.title": "GPU {gpu}：其进程被绑定在远离该 GPU 的 CPU 上（NUMA 节点 {node}）",
        "numa_mismatch.title.far": "GPU {gpu}：GPU 在等待，而其进程运行在远离该 GPU 的 CPU 上（NUMA 节点 {node}）",
        "numa_mismatch.title.drift": "GPU {gpu}：其进程在靠近和远离该 GPU 的 CPU 之间来回迁移（NUMA 节点 {node}）",
        "numa_mismatch.advice": (
            "主机与 GPU 之间的每次拷贝都要跨越 CPU 插槽间的链路。请把每个 rank 绑定到其 GPU 附近的 CPU："
            "numactl --cpunodebind={node}，或用 taskset -c 指定 GPU 附近的 CPU；使用 torchrun 时，"
            "让 CUDA_VISIBLE_DEVICES 的顺序与 rank 一致，并把每个 local rank 绑定到其 GPU 所在的节点。"
        ),
        "numa_mismatch.advice.far": (
            "GPU 等待期间，调度器大部分时间把这个进程放在另一个 CPU 插槽上运行，它的拷贝因此要跨越插槽间的链路。"
            "请把每个 rank 绑定到其 GPU 附近的 CPU：numactl --cpunodebind={node}，或用 taskset -c 指定 GPU 附近的 CPU"
            "（torchrun：每个 local rank 一个节点）。"
        ),
        "numa_mismatch.advice.drift": (
            "目前没有拖慢 GPU：调度器让这个未绑定的进程在 CPU 插槽之间迁移。若想拷贝速度稳定，请把它绑定到其 GPU "
            "附近的 CPU（numactl --cpunodebind={node}，或 taskset -c）。"
        ),
        "numa_mismatch.cause": "rank 运行在远离其 GPU 的 CPU 上",
        "p2p_unavailable.title": "GPU {gpus}：同一任务，{pairs} 对 GPU 之间没有 P2P",
        "p2p_unavailable.title.sys": "GPU {gpus}：同一任务，{pairs} 对 GPU 的 P2P 跨越 CPU 插槽",
        "p2p_unavailable.advice": (
            "这些 GPU 之间不能直接拷贝：每个梯度都要经过主机内存，NCCL 会变慢（相当于 NCCL_P2P_DISABLE=1）。"
            "请在有 P2P 的 GPU 上运行任务（nvidia-smi topo -p2p r），或放在同一个 NVLink 或 PCIe 交换机下；"
            "并检查 IOMMU/ACS 设置是否阻断了 P2P。"
        ),
        "p2p_unavailable.advice.sys": (
            "P2P 可用，但这些 GPU 对要跨越 CPU 插槽间的链路（SYS），比 PCIe 交换机慢。"
            "任务放得下时，请让它的 GPU 位于同一个插槽（nvidia-smi topo -m）。"
        ),
        "p2p_unavailable.cause": "GPU 之间没有 P2P",
        "ev.nvlink_links": "在线 NVLink",
        "ev.board_links": "各 GPU 的在线 NVLink",
        "ev.pair_links": "与各 GPU 的链路",
        "ev.other_pairs": "其余 GPU 之间的链路",
        "ev.nvlink_replay_rise": "NVLink 重放",
        "ev.nvlink_recovery_rise": "NVLink 恢复",
        "ev.nvlink_crc_rise": "NVLink CRC 错误",
        "ev.gpu_cpus": "GPU 附近的 CPU",
        "ev.last_cpu": "最近运行的 CPU",
        "ev.allowed_near": "允许的 CPU 中靠近 GPU 的",
        "ev.far_share": "远离 GPU 的 CPU",
        "ev.no_p2p_pairs": "没有 P2P 的 GPU 对",
        "ev.pair_paths": "路径",
    },
}
