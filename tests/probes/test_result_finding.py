"""A probe's finding in plain words: a sentence against the reference, labelled figures, no internal names."""

from __future__ import annotations

import inspect
import itertools
import re

import pytest

from gputui.diagnostics.catalog import PROBE_TEXTS
from gputui.diagnostics.findings import Severity
from gputui.probes import result_finding as findings
from gputui.probes.protocol import Error, Result
from gputui.probes.reference import PcieLink, PeerCopy, judge_p2p, judge_pcie
from gputui.probes.result_finding import error_title, result_evidence, to_finding

H100 = "cuda:0 NVIDIA H100 80GB HBM3"
# A figure's name as the worker writes it: never shown in the pane, only kept as the evidence's key.
INTERNAL = re.compile(r"\b[a-z0-9]+_[a-z0-9_]+\b|\bbytes \d")


def shown(result: Result | Error, gpu: int | None = 0) -> str:
    """What the pane shows of a finding: its title and its evidence, as the pane words them."""
    finding = to_finding(result, gpu, 0.0)
    evidence = " | ".join(f"{e.label} {e.value} {e.unit}" for e in finding.evidence)
    return f"{finding.title} || {evidence}"


def test_a_gpu_stress_run_reads_against_the_dense_peak() -> None:
    figures: dict[str, float | None] = {"tflops": 781.4, "pct_of_peak": 79.0, "tflops_worst_second": 770.0}
    result = Result("stress", H100, True, {**figures, "mismatches": 0.0, "results_checked": 900.0}, "healthy")
    finding = to_finding(result, 0, 0.0)
    assert finding.title == "GPU 0 stress: 781 TFLOP/s, 79% of the H100 SXM dense peak: OK"
    assert [(e.label, e.value, e.unit) for e in finding.evidence] == [
        ("matmul rate", 781.0, "TFLOP/s"),
        ("share of the peak", 79.0, "%"),
        ("slowest second", 770.0, "TFLOP/s"),
        ("results that differed", 0.0, ""),
    ]
    low = Result("stress", H100, False, {"tflops": 400.0, "pct_of_peak": 40.4}, "below 70%")
    assert to_finding(low, 0, 0.0).title == "GPU 0 stress: 400 TFLOP/s, 40% of the H100 SXM dense peak: LOW"
    faulty = Result("stress", H100, False, {"mismatches": 3.0, "results_checked": 1200.0}, "FAULTY", faulty=True)
    assert to_finding(faulty, 0, 0.0).title == "GPU 0 stress: FAULTY, 3 of 1200 results differed"


def test_a_cpu_run_says_so_first_and_is_not_judged() -> None:
    result = Result("stress", "cpu", True, {"tflops": 0.001544, "peak_tflops": None, "pct_of_peak": None}, "cpu run")
    finding = to_finding(result, 0, 0.0)
    assert finding.title == "CPU RUN stress: 1.5 GFLOP/s on the CPU (no GPU, not judged)"
    assert [(e.label, e.value, e.unit) for e in finding.evidence] == [("matmul rate", 1.5, "GFLOP/s")]


def test_a_cpu_pcie_run_shows_one_host_copy_and_no_figure_names() -> None:
    figures: dict[str, float | None] = {"copy_64kib_gb_s": 0.0, "copy_65536kib_gb_s": 9.1, "copy_gb_s": 9.1}
    text = shown(Result("pcie", "cpu", True, {**figures, "bytes": 67108864.0}, "cpu run: ..."))
    assert text == (
        "CPU RUN PCIe: 9.1 GB/s host memory copy (no GPU, no PCIe link: not judged) || host memory copy 9.1 GB/s"
    )
    assert not INTERNAL.search(text)


def test_a_gpu_pcie_run_reads_against_its_link() -> None:
    judged = judge_pcie(25.1, 24.8, PcieLink(4, 16, 4, 16))
    figures = {"h2d_pinned_gb_s": 25.1, "d2h_pinned_gb_s": 24.8, "h2d_pageable_gb_s": 12.0, **judged.figures}
    finding = to_finding(Result("pcie", H100, judged.ok, figures, judged.verdict), 0, 0.0)
    assert finding.title == "GPU 0 PCIe: H2D 25.1 GB/s, D2H 24.8 GB/s, 79% of the link's 31.5 GB/s: OK"
    assert [e.label for e in finding.evidence] == [
        "host to GPU (pinned)",
        "GPU to host (pinned)",
        "the link in theory",
        "host to GPU (pageable)",
    ]
    trained_down = judge_pcie(11.8, 11.9, PcieLink(3, 8, 5, 16))
    figures = {"h2d_pinned_gb_s": 11.8, "d2h_pinned_gb_s": 11.9, **trained_down.figures}
    title = to_finding(Result("pcie", H100, trained_down.ok, figures, trained_down.verdict), 0, 0.0).title
    assert title == "GPU 0 PCIe: H2D 11.8 GB/s, D2H 11.9 GB/s, 19% of the link's 63.0 GB/s: LOW"


def test_membw_reads_against_the_memory_peak_and_a_cpu_run_copies_host_memory() -> None:
    figures: dict[str, float | None] = {"copy_gb_s": 3120.0, "peak_gb_s": 3350.0, "pct_of_peak": 93.1}
    gpu = to_finding(Result("membw", H100, True, {**figures, "bytes": 8.0 * 2**30}, "healthy"), 0, 0.0)
    assert gpu.title == "GPU 0 memory bandwidth: 3.1 TB/s, 93% of the H100 SXM's 3.4 TB/s: OK"
    assert [(e.label, e.value, e.unit) for e in gpu.evidence][-1] == ("copy size", "8 GiB", "")
    cpu = Result("membw", "cpu", True, {"copy_gb_s": 5.2, "peak_gb_s": None, "bytes": 2.0**26}, "cpu run")
    assert shown(cpu) == (
        "CPU RUN memory bandwidth: 5.2 GB/s host memory copy (no GPU, not judged)"
        " || host memory copy 5.2 GB/s | copy size 64 MiB "
    )


def test_the_disk_probe_says_where_its_figure_came_from() -> None:
    figures: dict[str, float | None] = {"read_mb_s": 1500.0, "bytes": 2.0**30, "files": 3.0, "page_cache_pct": 95.0}
    result = Result("disk", "host: /dev/nvme0n1p2 (ext4) at /data", True, figures, "...")
    text = shown(result, None)
    assert text.startswith("disk read: 1.5 GB/s, 95% from the page cache: memory speed, not the disk's || ")
    assert not INTERNAL.search(text)
    cold = Result("disk", "host", True, {**figures, "page_cache_pct": 2.0}, "...")
    assert to_finding(cold, None, 0.0).title == "disk read: 1.5 GB/s sequential read from storage"
    half = to_finding(Result("disk", "host", False, {**figures, "page_cache_pct": 50.0}, "..."), None, 0.0)
    assert half.title == "disk read: 1.5 GB/s sequential read, 50% from the page cache: faster than the disk alone"
    assert half.severity == Severity.WARNING


def test_p2p_names_its_slowest_direction_and_p2p_that_is_missing() -> None:
    link = PcieLink(4, 16, 4, 16)
    judged = judge_p2p([PeerCopy(0, 1, 24.0, True, pcie=link), PeerCopy(1, 0, 20.0, True, pcie=link)])
    result = Result("p2p", "cuda:0,1 NVIDIA L4", judged.ok, judged.figures, judged.verdict)
    finding = to_finding(result, None, 0.0)
    assert finding.title == "GPU-to-GPU: 2 directions, slowest GPU 1 -> 0 at 20.0 GB/s, 63% of its link: LOW"
    assert [(e.label, e.value) for e in finding.evidence] == [("GPU 1 -> GPU 0", 20.0), ("GPU 0 -> GPU 1", 24.0)]
    cpu = Result("p2p", "cpu", True, {"gpu0_to_gpu1_gb_s": 5.0, "gpu1_to_gpu0_gb_s": 6.0}, "cpu run")
    assert to_finding(cpu, None, 0.0).title == (
        "CPU RUN GPU-to-GPU: 6.0 GB/s host memory copies (no two GPUs, not judged)"
    )
    assert [e.label for e in result_evidence(cpu)] == ["host memory copy", "host memory copy"]


@pytest.mark.parametrize(
    ("error", "title"),
    [
        (Error("stress", "cancelled", "the probe was cancelled"), "stress probe cancelled"),
        (
            Error("membw", "no_torch", "the membw probe needs torch (No module named 'torch')"),
            "memory bandwidth probe needs torch",
        ),
        (
            Error("pcie", "timeout", "no result within 330 s; the probe was stopped"),
            "PCIe probe timed out: no result within 330 s; the probe was stopped",
        ),
        (
            Error("disk", "bad_args", "no readable non-empty files under /x"),
            "disk read probe refused its arguments: no readable non-empty files under /x",
        ),
    ],
)
def test_an_error_says_each_word_once(error: Error, title: str) -> None:
    assert error_title(error) == title
    words = title.split()
    assert not any(a == b for a, b in itertools.pairwise(words))


def test_evidence_labels_come_from_the_catalog_in_each_language() -> None:
    result = Result("stress", H100, True, {"tflops": 781.4, "pct_of_peak": 79.0}, "healthy")
    assert [e.label for e in result_evidence(result, "zh")] == ["矩阵乘法速率", "占峰值比例"]
    assert [e.key for e in result_evidence(result, "zh")] == ["tflops", "pct_of_peak"]


def test_every_probe_label_in_the_catalog_is_used() -> None:
    """The catalog's probe labels are the ones the probes' findings name: none left over, none missing."""
    source = inspect.getsource(findings)
    labels = {label for items in findings._EVIDENCE.values() for _, label, _, _ in items}
    used = set(re.findall(r'"ev\.([a-z_]+)"', source)) | labels
    assert {key.removeprefix("ev.") for key in PROBE_TEXTS["en"]} == used
