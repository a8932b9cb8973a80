"""Diagnostics on MIG GPUs: each instance judged as a GPU of its own, the GPU's own readings once, MIG mode itself.

An H100 split into two 3g.40gb instances (GI 1 and GI 2) with a job on each is the usual rented box: the
processes do not compete, NVML gives no whole-GPU utilization, and each instance has its own verdict.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from gputui.cli import main
from gputui.diagnostics.engine import DiagnosticsEngine, DiagnosticsState
from gputui.diagnostics.findings import Finding, finding_to_dict
from gputui.diagnostics.groups import group_findings, group_to_dict
from gputui.diagnostics.instances import expand, instance_of, split, unit_index
from gputui.diagnostics.verdict import verdict_to_dict
from gputui.model import GpuSample, Snapshot
from gputui.sources.sim.source import SimulatedSource
from tests.diagnostics.builders import instance, mig_gpu, series, snap
from tests.snapshots import GIB, gpu, host, proc

NAME_1 = "GPU 0 / 3g.40gb (GI 1)"
NAME_2 = "GPU 0 / 3g.40gb (GI 2)"
BOTH = ((0, 1), (0, 2))


def run(make_gpus: object, procs: Sequence[object] = (), ticks: int = 15, lang: str = "en") -> DiagnosticsState:
    """`ticks` one-second snapshots of the GPUs `make_gpus(i)` gives, the host running `procs`."""
    engine = DiagnosticsEngine(lang=lang)
    state = DiagnosticsState()
    hosted = host(list(procs)) if procs else host([proc(100), proc(101, cmdline="python3 other.py")])
    for s in series(ticks, lambda i: {"gpus": make_gpus(i), "host_sample": hosted}):  # type: ignore[operator]
        state = engine.update(s)
    return state


def by_rule(state: DiagnosticsState, rule: str) -> list[Finding]:
    return [f for f in state.active if f.rule == rule]


def two_busy(_: int = 0) -> list[GpuSample]:
    return [mig_gpu(0, instance(1, [100]), instance(2, [101]))]


# -- the units ---------------------------------------------------------------------------------------------


def test_a_unit_index_is_never_a_gpus_and_names_its_instance() -> None:
    assert instance_of(unit_index(3, 2)) == (3, 2)
    assert instance_of(7) is None
    assert split((1, 2)) == ((1, 2), ())
    assert split((unit_index(0, 2), 1, unit_index(0, 1))) == ((0, 1), ((0, 2), (0, 1)))


def test_expand_leaves_a_snapshot_without_mig_as_it_is() -> None:
    plain = snap(0, gpus=[gpu(0), gpu(1)])
    assert expand(plain) is plain


def test_expand_makes_each_instance_a_gpu_with_its_own_memory_processes_and_activity() -> None:
    expanded = expand(snap(0, gpus=[mig_gpu(0, instance(1, [100], active=90.0), instance(2, [], active=None))]))
    one, two = expanded.gpus
    assert (one.index, two.index) == (unit_index(0, 1), unit_index(0, 2))
    assert one.utilization_gpu_pct == 90.0 and two.utilization_gpu_pct is None  # unknown, never 0
    assert [p.pid for p in one.processes] == [100] and two.processes == ()
    assert one.memory_used_bytes == 20 * GIB and one.temperature_c == 60.0  # the parent's heat applies to it
    info = {i.index: i for i in expanded.gpu_info}[one.index]
    assert info.memory_total_bytes == 40 * GIB  # the instance's, not the GPU's 80 GiB


# -- contention, starvation, memory ------------------------------------------------------------------------


def test_isolated_instances_each_busy_do_not_contend_and_are_each_gpu_bound() -> None:
    state = run(two_busy)
    assert by_rule(state, "gpu_contention") == []
    verdict = state.verdict
    assert verdict is not None and verdict.cls == "gpu_bound"
    assert verdict.gpus == (0,) and verdict.mig_instances == BOTH
    # Both alike: named as the GPU's instances, never as "GPU 0" as if it ran whole.
    assert "every MIG instance of GPU 0 " in verdict.summary


def test_two_processes_on_one_instance_contend_on_that_instance() -> None:
    state = run(lambda i: [mig_gpu(0, instance(1, [100]), instance(2, [101, 102]))])
    [finding] = by_rule(state, "gpu_contention")
    assert finding.variant == "mig" and "free instance (CUDA_VISIBLE_DEVICES=MIG-" in finding.advice
    assert finding.gpus == (0,) and finding.mig_instances == ((0, 2),)
    assert finding.pids == (101, 102)
    assert finding.title.startswith(f"{NAME_2}: ")
    verdict = state.verdict
    assert verdict is not None and verdict.cls == "mixed"
    assert {(g.cls, g.mig_instances) for g in verdict.groups} == {("contended", ((0, 2),)), ("gpu_bound", ((0, 1),))}


def test_an_instance_starved_by_its_loader_is_input_bound_while_the_other_is_busy() -> None:
    loader = proc(101, cpu_pct=99.5, children=0, cmdline="python3 eval.py")
    state = run(lambda i: [mig_gpu(0, instance(1, [100]), instance(2, [101], active=20.0))], [proc(100), loader])
    [finding] = by_rule(state, "starvation_cpu")
    assert finding.mig_instances == ((0, 2),) and finding.title.startswith(NAME_2)
    verdict = state.verdict
    assert verdict is not None and verdict.cls == "mixed"
    [starved] = [g for g in verdict.groups if g.cls == "input_bound"]
    assert starved.mig_instances == ((0, 2),) and NAME_2 in starved.summary and NAME_1 not in starved.summary
    assert NAME_2 in verdict.summary


def test_an_instance_near_its_own_memory_total_is_under_pressure() -> None:
    """39.5 of its 40 GiB: nearly full for the instance, though half the GPU's 80 GiB."""

    def filling(i: int) -> list[GpuSample]:
        return [mig_gpu(0, instance(1, [100], used_gib=38.6 + 0.1 * i), instance(2, [101]))]

    [finding] = by_rule(run(filling), "vram_pressure")
    assert finding.mig_instances == ((0, 1),) and finding.title.startswith(NAME_1)


def test_no_activity_from_the_driver_is_never_idle_or_starved() -> None:
    """No GPM on the instances and none for the GPU: nothing is known of their activity, so nothing is said of
    it, even with a CPU-bound process on each."""
    loaders = [proc(100, cpu_pct=99.5, children=0), proc(101, cpu_pct=99.5, children=0, cmdline="python3 b.py")]
    state = run(lambda i: [mig_gpu(0, instance(1, [100], gpm=False), instance(2, [101], gpm=False))], loaders)
    said = {f.rule for f in state.active}
    assert not said & {"starvation_cpu", "starvation_io", "starvation_net", "cpu_contention", "idle_allocation"}
    assert state.verdict is not None and state.verdict.cls not in ("idle", "underused", "input_bound")


def test_a_mig_gpu_with_no_instance_is_not_idle_and_says_why_no_job_runs() -> None:
    state = run(lambda i: [mig_gpu(0)])
    [finding] = by_rule(state, "mig_no_instances")
    assert finding.severity.label == "info" and finding.gpus == (0,) and not finding.mig_instances
    assert "-cgi" in finding.advice and "-C" in finding.advice
    assert state.verdict is not None and state.verdict.cls != "idle"


# -- the GPU's own readings, MIG mode ----------------------------------------------------------------------


def test_heat_on_a_mig_gpu_is_one_finding_on_the_gpu_and_throttles_each_instance() -> None:
    hot = {"temperature_c": 91.0, "clock_event_reasons_mask": 0x40, "sm_clock_mhz": 1500}
    state = run(lambda i: [mig_gpu(0, instance(1, [100]), instance(2, [101]), **hot)])
    [finding] = by_rule(state, "thermal_throttle")
    assert finding.gpus == (0,) and finding.mig_instances == ()
    assert finding.title.startswith("GPU 0: ")
    verdict = state.verdict
    assert verdict is not None and verdict.cls == "throttled" and verdict.mig_instances == BOTH


@pytest.mark.parametrize(("mode", "pending", "words"), [(False, True, "turns on"), (True, False, "turns off")])
def test_a_pending_mig_mode_change_is_a_warning_to_reset_the_gpu(mode: bool, pending: bool, words: str) -> None:
    state = run(lambda i: [mig_gpu(0, mode=mode, pending=pending)], ticks=2)
    [finding] = by_rule(state, "mig_pending")
    assert finding.severity.label == "warning" and finding.variant == ("on" if pending else "off")
    assert finding.title == f"GPU 0: MIG mode {words} at the next GPU reset"
    assert "nvidia-smi -r -i 0" in finding.advice and "reboot" in finding.advice


def test_a_job_spread_over_instances_is_no_imbalance() -> None:
    """One user's one command line on both instances (and so one job by its key) doing unlike amounts."""
    same = [proc(100), proc(101)]
    state = run(lambda i: [mig_gpu(0, instance(1, [100]), instance(2, [101], active=10.0))], same)
    assert by_rule(state, "imbalance") == []


# -- words and JSON ----------------------------------------------------------------------------------------


def test_a_findings_json_names_its_instances_only_when_it_has_some() -> None:
    state = run(lambda i: [mig_gpu(0, instance(1, [100]), instance(2, [101, 102]))])
    [finding] = by_rule(state, "gpu_contention")
    data = finding_to_dict(finding)
    assert data["gpus"] == [0] and data["mig_instances"] == [{"gpu": 0, "gpu_instance_id": 2}]
    assert list(data)[-1] == "mig_instances"
    assert "mig_instances" not in finding_to_dict(Finding("x", finding.severity, "t", "a", gpus=(0,)))
    verdict = state.verdict
    assert verdict is not None
    groups = verdict_to_dict(verdict)["groups"]
    assert {"gpu": 0, "gpu_instance_id": 1} in [m for g in groups for m in g.get("mig_instances", [])]


def test_findings_of_two_instances_are_two_rows_not_one_on_gpu_0() -> None:
    state = run(lambda i: [mig_gpu(0, instance(1, [100, 103]), instance(2, [101, 102]))])
    rows = group_findings(by_rule(state, "gpu_contention"))
    assert sorted(r.title.split(":")[0] for r in rows) == [NAME_1, NAME_2]
    assert [group_to_dict(r, [0])["mig_instances"] for r in rows]


def test_the_instance_is_named_alike_in_chinese() -> None:
    state = run(lambda i: [mig_gpu(0, instance(1, [100]), instance(2, [101, 102]))], lang="zh")
    [finding] = by_rule(state, "gpu_contention")
    assert finding.title.startswith(f"{NAME_2}：")
    verdict = state.verdict
    assert verdict is not None and NAME_1 in verdict.summary and NAME_2 in verdict.summary
    pending = run(lambda i: [mig_gpu(0, mode=False, pending=True)], ticks=2, lang="zh")
    [change] = by_rule(pending, "mig_pending")
    assert change.title == "GPU 0：MIG 模式将在下次 GPU 重置后开启" and "nvidia-smi -r -i 0" in change.advice


# -- `gputui diagnose --json` ------------------------------------------------------------------------------


class _MigBox(SimulatedSource):
    """The simulated machine with its first GPU split into two busy 3g.40gb instances, one job on each."""

    def sample(self) -> Snapshot:
        taken = super().sample()
        first = taken.gpus[0]
        pids = [p.pid for p in first.processes] + [p.pid for p in taken.gpus[1].processes]
        split_gpu = mig_gpu(0, instance(1, pids[:1]), instance(2, pids[1:2]), timestamp=first.timestamp)
        return Snapshot(
            timestamp=taken.timestamp,
            system=taken.system,
            gpu_info=taken.gpu_info[:1],
            gpus=(split_gpu,),
            host=taken.host,
        )


def test_diagnose_json_gives_a_verdict_per_instance(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from gputui.sources.sim import source as simulated

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setattr(simulated, "SimulatedSource", _MigBox)
    main(["diagnose", "--json", "--demo", "healthy", "--seconds", "20", "--lang", "en"])
    data = json.loads(capsys.readouterr().out)
    verdict = data["verdict"]
    assert verdict["class"] == "gpu_bound" and verdict["gpus"] == [0]
    assert verdict["mig_instances"] == [{"gpu": 0, "gpu_instance_id": 1}, {"gpu": 0, "gpu_instance_id": 2}]
    assert "every MIG instance of GPU 0" in verdict["summary"]  # both alike: the GPU named once
    assert "gpu_contention" not in {f["rule"] for f in data["findings"]}


def test_the_verdict_names_an_instance_apart_and_the_gpus_whose_instances_are_all_alike_once(
    capsys: pytest.CaptureFixture[str],
) -> None:
    main(["diagnose", "--demo", "mig-starving", "--seconds", "10", "--lang", "en"])
    verdict = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("VERDICT"))
    assert f"Input-bound {NAME_2} waiting" in verdict
    assert f"GPU-bound every MIG instance of GPUs 1-3, {NAME_1} " in verdict


def test_two_instances_findings_of_one_rule_are_two_findings_by_key() -> None:
    """Recordings and reports tell findings apart by `Finding.key`: two instances of GPU 0 are not one."""
    state = run(lambda i: [mig_gpu(0, instance(1, [100, 103]), instance(2, [101, 102]))])
    contention = by_rule(state, "gpu_contention")
    assert len({f.key for f in contention}) == 2
    assert all(f.gpus == (0,) for f in contention)


def test_a_per_instance_verdict_holds_as_the_same_verdict() -> None:
    """The hysteresis knows a per-instance verdict again on the next tick: it stands from when it took over."""
    first, later = run(two_busy, ticks=15).verdict, run(two_busy, ticks=40).verdict
    assert first is not None and later is not None and first.since == later.since


def test_a_health_check_keeps_both_instances_closed_findings_that_opened_together() -> None:
    """`diagnose` lists every finding that closed during the run; two instances' findings of one rule that open
    and close at the same instants are two, not one."""
    from gputui.commands.diagnose import _Seen
    from gputui.diagnostics.findings import Severity
    from gputui.diagnostics.tick import Tick

    closed = tuple(
        Finding("gpu_contention", Severity.WARNING, "t", "a", gpus=(0,), mig_instances=((0, gi),), ended_at=5.0)
        for gi in (1, 2)
    )
    reading = snap(0.0)
    seen = _Seen()
    seen.add(Tick(snapshot=reading, closed=closed))
    assert seen.outcome(reading.system).findings == closed


def test_contention_on_a_whole_gpu_waiting_for_mig_is_advised_as_a_whole_gpu() -> None:
    """A GPU with MIG turned on but not yet reset runs whole: its contention advice is another GPU, not another
    instance."""
    from dataclasses import replace

    from gputui.model import GpuProcess, MigState

    def shared(i: int) -> list[GpuSample]:
        procs = (GpuProcess(100, 10**9), GpuProcess(101, 10**9))
        return [replace(gpu(0), processes=procs, mig=MigState(mode=False, pending_mode=True))]

    state = run(shared)
    [finding] = by_rule(state, "gpu_contention")
    assert finding.variant == "" and "free GPU" in finding.advice and finding.mig_instances == ()


def test_a_gpu_instance_split_into_compute_instances_is_one_unit_with_all_their_processes() -> None:
    """Each compute instance is a MIG device of its own, but memory and GPM are the GPU instance's: one unit (two
    units under one index would mix their series), holding both compute instances' processes."""
    from dataclasses import replace

    first = instance(1, [100])
    second = replace(
        instance(1, [101]),
        index=1,
        uuid="MIG-0000-1b",
        compute_instance_id=1,
        processes=tuple(replace(p, compute_instance_id=1) for p in instance(1, [101]).processes),
    )
    units = [g for g in expand(snap(0.0, [mig_gpu(0, first, second)])).gpus]
    assert [g.index for g in units] == [unit_index(0, 1)]
    assert [p.pid for p in units[0].processes] == [100, 101]
