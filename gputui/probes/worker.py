"""The probe worker, run as a child process: the only module of gputui that imports torch.

`python -m gputui.probes.worker PROBE [options]` prints JSON lines on stdout (see protocol.py): progress while
it runs, then one result or one error. Without CUDA every probe runs on the CPU with small sizes and says
`device: cpu`. Exit codes: 0 result printed, 1 probe failed, 2 bad arguments, 3 torch missing, 4 the parent
that watched us went away.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import statistics
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from gputui.argtypes import byte_size, positive_float, positive_int
from gputui.formatting import fmt_si, fmt_size
from gputui.probes import disk
from gputui.probes.protocol import (
    INSTALL_HINT,
    PROBES,
    Error,
    ErrorCode,
    Message,
    ProbeName,
    Progress,
    Result,
    to_line,
)
from gputui.probes.reference import (
    DTYPES,
    PASS_FRACTION,
    PcieLink,
    PeerCopy,
    PeerLinks,
    gpu_peaks,
    judge_p2p,
    judge_pcie,
)

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_NO_TORCH = 3
EXIT_ORPHANED = 4

# Test hook: makes the worker misbehave on purpose so the runner's handling of it can be tested for real.
# raise: the probe raises; crash: stderr text, then abort(); garbage: a non-JSON stdout line first;
# mismatch: the stress probe corrupts one result; stuck: ignore SIGTERM, start a helper process, hang.
FAULT_ENV = "GPUTUI_PROBE_FAULT"

MIB = 1024**2
GIB = 1024**3
STRESS_SECONDS = 30.0
# 16384: big enough that checking each result (a few passes over it) costs ~4% of the matmul time.
STRESS_SIZE_GPU = 16384
STRESS_SIZE_CPU = 256
PCIE_MAX_GPU = GIB
PCIE_MAX_CPU = 16 * MIB
MEMBW_GPU = GIB
MEMBW_CPU = 64 * MIB
P2P_MAX_GPU = 256 * MIB
P2P_MAX_CPU = MIB
DEFAULT_REPS = 7


@dataclass(frozen=True, slots=True)
class ProbeOptions:
    """What the worker's command line (build_parser) asks of the probe; None: the probe's own default."""

    probe: ProbeName
    gpu: int = 0  # CUDA device index, in PCI bus order as NVML counts
    cpu: bool = False  # on the CPU even where CUDA is available
    seconds: float | None = None  # stress length; the disk probe's time cap
    size: int | None = None  # stress: the side of the square matrices
    dtype: str = "bf16"  # stress: the matmul precision
    path: Path = field(default_factory=Path.cwd)  # disk: the directory read
    max_bytes: int | None = None  # the largest buffer (pcie, membw, p2p); the disk probe's budget
    reps: int | None = None  # timed repetitions per measurement
    link_gen: int | None = None  # pcie: the link as it runs now, and the slot's best
    link_width: int | None = None
    link_max_gen: int | None = None
    link_max_width: int | None = None
    peer: int | None = None  # p2p: the other GPU (None: every pair)
    peer_links: PeerLinks = field(default_factory=PeerLinks)  # p2p: the links between the GPUs, for the verdict
    watch_stdin: bool = False  # exit when stdin closes (the runner died)


class UsageError(ValueError):
    """Arguments that cannot work on this machine (e.g. --gpu 3 with two GPUs)."""


def emit(message: Message) -> None:
    try:
        sys.stdout.write(to_line(message) + "\n")
        sys.stdout.flush()
    except BrokenPipeError:  # nobody reads us any more: the runner died
        _exit_orphaned()


def _exit_orphaned() -> NoReturn:
    """Go, with whatever we started: the runner makes us lead our own process group."""
    if os.getpgid(0) == os.getpid():
        os.killpg(0, signal.SIGKILL)
    os._exit(EXIT_ORPHANED)


class _Parser(argparse.ArgumentParser):
    probe_hint: ProbeName | None = None

    def error(self, message: str) -> NoReturn:
        """Answer in the protocol too, so the runner shows the reason and not just a stderr tail."""
        if self.probe_hint is not None:
            emit(Error(self.probe_hint, "bad_args", message))
        self.exit(EXIT_USAGE, f"gputui.probes.worker: error: {message}\n")


def build_parser(argv: Sequence[str]) -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m gputui.probes.worker", description="Run one probe; print JSON lines.")
    parser.probe_hint = next((probe for probe in PROBES if probe in argv), None)
    parser.add_argument("probe", choices=PROBES)
    parser.add_argument("--gpu", type=int, default=0, help="CUDA device index (PCI bus order, as NVML counts)")
    parser.add_argument("--cpu", action="store_true", help="run on the CPU even when CUDA is available")
    parser.add_argument("--seconds", type=positive_float, default=None, help="stress length; disk time cap")
    parser.add_argument("--size", type=positive_int, default=None, help="stress: side of the square matrices")
    parser.add_argument("--dtype", choices=DTYPES, default="bf16", help="stress: matmul precision (default bf16)")
    parser.add_argument("--path", type=Path, default=Path.cwd(), help="disk: directory to read (default: cwd)")
    parser.add_argument("--max-bytes", type=byte_size, default=None, help="largest buffer (pcie, membw), disk budget")
    parser.add_argument("--reps", type=positive_int, default=None, help="timed repetitions per measurement")
    parser.add_argument("--link-gen", type=int, default=None, help="pcie: the link's current generation")
    parser.add_argument("--link-width", type=int, default=None, help="pcie: the link's current width")
    parser.add_argument("--link-max-gen", type=int, default=None, help="pcie: the slot's max generation")
    parser.add_argument("--link-max-width", type=int, default=None, help="pcie: the slot's max width")
    parser.add_argument("--peer", type=int, default=None, help="p2p: the other GPU (default: every pair)")
    parser.add_argument("--peer-links", type=PeerLinks.from_arg, default=PeerLinks(), help="p2p: links, as JSON")
    parser.add_argument("--watch-stdin", action="store_true", help="exit when stdin closes (the parent died)")
    return parser


def _exit_when_stdin_closes() -> None:
    """The runner holds our stdin pipe open; EOF means it died without stopping us, so we go too."""

    def watch() -> None:
        try:
            while os.read(0, 4096):
                pass
        except OSError:
            pass
        _exit_orphaned()

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def _fault(name: str) -> bool:
    return os.environ.get(FAULT_ENV) == name


def _import_torch() -> Any:
    # Before torch loads: number CUDA devices as NVML does, and make cuBLAS give the same bits for the same
    # inputs (the stress check compares results bit for bit).
    os.environ.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
    import torch

    return torch


class _Device:
    """Where a probe runs, with the few calls that differ between CUDA and the CPU."""

    def __init__(self, torch: Any, gpu: int, force_cpu: bool) -> None:
        self.torch = torch
        self.cuda = bool(torch.cuda.is_available()) and not force_cpu
        if self.cuda:
            count = int(torch.cuda.device_count())
            if not 0 <= gpu < count:
                raise UsageError(f"--gpu {gpu}: this machine has {count} CUDA device(s)")
            torch.cuda.set_device(gpu)
            self.name = str(torch.cuda.get_device_name(gpu))
            self.device = torch.device("cuda", gpu)
            self.label = f"cuda:{gpu} {self.name}"
        else:
            self.name = "cpu"
            self.device = torch.device("cpu")
            self.label = "cpu"

    def sync(self) -> None:
        if self.cuda:
            self.torch.cuda.synchronize()

    def free_bytes(self) -> int:
        """Memory a probe may take on the device: free GPU memory, or available host memory on the CPU."""
        if self.cuda:
            free, _total = self.torch.cuda.mem_get_info()
            return int(free)
        import psutil

        return int(psutil.virtual_memory().available)

    def time_copy(self, dst: Any, src: Any, reps: int, non_blocking: bool = False) -> float:
        """Median seconds of one copy over `reps` timed repetitions, after one untimed warm-up."""
        dst.copy_(src, non_blocking=non_blocking)
        self.sync()
        return median_copy_seconds(self.torch, self.cuda, dst, src, reps, non_blocking=non_blocking)


def median_copy_seconds(
    torch: Any, cuda: bool, dst: Any, src: Any, reps: int, *, non_blocking: bool = False, stream_of: Any = None
) -> float:
    """Median seconds of `dst.copy_(src)` over `reps` repetitions (the caller warms up first): CUDA events on
    the stream of `stream_of`'s device (default: the current one), where torch runs the copy; the wall clock on
    the CPU."""
    times: list[float] = []
    for _ in range(reps):
        if cuda:
            with torch.cuda.device(stream_of) if stream_of is not None else contextlib.nullcontext():
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                start.record()
                dst.copy_(src, non_blocking=non_blocking)
                end.record()
                end.synchronize()
            times.append(start.elapsed_time(end) / 1000.0)
        else:
            begin = time.perf_counter()
            dst.copy_(src)
            times.append(time.perf_counter() - begin)
    return max(float(statistics.median(times)), 1e-9)


def _sizes(largest: int, smallest: int) -> list[int]:
    """Powers of 4 from `smallest` up to `largest` (1 MiB, 4 MiB, ... 1 GiB)."""
    sizes = []
    size = smallest
    while size <= largest:
        sizes.append(size)
        size *= 4
    return sizes or [largest]


def _host_available() -> int:
    import psutil

    return int(psutil.virtual_memory().available)


def probe_pcie(dev: _Device, options: ProbeOptions) -> Result:
    torch = dev.torch
    reps = options.reps or DEFAULT_REPS
    if not dev.cuda:
        return _pcie_cpu(dev, options, reps)
    # Each size holds a device buffer, a pinned and a pageable host buffer at once.
    cap = min(dev.free_bytes() // 2, _host_available() // 3)
    sizes = _sizes(min(options.max_bytes or PCIE_MAX_GPU, cap), MIB)
    figures: dict[str, float | None] = {}
    best: dict[str, float] = {}
    steps = len(sizes) * 4
    done = 0
    for size in sizes:
        on_gpu = torch.empty(size, dtype=torch.uint8, device=dev.device)
        host = {
            "pinned": torch.ones(size, dtype=torch.uint8, pin_memory=True),
            "pageable": torch.ones(size, dtype=torch.uint8),
        }
        for kind, buffer in host.items():
            for direction, (dst, src) in (("h2d", (on_gpu, buffer)), ("d2h", (buffer, on_gpu))):
                gb_s = size / dev.time_copy(dst, src, reps, non_blocking=kind == "pinned") / 1e9
                key = f"{direction}_{kind}"
                figures[f"{key}_{size // MIB}mib_gb_s"] = gb_s
                best[key] = max(best.get(key, 0.0), gb_s)
                done += 1
                label = f"{direction.upper()} {kind} {fmt_size(size)}"
                emit(Progress("pcie", done / steps, gb_s, "GB/s", label, dev.label))
        del on_gpu, host
    for key, value in best.items():
        figures[f"{key}_gb_s"] = value
    link = PcieLink(options.link_gen, options.link_width, options.link_max_gen, options.link_max_width)
    judged = judge_pcie(best["h2d_pinned"], best["d2h_pinned"], link)
    figures.update(judged.figures)
    details = (
        f"pageable: H2D {best['h2d_pageable']:.1f} GB/s, D2H {best['d2h_pageable']:.1f} GB/s (staged by the driver)",
        f"sizes {fmt_size(sizes[0])}..{fmt_size(sizes[-1])}, median of {reps} copies timed with CUDA events",
        "judged on the best pinned figure per direction; H2D and D2H apart",
    )
    return Result("pcie", dev.label, judged.ok, figures, judged.verdict, details)


def _pcie_cpu(dev: _Device, options: ProbeOptions, reps: int) -> Result:
    torch = dev.torch
    sizes = _sizes(min(options.max_bytes or PCIE_MAX_CPU, dev.free_bytes() // 3), 64 * 1024)
    figures: dict[str, float | None] = {}
    best = 0.0
    for done, size in enumerate(sizes, start=1):
        src = torch.ones(size, dtype=torch.uint8)
        dst = torch.zeros(size, dtype=torch.uint8)
        gb_s = size / dev.time_copy(dst, src, reps) / 1e9
        figures[f"copy_{size // 1024}kib_gb_s"] = gb_s
        best = max(best, gb_s)
        emit(Progress("pcie", done / len(sizes), gb_s, "GB/s", f"host memory copy {fmt_size(size)}", dev.label))
    figures["copy_gb_s"] = best
    verdict = f"cpu run: no CUDA device, so this timed a host memory copy ({best:.1f} GB/s), not a PCIe link"
    details = (f"sizes {fmt_size(sizes[0])}..{fmt_size(sizes[-1])}, median of {reps} copies",)
    return Result("pcie", dev.label, True, figures, verdict, details)


def _stress_size(dev: _Device, itemsize: int) -> int:
    """The default matrix side, halved until a, b, the first result, the output and the check fit in half the
    free memory."""
    n = STRESS_SIZE_GPU if dev.cuda else STRESS_SIZE_CPU
    while n > 1024 and 5 * n * n * itemsize > dev.free_bytes() // 2:
        n //= 2
    return n


def probe_stress(dev: _Device, options: ProbeOptions) -> Result:
    torch = dev.torch
    dtype_name: str = options.dtype
    seconds: float = options.seconds or STRESS_SECONDS
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "tf32": torch.float32, "fp32": torch.float32}[dtype_name]
    n: int = options.size or _stress_size(dev, torch.finfo(dtype).bits // 8)
    torch.set_float32_matmul_precision("high" if dtype_name == "tf32" else "highest")
    generator = torch.Generator(device=dev.device).manual_seed(1234)
    a = torch.randn(n, n, device=dev.device, dtype=dtype, generator=generator)
    b = torch.randn(n, n, device=dev.device, dtype=dtype, generator=generator)
    first = a @ b
    out = torch.empty_like(first)
    mismatches = torch.zeros((), dtype=torch.int64, device=dev.device)
    dev.sync()
    flops = 2.0 * n**3
    per_second: list[float] = []
    count = 0
    batch = 1
    start = tick = time.perf_counter()
    tick_count = 0
    while True:
        batch_start = time.perf_counter()
        for _ in range(batch):
            torch.matmul(a, b, out=out)
            if count == 1 and _fault("mismatch"):
                out[0, 0] += 1
            # Every result against the first, as gpu-burn does; summed on the device, read once a second.
            mismatches += torch.ne(out, first).sum()
            count += 1
        dev.sync()
        now = time.perf_counter()
        # Aim for ~0.1 s between host syncs: short enough for a 1 s progress tick, long enough to keep the GPU busy.
        batch = max(1, min(batch * 2, int(batch * 0.1 / max(now - batch_start, 1e-6))))
        if now - tick >= 1.0 or now - start >= seconds:
            rate = (count - tick_count) * flops / (now - tick) / 1e12
            per_second.append(rate)
            bad = int(mismatches.item())
            note = f"{count} results checked" + (f", {bad} MISMATCHED" if bad else "")
            emit(Progress("stress", min(1.0, (now - start) / seconds), rate, "TFLOP/s", note, dev.label))
            tick, tick_count = now, count
        if now - start >= seconds:
            break
    elapsed = time.perf_counter() - start
    bad = int(mismatches.item())
    return _stress_result(dev, dtype_name, n, elapsed, count, bad, count * flops / elapsed / 1e12, per_second)


def _stress_result(
    dev: _Device, dtype: str, n: int, elapsed: float, count: int, bad: int, tflops: float, per_second: list[float]
) -> Result:
    peaks = gpu_peaks(dev.name) if dev.cuda else None
    peak = peaks.tflops.get(dtype) if peaks else None
    pct = 100.0 * tflops / peak if peak else None
    achieved = f"{fmt_si(tflops * 1e12, 'FLOP/s')} {dtype} over {elapsed:.0f} s"
    if bad:
        verdict = (
            f"FAULTY: {bad} of {count} results differed from the first for the same inputs: this GPU computes "
            "wrong answers (gpu-burn would say FAULTY); check ECC errors and XIDs, then retest"
        )
    elif not dev.cuda:
        verdict = f"cpu run: no CUDA device; {achieved} on the CPU, all {count} results matched the first"
    elif peaks is None or peak is None or pct is None:
        verdict = f"{achieved}: unknown peak for {dev.name}; all {count} results matched the first"
    elif pct >= 100 * PASS_FRACTION:
        verdict = f"{achieved} = {pct:.0f}% of the {peaks.model} dense peak ({peak:.0f}): healthy; results correct"
    else:
        verdict = (
            f"{achieved} = {pct:.0f}% of the {peaks.model} dense peak ({peak:.0f}), below "
            f"{100 * PASS_FRACTION:.0f}%: clocks held back (power, heat), another job on the GPU, or a slower "
            "variant of this model; results correct"
        )
    details = [
        "per second: " + " ".join(fmt_si(r * 1e12, "FLOP/s") for r in per_second),
        f"{n}x{n} {dtype} matmul; every result compared bit for bit with the first (same inputs)",
    ]
    if dtype == "tf32" and not dev.cuda:
        details.append("tf32 on the CPU is computed in fp32")
    figures: dict[str, float | None] = {
        "tflops": tflops,
        "tflops_best_second": max(per_second),
        "tflops_worst_second": min(per_second),
        "peak_tflops": peak,
        "pct_of_peak": pct,
        "seconds": elapsed,
        "size": float(n),
        "results_checked": float(count),
        "mismatches": float(bad),
    }
    ok = not bad and (pct is None or pct >= 100 * PASS_FRACTION)
    return Result("stress", dev.label, ok, figures, verdict, tuple(details), faulty=bool(bad))


def probe_membw(dev: _Device, options: ProbeOptions) -> Result:
    torch = dev.torch
    reps = options.reps or 20
    size = min(options.max_bytes or (MEMBW_GPU if dev.cuda else MEMBW_CPU), dev.free_bytes() // 3)
    src = torch.ones(size, dtype=torch.uint8, device=dev.device)
    dst = torch.zeros(size, dtype=torch.uint8, device=dev.device)
    seconds = []
    for rep in range(reps):
        seconds.append(dev.time_copy(dst, src, 1))
        gb_s = 2 * size / seconds[-1] / 1e9
        emit(Progress("membw", (rep + 1) / reps, gb_s, "GB/s", f"copy {rep + 1}/{reps}", dev.label))
    gb_s = 2 * size / statistics.median(seconds) / 1e9
    peaks = gpu_peaks(dev.name) if dev.cuda else None
    peak = peaks.memory_gb_s if peaks else None
    pct = 100.0 * gb_s / peak if peak else None
    figure = f"{gb_s:.0f} GB/s device copy (read + write) of {fmt_size(size)}"
    if not dev.cuda:
        verdict = f"cpu run: no CUDA device; {gb_s:.1f} GB/s host memory copy (read + write), no GPU memory measured"
    elif peaks is None or peak is None or pct is None:
        verdict = f"{figure}: unknown memory peak for {dev.name}"
    else:
        judged = "healthy" if pct >= 100 * PASS_FRACTION else f"below {100 * PASS_FRACTION:.0f}%"
        verdict = f"{figure} = {pct:.0f}% of the {peaks.model}'s {peak / 1000:.2f} TB/s: {judged}"
    figures: dict[str, float | None] = {
        "copy_gb_s": gb_s,
        "copy_best_gb_s": 2 * size / min(seconds) / 1e9,
        "peak_gb_s": peak,
        "pct_of_peak": pct,
        "bytes": float(size),
    }
    details = (f"median of {reps} copies; bandwidth counts bytes read + bytes written",)
    return Result("membw", dev.label, pct is None or pct >= 100 * PASS_FRACTION, figures, verdict, details)


def _p2p_pairs(gpus: int, options: ProbeOptions, cuda: bool) -> list[tuple[int, int]]:
    """Both directions of --gpu/--peer, or every ordered pair of `gpus` devices."""
    if options.peer is None:
        return [(a, b) for a in range(gpus) for b in range(gpus) if a != b]
    if options.peer == options.gpu:
        raise UsageError(f"--peer {options.peer} is --gpu itself: a peer copy needs two GPUs")
    for index in (options.gpu, options.peer):
        if cuda and not 0 <= index < gpus:
            raise UsageError(f"GPU {index}: this machine has {gpus} CUDA device(s)")
    return [(options.gpu, options.peer), (options.peer, options.gpu)]


def _time_peer(torch: Any, cuda: bool, dst: Any, src: Any, reps: int) -> float:
    """Median seconds of one copy src -> dst; CUDA events on the source device's stream, where torch copies."""
    dst.copy_(src)
    if cuda:
        torch.cuda.synchronize(src.device)
        torch.cuda.synchronize(dst.device)
    return median_copy_seconds(torch, cuda, dst, src, reps, stream_of=src.device)


def probe_p2p(torch: Any, options: ProbeOptions) -> Result:
    """GPU-to-GPU copies; without two CUDA devices the same loop on CPU tensors, labelled a cpu run."""
    count = int(torch.cuda.device_count()) if torch.cuda.is_available() and not options.cpu else 0
    cuda = count >= 2
    pairs = _p2p_pairs(count if cuda else 2, options, cuda)
    reps = options.reps or DEFAULT_REPS
    size = options.max_bytes or (P2P_MAX_GPU if cuda else P2P_MAX_CPU)
    if cuda:
        used = {gpu for pair in pairs for gpu in pair}
        size = min([size] + [int(torch.cuda.mem_get_info(gpu)[0]) // 4 for gpu in used])
    else:
        size = min(size, _host_available() // 4)
    links: PeerLinks = options.peer_links
    copies: list[PeerCopy] = []
    for done, (a, b) in enumerate(pairs, start=1):
        where = (torch.device("cuda", a), torch.device("cuda", b)) if cuda else (torch.device("cpu"),) * 2
        src = torch.ones(size, dtype=torch.uint8, device=where[0])
        dst = torch.zeros(size, dtype=torch.uint8, device=where[1])
        gb_s = size / _time_peer(torch, cuda, dst, src, reps) / 1e9
        del src, dst
        p2p = bool(torch.cuda.can_device_access_peer(b, a)) if cuda else None
        name = str(torch.cuda.get_device_name(a)) if cuda else ""
        copies.append(PeerCopy(a, b, gb_s, p2p, name, links.between(a, b), links.slower_pcie(a, b)))
        # On the CPU no GPU takes part, so the pair is only counted, never named.
        note = f"GPU {a} -> GPU {b}" if cuda else f"host memory copy {done}/{len(pairs)}"
        device = f"cuda:{a},{b}" if cuda else "cpu"
        emit(Progress("p2p", done / len(pairs), gb_s, "GB/s", f"{note} {fmt_size(size)}", device))
    sizes = f"{fmt_size(size)} copies, median of {reps} timed"
    if not cuda:
        best = max(copy.gb_s for copy in copies)
        verdict = f"cpu run: not two CUDA devices, so this timed host memory copies ({best:.1f} GB/s), not a GPU link"
        figures: dict[str, float | None] = {f"gpu{c.src}_to_gpu{c.dst}_gb_s": c.gb_s for c in copies}
        return Result("p2p", "cpu", True, figures, verdict, (sizes,))
    judged = judge_p2p(copies)
    gpus = sorted({gpu for pair in pairs for gpu in pair})
    device = f"cuda:{','.join(map(str, gpus))} {torch.cuda.get_device_name(gpus[0])}"
    details = (*judged.details, f"{sizes} with CUDA events; judged against {100 * PASS_FRACTION:.0f}% of the link")
    return Result("p2p", device, judged.ok, {**judged.figures, "bytes": float(size)}, judged.verdict, details)


def probe_disk(options: ProbeOptions) -> Result:
    seconds = options.seconds or disk.DEFAULT_SECONDS
    budget = options.max_bytes or disk.DEFAULT_MAX_BYTES
    return disk.run_disk(options.path, budget, seconds, emit, time.perf_counter)


TORCH_PROBES: dict[str, Callable[[_Device, ProbeOptions], Result]] = {
    "pcie": probe_pcie,
    "stress": probe_stress,
    "membw": probe_membw,
}


def _fail(probe: ProbeName, code: ErrorCode, message: str, exit_code: int, tail: str = "") -> int:
    emit(Error(probe, code, message, tail))
    return exit_code


def _hang(probe: ProbeName) -> NoReturn:
    """A worker that only SIGKILL stops, with a helper process in its group: what cancel() must clean up."""
    import subprocess

    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    emit(Progress(probe, 0.0, float(helper.pid), "pid", "stuck on purpose; helper process started"))
    while True:
        time.sleep(1)


def parse_options(argv: Sequence[str]) -> ProbeOptions:
    """The worker's command line as the probes take it; a bad one exits (EXIT_USAGE), said in the protocol too."""
    return ProbeOptions(**vars(build_parser(argv).parse_args(argv)))


def main(argv: Sequence[str] | None = None) -> int:
    options = parse_options(list(sys.argv[1:] if argv is None else argv))
    probe = options.probe
    if options.watch_stdin:
        _exit_when_stdin_closes()
    if _fault("garbage"):
        print("this line is not JSON", flush=True)
    if _fault("crash"):
        sys.stderr.write("simulated crash in the probe worker\n")
        sys.stderr.flush()
        os.abort()
    if _fault("stuck"):
        _hang(probe)
    try:
        if _fault("raise"):
            raise RuntimeError("simulated failure inside the probe")
        if probe == "disk":
            emit(probe_disk(options))
            return EXIT_OK
        try:
            torch = _import_torch()
        except ImportError as exc:
            return _fail(probe, "no_torch", f"the {probe} probe needs torch ({exc}): {INSTALL_HINT}", EXIT_NO_TORCH)
        if probe == "p2p":  # two devices, not one: no _Device
            emit(probe_p2p(torch, options))
            return EXIT_OK
        emit(TORCH_PROBES[probe](_Device(torch, options.gpu, options.cpu), options))
    except (UsageError, disk.DiskProbeError) as exc:
        return _fail(probe, "bad_args", str(exc), EXIT_USAGE)
    except Exception as exc:
        tail = "".join(traceback.format_exc().splitlines(keepends=True)[-8:])
        return _fail(probe, "failed", f"{type(exc).__name__}: {exc}", EXIT_FAILED, tail)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
