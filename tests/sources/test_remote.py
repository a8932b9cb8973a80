"""RemoteSource and FleetPoller against exporters started by the test, on loopback only."""

from __future__ import annotations

import http.server
import socket
import threading
from collections.abc import Iterator, Sequence
from dataclasses import fields, replace

import pytest

from gputui.diagnostics.engine import DiagnosticsState
from gputui.diagnostics.findings import Finding
from gputui.export.metrics import ExportState
from gputui.export.server import Exporter
from gputui.foreign_text import is_clean
from gputui.metric_schema import HOSTNAME_LABEL, LEGACY_HOSTNAME_LABEL, HostnameLabel
from gputui.model import ACTIVITY_FIELDS, ContainerInfo, GpuInfo, GpuSample, HostSample, Snapshot
from gputui.session.diagnose import new_diagnose
from gputui.session.fleet_poll import FleetPoller
from gputui.session.sampling import Sampler
from gputui.sources.base import Source, SourceUnavailable
from gputui.sources.remote import (
    RemoteFormatError,
    RemoteSource,
    RemoteUnreachable,
    metrics_url,
    parse_exposition,
    parse_targets,
)
from gputui.sources.sim.source import SimulatedSource
from tests.export.export_helpers import FINDINGS, SYSTEM, FakeSource, make_snapshot, render, render_with


def free_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_remote_source_feeds_the_monitors_sampling_like_any_source(served: tuple[Exporter, FakeSource]) -> None:
    exporter, _ = served
    source: Source = RemoteSource(exporter.url)
    system = source.open()
    assert (system.hostname, system.source, system.gpu_count) == ("gpu01", "remote", 3)
    sampler = Sampler(source)
    first = sampler.take().snapshot
    exporter.sampler.sample_once()
    second = sampler.take().snapshot
    assert second.timestamp > first.timestamp  # each sample() is a new scrape, never a cached one
    assert [g.index for g in second.gpus] == [0, 1, 2]
    source.close()
    assert source.sample().system.hostname == "gpu01"  # close() holds nothing: the next scrape works


def test_round_trip_keeps_every_value(served: tuple[Exporter, FakeSource]) -> None:
    exporter, fake = served
    original = fake.sample()
    original = replace(original, timestamp=exporter.sampler.state.snapshot.timestamp)  # type: ignore[union-attr]
    remote = RemoteSource(exporter.url).sample()

    assert remote.system.source == "remote"
    assert remote.system.remote_source == "nvml"
    assert remote.system.hostname == "gpu01"
    assert remote.system.driver_version == "570.133.20"
    assert remote.system.cpu_count == 4
    assert remote.system.gpu_count == 3
    assert remote.timestamp == original.timestamp

    for want, got in zip(original.gpu_info, remote.gpu_info, strict=True):
        assert got == want, [f.name for f in fields(GpuInfo) if getattr(got, f.name) != getattr(want, f.name)]
    for want_sample, got_sample in zip(original.gpus, remote.gpus, strict=True):
        expected = replace(
            want_sample,
            timestamp=original.timestamp,
            xid_events=(),
            error=None,
            processes=tuple(replace(p, mem_pct=None) for p in want_sample.processes),  # not exported
        )
        assert got_sample == expected, [
            f.name for f in fields(GpuSample) if getattr(got_sample, f.name) != getattr(expected, f.name)
        ]
    want_host = replace(
        original.host,
        timestamp=original.timestamp,
        processes=tuple(replace(p, cmdline=None) for p in original.host.processes),  # never exported
    )
    assert remote.host == want_host, [
        f.name for f in fields(HostSample) if getattr(remote.host, f.name) != getattr(want_host, f.name)
    ]


GPM_FIELDS = (*ACTIVITY_FIELDS, "nvlink_rx_bytes_s", "nvlink_tx_bytes_s")


def _gpm_read_back(gpm: dict[str, float | None]) -> GpuSample:
    snapshot = make_snapshot()
    gpu0 = replace(snapshot.gpus[0], **gpm)
    snapshot = replace(snapshot, gpus=(gpu0, *snapshot.gpus[1:]))
    text = render(ExportState(system=SYSTEM, snapshot=snapshot))
    return parse_exposition(text, fallback_hostname="x:9400", now=0.0).gpus[0]


def test_gpm_percentages_come_back_from_the_exported_ratios() -> None:
    gpm = dict(zip(GPM_FIELDS, (99.9, 73.3, 41.7, 66.6, 8.1, 0.3, 17.9, 0.0, 3.3e10, 123.4), strict=True))
    got = _gpm_read_back(gpm)
    assert {name: getattr(got, name) for name in GPM_FIELDS} == pytest.approx(gpm, rel=1e-12)


def test_gpm_not_reported_stays_none_remotely() -> None:
    got = _gpm_read_back(dict.fromkeys(GPM_FIELDS))
    assert all(getattr(got, name) is None for name in GPM_FIELDS)
    assert got.utilization_gpu_pct == 97.0  # the rest of the GPU is still read


def test_nvlink_state_and_errors_come_back_and_boards_without_stay_none() -> None:
    snapshot = make_snapshot()
    links = {"nvlink_links_active": 16, "nvlink_replay_errors": 12, "nvlink_recovery_errors": 0, "nvlink_crc_errors": 3}
    gpu0 = replace(snapshot.gpus[0], **links)
    info0 = replace(snapshot.gpu_info[0], nvlink_links_total=18)
    snapshot = replace(snapshot, gpus=(gpu0, *snapshot.gpus[1:]), gpu_info=(info0, *snapshot.gpu_info[1:]))
    text = render(ExportState(system=SYSTEM, snapshot=snapshot))
    assert "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL" in text and "gputui_nvlink_links_active" in text
    read = parse_exposition(text, fallback_hostname="x:9400", now=0.0)
    assert {name: getattr(read.gpus[0], name) for name in links} == links
    assert read.gpu_info[0].nvlink_links_total == 18
    assert read.gpus[1].nvlink_links_active is None and read.gpu_info[1].nvlink_links_total is None


def test_process_sm_share_comes_back_and_unknown_stays_none() -> None:
    text = render(ExportState(system=SYSTEM, snapshot=make_snapshot()))
    processes = parse_exposition(text, fallback_hostname="x:9400", now=0.0).gpus[0].processes
    assert [(p.pid, p.sm_pct, p.used_memory_bytes) for p in processes] == [
        (4242, 88.0, 69000 << 20),
        (4300, None, None),
    ]


def test_what_a_process_and_its_workers_want_of_a_cpu_comes_back_and_unknown_stays_none() -> None:
    """The CPU and run-queue wait that workers_oversubscribed weighs against the CPUs, read on a remote node too."""
    snapshot = make_snapshot()
    first, *rest = snapshot.host.processes
    wanting = replace(first, workers_cpu_pct=340.0, run_queue_wait_pct=30.0, workers_run_queue_wait_pct=480.0)
    snapshot = replace(snapshot, host=replace(snapshot.host, processes=(wanting, *rest)))
    for sent in (snapshot, make_snapshot()):
        text = render(ExportState(system=SYSTEM, snapshot=sent))
        got = parse_exposition(text, fallback_hostname="x:9400", now=0.0).host.processes[0]
        want = sent.host.processes[0]
        fields_ = ("workers_cpu_pct", "run_queue_wait_pct", "workers_run_queue_wait_pct")
        assert [getattr(got, f) for f in fields_] == pytest.approx([getattr(want, f) for f in fields_])


def test_simulated_exporter_stays_labelled_simulated_remotely() -> None:
    simulated = SimulatedSource(scenario="thermal", gpu_count=2, clock=lambda: 5.0)
    system = simulated.open()
    with Exporter(Sampler(simulated), system, port=0, interval=3600) as exporter:
        served = exporter.sampler.state.snapshot
        remote = RemoteSource(exporter.url).sample()
    assert served is not None
    assert remote.system.remote_source == "simulated"
    assert remote.system.scenario == "thermal"
    assert [g.temperature_c for g in remote.gpus] == [g.temperature_c for g in served.gpus]
    assert [g.clock_event_reasons for g in remote.gpus] == [g.clock_event_reasons for g in served.gpus]


def test_unreachable_exporter_raises_a_distinct_error() -> None:
    port = free_port()
    with pytest.raises(RemoteUnreachable, match=f"127.0.0.1:{port}: unreachable .*connection refused"):
        RemoteSource(f"127.0.0.1:{port}", timeout=1).sample()
    assert issubclass(RemoteUnreachable, SourceUnavailable)


@pytest.fixture
def http_404() -> Iterator[str]:
    class NotFound(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_error(404)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), NotFound)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join()


def test_http_error_is_reported_as_unreachable(http_404: str) -> None:
    with pytest.raises(RemoteUnreachable, match="answered HTTP 404"):
        RemoteSource(http_404, timeout=1).sample()


@pytest.mark.parametrize(
    ("target", "url"),
    [
        ("gpu01", "http://gpu01:9400/metrics"),
        ("gpu01:9500", "http://gpu01:9500/metrics"),
        (" 10.0.0.7:9400 ", "http://10.0.0.7:9400/metrics"),
        ("http://gpu01:9400/metrics", "http://gpu01:9400/metrics"),
        ("https://gpu01/custom/path", "https://gpu01:9400/custom/path"),
        ("[::1]:9400", "http://[::1]:9400/metrics"),
    ],
)
def test_metrics_url_accepts_host_port_or_url(target: str, url: str) -> None:
    assert metrics_url(target) == url


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("", "empty exporter address"),
        ("gpu01:http", "bad port"),
        ("gpu01:99999", "bad port"),
        ("ftp://gpu01", "not an http"),
        ("http://:9400", "no host"),
    ],
)
def test_metrics_url_rejects_bad_addresses(target: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        metrics_url(target)


DCGM_TEXT = """\
# HELP DCGM_FI_DEV_SM_CLOCK SM clock frequency (in MHz).
# TYPE DCGM_FI_DEV_SM_CLOCK gauge
DCGM_FI_DEV_SM_CLOCK{gpu="0",UUID="GPU-a",pci_bus_id="00000000:00:1B.0",device="nvidia0",modelName="Tesla T4",\
Hostname="ip-172-31-16-106",DCGM_FI_DRIVER_VERSION="535.183.06"} 1365
DCGM_FI_DEV_SM_CLOCK{gpu="1",UUID="GPU-b",pci_bus_id="00000000:00:1C.0",device="nvidia1",modelName="Tesla T4",\
Hostname="ip-172-31-16-106",DCGM_FI_DRIVER_VERSION="535.183.06"} 300
# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).
# TYPE DCGM_FI_DEV_FB_USED gauge
DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-a",pci_bus_id="00000000:00:1B.0",device="nvidia0",modelName="Tesla T4",\
Hostname="ip-172-31-16-106"} 1024
# HELP DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION Total energy consumption since boot (in mJ).
# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0",UUID="GPU-a",pci_bus_id="00000000:00:1B.0",device="nvidia0",\
modelName="Tesla T4",Hostname="ip-172-31-16-106"} 9876543
"""


@pytest.mark.parametrize("label", [HOSTNAME_LABEL, LEGACY_HOSTNAME_LABEL])
def test_either_spelling_of_the_host_label_is_read(label: HostnameLabel) -> None:
    gputui_text = render_with(ExportState(system=SYSTEM, snapshot=make_snapshot()), label)
    dcgm_text = DCGM_TEXT.replace("Hostname=", f"{label}=")
    assert parse_exposition(gputui_text, fallback_hostname="x:9400", now=0.0).system.hostname == "gpu01"
    assert parse_exposition(dcgm_text, fallback_hostname="x:9400", now=0.0).system.hostname == "ip-172-31-16-106"


DCGM_CLOCK_EVENTS_TEXT = """\
# HELP {name} Current clock event reasons.
# TYPE {name} gauge
{name}{{gpu="0",UUID="GPU-a",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",hostname="gpu07"}} 36
# HELP DCGM_FI_DEV_POWER_VIOLATION Throttling duration due to power constraints (in ns).
# TYPE DCGM_FI_DEV_POWER_VIOLATION counter
DCGM_FI_DEV_POWER_VIOLATION{{gpu="0",UUID="GPU-a",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",\
hostname="gpu07"}} 2500000000
"""


@pytest.mark.parametrize("name", ["DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"])
def test_clock_event_reasons_are_read_under_either_name(name: str) -> None:
    """A dcgm-exporter names the series as its counters csv spells field 112: the current or the deprecated name."""
    snapshot = parse_exposition(DCGM_CLOCK_EVENTS_TEXT.format(name=name), fallback_hostname="x:9400", now=0.0)
    assert [g.index for g in snapshot.gpu_info] == [0]  # the field alone is enough to find the GPU
    assert snapshot.gpus[0].clock_event_reasons_mask == 0x24


def test_violation_time_from_dcgm_exporter_is_read_as_ns() -> None:
    """dcgm-exporter passes DCGM's value through, which is NVML's count in ns: 2.5e9 is 2.5 s held back."""
    snapshot = parse_exposition(
        DCGM_CLOCK_EVENTS_TEXT.format(name="DCGM_FI_DEV_CLOCKS_EVENT_REASONS"), fallback_hostname="x:9400", now=0.0
    )
    assert snapshot.gpus[0].power_violation_ns == 2_500_000_000


def test_violation_time_survives_export_and_read_back() -> None:
    sent = make_snapshot()
    text = render_with(ExportState(system=SYSTEM, snapshot=sent), HOSTNAME_LABEL)
    back = parse_exposition(text, fallback_hostname="x:9400", now=0.0)
    assert back.gpus[0].power_violation_ns == sent.gpus[0].power_violation_ns == 5_000_000_000
    assert back.gpus[0].thermal_violation_ns == sent.gpus[0].thermal_violation_ns == 1_234_000


def test_a_plain_dcgm_exporter_is_read_too() -> None:
    snapshot = parse_exposition(DCGM_TEXT, fallback_hostname="10.0.0.7:9400", now=100.0)
    assert snapshot.system.hostname == "ip-172-31-16-106"
    assert snapshot.system.remote_source is None  # unknown: not a gputui exporter
    assert [(i.name, i.uuid) for i in snapshot.gpu_info] == [("Tesla T4", "GPU-a"), ("Tesla T4", "GPU-b")]
    gpu0, gpu1 = snapshot.gpus
    assert (gpu0.sm_clock_mhz, gpu0.memory_used_bytes, gpu0.energy_mj) == (1365, 1024 << 20, 9876543)
    assert gpu1.memory_used_bytes is None  # not reported stays None
    assert snapshot.timestamp == 100.0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("this is { not prometheus", "not Prometheus metrics"),
        ("# TYPE node_load1 gauge\nnode_load1 0.5\n", "no gputui or dcgm-exporter GPU metrics"),
    ],
)
def test_other_answers_are_format_errors(text: str, message: str) -> None:
    with pytest.raises(RemoteFormatError, match=message):
        parse_exposition(text, fallback_hostname="x:9400", now=0.0)


class CountingDiagnose:
    """One per host: records the readings it is given and reports the findings it is told to."""

    def __init__(self, findings: Sequence[Finding]) -> None:
        self.findings = tuple(findings)
        self.hosts: list[str] = []

    def __call__(self, snapshot: Snapshot) -> DiagnosticsState:
        self.hosts.append(snapshot.system.hostname)
        return DiagnosticsState(active=self.findings)


def test_fleet_marks_a_stopped_server_unreachable_and_goes_on() -> None:
    times = iter(float(t) for t in range(1000, 2000))
    diagnoses: list[CountingDiagnose] = []

    def factory() -> CountingDiagnose:
        diagnoses.append(CountingDiagnose(FINDINGS))
        return diagnoses[-1]

    alpha, beta = FakeSource(hostname="alpha"), FakeSource(hostname="beta")
    first = Exporter(Sampler(alpha), alpha.system, port=0, interval=3600)
    second = Exporter(Sampler(beta), beta.system, port=0, interval=3600)
    first.start()
    second.start()
    try:
        assert first.address is not None and second.address is not None
        targets = [f"127.0.0.1:{first.address[1]}", f"127.0.0.1:{second.address[1]}"]
        poller = FleetPoller(targets, timeout=1, diagnose_factory=factory, clock=lambda: next(times))
        a, b = poller.poll()
        assert (a.name, a.reachable, b.name, b.reachable) == ("alpha", True, "beta", True)
        assert a.findings == FINDINGS
        assert [d.hosts for d in diagnoses] == [["alpha"], ["beta"]]  # one engine per host, its own data

        second.stop()
        a, b = poller.poll()
        assert a.reachable and a.snapshot is not None and a.error is None
        assert not b.reachable and b.snapshot is None and b.findings == ()
        assert b.error is not None and "unreachable" in b.error
        assert b.name == targets[1]
        assert b.last_ok is not None and b.last_attempt is not None and b.last_ok < b.last_attempt
        assert [d.hosts for d in diagnoses] == [["alpha"], ["beta"]]  # alpha's reading did not change

        a, b = poller.poll()  # retried on every poll
        assert not b.reachable and b.last_attempt is not None and b.last_attempt > (b.last_ok or 0)
        poller.close()
    finally:
        first.stop()
        second.stop()


def test_fleet_server_that_comes_back_is_read_again() -> None:
    port = free_port()
    source = FakeSource(hostname="gamma")
    poller = FleetPoller([f"127.0.0.1:{port}"], timeout=1, diagnose_factory=None)
    (state,) = poller.poll()
    assert not state.reachable and state.last_ok is None
    with Exporter(Sampler(source), source.system, port=port, interval=3600):
        (state,) = poller.poll()
    poller.close()
    assert state.reachable and state.name == "gamma" and state.findings == ()


def test_fleet_runs_the_real_diagnostics_on_each_server() -> None:
    """A thermally throttling simulated server: the poller's own engine finds what the exporter's engine finds."""
    ticks = iter(range(0, 10_000, 2))
    simulated = SimulatedSource(scenario="thermal", gpu_count=2, clock=lambda: float(next(ticks)))
    system = simulated.open()
    with Exporter(Sampler(simulated, new_diagnose()), system, port=0, interval=3600) as exporter:
        poller = FleetPoller([exporter.url], timeout=2)
        for _ in range(40):
            (state,) = poller.poll()
            if state.findings:
                break
            exporter.sampler.sample_once()
        poller.close()
        served = {(f.rule, f.gpus) for f in exporter.sampler.state.findings}
    assert state.snapshot is not None and state.snapshot.system.remote_source == "simulated"
    found = {(f.rule, f.gpus) for f in state.findings}
    assert ("thermal_throttle", (1,)) in found
    assert found == served


def test_parse_targets_reads_a_comma_list() -> None:
    assert parse_targets("gpu01, gpu02:9500,gpu01:9400") == (
        "http://gpu01:9400/metrics",
        "http://gpu02:9500/metrics",
    )


@pytest.mark.parametrize(("text", "message"), [(" , ", "no exporter given"), ("gpu01,gpu02:x", "bad port")])
def test_parse_targets_rejects_bad_lists(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_targets(text)


def test_fleet_needs_at_least_one_server() -> None:
    with pytest.raises(ValueError, match="no exporters"):
        FleetPoller([])


def test_fleet_rejects_a_bad_address_before_polling() -> None:
    with pytest.raises(ValueError, match="bad port"):
        FleetPoller(["gpu01:notaport"])


def test_round_trip_of_a_machine_with_nothing_but_a_failed_reading() -> None:
    source = FakeSource()
    source.snapshots = [make_snapshot(), RuntimeError("driver gone")]
    with Exporter(Sampler(source), SYSTEM, port=0, interval=3600) as exporter:
        exporter.sampler.sample_once()
        remote = RemoteSource(exporter.url).sample()
    assert remote.gpus == ()
    assert remote.system.hostname == "gpu01"
    assert remote.events == ("gpu01: the exporter runs but cannot read its GPUs (gputui_up 0)",)


def test_fleet_keeps_showing_a_server_whose_diagnostics_break(served: tuple[Exporter, FakeSource]) -> None:
    def broken(snapshot: Snapshot) -> Sequence[Finding]:
        raise KeyError("a rule broke")

    poller = FleetPoller([served[0].url], timeout=2, diagnose_factory=lambda: broken)
    (state,) = poller.poll()
    poller.close()
    assert state.reachable and state.findings == ()


def test_the_exporters_cgroup_limits_come_back_so_the_quota_rules_use_them() -> None:
    limits = ContainerInfo("docker", "/.dockerenv", 2, cpu_quota_cores=8.0, memory_limit_bytes=64 << 30)
    snapshot = make_snapshot(replace(SYSTEM, container=limits))
    text = render(ExportState(system=snapshot.system, snapshot=snapshot))
    read = parse_exposition(text, fallback_hostname="x:9400", now=0.0).system.container
    assert read is not None and (read.cpu_quota_cores, read.memory_limit_bytes) == (8.0, 64 << 30)
    assert read.cpu_limit == 8.0
    bare = make_snapshot(replace(SYSTEM, container=None))
    bare = replace(bare, host=replace(bare.host, container=None))
    text = render(ExportState(system=bare.system, snapshot=bare))
    assert parse_exposition(text, fallback_hostname="x:9400", now=0.0).system.container is None


# Another server's label values: a host name and a GPU name that would retitle and clear the terminal, a bidi
# override, and Rich markup that would raise MarkupError where a view parsed it.
HOSTILE_LABEL = "gpu\x1b]0;PWNED\x07\x1b[2J\u202e[/]\x9b"


def test_another_servers_label_values_are_cleaned_as_the_page_is_read() -> None:
    text = DCGM_TEXT.replace("ip-172-31-16-106", HOSTILE_LABEL).replace("Tesla T4", HOSTILE_LABEL)
    snapshot = parse_exposition(text, fallback_hostname="x:9400", now=0.0)
    shown = "gpu\\x1b]0;PWNED\\x07\\x1b[2J\\u202e[/]\\x9b"
    assert snapshot.system.hostname == shown
    assert snapshot.gpu_info[0].name == shown


def test_a_page_the_parser_refuses_is_quoted_clean() -> None:
    with pytest.raises(RemoteFormatError) as refused:
        parse_exposition('bad{x="1"} one\x1b]0;PWNED\x07\n', fallback_hostname="x:9400", now=0.0)
    assert is_clean(str(refused.value)), str(refused.value)


def test_a_stopped_job_and_its_stuck_rank_reach_the_fleet_through_the_exporter() -> None:
    """Issue 40: the exporter serves how long each rank's main thread has held one place; a fleet view that reads
    the node's /metrics judges the job stopped itself and names the stuck rank (`hung_job`)."""
    from gputui.diagnostics.engine import DiagnosticsEngine
    from gputui.diagnostics.fleet_rules import NodeWindow, fleet_findings
    from tests.diagnostics.rules.test_hang import hung

    engine = DiagnosticsEngine()
    read: list[Snapshot] = []
    for t in range(10):
        sent = hung(t)
        text = render(ExportState(system=sent.system, snapshot=sent))
        assert 'function="wait_forever"' in text and 'rank="1"' in text
        read.append(parse_exposition(text, fallback_hostname="gpu02:9400", now=sent.timestamp))
        state = engine.update(read[-1])
    stuck = read[-1].host.process(101)
    assert stuck is not None and stuck.dist is not None and stuck.activity is not None
    assert (stuck.dist.rank, stuck.activity.leading, stuck.activity.top[0].function) == (1, "idle", "wait_forever")
    assert [f.rule for f in state.active if f.severity.label == "critical"] == ["job_stopped"]
    (hung_job,) = [
        f for f in fleet_findings([NodeWindow("gpu02", "gputui", tuple(read), state.active)]) if f.rule == "hung_job"
    ]
    assert "rank 1 (PID 101) in wait_forever (train.py:57) on gpu02" in hung_job.title


def test_a_held_series_with_a_forged_kind_is_not_read_as_a_place() -> None:
    from tests.diagnostics.rules.test_hang import hung

    sent = hung(0)
    text = render(ExportState(system=sent.system, snapshot=sent)).replace('kind="idle"', 'kind="evil"')
    stuck = parse_exposition(text, fallback_hostname="gpu02:9400", now=sent.timestamp).host.process(101)
    assert stuck is not None and stuck.activity is None and stuck.dist is None
