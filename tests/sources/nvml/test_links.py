"""Topology, P2P, placement and NVLink through NvmlSource, against a fake that answers as pynvml does."""

from __future__ import annotations

from pathlib import Path

import pynvml

from gputui.model import SystemInfo
from gputui.serialize import snapshot_to_dict
from gputui.sources.host.source import HostSource
from gputui.sources.nvml.links import cpulist, nvlink_versions
from gputui.sources.nvml.source import NvmlSource
from tests.conftest import Clock
from tests.fake_psutil import NO_PROC, FakePsutil
from tests.fake_pynvml import FakeGpu, FakeNvml, consumer_gpu

NVLINK_COUNTERS = ("nvlink_links_active", "nvlink_replay_errors", "nvlink_recovery_errors", "nvlink_crc_errors")


def opened(nvml: FakeNvml, clock: Clock, slow_every: int = 1) -> tuple[NvmlSource, SystemInfo]:
    host = HostSource(clock=clock, psutil_module=FakePsutil(), root=NO_PROC)  # type: ignore[arg-type]
    source = NvmlSource(pynvml=nvml, host=host, clock=clock, root=NO_PROC, slow_every=slow_every, watch_xid=False)
    return source, source.open()


def hgx(count: int = 8) -> list[FakeGpu]:
    """An HGX H100 board: 18 links each to NVSwitch, two sockets of four GPUs (28 cores each, to fit the
    one 64-bit affinity word a small test machine asks for)."""
    sockets = [i * 2 // count for i in range(count)]
    return [FakeGpu(socket=s, numa_node=s, cpu_affinity=tuple(range(28 * s, 28 * s + 28))) for s in sockets]


def test_nvswitch_box_is_nv18_between_every_pair(clock: Clock) -> None:
    source, system = opened(FakeNvml(hgx()), clock)
    topology = system.topology
    assert topology is not None
    assert [row[i] for i, row in enumerate(topology.matrix)] == ["X"] * 8
    assert {cell for i, row in enumerate(topology.matrix) for j, cell in enumerate(row) if i != j} == {"NV18"}
    assert {cell for i, row in enumerate(topology.p2p) for j, cell in enumerate(row) if i != j} == {True}
    assert topology.numa_node == (0, 0, 0, 0, 1, 1, 1, 1)
    assert topology.cpu_affinity[:1] + topology.cpu_affinity[-1:] == ("0-27", "28-55")
    info = source.sample().gpu_info[0]
    assert (info.nvlink_links_total, info.nvlink_version) == (18, 4)  # NVML's enum 6 is NVLink 4
    assert info.nvlink_remote == ("NVSwitch",) * 18
    assert snapshot_to_dict(source.sample())["system"]["topology"]["matrix"][0][:2] == ["X", "NV18"]


def test_nvswitch_recognised_from_remote_pci_without_the_device_type(clock: Clock) -> None:
    nvml = FakeNvml(hgx(2), missing=["nvmlDeviceGetNvLinkRemoteDeviceType"])
    source, system = opened(nvml, clock)
    assert system.topology is not None and system.topology.matrix[0][1] == "NV18"
    assert source.sample().gpu_info[1].nvlink_remote == ("NVSwitch",) * 18


def test_direct_nvlink_bridge_counts_the_links_to_the_peer(clock: Clock) -> None:
    gpus = [
        FakeGpu(pci_bus_id="00000000:18:00.0"),
        FakeGpu(pci_bus_id="00000000:28:00.0"),
        FakeGpu(nvlink_remotes=None),
    ]
    gpus[0].nvlink_remotes = ["00000000:28:00.0"] * 4
    gpus[1].nvlink_remotes = ["0000:18:00.0"] * 4  # a 4-digit domain, as some remote infos spell it
    source, system = opened(FakeNvml(gpus), clock)
    assert system.topology is not None
    assert system.topology.matrix[0] == ("X", "NV4", "PHB")
    assert system.topology.matrix[1][0] == "NV4"
    assert source.sample().gpu_info[1].nvlink_remote == ("00000000:18:00.0",) * 4


def test_a_bridged_peer_left_out_of_the_selection_is_no_nvswitch(clock: Clock) -> None:
    gpus = [FakeGpu(pci_bus_id="00000000:18:00.0"), FakeGpu(pci_bus_id="00000000:28:00.0")]
    gpus[0].nvlink_remotes = ["00000000:28:00.0"] * 12 + [""] * 6
    gpus[1].nvlink_remotes = ["00000000:18:00.0"] * 12 + [""] * 6
    host = HostSource(clock=clock, psutil_module=FakePsutil(), root=NO_PROC)  # type: ignore[arg-type]
    source = NvmlSource(pynvml=FakeNvml(gpus), host=host, clock=clock, root=NO_PROC, watch_xid=False, gpu_indices=[0])
    source.open()
    assert source.sample().gpu_info[0].nvlink_remote == ("00000000:28:00.0",) * 12 + ("",) * 6
    untyped = FakeNvml(gpus, missing=["nvmlDeviceGetNvLinkRemoteDeviceType"])  # the driver does not say: a switch
    source = NvmlSource(pynvml=untyped, host=host, clock=clock, root=NO_PROC, watch_xid=False, gpu_indices=[0])
    source.open()
    assert source.sample().gpu_info[0].nvlink_remote == ("NVSwitch",) * 12 + ("",) * 6


def test_two_socket_pcie_box_is_pix_or_phb_within_a_socket_and_sys_across(clock: Clock) -> None:
    gpus = [
        consumer_gpu(socket=0, pcie_switch=None, numa_node=0, cpu_affinity=(*range(0, 16), *range(32, 48))),
        consumer_gpu(socket=0, pcie_switch=None, numa_node=0),
        consumer_gpu(socket=1, pcie_switch=7, numa_node=1),
        consumer_gpu(socket=1, pcie_switch=7, numa_node=1),
    ]
    _, system = opened(FakeNvml(gpus), clock)
    topology = system.topology
    assert topology is not None
    assert topology.matrix == (
        ("X", "PHB", "SYS", "SYS"),
        ("PHB", "X", "SYS", "SYS"),
        ("SYS", "SYS", "X", "PIX"),
        ("SYS", "SYS", "PIX", "X"),
    )
    assert topology.p2p == (
        (None, True, False, False),
        (True, None, False, False),
        (False, False, None, True),
        (False, False, True, None),
    )
    assert topology.numa_node == (0, 0, 1, 1)
    assert topology.cpu_affinity[0] == "0-15,32-47"


def test_the_hosts_numa_nodes_are_read_from_sysfs(clock: Clock, tmp_path: Path) -> None:
    """NVML names each GPU's node but not how many the host has: sysfs's online list does."""
    nodes = tmp_path / "sys/devices/system/node"
    nodes.mkdir(parents=True)
    counts = {}
    for online in ("0", "0-1", "0,2-3"):
        (nodes / "online").write_text(online + "\n")
        host = HostSource(clock=clock, psutil_module=FakePsutil(), root=tmp_path)  # type: ignore[arg-type]
        source = NvmlSource(pynvml=FakeNvml(hgx(2)), host=host, clock=clock, root=tmp_path, watch_xid=False)
        topology = source.open().topology
        source.close()
        counts[online] = topology.numa_nodes if topology is not None else "no topology"
    assert counts == {"0": 1, "0-1": 2, "0,2-3": 3}
    _, system = opened(FakeNvml(hgx(2)), clock)
    assert system.topology is not None and system.topology.numa_nodes is None  # no sysfs: not known


def test_single_gpu(clock: Clock) -> None:
    _, system = opened(FakeNvml([FakeGpu()]), clock)
    assert system.topology is not None
    assert system.topology.matrix == (("X",),)
    assert system.topology.p2p == ((None,),)
    assert system.topology.numa_node == (0,)


def test_links_down_and_error_counters_summed_on_the_slow_cadence(clock: Clock) -> None:
    nvml = FakeNvml(hgx(2))
    source, _ = opened(nvml, clock, slow_every=3)
    first = source.sample().gpus[0]
    assert (first.nvlink_links_active, first.nvlink_replay_errors, first.nvlink_crc_errors) == (18, 0, 0)
    gpu = nvml.gpus[0]
    gpu.nvlink_down = {4, 11}
    gpu.nvlink_errors = {
        (4, pynvml.NVML_NVLINK_ERROR_DL_REPLAY): 7,
        (11, pynvml.NVML_NVLINK_ERROR_DL_REPLAY): 3,
        (4, pynvml.NVML_NVLINK_ERROR_DL_RECOVERY): 2,
        (4, pynvml.NVML_NVLINK_ERROR_DL_CRC_FLIT): 5,
        (11, pynvml.NVML_NVLINK_ERROR_DL_CRC_DATA): 6,
    }
    between = [source.sample().gpus[0] for _ in range(2)]
    assert all(s.nvlink_links_active == 18 for s in between)  # kept until the next slow tick
    slow = source.sample().gpus[0]
    assert slow.nvlink_links_active == 16
    assert (slow.nvlink_replay_errors, slow.nvlink_recovery_errors, slow.nvlink_crc_errors) == (10, 2, 11)
    assert nvml.count("nvmlDeviceGetNvLinkErrorCounter") == 0  # the driver's totals, one call a slow tick


def test_a_link_state_not_read_makes_the_active_count_unknown_not_lower(clock: Clock) -> None:
    nvml = FakeNvml(hgx(1))
    source, _ = opened(nvml, clock)
    assert source.sample().gpus[0].nvlink_links_active == 18
    nvml.gpus[0].errors["nvmlDeviceGetNvLinkState"] = pynvml.NVML_ERROR_UNKNOWN
    assert source.sample().gpus[0].nvlink_links_active is None  # n/a for the tick, not "0 links up"
    del nvml.gpus[0].errors["nvmlDeviceGetNvLinkState"]
    assert source.sample().gpus[0].nvlink_links_active == 18


def test_error_counters_per_link_where_the_driver_has_no_totals(clock: Clock) -> None:
    gpus = hgx(1)
    gpus[0].nvlink_error_fields = {}
    gpus[0].nvlink_errors = {(3, pynvml.NVML_NVLINK_ERROR_DL_CRC_FLIT): 4, (9, pynvml.NVML_NVLINK_ERROR_DL_CRC_DATA): 1}
    nvml = FakeNvml(gpus)
    source, _ = opened(nvml, clock)
    sample = source.sample().gpus[0]
    assert (sample.nvlink_replay_errors, sample.nvlink_recovery_errors, sample.nvlink_crc_errors) == (0, 0, 5)
    assert nvml.count("nvmlDeviceGetNvLinkErrorCounter", 0) == 18 * 4


def test_degraded_gpu_reads_lower_in_its_row_and_column(clock: Clock) -> None:
    gpus = hgx(4)
    gpus[3].nvlink_down = {0, 1}
    _, system = opened(FakeNvml(gpus), clock)
    assert system.topology is not None
    assert system.topology.matrix[3] == ("NV16", "NV16", "NV16", "X")
    assert system.topology.matrix[0] == ("X", "NV18", "NV18", "NV16")


def test_nvlink_traffic_from_field_values_where_gpm_gives_none(clock: Clock) -> None:
    nvml = FakeNvml([FakeGpu(name="NVIDIA A100-SXM4-80GB", gpm=None, nvlink_version=pynvml.NVML_NVLINK_VERSION_3_0)])
    source, _ = opened(nvml, clock)
    first = source.sample().gpus[0]
    assert (first.nvlink_rx_bytes_s, first.nvlink_tx_bytes_s) == (None, None)  # one reading is not a rate
    nvml.gpus[0].nvlink_rx_kib += 2_000_000
    nvml.gpus[0].nvlink_tx_kib += 1_000_000
    clock.advance(2.0)
    second = source.sample()
    assert second.gpus[0].nvlink_rx_bytes_s == 1_000_000 * 1024
    assert second.gpus[0].nvlink_tx_bytes_s == 500_000 * 1024
    assert second.gpu_info[0].nvlink_version == 3


def test_hopper_takes_nvlink_traffic_from_gpm_only(clock: Clock) -> None:
    nvml = FakeNvml([FakeGpu()])
    source, _ = opened(nvml, clock)
    for _ in range(3):
        source.sample()
        clock.advance(1.0)
    assert nvml.count("nvmlDeviceGetFieldValues", 0) == 1 + 2 * 3  # link count once; memory temperature, NVLink errors


def test_consumer_board_reads_none_and_is_asked_once(clock: Clock) -> None:
    nvml = FakeNvml([consumer_gpu(), consumer_gpu()])
    source, _ = opened(nvml, clock)
    samples = [source.sample().gpus[0] for _ in range(4)]
    assert all(getattr(s, key) is None for s in samples for key in (*NVLINK_COUNTERS, "nvlink_rx_bytes_s"))
    info = source.sample().gpu_info[0]
    assert (info.nvlink_links_total, info.nvlink_version, info.nvlink_remote) == (None, None, None)
    assert nvml.count("nvmlDeviceGetNvLinkState", 0) == 1
    assert nvml.count("nvmlDeviceGetNvLinkErrorCounter") == 0


def test_old_driver_reads_none_where_it_lacks_the_function_and_asks_once(clock: Clock) -> None:
    nvml = FakeNvml(hgx(2), old_driver=True)
    source, system = opened(nvml, clock)
    for _ in range(3):
        source.sample()
    assert system.topology is not None
    assert system.topology.numa_node == (None, None)
    assert system.topology.matrix[0][1] == "NV18"  # NVSwitch found from the remote PCI info instead
    assert nvml.count("nvmlDeviceGetNumaNodeId", 0) == 1
    assert nvml.count("nvmlDeviceGetNvLinkRemoteDeviceType", 0) == 1


def test_pynvml_without_the_functions_reads_none(clock: Clock) -> None:
    missing = ["nvmlDeviceGetCpuAffinity", "nvmlDeviceGetP2PStatus", "nvmlDeviceGetNvLinkErrorCounter"]
    gpus = hgx(2)
    gpus[0].nvlink_error_fields = {}
    source, system = opened(FakeNvml(gpus, missing=missing), clock)
    assert system.topology is not None
    assert system.topology.cpu_affinity == (None, None)
    assert system.topology.p2p == ((None, None), (None, None))
    sample = source.sample().gpus[0]
    assert (sample.nvlink_links_active, sample.nvlink_replay_errors) == (18, None)


def test_a_gpu_lost_during_open_has_none_in_its_entries(clock: Clock) -> None:
    gpus = hgx(3)
    gpus[1].lost = True
    gpus[2].errors["nvmlDeviceGetNumaNodeId"] = pynvml.NVML_ERROR_GPU_IS_LOST
    source, system = opened(FakeNvml(gpus), clock)
    topology = system.topology
    assert topology is not None
    assert topology.matrix == (("X", None, None), (None, "X", None), (None, None, "X"))
    assert topology.numa_node == (0, None, None)
    assert topology.cpu_affinity[1:] == (None, None)
    assert source.sample().gpus[1].lost


def test_cpulist_and_version_enum() -> None:
    assert cpulist([0xFFFF_FFFF, 0xFFFF_FFFF]) == "0-31,64-95"
    assert cpulist([0b1011]) == "0-1,3"
    assert cpulist([0]) is None
    assert nvlink_versions(pynvml)[pynvml.NVML_NVLINK_VERSION_4_0] == 4
    assert nvlink_versions(pynvml)[pynvml.NVML_NVLINK_VERSION_3_1] == 3
