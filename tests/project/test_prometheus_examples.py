"""The example Prometheus files only name metrics that `gputui export` writes (a typo would never fire)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from prometheus_client.metrics_core import Metric

from gputui import metric_schema
from gputui.export.metrics import ExportState, metric_families
from tests.export.export_helpers import FINDINGS, SYSTEM, make_snapshot

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
METRIC_NAME = re.compile(r"\b(?:DCGM_FI_\w+|gputui_\w+)")


def exported_families() -> list[Metric]:
    state = ExportState(system=SYSTEM, snapshot=make_snapshot(), findings=FINDINGS, last_xid={0: 79})
    return metric_families(state)


def exported_names() -> set[str]:
    return {family.name for family in exported_families()}


def read_aliases() -> set[str]:
    """Older names of exported fields: not written by gputui, but a dcgm-exporter may write them."""
    return {name for names in metric_schema.READ_ALIASES for name in names}


def test_alert_rules_name_only_exported_metrics() -> None:
    text = (EXAMPLES / "gputui-alerts.yml").read_text()
    expressions = "\n".join(re.findall(r"expr: (\|\n(?:\s{10}.*\n)+|.*)", text))
    used = set(METRIC_NAME.findall(expressions))
    assert {"gputui_finding", "DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "DCGM_FI_DEV_GPU_TEMP"} <= used
    assert used <= exported_names() | read_aliases(), used - exported_names() - read_aliases()


def test_violation_rule_divides_by_the_unit_written() -> None:
    """Violation time is in ns (as DCGM writes it): a rule dividing by 1e6 would fire 1000 times too often."""
    text = (EXAMPLES / "gputui-alerts.yml").read_text()
    assert "rate(DCGM_FI_DEV_THERMAL_VIOLATION[5m]) / 1e9" in text
    assert "/ 1e6" not in text


def test_alert_rules_use_only_labels_the_exporter_writes() -> None:
    """A label misspelt (or the pre-2026 `Hostname`) would leave summaries empty and `on(...)` matching nothing."""
    text = (EXAMPLES / "gputui-alerts.yml").read_text()
    used = set(re.findall(r"\$labels\.(\w+)", text))
    used |= {name.strip() for group in re.findall(r"\bon\(([^)]*)\)", text) for name in group.split(",")}
    written = {key for family in exported_families() for sample in family.samples for key in sample.labels}
    assert {"hostname", "gpu", "rule"} <= used
    assert used <= written | {"instance", "job"}, used - written  # Prometheus adds instance and job


def test_alert_rules_cover_critical_findings() -> None:
    text = (EXAMPLES / "gputui-alerts.yml").read_text()
    assert 'expr: gputui_finding{severity="critical"} == 1' in text


def test_scrape_config_loads_the_rules_and_uses_the_default_port() -> None:
    text = (EXAMPLES / "prometheus.yml").read_text()
    assert "- gputui-alerts.yml" in text
    assert "job_name: gputui" in text
    assert re.search(r"- \S+:9400\n", text)


PROMTOOL_TEST = """\
rule_files: [{rules}]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'DCGM_FI_DEV_CLOCK_THROTTLE_REASONS{{hostname="old",gpu="0"}}'
        values: '8x5'
      - series: 'DCGM_FI_DEV_CLOCKS_EVENT_REASONS{{hostname="new",gpu="0"}}'
        values: '64x5'
      - series: 'DCGM_FI_DEV_CLOCKS_EVENT_REASONS{{hostname="capped",gpu="0"}}'
        values: '4x5'
      - series: 'DCGM_FI_DEV_THERMAL_VIOLATION{{hostname="hot",gpu="0"}}'
        values: '0+30000000000x10'
      - series: 'DCGM_FI_DEV_THERMAL_VIOLATION{{hostname="cool",gpu="0"}}'
        values: '0+3000000000x10'
    alert_rule_test:
      - eval_time: 4m
        alertname: GpuHardwareSlowdown
        exp_alerts:
          - exp_labels: {{severity: critical, hostname: old, gpu: "0"}}
            exp_annotations: {{summary: "old GPU 0: {slowdown}"}}
          - exp_labels: {{severity: critical, hostname: new, gpu: "0"}}
            exp_annotations: {{summary: "new GPU 0: {slowdown}"}}
      - eval_time: 10m
        alertname: GpuThermalThrottling
        exp_alerts:
          - exp_labels: {{severity: warning, hostname: hot, gpu: "0"}}
            exp_annotations: {{summary: "hot GPU 0: thermally throttled 50% of the time"}}
"""


def test_alert_rules_fire_on_both_names_of_field_112_and_on_violation_time_in_ns(tmp_path: Path) -> None:
    """Prometheus' own rule tester: an old dcgm-exporter's name and the current one both fire; 30 s of violation
    a minute (in ns) is 50 % throttled, 3 s a minute (5 %) stays under the rule's 10 %."""
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool (Debian's prometheus package) is not installed; .ci/run installs it")
    test_file = tmp_path / "rules_test.yml"
    slowdown = "clocks forced down by the hardware (power supply, brake or overheating)"
    test_file.write_text(PROMTOOL_TEST.format(rules=EXAMPLES / "gputui-alerts.yml", slowdown=slowdown))
    done = subprocess.run([promtool, "test", "rules", str(test_file)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
