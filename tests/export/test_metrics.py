"""Snapshot -> metric families: dcgm-exporter's names, units and labels; None left out; simulated data marked."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gputui import metric_schema as schema
from gputui.export.metrics import ExportState, metric_families
from gputui.metric_schema import GPU_LABELS, HOSTNAME_LABEL, LEGACY_HOSTNAME_LABEL, HostnameLabel
from gputui.model import ContainerInfo
from tests.export.export_helpers import FINDINGS, MIB, SYSTEM, Series, make_snapshot, one, parse, render


def scrape_state(state: ExportState) -> tuple[Series, dict[str, str]]:
    return parse(render(state))


def live_state() -> ExportState:
    return ExportState(system=SYSTEM, snapshot=make_snapshot(), findings=FINDINGS, last_xid={0: 79})


def test_gpu_metrics_carry_dcgm_exporter_labels() -> None:
    series, _ = scrape_state(live_state())
    labels, value = series["DCGM_FI_DEV_GPU_UTIL"][0]
    assert value == 97.0
    assert labels == {
        "gpu": "0",
        "UUID": "GPU-0781f3bb-da15-f334-d5db-37b3f19542d0",
        "pci_bus_id": "00000000:18:00.0",
        "device": "nvidia0",
        "modelName": "NVIDIA H100 80GB HBM3",
        "hostname": "gpu01",
    }
    assert set(labels) == set(GPU_LABELS)


def test_legacy_hostname_label_is_written_everywhere_on_request() -> None:
    def series(hostname_label: HostnameLabel) -> list[tuple[str, dict[str, str]]]:
        families = metric_families(live_state(), hostname_label=hostname_label)
        return [(sample.name, sample.labels) for family in families for sample in family.samples]

    default, legacy = series(HOSTNAME_LABEL), series(LEGACY_HOSTNAME_LABEL)
    assert len([1 for _, labels in default if "hostname" in labels]) > 50  # GPU and host-wide series alike
    assert not [1 for _, labels in legacy if "hostname" in labels]
    renamed = [(name, {"hostname" if k == "Hostname" else k: v for k, v in labels.items()}) for name, labels in legacy]
    assert renamed == default  # the same series; only the label's name differs


def test_units_follow_dcgm_exporter() -> None:
    series, _ = scrape_state(live_state())
    assert one(series, "DCGM_FI_DEV_FB_USED", gpu="0") == 70000  # MiB
    assert one(series, "DCGM_FI_DEV_FB_FREE", gpu="0") == 11047
    assert one(series, "DCGM_FI_DEV_FB_TOTAL", gpu="0") == 81559
    assert one(series, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", gpu="0") == 123_456_789_012  # mJ
    assert one(series, "DCGM_FI_DEV_POWER_VIOLATION", gpu="0") == 5_000_000_000  # ns, as DCGM stores NVML's value
    assert one(series, "DCGM_FI_DEV_THERMAL_VIOLATION", gpu="0") == 1_234_000
    assert one(series, "DCGM_FI_DEV_POWER_USAGE", gpu="0") == 612.5  # W
    assert one(series, "DCGM_FI_DEV_CLOCKS_EVENT_REASONS", gpu="0") == 0x24  # the bitmask, as dcgm gives it
    assert one(series, "DCGM_FI_DEV_SM_CLOCK", gpu="0") == 1755
    assert one(series, "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", gpu="0") == 3
    assert one(series, "DCGM_FI_DEV_XID_ERRORS", gpu="0") == 79
    assert one(series, "gputui_pcie_rx_bytes_per_second", gpu="0") == 2.25e9
    assert one(series, "DCGM_FI_DEV_PCIE_LINK_GEN", gpu="0") == 5
    assert one(series, "DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH", gpu="0") == 16


def test_only_the_current_name_of_an_aliased_field_is_written() -> None:
    """Field 112 under both names would be two series of one value in a shared Prometheus."""
    written = {sample.name for family in metric_families(live_state()) for sample in family.samples}
    assert "DCGM_FI_DEV_CLOCKS_EVENT_REASONS" in written
    for names in schema.READ_ALIASES:
        assert len(written & set(names)) == 1, names


def test_violation_help_says_the_unit_written() -> None:
    text = render(live_state())
    assert "# HELP DCGM_FI_DEV_POWER_VIOLATION Throttling duration due to power constraints (in ns)." in text
    assert "# HELP DCGM_FI_DEV_THERMAL_VIOLATION Throttling duration due to thermal constraints (in ns)." in text


def test_counters_keep_dcgm_names_without_total_suffix() -> None:
    text = render(live_state())
    assert "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{" in text
    series, types = parse(text)
    fields = (
        schema.GPU_SAMPLE_FIELDS,
        schema.GPU_INFO_FIELDS,
        schema.HOST_FIELDS,
        schema.CONTAINER_FIELDS,
        schema.PSI_FIELDS,
        schema.PROC_FIELDS,
        schema.GPU_PROCESS_FIELDS,
    )
    declared = {spec.name for group in fields for spec in group} | set(schema.LOAD_METRICS)
    declared |= {value for key, value in vars(schema).items() if key.endswith("_METRIC")}
    assert set(series) <= declared  # no suffix (_total, _created) added to a declared name
    assert types["DCGM_FI_DEV_GPU_UTIL"] == "gauge"
    assert types["DCGM_FI_DEV_PCIE_REPLAY_COUNTER"] == "unknown"  # untyped: rate() works, the name is dcgm's


def test_none_is_left_out_never_zero() -> None:
    series, _ = scrape_state(live_state())
    fan = {lab["gpu"]: v for lab, v in series["DCGM_FI_DEV_FAN_SPEED"]}
    assert fan == {"1": 30}  # GPU 0 has no fan reading, GPU 2 is lost
    sm_clock_gpus = {lab["gpu"] for lab, _ in series["DCGM_FI_DEV_SM_CLOCK"]}
    assert sm_clock_gpus == {"0"}
    assert "gputui_host_steal_percent" not in series
    assert "DCGM_FI_DEV_MAX_SM_CLOCK" in series and len(series["DCGM_FI_DEV_MAX_SM_CLOCK"]) == 1
    memory = {lab["pid"]: v for lab, v in series["gputui_gpu_process_memory_bytes"]}
    assert memory == {"4242": 69000 * MIB}  # pid 4300 reported no memory: listed, but with no value
    assert {lab["pid"] for lab, _ in series["gputui_gpu_process_info"]} == {"4242", "4300"}
    assert {lab["pid"] for lab, _ in series["gputui_process_cpu_percent"]} == {"4242"}


def test_zero_is_kept_as_zero() -> None:
    series, _ = scrape_state(live_state())
    assert one(series, "DCGM_FI_DEV_GPU_UTIL", gpu="1") == 0.0
    assert one(series, "gputui_host_cpu_core_percent", cpu="2") == 0.0


def test_lost_gpu_has_only_its_lost_flag_and_static_facts() -> None:
    series, _ = scrape_state(live_state())
    assert one(series, "gputui_gpu_lost", gpu="2") == 1
    assert all(lab["gpu"] != "2" for lab, _ in series["DCGM_FI_DEV_GPU_UTIL"])
    assert one(series, "gputui_gpu_info", gpu="2", UUID="GPU-lost") == 1


def test_host_and_process_metrics() -> None:
    series, _ = scrape_state(live_state())
    assert one(series, "gputui_host_cpu_percent") == 40.625
    assert one(series, "gputui_host_iowait_percent") == 7.5
    assert one(series, "gputui_host_load1") == 3.5
    assert one(series, "gputui_host_disk_busy_percent") == 88.0
    assert one(series, "gputui_process_cpu_percent", pid="4242", name="python") == 99.5
    assert one(series, "gputui_process_children", pid="4242") == 0
    assert one(series, "gputui_host_cpu_count") == 4


def test_command_lines_are_not_exported() -> None:
    assert "secret-token" not in render(live_state())


def test_live_data_has_no_source_label_and_says_nvml() -> None:
    series, _ = scrape_state(live_state())
    assert all("gputui_source" not in lab for items in series.values() for lab, _ in items)
    assert one(series, "gputui_source_info", source="nvml", simulated="false") == 1
    assert one(series, "gputui_up") == 1


def test_simulated_data_is_labelled_on_every_series() -> None:
    system = replace(SYSTEM, source="simulated", scenario="thermal")
    series, _ = scrape_state(ExportState(system=system, snapshot=make_snapshot(system)))
    assert one(series, "gputui_source_info", source="simulated", simulated="true", scenario="thermal") == 1
    assert all(lab.get("gputui_source") == "simulated" for items in series.values() for lab, _ in items)


def test_one_gauge_per_open_finding_and_gpu() -> None:
    series, _ = scrape_state(live_state())
    found = sorted((lab["rule"], lab["severity"], lab["gpu"]) for lab, _ in series["gputui_finding"])
    assert found == [
        ("starved-io", "warning", "0"),
        ("starved-io", "warning", "1"),
        ("swap", "info", ""),
        ("thermal", "critical", "0"),
    ]


def test_repeated_finding_is_written_once() -> None:
    state = replace(live_state(), findings=FINDINGS + FINDINGS[:1])
    series, _ = scrape_state(state)
    assert len([1 for lab, _ in series["gputui_finding"] if lab["rule"] == "thermal"]) == 1


def test_failed_reading_shows_up_zero_and_no_stale_values() -> None:
    series, _ = scrape_state(ExportState(system=SYSTEM, snapshot=None, error="GPU is lost"))
    assert one(series, "gputui_up") == 0
    assert one(series, "gputui_source_info") == 1
    assert not any(name.startswith("DCGM_") for name in series)


def test_families_are_built_without_a_server() -> None:
    names = {family.name for family in metric_families(live_state())}
    assert {"DCGM_FI_DEV_GPU_TEMP", "gputui_up", "gputui_finding", "gputui_sample_timestamp_seconds"} <= names


def test_container_and_pressure_are_exported_as_ratios_only_where_known() -> None:
    limits = ContainerInfo("docker", "/.dockerenv", 2, cpu_quota_cores=8.0)
    state = replace(live_state(), snapshot=make_snapshot(replace(SYSTEM, container=limits)))
    series, _ = scrape_state(state)
    assert one(series, "gputui_container_cpu_quota_cores") == 8.0
    assert one(series, "gputui_container_cpu_throttled_ratio") == 0.25
    assert one(series, "gputui_container_memory_limit_bytes") == 64 << 30
    assert one(series, "gputui_container_memory_used_bytes") == 60 << 30
    assert one(series, "gputui_container_oom_kills_total") == 2
    assert one(series, "gputui_psi_cpu_some_ratio") == 0.5
    assert one(series, "gputui_psi_io_some_ratio") == 0.125
    assert "gputui_psi_io_full_ratio" not in series  # not reported: left out, never 0


def test_without_a_cgroup_there_are_no_container_series() -> None:
    snapshot = make_snapshot()
    bare = replace(snapshot, host=replace(snapshot.host, container=None, psi=None))
    series, _ = scrape_state(replace(live_state(), snapshot=bare))
    assert not [name for name in series if name.startswith(("gputui_container_", "gputui_psi_"))]


def test_gpm_is_exported_under_dcgm_profiling_names_as_ratios() -> None:
    series, types = scrape_state(live_state())
    ratios = {
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE": 0.96,
        "DCGM_FI_PROF_SM_ACTIVE": 0.815,
        "DCGM_FI_PROF_SM_OCCUPANCY": 0.375,
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": 0.625,
        "DCGM_FI_PROF_DRAM_ACTIVE": 0.44,
        "DCGM_FI_PROF_PIPE_FP32_ACTIVE": 0.125,
        "DCGM_FI_PROF_PIPE_FP16_ACTIVE": 0.03,
        "DCGM_FI_PROF_PIPE_FP64_ACTIVE": 0.0,  # zero is a reading, kept
    }
    assert {name: one(series, name, gpu="0") for name in ratios} == pytest.approx(ratios, rel=1e-12)
    assert one(series, "DCGM_FI_PROF_NVLINK_RX_BYTES", gpu="0") == 2.5e10  # bytes/s, as DCGM gives it
    assert one(series, "DCGM_FI_PROF_NVLINK_TX_BYTES", gpu="0") == 1.25e10
    assert types["DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"] == "gauge"


def test_gpu_without_gpm_has_no_profiling_series() -> None:
    series, _ = scrape_state(live_state())
    profiling = [name for name in series if name.startswith("DCGM_FI_PROF_")]
    assert len(profiling) == 10
    assert all({lab["gpu"] for lab, _ in series[name]} == {"0"} for name in profiling)  # GPU 1 has no GPM


def test_process_sm_share_is_a_ratio_labelled_like_its_memory() -> None:
    series, _ = scrape_state(live_state())
    ((sm_labels, sm),) = series["gputui_process_sm_ratio"]  # pid 4300 has no share: left out
    ((memory_labels, _),) = series["gputui_gpu_process_memory_bytes"]
    assert sm == 0.88
    assert sm_labels == memory_labels
    assert (sm_labels["pid"], sm_labels["gpu"], sm_labels["kind"]) == ("4242", "0", "compute")
