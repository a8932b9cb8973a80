"""MIG in the exporter, as dcgm-exporter writes it: each instance's framebuffer and profiling series under the
GPU's labels plus GPU_I_PROFILE and GPU_I_ID; the GPU's own series without them; no whole-GPU utilization."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
from pathlib import Path

import pytest

from gputui.export.metrics import ExportState
from gputui.metric_schema import ACTIVITY_METRICS, GPU_LABELS, MIB, MIG_DEVICE_FIELDS
from gputui.model import ACTIVITY_FIELDS, MigState
from tests.export.export_helpers import Series, one, parse, render
from tests.project.test_prometheus_examples import EXAMPLES
from tests.record.migdata import INSTANCE_TOTAL, instance, mig_gpu, mig_snapshot, pid_of

GPU0 = {"gpu": "0", "hostname": "train-07"}


def _scrape(n_gpus: int = 1) -> Series:
    snap = mig_snapshot(1_780_000_000.0, n_gpus)
    series, _ = parse(render(ExportState(system=snap.system, snapshot=snap)))
    return series


def test_instance_series_carry_the_gpus_labels_and_the_instance() -> None:
    series = _scrape()
    labels = next(lab for lab, _ in series["DCGM_FI_DEV_FB_USED"] if lab.get("GPU_I_ID") == "2")
    assert labels == {
        "gpu": "0",
        "UUID": "GPU-6f1c2a7e-0000-4a6b-9c1d-000000000000",  # the parent's, as dcgm-exporter writes it
        "pci_bus_id": "00000000:18:00.0",
        "device": "nvidia0",
        "modelName": "NVIDIA H100 80GB HBM3",
        "GPU_I_PROFILE": "3g.40gb",
        "GPU_I_ID": "2",
        "hostname": "train-07",
    }
    assert one(series, "DCGM_FI_DEV_FB_USED", GPU_I_ID="1") == (30 * 1024 + 15)  # MiB, as for a GPU
    assert one(series, "DCGM_FI_DEV_FB_USED", GPU_I_ID="2") == (12 * 1024 + 15)
    assert one(series, "DCGM_FI_DEV_FB_TOTAL", GPU_I_ID="1") == INSTANCE_TOTAL / MIB
    assert one(series, "DCGM_FI_DEV_FB_FREE", GPU_I_ID="2") == (INSTANCE_TOTAL - (12 << 30) - (15 << 20)) / MIB


def test_every_activity_field_is_exported_for_the_gpu_and_for_each_instance() -> None:
    """A new GPM activity field on GpuSample and MigDevice gets its DCGM_FI_PROF_* series on both, or this fails."""
    assert tuple(spec.attr for spec in ACTIVITY_METRICS) == ACTIVITY_FIELDS
    assert all(spec.name.startswith("DCGM_FI_PROF_") and spec.scale == 0.01 for spec in ACTIVITY_METRICS)
    assert set(ACTIVITY_METRICS) <= set(MIG_DEVICE_FIELDS)


def test_profiling_metrics_are_written_per_instance_as_ratios() -> None:
    series = _scrape()
    expected = {
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE": 0.935,
        "DCGM_FI_PROF_SM_ACTIVE": 0.8125,
        "DCGM_FI_PROF_SM_OCCUPANCY": 0.38,
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": 0.44,
        "DCGM_FI_PROF_DRAM_ACTIVE": 0.515,
        "DCGM_FI_PROF_PIPE_FP32_ACTIVE": 0.09,
        "DCGM_FI_PROF_PIPE_FP16_ACTIVE": 0.025,
        "DCGM_FI_PROF_PIPE_FP64_ACTIVE": 0.0,
    }
    for name, value in expected.items():
        assert one(series, name, GPU_I_ID="1", GPU_I_PROFILE="3g.40gb") == pytest.approx(value), name
        assert all("GPU_I_ID" in labels for labels, _ in series[name]), f"{name}: a GPU-level series in MIG mode"


def test_the_gpus_own_series_have_no_instance_labels_and_no_utilization_is_written() -> None:
    series = _scrape()
    for name in ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_SM_CLOCK", "gputui_mig_mode"):
        ((labels, _),) = series[name]
        assert set(labels) == set(GPU_LABELS), name
    # NVML gives no whole-GPU utilization in MIG mode: nothing is written, not a 0.
    for name in ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_MEM_COPY_UTIL", "DCGM_FI_DEV_ENC_UTIL"):
        assert name not in series
    # The parent's aggregate (where the driver gives it) stays the GPU's: `GPU_I_ID=""` selects it alone.
    gpu_only = [v for lab, v in series["DCGM_FI_DEV_FB_USED"] if "GPU_I_ID" not in lab]
    assert gpu_only == [(30 * 1024 + 15) + (12 * 1024 + 15)]
    assert one(series, "gputui_mig_mode", **GPU0) == 1.0
    assert one(series, "gputui_mig_pending_mode", **GPU0) == 1.0


def test_each_instance_is_named_by_its_info_series() -> None:
    series = _scrape()
    labels = [lab for lab, v in series["gputui_mig_instance_info"] if v == 1.0]
    assert [(lab["GPU_I_ID"], lab["mig_index"], lab["compute_instance_id"], lab["mig_uuid"]) for lab in labels] == [
        ("1", "0", "0", "MIG-2f6e1c3a-0000-5b7d-9e0f-000000000001"),
        ("2", "1", "0", "MIG-2f6e1c3a-0000-5b7d-9e0f-000000000002"),
    ]
    assert one(series, "gputui_mig_instance_sms", GPU_I_ID="1") == 60
    assert one(series, "gputui_mig_instance_slices", GPU_I_ID="2") == 3


def test_processes_name_their_instance() -> None:
    series = _scrape()
    info = {lab["pid"]: lab for lab, _ in series["gputui_process_info"]}
    first = info[str(pid_of(0, 1))]
    assert (first["gpu"], first["GPU_I_ID"], first["GPU_I_PROFILE"], first["name"]) == ("0", "1", "3g.40gb", "python")
    on_gpu = {lab["pid"]: lab for lab, _ in series["gputui_gpu_process_info"]}
    second = on_gpu[str(pid_of(0, 2))]
    assert (second["GPU_I_ID"], second["compute_instance_id"], second["UUID"]) == (
        "2",
        "0",
        "GPU-6f1c2a7e-0000-4a6b-9c1d-000000000000",
    )
    assert one(series, "gputui_gpu_process_memory_bytes", pid=str(pid_of(0, 2)), GPU_I_ID="2") == 12 << 30


def test_a_pending_change_on_a_gpu_off_mig_writes_only_the_pending_mode() -> None:
    snap = mig_snapshot(1_780_000_000.0, 1)
    gpu = dataclasses.replace(snap.gpus[0], mig=MigState(mode=False, pending_mode=True), processes=())
    info = dataclasses.replace(snap.gpu_info[0], mig_mode=False)
    snap = dataclasses.replace(snap, gpus=(gpu,), gpu_info=(info,))
    series, _ = parse(render(ExportState(system=snap.system, snapshot=snap)))
    assert one(series, "gputui_mig_mode", gpu="0") == 0.0 and one(series, "gputui_mig_pending_mode", gpu="0") == 1.0
    assert "gputui_mig_instance_info" not in series
    assert not any("GPU_I_ID" in lab for rows in series.values() for lab, _ in rows)


def test_an_instance_without_a_gpu_instance_id_is_not_written_as_its_gpu() -> None:
    snap = mig_snapshot(1_780_000_000.0, 1)
    nameless = instance(0, 0, 1, gpu_instance_id=None, processes=())
    snap = dataclasses.replace(snap, gpus=(mig_gpu(0, snap.timestamp, (nameless,), memory_used_bytes=None),))
    series, _ = parse(render(ExportState(system=snap.system, snapshot=snap)))
    assert "DCGM_FI_PROF_SM_ACTIVE" not in series and "DCGM_FI_DEV_FB_USED" not in series


def test_series_grow_by_a_bounded_count_per_instance() -> None:
    """8 GPUs x 2 instances: 14 series an instance (FB used/free/total, 8 PROF, info, SMs, slices) and one
    pending-mode series a GPU, plus the per-process series that name the instance instead of a bare GPU."""
    snap = mig_snapshot(1_780_000_000.0, 8)
    series, _ = parse(render(ExportState(system=snap.system, snapshot=snap)))
    with_instance = sum(1 for rows in series.values() for lab, _ in rows if "GPU_I_ID" in lab)
    processes = sum(len(series[name]) for name in ("gputui_process_info", "gputui_gpu_process_info"))
    processes += len(series["gputui_gpu_process_memory_bytes"])
    assert with_instance == 8 * 2 * 14 + processes
    assert len(series["gputui_mig_pending_mode"]) == 8


def _lint(text: str, promtool: str) -> set[str]:
    done = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    return {line for line in (done.stdout + done.stderr).splitlines() if line and "camelCase" not in line}


def test_promtool_finds_nothing_new_in_a_mig_page() -> None:
    """dcgm-exporter's camelCase labels (modelName, UUID, GPU_I_ID) are what its dashboards read, so they stay;
    beside them the MIG series add no complaint a page without MIG does not already have."""
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool (Debian's prometheus package) is not installed; .ci/run installs it")
    snap = mig_snapshot(1_780_000_000.0, 2)
    plain = dataclasses.replace(snap, gpus=tuple(dataclasses.replace(g, mig=None, processes=()) for g in snap.gpus))
    mig_page = render(ExportState(system=snap.system, snapshot=snap))
    plain_page = render(ExportState(system=snap.system, snapshot=plain))
    assert _lint(mig_page, promtool) <= _lint(plain_page, promtool)


RULES_TEST = """\
rule_files: [{rules}]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'DCGM_FI_DEV_GPU_TEMP{{hostname="mig",gpu="0"}}'
        values: '86x10'
      - series: 'DCGM_FI_DEV_SLOWDOWN_TEMP{{hostname="mig",gpu="0"}}'
        values: '87x10'
      - series: 'DCGM_FI_DEV_FB_USED{{hostname="mig",gpu="0"}}'
        values: '43038x10'
      - series: 'DCGM_FI_DEV_FB_USED{{hostname="mig",gpu="0",GPU_I_PROFILE="3g.40gb",GPU_I_ID="1"}}'
        values: '30735x10'
      - series: 'DCGM_FI_DEV_FB_USED{{hostname="mig",gpu="0",GPU_I_PROFILE="3g.40gb",GPU_I_ID="2"}}'
        values: '12303x10'
      - series: 'DCGM_FI_PROF_GR_ENGINE_ACTIVE{{hostname="mig",gpu="0",GPU_I_PROFILE="3g.40gb",GPU_I_ID="1"}}'
        values: '0.9x10'
      - series: 'DCGM_FI_DEV_PCIE_LINK_GEN{{hostname="mig",gpu="0"}}'
        values: '4x10'
      - series: 'DCGM_FI_DEV_PCIE_MAX_LINK_GEN{{hostname="mig",gpu="0"}}'
        values: '5x10'
      - series: 'DCGM_FI_DEV_PCIE_LINK_WIDTH{{hostname="mig",gpu="0"}}'
        values: '16x10'
      - series: 'DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH{{hostname="mig",gpu="0"}}'
        values: '16x10'
    promql_expr_test:
      - expr: sum by (hostname, gpu) (DCGM_FI_DEV_FB_USED{{GPU_I_ID=""}})
        eval_time: 5m
        exp_samples:
          - labels: '{{hostname="mig",gpu="0"}}'
            value: 43038
      - expr: sum by (hostname, gpu) (DCGM_FI_DEV_FB_USED{{GPU_I_ID!=""}})
        eval_time: 5m
        exp_samples:
          - labels: '{{hostname="mig",gpu="0"}}'
            value: 43038
    alert_rule_test:
      - eval_time: 6m
        alertname: GpuHot
        exp_alerts:
          - exp_labels: {{severity: warning, hostname: mig, gpu: "0"}}
            exp_annotations: {{summary: "mig GPU 0: 86 C, within 5 C of its slowdown temperature"}}
      - eval_time: 15m
        alertname: GpuPcieLinkDowngraded
        exp_alerts: []
"""


def test_alert_rules_count_a_mig_gpu_once(tmp_path: Path) -> None:
    """The rules match on (hostname, gpu) only over series gputui writes once a GPU (temperature, PCIe), so the
    instances' series add no duplicate; a sum of the framebuffer picks the GPU's aggregate with GPU_I_ID="" or
    the instances with GPU_I_ID!="" (here both 43,038 MiB), never both. The PCIe rule needs whole-GPU
    utilization, which MIG mode has not: it stays silent there."""
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool (Debian's prometheus package) is not installed; .ci/run installs it")
    test_file = tmp_path / "mig_rules_test.yml"
    test_file.write_text(RULES_TEST.format(rules=EXAMPLES / "gputui-alerts.yml"))
    done = subprocess.run([promtool, "test", "rules", str(test_file)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
