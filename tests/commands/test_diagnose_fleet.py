"""`gputui diagnose --prometheus` and the option checks, against a canned Prometheus on 127.0.0.1."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from gputui.cli import main
from tests.sources.prometheus.canned import dcgm_series, gputui_series
from tests.sources.prometheus.prom_stub import Behaviour, canned_prometheus


def test_diagnose_prometheus_json(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GPUTUI_PROMETHEUS_TOKEN", raising=False)
    with canned_prometheus(Behaviour(series=dcgm_series() + gputui_series())) as url:
        code = main(["diagnose", "--prometheus", url, "--since", "2m", "--json"])
    document = json.loads(capsys.readouterr().out)
    assert set(document) >= {"schema", "nodes", "findings"}
    nodes = {node["host"]: node for node in document["nodes"]}
    assert nodes["node7"]["source"] == "dcgm-exporter"
    assert "not available from dcgm-exporter" in nodes["node7"]["not_available"]
    assert nodes["gpu01"]["source"] == "gputui" and nodes["gpu01"]["not_available"] is None
    assert nodes["node7"]["readings"] == 9  # 2 min every 15 s
    assert document["findings"] == []
    severities = {f["severity"] for node in document["nodes"] for f in node["findings"]}
    assert code == (4 if "critical" in severities else 1 if "warning" in severities else 0)


def test_diagnose_prometheus_text_and_a_prometheus_that_fails(capsys: pytest.CaptureFixture[str]) -> None:
    with canned_prometheus(Behaviour(series=dcgm_series())) as url:
        main(["diagnose", "--prometheus", url, "--since", "1m", "--match", '{job="dcgm-exporter"}', "--lang", "en"])
    out = capsys.readouterr().out
    assert "== node7 (dcgm-exporter" in out and "not available from dcgm-exporter" in out
    with canned_prometheus(Behaviour(status=500, body=b'{"status":"error","error":"boom"}')) as url:
        assert main(["diagnose", "--prometheus", url]) == 3
    assert "boom" in capsys.readouterr().err


def closed_port_url() -> str:
    """A URL on 127.0.0.1 where nothing listens: a port the system handed out, closed again."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


@pytest.mark.parametrize("command", [[], ["diagnose"]], ids=["monitor", "diagnose"])
def test_a_prometheus_that_refuses_is_named_once(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    url = closed_port_url()
    assert main([*command, "--prometheus", url]) == 3
    err = capsys.readouterr().err
    assert err == f"gputui: {url}: unreachable (connection refused: is Prometheus running there?)\n"


def test_a_prometheus_without_gpu_series_is_named_once_in_the_monitor(capsys: pytest.CaptureFixture[str]) -> None:
    with canned_prometheus(Behaviour()) as url:
        assert main(["--prometheus", url]) == 3
    assert capsys.readouterr().err == f"gputui: {url}: no gputui or dcgm-exporter series there\n"


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--prometheus", "http://p:9090", "--remote", "gpu01:9400"], "give one"),
        (["--prometheus", "http://p:9090", "--demo"], "cannot be combined with --demo"),
        (["--remote", "gpu01:9400", "--demo"], "cannot be combined with --demo"),
        (["--match", '{a="b"}'], "go with --prometheus"),
        (["--prometheus", "http://p:9090", "--match", "{a=b}"], "not a label selector"),
        (["diagnose", "--prometheus", "http://p:9090", "--demo", "healthy"], "cannot be combined with --demo"),
        (["diagnose", "--prometheus", "ftp://p"], "not an http"),
    ],
)
def test_source_options_exclude_one_another(argv: list[str], says: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert says in capsys.readouterr().err


def test_diagnose_prometheus_judges_the_fleet_by_the_configs_thresholds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A GPU a pod holds and leaves idle for the 2 minutes read: not yet an idle allocation by default (3
    minutes), one under a config that says 20 s."""
    idle = [
        (labels, 0.0 if labels["gpu"] == "1" and labels["__name__"] in _ACTIVITY else value)
        for labels, value in dcgm_series()
    ]
    config = tmp_path / "config.toml"
    config.write_text("[diagnostics.thresholds]\nidle_allocation_s = 20\n", encoding="utf-8")
    rules = {}
    with canned_prometheus(Behaviour(series=idle)) as url:
        for name, extra in (("default", []), ("config", ["--config", str(config)])):
            main(["diagnose", "--prometheus", url, "--since", "2m", "--json", *extra])
            rules[name] = [f["rule"] for f in json.loads(capsys.readouterr().out)["findings"]]
    assert rules == {"default": [], "config": ["idle_allocated"]}


_ACTIVITY = {"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"}
