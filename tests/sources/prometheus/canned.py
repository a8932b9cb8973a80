"""Series as Prometheus holds them after scraping gputui's exporter and a plain dcgm-exporter."""

from __future__ import annotations

from gputui.export.metrics import ExportState
from tests.export.export_helpers import FINDINGS, SYSTEM, make_snapshot, render
from tests.sources.prometheus.prom_stub import Series, series_of_page

MIB = 1024 * 1024


def gputui_page() -> str:
    return render(ExportState(system=SYSTEM, snapshot=make_snapshot(), findings=FINDINGS))


def gputui_series(instance: str = "10.0.0.1:9400") -> Series:
    return series_of_page(gputui_page(), instance=instance, job="gputui")


def dcgm_series(
    host: str = "node7", *, host_label: str = "Hostname", instance: str = "10.0.0.7:9400", exported: bool = True
) -> Series:
    """Two A100s as dcgm-exporter 4.x writes them, scraped through a ServiceMonitor with honor_labels off: the
    target's pod/namespace/container clash with the workload's, which Prometheus renames exported_*. GPU 1 is
    used by a pod; GPU 0 by nobody. The clock-event reasons under the older name on GPU 0, the current on GPU 1."""
    out: Series = []
    target = {"instance": instance, "job": "dcgm-exporter"}
    if exported:  # else a static scrape config: the target has no pod labels
        target |= {"namespace": "gpu-operator", "pod": "dcgm-exporter-x1"}
    prefix = "exported_" if exported else ""
    values = {
        "DCGM_FI_DEV_GPU_UTIL": (0.0, 97.0),
        "DCGM_FI_DEV_SM_CLOCK": (210.0, 1410.0),
        "DCGM_FI_DEV_GPU_TEMP": (31.0, 66.0),
        "DCGM_FI_DEV_POWER_USAGE": (55.5, 390.25),
        "DCGM_FI_DEV_FB_USED": (0.0, 40960.0),  # MiB
        "DCGM_FI_DEV_FB_FREE": (81000.0, 40040.0),
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": (0.0, 0.42),  # a 0-1 ratio
        "DCGM_FI_PROF_SM_ACTIVE": (0.0, 0.9),
        "DCGM_FI_DEV_PCIE_LINK_GEN": (4.0, 4.0),
    }
    for gpu in (0, 1):
        labels = {
            "gpu": str(gpu),
            "UUID": f"GPU-{gpu:04d}",
            "pci_bus_id": f"00000000:{0x10 + gpu:02X}:00.0",
            "device": f"nvidia{gpu}",
            "modelName": "NVIDIA A100-SXM4-80GB",
            host_label: host,
            **target,
        }
        if gpu == 1:
            labels |= {f"{prefix}pod": "train-0", f"{prefix}namespace": "ml", f"{prefix}container": "trainer"}
        for name, pair in values.items():
            out.append(({"__name__": name, **labels}, pair[gpu]))
        reasons = "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS" if gpu == 0 else "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"
        out.append(({"__name__": reasons, **labels}, 1.0 if gpu == 0 else 4.0))
    return out
