"""The fleet findings: `straggler` against the busy GPUs of its model, `idle_allocated` naming who holds the GPU."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import replace

import pytest

from gputui.diagnostics.findings import Finding, Severity
from gputui.diagnostics.fleet_rules import (
    CAUSE_RULES,
    FleetFinding,
    NodeWindow,
    fleet_finding_to_dict,
    fleet_findings,
)
from gputui.diagnostics.rules import RULE_IDS
from gputui.model import ActivityKind, GpuProcess, GpuSample, ProcSample, Snapshot
from gputui.sources.remote import parse_exposition
from tests.diagnostics.rules.test_hang import hung, run
from tests.snapshots import GIB, gpu, gpu_info, host, proc, snapshot

STEP_S = 2.0

# Makes GPU `index` of a node at reading `i`.
Maker = Callable[[int, int], GpuSample]


def busy(index: int, _: int) -> GpuSample:
    return gpu(index)


def node(
    name: str,
    make: Maker = busy,
    *,
    gpus: int = 2,
    readings: int = 8,
    step: float = STEP_S,
    findings: Sequence[Finding] = (),
    procs: Sequence[ProcSample] = (),
    model: str = "NVIDIA H100 80GB HBM3",
) -> NodeWindow:
    snaps = tuple(
        snapshot(
            1000.0 + i * step,
            [make(g, i) for g in range(gpus)],
            [gpu_info(g, name=model) for g in range(gpus)],
            host(procs),
        )
        for i in range(readings)
    )
    snaps = tuple(replace(s, system=replace(s.system, hostname=name)) for s in snaps)
    return NodeWindow(host=name, source="gputui", snapshots=snaps, findings=tuple(findings))


def slow_gpu(slow: int, **changes: object) -> Maker:
    """Busy GPUs; GPU `slow` with `changes` (a lower clock, say) in every reading."""
    return lambda index, _: gpu(index, **changes) if index == slow else gpu(index)


def finding(rule: str, gpus: tuple[int, ...], severity: Severity = Severity.CRITICAL) -> Finding:
    return Finding(rule=rule, severity=severity, title="", advice="", gpus=gpus)


def only(found: Sequence[FleetFinding], rule: str) -> FleetFinding:
    of_rule = [f for f in found if f.rule == rule]
    assert len(of_rule) == 1, found
    return of_rule[0]


def evidence(f: FleetFinding) -> dict[str, object]:
    return {e.key: e.value for e in f.evidence}


# -- straggler --------------------------------------------------------------------------------------------------


def test_a_throttled_gpu_is_named_with_its_nodes_cause() -> None:
    hot = node("gpu03", slow_gpu(1, sm_clock_mhz=1410), findings=[finding("thermal_throttle", (1,))])
    found = fleet_findings([node("gpu01"), node("gpu02"), hot])
    f = only(found, "straggler")
    assert f.severity is Severity.WARNING
    assert f.hosts == ("gpu03",) and f.gpus == (("gpu03", 1),)
    assert f.title == (
        "gpu03 GPU 1: slower than the fleet's 6 busy NVIDIA H100 80GB HBM3 GPUs, SM clock 29% below the median, "
        "mean over 14 s (heat)"
    )
    facts = evidence(f)
    assert facts["sm_clock"] == 1410.0 and facts["median_sm_clock"] == 1980.0
    assert facts["busy_peers"] == 6 and facts["slow_share"] == 100
    assert facts["node_findings"] == "thermal_throttle GPU 1"
    windows = {e.key: e.window for e in f.evidence}
    assert windows["sm_clock"] == "mean over 14 s"
    assert [x for x in found if x.rule == "idle_allocated"] == []


def test_causes_are_the_slow_gpus_own_most_telling_first_and_others_are_left_out() -> None:
    findings = [
        finding("pcie_downgrade", (1,)),
        finding("power_cap", (1,)),
        finding("thermal_throttle", (0,)),  # another GPU's
        finding("vram_pressure", (1,), Severity.WARNING),  # no reason to run slower
        finding("host_swap", (), Severity.WARNING),  # the whole node's
    ]
    slow = node("gpu03", slow_gpu(1, sm_clock_mhz=1500), findings=findings)
    f = only(fleet_findings([node("gpu01"), node("gpu02"), slow]), "straggler")
    assert f.title.endswith("(the power cap, PCIe link below its max, the host swapping)")
    assert evidence(f)["node_findings"] == "power_cap GPU 1, pcie_downgrade GPU 1, host_swap"


def test_a_straggler_with_nothing_found_on_its_node_says_so() -> None:
    slow = node("gpu03", slow_gpu(0, sm_clock_mhz=1500))
    f = only(fleet_findings([node("gpu01"), node("gpu02"), slow]), "straggler")
    assert f.title.endswith("(no cause found on the node)")
    assert evidence(f)["node_findings"] == "no cause found on the node"


def test_a_slow_node_is_one_finding_for_all_its_gpus() -> None:
    slow = node("gpu03", lambda index, _: gpu(index, sm_clock_mhz=1500), gpus=4)
    f = only(fleet_findings([node("gpu01", gpus=4), node("gpu02", gpus=4), slow]), "straggler")
    assert f.gpus == tuple(("gpu03", i) for i in range(4))
    assert f.title.startswith("gpu03 GPUs 0-3: slower than the fleet's 12 busy")


def test_lower_utilization_and_sm_activity_are_straggling_too() -> None:
    lagging = slow_gpu(0, utilization_gpu_pct=60.0, sm_active_pct=40.0)
    f = only(fleet_findings([node("gpu01"), node("gpu02"), node("gpu03", lagging)]), "straggler")
    assert "utilization 37 points below the median" in f.title
    assert "SM activity 53% below the median" in f.title
    facts = evidence(f)
    assert facts["gpu_util"] == 60.0 and facts["median_gpu_util"] == 97.0
    assert facts["sm_active"] == 40.0 and facts["median_sm_active"] == 86.0
    assert "sm_clock" not in facts  # its clock is as fast as theirs


def test_small_differences_are_no_straggler() -> None:
    """Within the margins: a few % of clock, a few points of utilization, as healthy boards differ."""
    near = slow_gpu(1, sm_clock_mhz=1850, utilization_gpu_pct=90.0, sm_active_pct=75.0)
    assert fleet_findings([node("gpu01"), node("gpu02"), node("gpu03", near)]) == ()


def test_one_slow_reading_is_not_a_straggler() -> None:
    blip: Maker = lambda index, i: gpu(index, sm_clock_mhz=1200) if (index, i) == (0, 3) else gpu(index)  # noqa: E731
    assert fleet_findings([node("gpu01"), node("gpu02"), node("gpu03", blip)]) == ()


def test_a_window_of_two_readings_is_not_most_of_anything() -> None:
    slow = node("gpu03", slow_gpu(0, sm_clock_mhz=1200), readings=2)
    assert fleet_findings([node("gpu01", readings=2), node("gpu02", readings=2), slow]) == ()


def test_no_straggler_with_only_two_gpus() -> None:
    a = node("gpu01", gpus=1)
    b = node("gpu02", slow_gpu(0, sm_clock_mhz=1200), gpus=1)
    assert fleet_findings([a, b]) == ()


def test_no_straggler_when_every_gpu_is_idle() -> None:
    idle: Maker = lambda index, _: gpu(index, pids=(), utilization_gpu_pct=0.0, sm_clock_mhz=210, sm_active_pct=0.0)  # noqa: E731
    slower: Maker = lambda index, _: replace(idle(index, 0), sm_clock_mhz=180)  # noqa: E731
    assert fleet_findings([node("gpu01", idle), node("gpu02", idle), node("gpu03", slower)]) == ()


def test_an_idle_gpu_is_never_a_straggler() -> None:
    """Its clock is low because it does nothing: the busy peers' median says nothing about it."""
    idle = slow_gpu(1, pids=(), utilization_gpu_pct=0.0, sm_clock_mhz=210, sm_active_pct=0.0)
    assert fleet_findings([node("gpu01"), node("gpu02"), node("gpu03", idle)]) == ()


def test_peers_are_gpus_of_the_same_model() -> None:
    """An A100 is not slow for clocking under an H100: three H100s and one A100 give no straggler."""
    a100 = node("gpu04", lambda index, _: gpu(index, sm_clock_mhz=1410), gpus=1, model="NVIDIA A100-SXM4-80GB")
    h100s = [node(f"gpu0{i}", gpus=1) for i in (1, 2, 3)]
    assert fleet_findings([*h100s, a100]) == ()
    # ... and two A100s beside them are still too few for a median of their own
    slower = node("gpu05", lambda index, _: gpu(index, sm_clock_mhz=1000), gpus=1, model="NVIDIA A100-SXM4-80GB")
    assert fleet_findings([*h100s, a100, slower]) == ()


def test_an_unreachable_node_and_lost_gpus_are_left_out() -> None:
    lost: Maker = lambda index, _: GpuSample(index=index, timestamp=0.0, lost=True) if index == 1 else gpu(index)  # noqa: E731
    down = NodeWindow(host="gpu09", source="gputui", snapshots=(), findings=())
    assert fleet_findings([node("gpu01"), node("gpu02", lost), down]) == ()


# -- idle_allocated ---------------------------------------------------------------------------------------------

IDLE_STEP = 30.0  # eight readings span 210 s: past `idle_allocation_s` (180 s)


def idle_held(pids: Sequence[int]) -> Maker:
    """GPU 0 busy; GPU 1 held by `pids` and doing nothing, its SMs idle too."""
    return lambda index, _: (
        gpu(index, pids=pids, utilization_gpu_pct=0.0, sm_active_pct=0.0, sm_clock_mhz=1980)
        if index == 1
        else gpu(index)
    )


@pytest.mark.parametrize(
    ("owner", "named"),
    [
        (proc(4242, pod="trainer-7f9c", namespace="research"), "pod research/trainer-7f9c"),
        (proc(4242, pod="trainer-7f9c"), "pod trainer-7f9c"),
        (proc(4242, job_id="81234", user="alice"), "Slurm job 81234 (alice)"),
        (proc(4242, job_id="81234", user=None), "Slurm job 81234"),
        (proc(4242, name="jupyter-kernel"), "jupyter-kernel (4242)"),
    ],
)
def test_an_idle_held_gpu_names_its_owner(owner: ProcSample, named: str) -> None:
    held = node("gpu07", idle_held([4242]), step=IDLE_STEP, procs=[owner])
    f = only(fleet_findings([held]), "idle_allocated")
    assert f.severity is Severity.WARNING and f.gpus == (("gpu07", 1),)
    assert f.title == f"gpu07 GPU 1: held by {named}, idle for 3m30s"
    facts = evidence(f)
    assert facts["owner"] == named and facts["idle_span"] == 210
    assert facts["gpu_util"] == 0.0 and facts["process_memory"] == 30.0


def test_a_process_not_seen_on_the_host_is_named_by_its_pid() -> None:
    held = node("gpu07", idle_held([4242]), step=IDLE_STEP, procs=[proc(100)])
    assert "held by PID 4242," in only(fleet_findings([held]), "idle_allocated").title


def test_gpus_of_one_owner_on_a_node_are_one_finding() -> None:
    held: Maker = lambda index, _: gpu(index, pids=(4242,), utilization_gpu_pct=0.0, sm_active_pct=0.0)  # noqa: E731
    job = proc(4242, job_id="81234", user="alice")
    f = only(fleet_findings([node("gpu07", held, gpus=4, step=IDLE_STEP, procs=[job])]), "idle_allocated")
    assert f.gpus == tuple(("gpu07", i) for i in range(4))
    assert f.title.startswith("gpu07 GPUs 0-3: held by Slurm job 81234 (alice)")
    assert evidence(f)["process_memory"] == 120.0


def test_an_idle_gpu_without_a_process_is_never_named() -> None:
    empty: Maker = lambda index, _: gpu(index, pids=(), utilization_gpu_pct=0.0, sm_active_pct=0.0)  # noqa: E731
    assert fleet_findings([node("gpu07", empty, step=IDLE_STEP)]) == ()


def test_a_graphics_context_does_not_hold_a_gpu() -> None:
    desktop = (GpuProcess(pid=900, used_memory_bytes=GIB // 4, kind="graphics"),)
    xorg: Maker = lambda index, _: gpu(index, utilization_gpu_pct=0.0, sm_active_pct=0.0, processes=desktop)  # noqa: E731
    assert fleet_findings([node("gpu07", xorg, step=IDLE_STEP)]) == ()


def test_idle_for_less_than_minutes_or_working_is_not_idle_allocated() -> None:
    short = node("gpu07", idle_held([4242]), step=STEP_S, procs=[proc(4242)])  # 14 s
    assert fleet_findings([short]) == ()
    # utilization 0 but its SMs at work (a reading between two kernels): not idle
    sm_busy: Maker = lambda index, _: gpu(index, utilization_gpu_pct=0.0, sm_active_pct=40.0)  # noqa: E731
    assert fleet_findings([node("gpu07", sm_busy, step=IDLE_STEP)]) == ()
    # idle for 3.5 minutes, but busy at the latest reading: it works again
    woke: Maker = lambda index, i: idle_held([4242])(index, i) if i < 7 else gpu(index)  # noqa: E731
    assert fleet_findings([node("gpu07", woke, step=IDLE_STEP, readings=9)]) == ()


def test_unreported_utilization_is_not_idle() -> None:
    unknown: Maker = lambda index, _: gpu(index, utilization_gpu_pct=None, gpm=None)  # noqa: E731
    assert fleet_findings([node("gpu07", unknown, step=IDLE_STEP)]) == ()


# -- dcgm-exporter nodes, units, words and JSON -------------------------------------------------------------------


def dcgm_page(hostname: str, t: int) -> str:
    """What dcgm-exporter serves for two healthy H100s: one busy, one idle with no process; PROF as 0-1 ratios."""
    lines = []
    for index, (util, sm_active, clock) in enumerate(((97 - t % 3, 0.86, 1980 - 15 * (t % 2)), (0, 0.0, 345))):
        labels = f'gpu="{index}",UUID="GPU-{hostname}-{index}",modelName="NVIDIA H100 80GB HBM3",Hostname="{hostname}"'
        lines += [
            f"DCGM_FI_DEV_GPU_UTIL{{{labels}}} {util}",
            f"DCGM_FI_DEV_SM_CLOCK{{{labels}}} {clock}",
            f"DCGM_FI_PROF_SM_ACTIVE{{{labels}}} {sm_active}",
            f"DCGM_FI_DEV_GPU_TEMP{{{labels}}} 55",
            f"DCGM_FI_DEV_FB_USED{{{labels}}} {40000 if util else 0}",
        ]
    return "\n".join(lines) + "\n"


def dcgm_node(hostname: str) -> NodeWindow:
    snaps = tuple(
        parse_exposition(dcgm_page(hostname, t), fallback_hostname=hostname, now=1000.0 + 30 * t) for t in range(8)
    )
    return NodeWindow(host=hostname, source="dcgm-exporter", snapshots=snaps, findings=())


def test_the_remote_reader_gives_prof_ratios_as_percentages() -> None:
    """The fleet rules compare 0-100 everywhere: DCGM's 0.86 must read as gputui's own 86."""
    sample = dcgm_node("dcgm01").snapshots[0].gpus[0]
    assert sample.sm_active_pct == pytest.approx(86.0) and sample.utilization_gpu_pct == 97.0


def test_a_healthy_dcgm_exporter_fleet_gets_nothing_above_info() -> None:
    nodes = [dcgm_node(f"dcgm0{i}") for i in range(1, 5)]
    mixed = [*nodes, node("gpu01", step=30.0), node("gpu02", step=30.0)]  # beside gputui's own, same model
    for fleet in (nodes, mixed):
        assert [f for f in fleet_findings(fleet) if f.severity > Severity.INFO] == []


def test_the_words_are_chinese_when_asked() -> None:
    hot = node("gpu03", slow_gpu(1, sm_clock_mhz=1410), findings=[finding("thermal_throttle", (1,))])
    f = only(fleet_findings([node("gpu01"), node("gpu02"), hot], lang="zh"), "straggler")
    assert (
        f.title
        == "gpu03 的 GPU 1：比集群中 6 块繁忙的 NVIDIA H100 80GB HBM3 慢，SM 频率比中位数低 29%，14 秒平均（过热）"
    )
    assert f.advice.startswith("同步训练中一块慢 GPU")
    labels = {e.key: (e.label, e.window) for e in f.evidence}
    assert labels["median_sm_clock"] == ("它们的 SM 频率中位数", "14 秒平均")
    held = node("gpu07", idle_held([4242]), step=IDLE_STEP, procs=[proc(4242, job_id="81234", user="alice")])
    idle = only(fleet_findings([held], lang="zh"), "idle_allocated")
    assert idle.title == "gpu07 的 GPU 1：被 Slurm 作业 81234（alice） 占用，已空闲 3m30s"
    assert {e.key: e.label for e in idle.evidence}["owner"] == "占用者"


def test_the_json_shape() -> None:
    hot = node("gpu03", slow_gpu(1, sm_clock_mhz=1410))
    f = only(fleet_findings([node("gpu01"), node("gpu02"), hot]), "straggler")
    data = json.loads(json.dumps(fleet_finding_to_dict(f)))
    assert set(data) == {"rule", "severity", "hosts", "gpus", "title", "advice", "evidence"}
    assert data["rule"] == "straggler" and data["severity"] == "warning" and data["hosts"] == ["gpu03"]
    assert data["gpus"] == [{"host": "gpu03", "gpu": 1}]
    clock = next(e for e in data["evidence"] if e["key"] == "sm_clock")
    assert clock == {"key": "sm_clock", "label": "SM clock", "value": 1410.0, "unit": "MHz", "window": "mean over 14 s"}


def test_findings_come_worst_first_then_by_rule_and_host() -> None:
    hot = node("gpu03", slow_gpu(1, sm_clock_mhz=1410), step=IDLE_STEP)
    held = node("gpu00", idle_held([4242]), step=IDLE_STEP, procs=[proc(4242)])
    found = fleet_findings([node("gpu01", step=IDLE_STEP), node("gpu02", step=IDLE_STEP), hot, held])
    assert [(f.rule, f.hosts) for f in found] == [("idle_allocated", ("gpu00",)), ("straggler", ("gpu03",))]


def test_every_cause_is_a_rule_that_exists() -> None:
    assert set(CAUSE_RULES) <= RULE_IDS


def test_snapshots_of_a_node_stay_its_own() -> None:
    """A sanity check of the builder: each node's readings carry its hostname and times in order."""
    n = node("gpu05")
    assert all(isinstance(s, Snapshot) and s.system.hostname == "gpu05" for s in n.snapshots)
    assert [s.timestamp for s in n.snapshots] == sorted(s.timestamp for s in n.snapshots)


# -- hung_job ---------------------------------------------------------------------------------------------------


def stopped_on(host_name: str, *, stuck: bool, job: str = "run 7f3a at 10.0.0.1:29500") -> NodeWindow:
    """A node whose own engine found a job stopped, from hand-built snapshots of its two ranks (tests of rules/hang)."""
    kind: tuple[ActivityKind, str] = ("idle", "wait_forever") if stuck else ("collective", "all_reduce")
    snaps = [hung(t, stuck=kind) for t in range(10)]
    for index, snap in enumerate(snaps):
        procs = tuple(replace(p, dist=replace(p.dist, job=job)) if p.dist else p for p in snap.host.processes)
        snaps[index] = replace(snap, host=replace(snap.host, processes=procs))
    state = run(snaps)
    return NodeWindow(host=host_name, source="gputui", snapshots=tuple(snaps), findings=state.active)


def test_a_hung_job_names_its_stuck_rank_on_whichever_node_it_runs() -> None:
    found = fleet_findings([stopped_on("gpu01", stuck=False), stopped_on("gpu02", stuck=True), node("gpu03")])
    hung_job = only(found, "hung_job")
    assert hung_job.severity == Severity.CRITICAL and found[0] is hung_job  # the worst first
    assert hung_job.hosts == ("gpu01", "gpu02")
    assert hung_job.gpus == (("gpu01", 0), ("gpu01", 1), ("gpu02", 0), ("gpu02", 1))
    assert hung_job.title == "gpu01, gpu02: job stopped: rank 1 (PID 101) in wait_forever (train.py:57) on gpu02"
    assert "py-spy dump --pid" in hung_job.advice and "last checkpoint" in hung_job.advice
    assert evidence(hung_job)["stopped_for"] == 300


def test_a_hung_job_whose_stuck_rank_is_on_no_node_read_says_so() -> None:
    hung_job = only(fleet_findings([stopped_on("gpu01", stuck=False)]), "hung_job")
    assert hung_job.title == "gpu01: job stopped: every rank read waits in the collective"


def test_two_jobs_stopped_are_two_findings() -> None:
    found = fleet_findings([stopped_on("gpu01", stuck=True), stopped_on("gpu02", stuck=True, job="at 10.0.0.2:29500")])
    assert sorted(f.hosts for f in found if f.rule == "hung_job") == [("gpu01",), ("gpu02",)]


def test_a_hung_job_in_chinese() -> None:
    hung_job = only(fleet_findings([stopped_on("gpu02", stuck=True)], "zh"), "hung_job")
    assert hung_job.title.startswith("gpu02：任务已停止")
