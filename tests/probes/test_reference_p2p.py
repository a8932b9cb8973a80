"""The p2p probe: the verdict per link (NVLink by generation, PCIe, no P2P), and the real worker on the CPU."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from types import SimpleNamespace

import pytest

from gputui.cli import main
from gputui.diagnostics.findings import Severity
from gputui.model import GpuSample, HostSample, Snapshot, Topology
from gputui.probes import worker
from gputui.probes.judge import peer_links
from gputui.probes.protocol import Error, Progress, Result, parse_line
from gputui.probes.reference import (
    PcieLink,
    PeerCopy,
    PeerLinks,
    judge_p2p,
    nvlink_count,
    nvlink_gb_s,
    nvlink_generation,
    peer_verdict,
)
from gputui.probes.result_finding import to_finding
from gputui.probes.runner import ProbeRequest, ProbeRunner
from gputui.probes.worker import EXIT_USAGE
from gputui.sources.base import SourceUnavailable
from gputui.sources.nvml import source as nvml_source
from tests.snapshots import snapshot, system_info

H100 = "NVIDIA H100 80GB HBM3"
GEN4_X16 = PcieLink(4, 16, 4, 16)


@pytest.mark.parametrize(
    ("name", "gen", "theory"),
    [
        ("NVIDIA A100-SXM4-80GB", 3, 300.0),
        (H100, 4, 450.0),
        ("NVIDIA H200", 4, 450.0),
        ("NVIDIA B200", 5, 900.0),
        ("NVIDIA GeForce RTX 4090", None, None),
    ],
)
def test_nvlink_theory_per_generation(name: str, gen: int | None, theory: float | None) -> None:
    assert nvlink_generation(name) == gen
    assert nvlink_gb_s(gen) == theory


def test_matrix_cells() -> None:
    assert [nvlink_count(c) for c in ("NV18", "NV2", "PIX", "SYS", "X", None, "NV")] == [18, 2, *[None] * 5]


def test_nvlink_as_expected() -> None:
    verdict = peer_verdict(PeerCopy(0, 1, 362.0, True, H100, nvlinks=18))
    assert verdict.text == "GPU 0 -> GPU 1: 362 GB/s = 80% of NVLink 4 (450 GB/s): as expected"
    assert verdict.ok and verdict.link_gb_s == 450.0


def test_nvlink_below_the_mark_points_at_the_links() -> None:
    verdict = peer_verdict(PeerCopy(3, 5, 200.0, True, H100, nvlinks=18))
    assert not verdict.ok and verdict.pct_of_link == pytest.approx(44.4, abs=0.1)
    assert "below 70%: links down or degraded (see nvlink_down)" in verdict.text


def test_fewer_links_are_judged_against_what_they_carry() -> None:
    """A pair joined by 2 links (direct NVLink, no NVSwitch) carries 2 x 25 GB/s, not a full board's 450."""
    verdict = peer_verdict(PeerCopy(0, 1, 45.0, True, H100, nvlinks=2))
    assert verdict.text == "GPU 0 -> GPU 1: 45 GB/s = 90% of NVLink 4 over 2 links (50 GB/s): as expected"


def test_pcie_uses_the_slots_best_link() -> None:
    idle = PcieLink(1, 16, 4, 16)  # downshifted at idle: judged against what the slot trains to
    verdict = peer_verdict(PeerCopy(0, 1, 24.0, True, H100, pcie=idle))
    assert verdict.text == "GPU 0 -> GPU 1: 24 GB/s = 76% of PCIe Gen4 x16 (32 GB/s): as expected"
    slow = peer_verdict(PeerCopy(0, 1, 9.0, True, H100, pcie=GEN4_X16))
    assert not slow.ok and "the path across CPU sockets" in slow.text


def test_no_p2p_fails_whatever_the_link() -> None:
    verdict = peer_verdict(PeerCopy(0, 1, 11.0, False, H100, pcie=GEN4_X16))
    assert verdict.text == "GPU 0 -> GPU 1: 11 GB/s: peer copies go through host memory, P2P unavailable"
    assert not verdict.ok


def test_unknown_link_or_generation_passes_without_comparison() -> None:
    assert peer_verdict(PeerCopy(0, 1, 20.0, True, H100)).text.endswith("link unknown, no theoretical comparison")
    unknown = peer_verdict(PeerCopy(0, 1, 20.0, True, "NVIDIA RTX A6000", nvlinks=4))
    assert unknown.ok and "NV4 (unknown NVLink generation for NVIDIA RTX A6000)" in unknown.text


def test_one_pair_reads_both_directions() -> None:
    judged = judge_p2p([PeerCopy(0, 1, 362.0, True, H100, 18), PeerCopy(1, 0, 365.0, True, H100, 18)])
    assert judged.ok and judged.details == ()
    assert judged.verdict.count("as expected") == 2 and "; GPU 1 -> GPU 0" in judged.verdict
    assert judged.figures["gpu1_to_gpu0_gb_s"] == 365.0 and judged.figures["gpu0_to_gpu1_p2p"] == 1.0
    assert judged.figures["gpu0_to_gpu1_link_gb_s"] == 450.0


def test_many_pairs_name_the_worst() -> None:
    copies = [PeerCopy(a, b, 360.0, True, H100, 18) for a in range(3) for b in range(3) if a != b]
    copies[3] = PeerCopy(1, 2, 100.0, True, H100, 18)
    judged = judge_p2p(copies)
    assert not judged.ok and len(judged.details) == 6
    assert judged.verdict.startswith("1 of 6 directions below the mark; worst: GPU 1 -> GPU 2: 100 GB/s")
    fine = judge_p2p([PeerCopy(a, b, 330.0 + a, True, H100, 18) for a in range(3) for b in range(3) if a != b])
    assert fine.ok and fine.verdict.startswith("all 6 directions as expected; slowest: GPU 0 -> GPU 1")


def test_peer_links_travel_as_json() -> None:
    links = PeerLinks(((0, 1, 18),), ((0, GEN4_X16), (1, PcieLink(3, 16, 3, 16))))
    back = PeerLinks.from_arg(links.to_arg())
    assert back == links and back.between(1, 0) == 18 and back.between(0, 2) is None
    assert back.slower_pcie(0, 1) == PcieLink(3, 16, 3, 16) and back.slower_pcie(0, 5) == GEN4_X16
    with pytest.raises(ValueError, match="not a link description"):
        PeerLinks.from_arg('{"nvlinks": 3}')


def test_request_refuses_a_gpu_as_its_own_peer() -> None:
    with pytest.raises(ValueError, match="another GPU than 1"):
        ProbeRequest("p2p", gpu=1, peer=1)
    argv = ProbeRequest("p2p", peer=1, peer_links=PeerLinks(((0, 1, 4),))).argv()
    assert argv[argv.index("--peer") + 1] == "1" and '"nvlinks":[[0,1,4]]' in argv[argv.index("--peer-links") + 1]


async def test_cpu_run_through_the_real_worker_is_labelled() -> None:
    request = ProbeRequest("p2p", cpu=True, peer=1, max_bytes=64 * 1024, reps=2, peer_links=PeerLinks(((0, 1, 18),)))
    messages = [m async for m in ProbeRunner(request)]
    final = messages[-1]
    assert isinstance(final, Result), final
    assert final.device == "cpu" and final.on_cpu and final.ok
    assert final.verdict.startswith("cpu run: not two CUDA devices") and "not a GPU link" in final.verdict
    assert set(final.figures) == {"gpu0_to_gpu1_gb_s", "gpu1_to_gpu0_gb_s"}
    progress = [m for m in messages if isinstance(m, Progress)]
    # No GPU takes part: the copies are counted, never named after GPUs, and each says it runs on the CPU.
    assert [m.message for m in progress] == ["host memory copy 1/2 64 KiB", "host memory copy 2/2 64 KiB"]
    assert all(m.on_cpu for m in progress)


def test_the_worker_refuses_a_gpu_as_its_own_peer() -> None:
    """The worker checks too: a hand-written command line reaches it without ProbeRequest's check."""
    argv = [sys.executable, "-m", "gputui.probes.worker", "p2p", "--cpu", "--gpu", "1", "--peer", "1"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    final = parse_line(done.stdout.splitlines()[-1])
    assert done.returncode == EXIT_USAGE
    assert isinstance(final, Error) and final.code == "bad_args" and "is --gpu itself" in final.message


def _box(matrix: tuple[tuple[str | None, ...], ...] | None) -> Snapshot:
    """Three idle H100s, their links stepped down to Gen1 x16 (of Gen5 x16), joined as `matrix` says."""
    topology = Topology(matrix, (), (), ()) if matrix is not None else None
    system = system_info(gpu_count=3, cpu_count=32, topology=topology)
    gpus = [GpuSample(index=i, timestamp=1.0, pcie_gen=1, pcie_width=16) for i in (0, 1, 2)]
    return snapshot(1.0, gpus, host_sample=HostSample(1.0), system=system)


def test_peer_links_read_the_topology_and_each_link() -> None:
    matrix = (("X", "NV18", "SYS"), ("NV18", "X", "PIX"), ("SYS", "PIX", "X"))
    links = peer_links(_box(matrix))
    assert links.nvlinks == ((0, 1, 18),)
    assert links.slower_pcie(1, 2) == PcieLink(1, 16, 5, 16)
    assert peer_links(_box(None)).nvlinks == ()


def test_a_p2p_result_is_a_finding_with_its_figures() -> None:
    judged = judge_p2p([PeerCopy(0, 1, 11.0, False, H100, pcie=GEN4_X16)])
    result = Result("p2p", f"cuda:0,1 {H100}", judged.ok, judged.figures, judged.verdict)
    finding = to_finding(result, None, 5.0)
    assert finding.rule == "probe_p2p" and finding.severity is Severity.WARNING
    assert "P2P unavailable" in finding.title
    assert [(e.key, e.label, e.value, e.unit) for e in finding.evidence] == [
        ("gpu0_to_gpu1_gb_s", "GPU 0 -> GPU 1", 11.0, "GB/s")
    ]


@pytest.fixture
def no_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    def unavailable() -> None:
        raise SourceUnavailable("no NVIDIA driver (test)")

    monkeypatch.setattr(nvml_source, "_import_pynvml", unavailable)


@pytest.mark.usefixtures("no_driver")
def test_cli_cpu_run_prints_the_protocol_result(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["probe", "p2p", "--gpu", "0", "--peer", "1", "--size-mb", "0.0625", "--json"]) == 0
    captured = capsys.readouterr()
    body = json.loads(captured.out)
    assert body["probe"] == "p2p" and body["device"] == "cpu" and body["verdict"].startswith("cpu run")
    assert body["details"] == ["64 KiB copies, median of 7 timed"]
    assert "CPU RUN" in captured.err and "host memory copy 2/2 64 KiB" in captured.err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["probe", "p2p", "--gpu", "1"], "p2p: --gpu A needs --peer B (or neither, for every pair)"),
        (["probe", "p2p", "--peer", "0"], "p2p: --peer 0 is --gpu itself; a peer copy needs two GPUs"),
        (["probe", "p2p", "--gpu", "2", "--peer", "2"], "p2p: --peer 2 is --gpu itself; a peer copy needs two GPUs"),
        (["probe", "pcie", "--peer", "1"], "--peer: only for the p2p probe"),
        (["probe", "membw", "--peer", "1", "--size-mb", "8"], "--peer and --size-mb: only for the p2p probe"),
        (
            ["probe", "p2p", "--peer", "1", "--size-mb", "8", "--max-bytes", "8M"],
            "p2p: --size-mb or --max-bytes, not both",
        ),
    ],
)
def test_cli_pair_errors(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert capsys.readouterr().err == f"gputui: error: {message}\n"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["probe", "p2p", "--peer", "-1"], "not a GPU index: '-1'"),
        (["probe", "p2p", "--size-mb", "0"], "must be greater than 0"),
        (["probe", "p2p", "--size-mb", "big"], "not a size in MB: 'big'"),
    ],
)
def test_cli_parse_errors(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2 and message in capsys.readouterr().err


class _FakeCuda:
    """Two H100s joined by NVLink whose copies take 1 ms by the events' clock; GPU 1 cannot reach GPU 0 by P2P."""

    class Event:
        def __init__(self, enable_timing: bool) -> None:
            self.at = 0.0

        def record(self) -> None:
            _FakeCuda.clock += 1.0
            self.at = _FakeCuda.clock

        def synchronize(self) -> None:
            pass

        def elapsed_time(self, end: _FakeCuda.Event) -> float:
            return end.at - self.at  # 1 ms between start and end

    clock = 0.0
    is_available = staticmethod(lambda: True)
    device_count = staticmethod(lambda: 2)
    mem_get_info = staticmethod(lambda gpu: (80 << 30, 80 << 30))
    synchronize = staticmethod(lambda device=None: None)
    get_device_name = staticmethod(lambda gpu: H100)
    can_device_access_peer = staticmethod(lambda dst, src: (src, dst) == (0, 1))
    device = staticmethod(lambda where: contextlib.nullcontext())


class _FakeTensor:
    def __init__(self, device: object) -> None:
        self.device = device

    def copy_(self, src: _FakeTensor, non_blocking: bool = False) -> None:
        pass


def test_the_cuda_path_judges_each_direction(capsys: pytest.CaptureFixture[str]) -> None:
    """What a GPU box runs, with torch faked: the figures and verdict per direction (no two GPUs here)."""
    fake = SimpleNamespace(
        cuda=_FakeCuda,
        uint8="uint8",
        device=lambda *where: where,
        ones=lambda size, dtype, device: _FakeTensor(device),
        zeros=lambda size, dtype, device: _FakeTensor(device),
    )
    links = PeerLinks(((0, 1, 18),))
    options = worker.parse_options(["p2p", "--peer-links", links.to_arg(), "--max-bytes", "256M"])
    result = worker.probe_p2p(fake, options)
    assert result.device == f"cuda:0,1 {H100}" and not result.ok
    assert result.verdict == (
        "GPU 0 -> GPU 1: 268 GB/s = 60% of NVLink 4 (450 GB/s), below 70%: links down or degraded "
        "(see nvlink_down), or another job on the links; "
        "GPU 1 -> GPU 0: 268 GB/s: peer copies go through host memory, P2P unavailable"
    )
    assert result.figures["gpu0_to_gpu1_p2p"] == 1.0 and result.figures["gpu1_to_gpu0_p2p"] == 0.0
    assert result.figures["bytes"] == 256 * 1024**2
    assert capsys.readouterr().out.count('"type":"progress"') == 2
