"""Reference figures the probes are judged against: PCIe link theory, dense matmul and memory peaks.

Pure data and functions (no torch, no driver), so the worker, the runner and the monitor share one table.
PCIe figures follow the PCI Express Base Specification's transfer rates and encodings; matmul and memory peaks
come from NVIDIA's data sheets (V100, A100, H100, H200, L4) and the Ada Lovelace architecture whitepaper
(RTX 4090). GB and TB are decimal (1e9, 1e12), as data sheets use them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

# A measured figure below this fraction of its reference fails the probe's check. *Derived* (ours): published
# pinned-copy measurements reach 70-80% of PCIe theory (~25 GB/s of 31.5 on Gen4 x16, 11-12 of 15.75 on Gen3),
# and a well-written BF16 matmul 80-87% of dense peak (A100 SXM ~271 of 312 TFLOP/s).
PASS_FRACTION = 0.70
# The most of a disk probe's read the page cache may serve for its figure still to be the storage's (%).
DISK_CACHED_PCT_MAX = 10.0

# Usable GB/s per lane and direction, after line encoding (8b/10b for Gen1-2, 128b/130b for Gen3-5, FLIT Gen6).
PCIE_GB_S_PER_LANE: dict[int, float] = {
    1: 2.5 * 8 / 10 / 8,
    2: 5.0 * 8 / 10 / 8,
    3: 8.0 * 128 / 130 / 8,
    4: 16.0 * 128 / 130 / 8,
    5: 32.0 * 128 / 130 / 8,
    6: 118.0 / 16,  # FLIT mode: ~118 GB/s usable on x16
}

DTYPES = ("bf16", "fp16", "tf32", "fp32")


@dataclass(frozen=True, slots=True)
class PcieLink:
    """A link as the driver reports it: the trained gen/width now, and the most this slot allows."""

    gen: int | None = None
    width: int | None = None
    max_gen: int | None = None
    max_width: int | None = None

    @property
    def current_gb_s(self) -> float | None:
        return pcie_gb_s(self.gen, self.width)

    @property
    def max_gb_s(self) -> float | None:
        return pcie_gb_s(self.max_gen, self.max_width)

    @property
    def downgraded(self) -> bool:
        """True when the link trained below what the slot allows (only meaningful under load)."""
        now, best = self.current_gb_s, self.max_gb_s
        return now is not None and best is not None and now < best


def pcie_gb_s(gen: int | None, width: int | None) -> float | None:
    """Theoretical GB/s per direction of a link; None when gen or width is unknown or not a PCIe value."""
    if gen is None or width is None or width <= 0 or gen not in PCIE_GB_S_PER_LANE:
        return None
    return PCIE_GB_S_PER_LANE[gen] * width


def link_label(gen: int | None, width: int | None) -> str:
    return f"Gen{gen if gen is not None else '?'} x{width if width is not None else '?'}"


@dataclass(frozen=True, slots=True)
class GpuPeaks:
    """Dense (no sparsity) matmul TFLOP/s per dtype and memory bandwidth in GB/s; None = not known to us."""

    model: str
    tflops: dict[str, float | None]
    memory_gb_s: float | None


@dataclass(frozen=True, slots=True)
class _Rule:
    """Matches a GPU name when every `need` token is present and no `avoid` token is."""

    need: tuple[str, ...]
    avoid: tuple[str, ...]
    model: str
    fp32: float | None
    tf32: float | None
    half: float | None  # fp16 and bf16
    bf16: bool = True


# Order matters: the first rule that matches wins. Variants with other peaks (H100 NVL, H200 NVL, V100 PCIe,
# RTX 4090 D, the China-market A800/H800/H20) are excluded on purpose and read as "unknown peak".
_RULES: tuple[_Rule, ...] = (
    _Rule(("H100", "PCIE"), ("NVL",), "H100 PCIe", 51.0, 378.0, 756.0),
    _Rule(("H100",), ("NVL",), "H100 SXM", 67.0, 495.0, 989.0),
    _Rule(("H200",), ("NVL",), "H200", 67.0, 495.0, 989.0),
    _Rule(("A100",), (), "A100", 19.5, 156.0, 312.0),
    _Rule(("V100", "SXM2"), (), "V100 SXM2", 15.7, None, 125.0, bf16=False),
    _Rule(("L4",), (), "L4", 30.3, 60.0, 121.0),
    _Rule(("RTX", "4090"), ("D",), "RTX 4090", 82.6, 82.6, 165.0),
)

# HBM/GDDR peak in GB/s, by model and, for the A100, by memory size.
_MEMORY_GB_S: dict[str, float] = {
    "H100 SXM": 3350.0,
    "H200": 4800.0,
    "A100 80GB": 2000.0,
    "A100 40GB": 1550.0,
    "RTX 4090": 1000.0,
    "L4": 300.0,
}


def _tokens(name: str) -> set[str]:
    return set(name.upper().replace("-", " ").replace("_", " ").split())


def gpu_peaks(name: str) -> GpuPeaks | None:
    """The reference figures for a GPU name as NVML or torch reports it ("NVIDIA H100 80GB HBM3"), or None.

    None for a MIG instance ("NVIDIA H100 80GB HBM3 MIG 3g.40gb", as CUDA names the device a probe runs on in MIG
    mode): it holds a share of the SMs and of the memory bandwidth, so the whole GPU's peaks would call a healthy
    slice slow."""
    tokens = _tokens(name)
    if "MIG" in tokens:
        return None
    for rule in _RULES:
        if all(t in tokens for t in rule.need) and not any(t in tokens for t in rule.avoid):
            tflops = {
                "fp32": rule.fp32,
                "tf32": rule.tf32,
                "fp16": rule.half,
                "bf16": rule.half if rule.bf16 else None,
            }
            memory_key = rule.model
            if rule.model == "A100":
                memory_key = "A100 80GB" if "80GB" in tokens else "A100 40GB" if "40GB" in tokens else ""
            return GpuPeaks(rule.model, tflops, _MEMORY_GB_S.get(memory_key))
    return None


def percent(measured: float, reference: float) -> float:
    return 100.0 * measured / reference


@dataclass(frozen=True, slots=True)
class PcieVerdict:
    """What a pinned-copy figure says about a link, in words, and whether it passes."""

    text: str
    ok: bool
    pct_of_link: float | None
    pct_of_max: float | None


def pcie_verdict(direction: str, measured_gb_s: float, link: PcieLink | None) -> PcieVerdict:
    """E.g. "H2D 11.8 GB/s = 19% of Gen5 x16: the link trained at Gen3 x8, see pcie_downgrade"."""
    figure = f"{direction} {measured_gb_s:.1f} GB/s"
    now = link.current_gb_s if link else None
    best = link.max_gb_s if link else None
    pct_now = percent(measured_gb_s, now) if now else None
    pct_max = percent(measured_gb_s, best) if best else None
    if link is None or (now is None and best is None):
        return PcieVerdict(f"{figure}: link gen/width unknown, no theoretical comparison", True, None, None)
    assert link is not None
    current = link_label(link.gen, link.width)
    if link.downgraded and pct_max is not None:
        text = (
            f"{figure} = {pct_max:.0f}% of {link_label(link.max_gen, link.max_width)}: "
            f"the link trained at {current}, see pcie_downgrade"
        )
        return PcieVerdict(text, False, pct_now, pct_max)
    reference, pct = (now, pct_now) if now is not None and pct_now is not None else (best, pct_max)
    assert reference is not None and pct is not None
    label = current if now is not None else link_label(link.max_gen, link.max_width)
    if pct >= 100 * PASS_FRACTION:
        return PcieVerdict(f"{figure} = {pct:.0f}% of {label} ({reference:.1f} GB/s): healthy", True, pct_now, pct_max)
    text = (
        f"{figure} = {pct:.0f}% of {label} ({reference:.1f} GB/s), below the {100 * PASS_FRACTION:.0f}% a healthy "
        "link carries: another job sharing the link, a PCIe switch, or host memory/NUMA placement"
    )
    return PcieVerdict(text, False, pct_now, pct_max)


@dataclass(frozen=True, slots=True)
class PcieJudgement:
    """Both directions judged apart, as one verdict and the figures that go with it."""

    ok: bool
    verdict: str
    figures: dict[str, float | None]


def judge_pcie(h2d_gb_s: float, d2h_gb_s: float, link: PcieLink | None) -> PcieJudgement:
    """The best pinned figure of each direction against the link."""
    h2d = pcie_verdict("H2D", h2d_gb_s, link)
    d2h = pcie_verdict("D2H", d2h_gb_s, link)
    figures = {
        "link_gb_s": link.current_gb_s if link else None,
        "link_max_gb_s": link.max_gb_s if link else None,
        "h2d_pct_of_link": h2d.pct_of_link,
        "d2h_pct_of_link": d2h.pct_of_link,
    }
    return PcieJudgement(h2d.ok and d2h.ok, f"{h2d.text}; {d2h.text}", figures)


# NVLink per link and direction, and the links a full board has, by generation (FACTS.md "Interconnect"):
# NVLink 3 (A100) 12 x 25 = 300 GB/s, NVLink 4 (H100/H200) 18 x 25 = 450, NVLink 5 (B200) 18 x 50 = 900.
NVLINK_LINK_GB_S: dict[int, float] = {3: 25.0, 4: 25.0, 5: 50.0}
NVLINK_FULL_LINKS: dict[int, int] = {3: 12, 4: 18, 5: 18}
# GPU name tokens -> NVLink generation; the first match wins.
_NVLINK_GENERATIONS: tuple[tuple[str, int], ...] = (("B200", 5), ("H200", 4), ("H100", 4), ("A100", 3))


def nvlink_generation(name: str) -> int | None:
    """The NVLink generation of a GPU by its name ("NVIDIA H100 80GB HBM3" -> 4), or None when not known to us."""
    tokens = _tokens(name)
    return next((gen for token, gen in _NVLINK_GENERATIONS if token in tokens), None)


def nvlink_gb_s(gen: int | None, links: int | None = None) -> float | None:
    """Per-direction theory of `links` NVLinks (all of a full board's when None); None for an unknown generation."""
    if gen not in NVLINK_LINK_GB_S:
        return None
    count = NVLINK_FULL_LINKS[gen] if links is None else min(links, NVLINK_FULL_LINKS[gen])
    return NVLINK_LINK_GB_S[gen] * count


def nvlink_count(cell: str | None) -> int | None:
    """The links of a topology matrix cell ("NV18" -> 18); None for a PCIe path, "X" or an unknown cell."""
    if cell is None or not cell.startswith("NV") or not cell[2:].isdigit():
        return None
    return int(cell[2:])


@dataclass(frozen=True, slots=True)
class PeerLinks:
    """What the monitor knows of the links between GPUs, for the p2p verdict; travels to the worker as JSON."""

    nvlinks: tuple[tuple[int, int, int], ...] = ()  # (gpu, gpu, links) for NVLink-joined pairs, either order
    pcie: tuple[tuple[int, PcieLink], ...] = ()

    def between(self, a: int, b: int) -> int | None:
        return next((n for x, y, n in self.nvlinks if {x, y} == {a, b}), None)

    def slower_pcie(self, a: int, b: int) -> PcieLink | None:
        """The link of the slower of two GPUs (a peer copy crosses both); the known one when only one is."""
        links = [link for gpu, link in self.pcie if gpu in (a, b)]
        return min(links, key=lambda link: link.max_gb_s or link.current_gb_s or float("inf"), default=None)

    def to_arg(self) -> str:
        pcie = [[gpu, link.gen, link.width, link.max_gen, link.max_width] for gpu, link in self.pcie]
        return json.dumps({"nvlinks": [list(t) for t in self.nvlinks], "pcie": pcie}, separators=(",", ":"))

    @classmethod
    def from_arg(cls, text: str) -> PeerLinks:
        """The worker's side of to_arg(); ValueError (argparse's "invalid value") for anything else."""
        try:
            body = json.loads(text)
            nvlinks = tuple((int(a), int(b), int(n)) for a, b, n in body["nvlinks"])
            pcie = tuple((int(gpu), PcieLink(*rest)) for gpu, *rest in body["pcie"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a link description: {text!r}") from exc
        return cls(nvlinks, pcie)


@dataclass(frozen=True, slots=True)
class PeerCopy:
    """One timed peer copy, src -> dst, with what the probe was told about the link between them."""

    src: int
    dst: int
    gb_s: float
    p2p: bool | None  # torch.cuda.can_device_access_peer(dst, src); None on a CPU run
    gpu_name: str = ""  # the slower GPU's name, for its NVLink generation
    nvlinks: int | None = None  # links joining the pair (the matrix's NV<n>); None when not NVLink or unknown
    pcie: PcieLink | None = None  # the slower of the two GPUs' PCIe links


@dataclass(frozen=True, slots=True)
class PeerVerdict:
    """One direction of one pair in words, and the figures that go with it."""

    text: str
    ok: bool
    link_gb_s: float | None
    pct_of_link: float | None


def _peer_reference(copy: PeerCopy) -> tuple[str, float | None] | None:
    """The link a peer copy is judged against, as (label, GB/s); None when nothing is known of it."""
    if copy.nvlinks:
        gen = nvlink_generation(copy.gpu_name)
        if gen is None:
            return f"NV{copy.nvlinks} (unknown NVLink generation for {copy.gpu_name or 'this GPU'})", None
        full = copy.nvlinks >= NVLINK_FULL_LINKS[gen]
        label = f"NVLink {gen}" if full else f"NVLink {gen} over {copy.nvlinks} links"
        return label, nvlink_gb_s(gen, copy.nvlinks)
    link = copy.pcie
    if link is None:
        return None
    # The slot's best, not the gen read at idle: GPUs downshift an idle link and train it up for the copy.
    if link.max_gb_s is not None:
        return f"PCIe {link_label(link.max_gen, link.max_width)}", link.max_gb_s
    if link.current_gb_s is not None:
        return f"PCIe {link_label(link.gen, link.width)}", link.current_gb_s
    return None


def peer_verdict(copy: PeerCopy) -> PeerVerdict:
    """E.g. "GPU 0 -> GPU 1: 362 GB/s = 80% of NVLink 4 (450 GB/s): as expected"."""
    figure = f"GPU {copy.src} -> GPU {copy.dst}: {copy.gb_s:.0f} GB/s"
    if copy.p2p is False:
        return PeerVerdict(f"{figure}: peer copies go through host memory, P2P unavailable", False, None, None)
    reference = _peer_reference(copy)
    if reference is None:
        return PeerVerdict(f"{figure}: link unknown, no theoretical comparison", True, None, None)
    label, theory = reference
    if theory is None:
        return PeerVerdict(f"{figure} over {label}: no theoretical comparison", True, None, None)
    pct = percent(copy.gb_s, theory)
    against = f"{figure} = {pct:.0f}% of {label} ({theory:.0f} GB/s)"
    if pct >= 100 * PASS_FRACTION:
        return PeerVerdict(f"{against}: as expected", True, theory, pct)
    why = (
        "links down or degraded (see nvlink_down), or another job on the links"
        if copy.nvlinks
        else "a PCIe switch, the path across CPU sockets, or another job on the link"
    )
    return PeerVerdict(f"{against}, below {100 * PASS_FRACTION:.0f}%: {why}", False, theory, pct)


@dataclass(frozen=True, slots=True)
class PeerJudgement:
    """All the directions of a p2p run judged: one verdict, figures per direction, a line per direction."""

    ok: bool
    verdict: str
    figures: dict[str, float | None]
    details: tuple[str, ...]


def judge_p2p(copies: Sequence[PeerCopy]) -> PeerJudgement:
    """One pair reads as both its sentences; more pairs as a count and the worst direction, each in details."""
    judged = [(copy, peer_verdict(copy)) for copy in copies]
    figures: dict[str, float | None] = {}
    for copy, verdict in judged:
        key = f"gpu{copy.src}_to_gpu{copy.dst}"
        figures[f"{key}_gb_s"] = copy.gb_s
        figures[f"{key}_link_gb_s"] = verdict.link_gb_s
        figures[f"{key}_pct_of_link"] = verdict.pct_of_link
        figures[f"{key}_p2p"] = None if copy.p2p is None else float(copy.p2p)
    ok = all(verdict.ok for _, verdict in judged)
    if len(judged) <= 2:
        return PeerJudgement(ok, "; ".join(verdict.text for _, verdict in judged), figures, ())
    failed = sum(not verdict.ok for _, verdict in judged)
    # Worst first: a failed direction, then the lowest share of its link, then the lowest figure.
    _, worst = min(judged, key=lambda cv: (cv[1].ok, cv[1].pct_of_link or float("inf"), cv[0].gb_s))
    head = (
        f"{failed} of {len(judged)} directions below the mark; worst: "
        if failed
        else f"all {len(judged)} directions as expected; slowest: "
    )
    return PeerJudgement(ok, head + worst.text, figures, tuple(verdict.text for _, verdict in judged))
