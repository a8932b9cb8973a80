"""The reference tables and the words of the pcie verdict: pure math, checked against the PCIe specification's
rates and NVIDIA's data sheets."""

from __future__ import annotations

import pytest

from gputui.argtypes import parse_bytes
from gputui.formatting import fmt_size
from gputui.probes.reference import PcieLink, gpu_peaks, judge_pcie, pcie_gb_s, pcie_verdict


@pytest.mark.parametrize(
    ("gen", "width", "expected"),
    [(1, 16, 4.0), (2, 16, 8.0), (3, 16, 15.75), (4, 16, 31.5), (5, 16, 63.0), (6, 16, 118.0), (3, 8, 7.88)],
)
def test_pcie_theory_matches_the_facts_table(gen: int, width: int, expected: float) -> None:
    assert pcie_gb_s(gen, width) == pytest.approx(expected, abs=0.02)  # the table is rounded


@pytest.mark.parametrize(("gen", "width"), [(None, 16), (4, None), (7, 16), (0, 16), (4, 0)])
def test_unknown_links_have_no_theory(gen: int | None, width: int | None) -> None:
    assert pcie_gb_s(gen, width) is None


@pytest.mark.parametrize(
    ("name", "model", "bf16", "memory"),
    [
        ("NVIDIA H100 80GB HBM3", "H100 SXM", 989.0, 3350.0),
        ("NVIDIA H100 PCIe", "H100 PCIe", 756.0, None),
        ("NVIDIA H200", "H200", 989.0, 4800.0),
        ("NVIDIA A100-SXM4-80GB", "A100", 312.0, 2000.0),
        ("NVIDIA A100-PCIE-40GB", "A100", 312.0, 1550.0),
        ("NVIDIA L4", "L4", 121.0, 300.0),
        ("NVIDIA GeForce RTX 4090", "RTX 4090", 165.0, 1000.0),
        ("Tesla V100-SXM2-16GB", "V100 SXM2", None, None),
    ],
)
def test_gpu_peaks_by_name(name: str, model: str, bf16: float | None, memory: float | None) -> None:
    peaks = gpu_peaks(name)
    assert peaks is not None
    assert (peaks.model, peaks.tflops["bf16"], peaks.memory_gb_s) == (model, bf16, memory)


@pytest.mark.parametrize(
    "name",
    [
        "NVIDIA H100 NVL",
        "NVIDIA GeForce RTX 4090 D",
        "NVIDIA A10",
        "NVIDIA L40S",
        "Tesla V100-PCIE-32GB",
        "cpu",
        "NVIDIA H100 80GB HBM3 MIG 3g.40gb",  # a slice: the whole GPU's peaks would call it slow
        "NVIDIA A100-SXM4-40GB MIG 1g.5gb",
    ],
)
def test_variants_with_other_peaks_are_unknown(name: str) -> None:
    assert gpu_peaks(name) is None


def test_v100_has_fp16_but_no_bf16_or_tf32_peak() -> None:
    peaks = gpu_peaks("Tesla V100-SXM2-32GB")
    assert peaks is not None
    assert (peaks.tflops["fp16"], peaks.tflops["bf16"], peaks.tflops["tf32"]) == (125.0, None, None)


def test_verdict_names_a_downgraded_link() -> None:
    verdict = pcie_verdict("H2D", 11.8, PcieLink(gen=3, width=8, max_gen=5, max_width=16))
    assert verdict.text == "H2D 11.8 GB/s = 19% of Gen5 x16: the link trained at Gen3 x8, see pcie_downgrade"
    assert not verdict.ok
    assert verdict.pct_of_link == pytest.approx(100 * 11.8 / 7.877, abs=0.1)


def test_verdict_healthy_at_the_current_link() -> None:
    verdict = pcie_verdict("D2H", 26.0, PcieLink(gen=4, width=16, max_gen=4, max_width=16))
    assert verdict.ok
    assert verdict.text.startswith("D2H 26.0 GB/s = 83% of Gen4 x16 (31.5 GB/s): healthy")


def test_verdict_slow_on_a_full_link_gives_other_causes() -> None:
    verdict = pcie_verdict("H2D", 12.0, PcieLink(gen=4, width=16, max_gen=4, max_width=16))
    assert not verdict.ok
    assert "38% of Gen4 x16" in verdict.text and "below the 70%" in verdict.text


def test_verdict_without_a_link_makes_no_comparison() -> None:
    for link in (None, PcieLink()):
        verdict = pcie_verdict("H2D", 20.0, link)
        assert verdict.ok and verdict.pct_of_link is None
        assert "unknown" in verdict.text


def test_judge_pcie_fails_when_one_direction_is_slow() -> None:
    judged = judge_pcie(26.0, 9.0, PcieLink(4, 16, 4, 16))
    assert not judged.ok
    assert judged.figures["link_gb_s"] == pytest.approx(31.5, abs=0.01)
    assert judged.verdict.count("GB/s =") == 2


@pytest.mark.parametrize(
    ("text", "value"),
    [("4096", 4096), ("64MiB", 64 * 1024**2), ("1G", 1024**3), ("500MB", 500_000_000), ("1.5 KiB", 1536)],
)
def test_parse_bytes(text: str, value: int) -> None:
    assert parse_bytes(text) == value


@pytest.mark.parametrize("text", ["", "abc", "12 parsecs", "-5MiB", "0", "0.1B"])
def test_parse_bytes_rejects_garbage_in_one_line(text: str) -> None:
    with pytest.raises(ValueError, match="size") as info:
        parse_bytes(text)
    assert "\n" not in str(info.value)


def test_format_bytes() -> None:
    values = (512, 1024**2, 1.5 * 1024**3, 1022.5 * 1024**2)
    assert [fmt_size(v) for v in values] == ["512 B", "1 MiB", "1.5 GiB", "1022 MiB"]
