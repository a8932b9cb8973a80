"""`gputui topo`: the matrix, legend, NUMA, affinity, NVLink and P2P as text and JSON, on hand-made machines."""

from __future__ import annotations

import dataclasses
import json

import pytest

from gputui.cli import main
from gputui.commands import topo
from gputui.model import GpuInfo, GpuSample, HostSample, Snapshot, Topology
from tests.snapshots import snapshot, system_info
from tests.topologies import NVSWITCH_AFFINITY, nvswitch8, pcie_box4, single

SYSTEM = system_info(gpu_count=0, cpu_count=224)


def machine(topology: Topology | None, gpus: int, *, nvlink: bool = False, source: str = "nvml") -> Snapshot:
    infos = tuple(
        GpuInfo(index=i, name="H100", nvlink_links_total=18 if nvlink else None, nvlink_version=4 if nvlink else None)
        for i in range(gpus)
    )
    # GPU 3 has two links down, as after a bad reseat.
    samples = tuple(
        GpuSample(index=i, timestamp=0.0, nvlink_links_active=(16 if i == 3 else 18) if nvlink else None)
        for i in range(gpus)
    )
    system = dataclasses.replace(SYSTEM, gpu_count=gpus, topology=topology, source=source)  # type: ignore[arg-type]
    return snapshot(0.0, samples, infos, HostSample(0.0), system)


def run_topo(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, snap: Snapshot, *args: str) -> str:
    monkeypatch.setattr(topo, "take_snapshot", lambda args: snap)
    assert main(["topo", *args]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    return out


def test_nvswitch_box_text(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    out = run_topo(capsys, monkeypatch, machine(nvswitch8(), 8, nvlink=True))
    lines = out.splitlines()
    assert lines[1].split() == [*(f"GPU{i}" for i in range(8)), "NUMA", "CPU", "affinity", "NVLink"]
    assert lines[2].split() == ["GPU0", "X", *["NV18"] * 7, "0", NVSWITCH_AFFINITY[0], "18/18"]
    assert lines[5].split() == ["GPU3", *["NV18"] * 3, "X", *["NV18"] * 4, "0", NVSWITCH_AFFINITY[0], "16/18"]
    assert lines[9].split()[-3:] == ["1", NVSWITCH_AFFINITY[1], "18/18"]
    for key in ("X", "NV#", "PIX", "PXB", "PHB", "NODE", "SYS"):
        assert any(line.split()[:1] == [key] for line in lines), key
    p2p = lines[lines.index("P2P (peer read and write between the pair): OK, no, n/a (not read)") + 1 :]
    assert len(p2p) == 9 and p2p[1].split() == ["GPU0", "X", *["OK"] * 7]
    assert "SIMULATED" not in out


def test_pcie_box_reads_sys_across_sockets_and_never_guesses(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = run_topo(capsys, monkeypatch, machine(pcie_box4(), 4))
    lines = out.splitlines()
    assert lines[2].split() == ["GPU0", "X", "PIX", "SYS", "SYS", "0", "0-15", "n/a"]
    assert lines[3].split() == ["GPU1", "PIX", "X", "SYS", "n/a", "0", "0-15", "n/a"]
    assert lines[5].split() == ["GPU3", "SYS", "n/a", "PIX", "X", "n/a", "n/a", "n/a"]
    p2p = lines[-5:]
    assert p2p[1].split() == ["GPU0", "X", "OK", "no", "no"]
    assert p2p[4].split() == ["GPU3", "no", "no", "OK", "X"]


def test_single_gpu(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    out = run_topo(capsys, monkeypatch, machine(single(), 1))
    assert out.splitlines()[2].split() == ["GPU0", "X", "0", "0-63", "n/a"]
    assert out.rstrip().endswith("P2P: no GPU pairs (one GPU).")


def test_no_topology_is_said_in_words(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    out = run_topo(capsys, monkeypatch, machine(None, 2))
    assert "No topology" in out.splitlines()[1]
    assert "GPU0" not in out


def test_simulated_is_labelled_first_and_last(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = run_topo(capsys, monkeypatch, machine(nvswitch8(), 8, source="simulated"))
    lines = out.rstrip().splitlines()
    assert lines[0].startswith("SIMULATED") and lines[-1].startswith("SIMULATED")


def test_demo_runs_end_to_end(capsys: pytest.CaptureFixture[str]) -> None:
    """The simulated machine's own topology, read through the source and labelled: four H100 SXM on an NVSwitch,
    two per socket, every link up and every pair able to reach its peer."""
    assert main(["topo", "--demo", "healthy"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == lines[-1] == "SIMULATED (scenario healthy) - not live data from this machine"
    assert lines[1].startswith("sim-healthy  driver 570.133.20  CUDA 12.8  4 GPUs  32 CPUs  ")
    assert lines[2].split() == ["GPU0", "GPU1", "GPU2", "GPU3", "NUMA", "CPU", "affinity", "NVLink"]
    assert [line.split() for line in lines[3:7]] == [
        ["GPU0", "X", "NV18", "NV18", "NV18", "0", "0-15", "18/18"],
        ["GPU1", "NV18", "X", "NV18", "NV18", "0", "0-15", "18/18"],
        ["GPU2", "NV18", "NV18", "X", "NV18", "1", "16-31", "18/18"],
        ["GPU3", "NV18", "NV18", "NV18", "X", "1", "16-31", "18/18"],
    ]
    assert "Legend:" in lines
    p2p = lines.index("P2P (peer read and write between the pair): OK, no, n/a (not read)")
    assert [line.split()[1:] for line in lines[p2p + 2 : p2p + 6]] == [
        ["OK"] * i + ["X"] + ["OK"] * (3 - i) for i in range(4)
    ]


@pytest.mark.parametrize(
    ("topology", "gpus", "nvlink"), [(nvswitch8(), 8, True), (pcie_box4(), 4, False), (single(), 1, False)]
)
def test_json_shape(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, topology: Topology, gpus: int, nvlink: bool
) -> None:
    data = json.loads(run_topo(capsys, monkeypatch, machine(topology, gpus, nvlink=nvlink), "--json"))
    assert set(data) == {"schema", "system", "topology", "nvlink"}
    assert data["system"]["hostname"] == "box" and data["system"]["source"] == "nvml"
    assert "topology" not in data["system"]
    assert set(data["topology"]) == {"matrix", "p2p", "numa_node", "cpu_affinity", "numa_nodes"}
    assert data["topology"]["matrix"] == [list(row) for row in topology.matrix]
    assert data["topology"]["p2p"] == [list(row) for row in topology.p2p]
    assert len(data["nvlink"]) == gpus
    assert all(set(gpu) == {"index", "links_active", "links_total", "version"} for gpu in data["nvlink"])
    if nvlink:
        assert data["nvlink"][3] == {"index": 3, "links_active": 16, "links_total": 18, "version": 4}
    else:
        assert data["nvlink"][0] == {"index": 0, "links_active": None, "links_total": None, "version": None}


def test_json_without_topology(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    data = json.loads(run_topo(capsys, monkeypatch, machine(None, 2), "--json"))
    assert data["topology"] is None and len(data["nvlink"]) == 2
