"""`gputui probe`: run one hardware probe headless, watching the GPU through NVML while it runs."""

from __future__ import annotations

import argparse
import dataclasses
import sys
import threading
import time
from pathlib import Path
from typing import Any

from gputui.argtypes import byte_size, gpu_index, matrix_size, positive_mb, positive_seconds
from gputui.commands import common
from gputui.formatting import fmt_figure, fmt_size
from gputui.model import Snapshot
from gputui.probes.protocol import PROBES, BadLine, Error, Final, Progress, Result, to_dict
from gputui.probes.reference import DTYPES, PcieLink, PeerLinks

EXIT_PROBE_FAILED = 5
MIB = 1024**2

EPILOG = """probes:
  pcie    host<->device copies, pinned and pageable, against the link's theoretical bandwidth
  stress  sustained matmul, TFLOP/s against the GPU's dense peak, every result checked against the first
  membw   device-to-device copy bandwidth against the memory's peak
  disk    sequential read of the files under --path (never writes), past the page cache with O_DIRECT
  p2p     GPU-to-GPU copies, every pair both ways (or --gpu A --peer B), against NVLink or the PCIe link
Without CUDA the probes run on the CPU with small sizes and say so (device: cpu).

exit codes:
  0  the probe passed
  2  usage error (e.g. --path is not a directory)
  1  a figure failed its check, or a slowdown began during the run
  4  the GPU computed wrong answers (FAULTY) or fell off the bus
  5  the probe could not run (no torch, crash, timeout); the reason is printed
"""


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "probe",
        help="test the hardware now: PCIe, matmul stress, memory bandwidth, disk read, GPU-to-GPU",
        description="Run one probe in a child process and print its progress and result.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("probe", choices=PROBES, help="which probe to run")
    parser.add_argument("--gpu", type=gpu_index, default=None, metavar="N", help="GPU index (default 0)")
    parser.add_argument("--peer", type=gpu_index, default=None, metavar="N", help="p2p: the other GPU of the pair")
    parser.add_argument("--size-mb", type=positive_mb, default=None, metavar="N", help="p2p: copy size (default 256)")
    parser.add_argument(
        "--seconds", type=positive_seconds, default=None, metavar="S", help="stress length (default 30)"
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON (progress goes to stderr)")
    parser.add_argument("--path", type=Path, default=None, metavar="DIR", help="disk: directory to read (default .)")
    parser.add_argument("--dtype", choices=DTYPES, default="bf16", help="stress: matmul precision (default bf16)")
    parser.add_argument("--size", type=matrix_size, default=None, metavar="N", help="stress: matrix side")
    parser.add_argument(
        "--max-bytes",
        type=byte_size,
        default=None,
        metavar="SIZE",
        help="largest buffer (pcie, membw); disk budget",
    )
    parser.add_argument("--cpu", action="store_true", help="run on the CPU even when a GPU is there")
    parser.add_argument(
        "--timeout", type=positive_seconds, default=None, metavar="S", help="stop the probe after S seconds"
    )
    parser.set_defaults(func=run)


class _Watcher:
    """Samples GPUs through NVML in the runner's poll thread, so clocks and the link under load are known."""

    def __init__(self, gpus: tuple[int, ...] | None) -> None:
        from gputui.sources.nvml.source import NvmlSource

        self.snapshots: list[Snapshot] = []
        self.stopped: str | None = None
        self._lock = threading.Lock()
        self._source = NvmlSource(gpu_indices=gpus)
        self._source.open()
        self.first = self._source.sample()

    def poll(self) -> None:
        if self.stopped is not None:
            return
        try:
            snapshot = self._source.sample()
        except Exception as exc:  # a driver hiccup ends the watching, never the probe
            self.stopped = f"GPU readings stopped: {exc}"
            return
        with self._lock:
            self.snapshots.append(snapshot)

    def close(self) -> None:
        self._source.close()


def _open_watcher(args: argparse.Namespace) -> tuple[_Watcher | None, str]:
    """The NVML watcher for GPU probes, or None with the reason (no driver here: the probe still runs).
    p2p reads every GPU it copies between, for the links joining them."""
    from gputui.sources.base import SourceUnavailable

    if args.probe == "disk" or args.cpu:
        return None, ""
    gpus: tuple[int, ...] | None = (args.gpu or 0,)
    if args.probe == "p2p":
        gpus = None if args.peer is None else (args.gpu or 0, args.peer)
    try:
        return _Watcher(gpus), ""
    except SourceUnavailable as exc:
        return None, f"not watched through NVML: {exc}"


def _print_update(update: Progress | BadLine, stream: Any) -> None:
    if isinstance(update, BadLine):
        print(f"  (ignored a line from the worker: {update.reason}: {update.line[:120]!r})", file=stream)
        return
    figure = fmt_figure(update.figure, update.unit) if update.figure is not None else ""
    where = "CPU RUN  " if update.on_cpu else ""
    print(f"[{100 * update.fraction:3.0f}%] {where}{figure:>12}  {update.message}", file=stream, flush=True)


def _print_error(error: Error) -> None:
    """A probe that refused its arguments (a --path that is no directory) as every usage error is said; one without
    torch by its message (what is missing and how to install it); one that could not run in the words the
    monitor's pane uses ("disk read probe crashed: ..."); never by the protocol's code."""
    from gputui.probes.result_finding import error_title

    if error.code == "bad_args":
        common.usage_error(error.message)
    else:
        print(f"gputui: {error.message if error.code == 'no_torch' else error_title(error)}", file=sys.stderr)


def _figure_text(key: str, value: float | None) -> str:
    """A figure under its protocol name; a byte count as a size ("64 MiB"), not 6.711e+07."""
    if value is None:
        return "n/a"
    return fmt_size(value) if key == "bytes" else f"{value:.4g}"


def _print_result(final: Final, judgement_text: str | None) -> None:
    if isinstance(final, Error):
        _print_error(final)
        for line in final.stderr_tail.rstrip().splitlines()[-10:]:
            print(f"  | {line}", file=sys.stderr)
        return
    print(f"{final.probe} probe on {final.device}")
    if final.on_cpu:
        print("  CPU RUN: no CUDA device was used; these are the CPU's figures, not a GPU's")
    print(f"  verdict: {final.verdict}")
    if judgement_text:
        print(f"  during the run: {judgement_text}")
    for key, value in final.figures.items():
        print(f"  {key:28} {_figure_text(key, value)}")
    for line in final.details:
        print(f"  - {line}")
    status = "FAULTY" if final.faulty else "ok" if final.ok else "NOT OK"
    print(f"  result: {status}")


def usage_problem(args: argparse.Namespace) -> str | None:
    """What argparse cannot check alone: the p2p-only options, and a pair of two different GPUs."""
    if args.probe != "p2p":
        used = [flag for flag, value in (("--peer", args.peer), ("--size-mb", args.size_mb)) if value is not None]
        return f"{' and '.join(used)}: only for the p2p probe" if used else None
    if args.gpu is not None and args.peer is None:
        return "p2p: --gpu A needs --peer B (or neither, for every pair)"
    if args.peer is not None and args.peer == (args.gpu or 0):
        return f"p2p: --peer {args.peer} is --gpu itself; a peer copy needs two GPUs"
    if args.size_mb is not None and args.max_bytes is not None:
        return "p2p: --size-mb or --max-bytes, not both"
    return None


def run(args: argparse.Namespace) -> int:
    from gputui.probes.judge import judge_run, link_under_load, mig_device, pcie_link, peer_links, rejudge_pcie
    from gputui.probes.runner import ProbeRequest, run_probe
    from gputui.sources.base import InvalidGpuSelection

    problem = usage_problem(args)
    if problem is not None:
        return common.usage_error(problem)
    gpu = args.gpu or 0
    try:
        watcher, note = _open_watcher(args)
    except InvalidGpuSelection as exc:
        return common.usage_error(exc)
    link: PcieLink | None = pcie_link(watcher.first, gpu) if watcher else None
    links: PeerLinks | None = peer_links(watcher.first) if watcher and args.probe == "p2p" else None
    instance = mig_device(watcher.first, gpu) if watcher else None
    request = ProbeRequest(
        probe=args.probe,
        gpu=gpu,
        peer=args.peer,
        peer_links=links,
        cpu=args.cpu,
        seconds=args.seconds,
        size=args.size,
        dtype=args.dtype,
        path=str(args.path) if args.path is not None else None,
        max_bytes=int(args.size_mb * MIB) if args.size_mb is not None else args.max_bytes,
        link=link,
        mig_device=instance.uuid if instance is not None else None,
    )
    progress_stream = sys.stderr if args.json else sys.stdout
    started = time.time()
    try:
        final = run_probe(
            request,
            timeout_s=args.timeout,
            on_update=lambda update: _print_update(update, progress_stream),
            poll=watcher.poll if watcher and args.probe != "p2p" else None,
        )
    finally:
        if watcher is not None:
            watcher.close()
    judgement = None
    # p2p loads two GPUs at a time: one GPU's clocks say little of it, so its run is not judged from readings.
    if isinstance(final, Result) and not final.on_cpu and watcher is not None and final.probe != "p2p":
        if final.probe == "pcie":
            final = rejudge_pcie(final, link_under_load(watcher.snapshots, gpu) or link)
        if final.probe != "disk":
            judgement = judge_run(watcher.snapshots, gpu, started)
            note = watcher.stopped or ""
    judgement_text = judgement.text if judgement else None
    if isinstance(final, Result) and not final.on_cpu and final.probe != "disk" and note:
        judgement_text = f"{judgement_text}; {note}" if judgement_text else note
    if args.json:
        body = to_dict(final)
        if judgement is not None:
            body["during_run"] = dataclasses.asdict(judgement)
        common.print_json(body, ensure_ascii=False)
        if isinstance(final, Error):
            _print_error(final)
    else:
        _print_result(final, judgement_text)
    return exit_code(final, judgement.worsened if judgement else False, judgement.lost_after_s if judgement else None)


def exit_code(final: Final, worsened: bool, lost_after_s: float | None) -> int:
    if isinstance(final, Error):
        return common.EXIT_USAGE if final.code == "bad_args" else EXIT_PROBE_FAILED
    if final.faulty or lost_after_s is not None:
        return common.EXIT_CRITICAL
    if not final.ok or worsened:
        return common.EXIT_WARNINGS
    return common.EXIT_OK
