"""The fleet rules on MIG GPUs: `idle_allocated` names an idle held instance, `straggler` compares only board clocks.

A MIG GPU has no whole-GPU utilization (None); its instances are separate jobs with their own activity. Fleet
histories are built as in test_fleet_rules.py, with H100s cut into two 3g.40gb instances.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from gputui.diagnostics.findings import Severity
from gputui.diagnostics.fleet_rules import fleet_finding_to_dict, fleet_findings
from gputui.model import GpuProcess, GpuSample, MigDevice, MigState
from tests.diagnostics.test_fleet_rules import IDLE_STEP, STEP_S, Maker, evidence, node, only, slow_gpu
from tests.snapshots import GIB, gpu, proc

BUSY = 90.0  # an instance's activity while it trains


def instance(gi: int, pids: tuple[int, ...] = (), activity: float | None = BUSY, **changes: Any) -> MigDevice:
    """GPU instance `gi` (a 3g.40gb), its engine and SMs at `activity`, each of `pids` holding 10 GiB in it."""
    base = MigDevice(
        index=gi - 1,
        profile="3g.40gb",
        gpu_instance_id=gi,
        compute_instance_id=0,
        gr_engine_active_pct=activity,
        sm_active_pct=activity,
        processes=tuple(
            GpuProcess(pid=pid, used_memory_bytes=10 * GIB, gpu_instance_id=gi, compute_instance_id=0) for pid in pids
        ),
    )
    return replace(base, **changes)


def mig_gpu(index: int, *devices: MigDevice, **changes: Any) -> GpuSample:
    """A GPU in MIG mode: no utilization nor GPM of its own, every instance's processes in its list too."""
    devices = devices or (instance(1, (7000 + 10 * index,)), instance(2, (7001 + 10 * index,)))
    base = gpu(
        index,
        pids=(),
        gpm=None,
        utilization_gpu_pct=None,
        processes=tuple(p for d in devices for p in d.processes),
        mig=MigState(mode=True, pending_mode=True, devices=devices),
    )
    return replace(base, **changes)


def all_mig(index: int, _: int) -> GpuSample:
    return mig_gpu(index)


def held_instance(*devices: MigDevice) -> Maker:
    """GPU 0 a whole busy GPU; GPU 1 in MIG mode with these instances."""
    return lambda index, _: mig_gpu(index, *devices) if index == 1 else gpu(index)


# -- idle_allocated ---------------------------------------------------------------------------------------------


def test_an_idle_held_instance_is_named_with_its_owner() -> None:
    devices = (instance(1, (4100,)), instance(2, (4242,), activity=0.0))
    job = proc(4242, job_id="81234", user="alice")
    f = only(fleet_findings([node("gpu07", held_instance(*devices), step=IDLE_STEP, procs=[job])]), "idle_allocated")
    assert f.severity is Severity.WARNING
    assert f.gpus == (("gpu07", 1),) and f.mig_instances == (("gpu07", 1, 2),)
    assert f.title == "gpu07 GPU 1 / 3g.40gb (GI 2): held by Slurm job 81234 (alice), idle for 3m30s"
    assert f.advice.startswith("A process holds these MIG instances")
    facts = evidence(f)
    assert facts["owner"] == "Slurm job 81234 (alice)" and facts["idle_span"] == 210
    assert facts["instance_activity"] == 0.0 and facts["process_memory"] == 10.0
    assert "gpu_util" not in facts  # a MIG GPU has none

    zh = only(
        fleet_findings([node("gpu07", held_instance(*devices), step=IDLE_STEP, procs=[job])], "zh"), "idle_allocated"
    )
    assert zh.title == "gpu07 的 GPU 1 / 3g.40gb (GI 2)：被 Slurm 作业 81234（alice） 占用，已空闲 3m30s"
    assert zh.advice.startswith("有进程占着这些 MIG 实例")
    assert {e.key: e.label for e in zh.evidence}["instance_activity"] == "实例活跃度"


def test_the_json_names_the_instance_and_a_whole_gpus_finding_has_no_instances() -> None:
    mig = node("gpu07", held_instance(instance(1, (4100,)), instance(2, (4242,), activity=0.0)), step=IDLE_STEP)
    whole: Maker = lambda index, _: gpu(index, pids=(4300,), utilization_gpu_pct=0.0, sm_active_pct=0.0)  # noqa: E731
    found = fleet_findings([mig, node("gpu08", whole, gpus=1, step=IDLE_STEP)])
    by_host = {f.hosts: json.loads(json.dumps(fleet_finding_to_dict(f))) for f in found}
    assert by_host[("gpu07",)]["mig_instances"] == [{"host": "gpu07", "gpu": 1, "gpu_instance_id": 2}]
    assert by_host[("gpu07",)]["gpus"] == [{"host": "gpu07", "gpu": 1}]
    assert "mig_instances" not in by_host[("gpu08",)]


def test_idle_instances_of_one_owner_are_one_finding() -> None:
    both = (instance(1, (4242,), activity=0.0), instance(2, (4243,), activity=0.0))
    owner = proc(4242, pod="trainer-7f9c", namespace="research")
    helper = replace(owner, pid=4243)
    found = fleet_findings([node("gpu07", held_instance(*both), step=IDLE_STEP, procs=[owner, helper])])
    f = only(found, "idle_allocated")
    assert f.mig_instances == (("gpu07", 1, 1), ("gpu07", 1, 2))
    assert f.title.startswith(
        "gpu07 GPU 1 / 3g.40gb (GI 1), GPU 1 / 3g.40gb (GI 2): held by pod research/trainer-7f9c, idle"
    )
    assert evidence(f)["process_memory"] == 20.0


def test_processes_listed_only_on_the_gpu_hold_their_instance() -> None:
    """A source that gives no per-instance list still tags each process with its GPU instance."""
    idle = instance(2, (4242,), activity=0.0)
    bare = replace(idle, processes=())
    make: Maker = lambda index, _: (  # noqa: E731
        replace(
            mig_gpu(index, instance(1, (4100,)), bare), processes=(*instance(1, (4100,)).processes, *idle.processes)
        )
        if index == 1
        else gpu(index)
    )
    f = only(fleet_findings([node("gpu07", make, step=IDLE_STEP, procs=[proc(4242)])]), "idle_allocated")
    assert f.mig_instances == (("gpu07", 1, 2),)


def test_an_instance_without_a_holder_is_never_named() -> None:
    empty = node("gpu07", held_instance(instance(1, (4100,)), instance(2, activity=0.0)), step=IDLE_STEP)
    assert fleet_findings([empty]) == ()

    # nor by a pod dcgm-exporter labels the GPU itself with: that says nothing of which instance it was given
    def labelled(index: int, i: int) -> GpuSample:
        return replace(held_instance(instance(1), instance(2, activity=0.0))(index, i), pod="ns/p")

    assert fleet_findings([node("gpu07", labelled, step=IDLE_STEP)]) == ()


def test_an_instance_held_only_by_its_pod_is_named_with_it() -> None:
    """dcgm-exporter lists no process; it labels each instance's series with the pod given that instance."""
    pods = (instance(1, pod="ml/train-0"), instance(2, activity=0.0, pod="research/notebook-011-0"))
    f = only(fleet_findings([node("gpu07", held_instance(*pods), step=IDLE_STEP)]), "idle_allocated")
    assert f.gpus == (("gpu07", 1),) and f.mig_instances == (("gpu07", 1, 2),)
    assert f.title == "gpu07 GPU 1 / 3g.40gb (GI 2): held by pod research/notebook-011-0, idle for 3m30s"
    facts = evidence(f)
    assert facts["owner"] == "pod research/notebook-011-0" and facts["process_memory"] is None
    zh = only(fleet_findings([node("gpu07", held_instance(*pods), step=IDLE_STEP)], "zh"), "idle_allocated")
    assert zh.title.startswith("gpu07 的 GPU 1 / 3g.40gb (GI 2)：被 Pod research/notebook-011-0 占用")
    # a process it lists names the owner first, as on a whole GPU
    listed = (instance(1), instance(2, (4242,), activity=0.0, pod="research/notebook-011-0"))
    job = proc(4242, job_id="81234", user="alice")
    found = fleet_findings([node("gpu07", held_instance(*listed), step=IDLE_STEP, procs=[job])])
    assert only(found, "idle_allocated").title.startswith("gpu07 GPU 1 / 3g.40gb (GI 2): held by Slurm job 81234")
    # its pod does not make unknown activity idle
    unknown = (instance(1), instance(2, activity=None, pod="research/notebook-011-0"))
    assert fleet_findings([node("gpu07", held_instance(*unknown), step=IDLE_STEP)]) == ()


def test_unknown_activity_is_never_idle() -> None:
    unknown = instance(2, (4242,), activity=None)
    assert fleet_findings([node("gpu07", held_instance(instance(1, (4100,)), unknown), step=IDLE_STEP)]) == ()
    # engine activity alone, under the threshold, is enough to know
    engine_only = instance(2, (4242,), activity=None, gr_engine_active_pct=0.0)
    found = fleet_findings([node("gpu07", held_instance(instance(1, (4100,)), engine_only), step=IDLE_STEP)])
    assert only(found, "idle_allocated").mig_instances == (("gpu07", 1, 2),)


def test_a_working_or_briefly_idle_instance_is_not_idle_allocated() -> None:
    sm_busy = instance(2, (4242,), activity=0.0, sm_active_pct=40.0)  # engine idle, SMs at work: not idle
    assert fleet_findings([node("gpu07", held_instance(instance(1, (4100,)), sm_busy), step=IDLE_STEP)]) == ()
    short = held_instance(instance(1, (4100,)), instance(2, (4242,), activity=0.0))
    assert fleet_findings([node("gpu07", short, step=STEP_S)]) == ()  # 14 s
    woke: Maker = lambda index, i: short(index, i) if i < 7 else held_instance()(index, i)  # noqa: E731
    assert fleet_findings([node("gpu07", woke, step=IDLE_STEP, readings=9)]) == ()


def test_an_instance_made_anew_is_idle_only_since_it_exists() -> None:
    """Before its GPU instance existed it held nothing: the idle span starts when it appears."""
    late: Maker = lambda index, i: (  # noqa: E731
        mig_gpu(index, instance(1, (4100,)), *([instance(2, (4242,), activity=0.0)] if i >= 4 else []))
        if index == 1
        else gpu(index)
    )
    assert fleet_findings([node("gpu07", late, step=IDLE_STEP)]) == ()  # 90 s since it appeared


# -- straggler --------------------------------------------------------------------------------------------------


def test_a_mig_gpu_with_util_none_is_neither_a_straggler_nor_a_peer_by_utilization() -> None:
    """Its missing utilization is not low, and its instances' activity is not a whole GPU's."""

    def low(index: int, _: int) -> GpuSample:
        return mig_gpu(index, instance(1, (4100,), activity=20.0), instance(2, (4101,), activity=10.0))

    found = fleet_findings([node("gpu01"), node("gpu02"), node("gpu03"), node("gpu04", low)])
    assert found == ()
    # beside a whole-GPU straggler, the MIG GPUs (busy instances, a faster clock) are not among its peers
    lagging = slow_gpu(0, utilization_gpu_pct=60.0, sm_active_pct=40.0)
    fast_mig: Maker = lambda index, _: mig_gpu(index, sm_clock_mhz=1980)  # noqa: E731
    fleet = [node("gpu01"), node("gpu02"), node("gpu03", lagging), node("gpu04", fast_mig), node("gpu05", fast_mig)]
    f = only(fleet_findings(fleet), "straggler")
    assert f.gpus == (("gpu03", 0),) and f.mig_instances == ()
    assert f.title.startswith("gpu03 GPU 0: slower than the fleet's 6 busy NVIDIA H100 80GB HBM3 GPUs, utilization")
    assert evidence(f)["busy_peers"] == 6


def test_a_mig_gpus_slow_clock_is_a_straggler_among_mig_gpus_of_its_model() -> None:
    slow: Maker = lambda index, _: mig_gpu(index, sm_clock_mhz=1410 if index == 1 else 1980)  # noqa: E731
    found = fleet_findings([node("gpu01", all_mig), node("gpu02", all_mig), node("gpu03", slow)])
    f = only(found, "straggler")
    assert f.gpus == (("gpu03", 1),) and f.mig_instances == ()  # the board's clock: the whole GPU
    assert f.advice.startswith("A slow board slows every MIG instance on it")
    assert f.title == (
        "gpu03 GPU 1: slower than the fleet's 6 busy NVIDIA H100 80GB HBM3 GPUs in MIG mode, "
        "SM clock 29% below the median, mean over 14 s (no cause found on the node)"
    )
    facts = evidence(f)
    assert facts["sm_clock"] == 1410.0 and facts["median_sm_clock"] == 1980.0
    assert "gpu_util" not in facts and "sm_active" not in facts
    zh = only(fleet_findings([node("gpu01", all_mig), node("gpu02", all_mig), node("gpu03", slow)], "zh"), "straggler")
    assert zh.title.startswith("gpu03 的 GPU 1：比集群中 6 块 MIG 模式下繁忙的 NVIDIA H100 80GB HBM3 慢")


def test_mig_gpus_are_not_compared_by_their_instances_activity() -> None:
    """Smaller jobs on one board are not a slower board: a GPU whose instances work at 30% lags no one."""
    light: Maker = lambda index, _: (  # noqa: E731
        mig_gpu(index, instance(1, (4100,), activity=30.0), instance(2, (4101,), activity=30.0))
        if index == 0
        else mig_gpu(index)
    )
    assert fleet_findings([node("gpu01", all_mig), node("gpu02", all_mig), node("gpu03", light)]) == ()


def test_a_mig_gpu_is_never_clock_compared_with_whole_gpus() -> None:
    """Three whole H100s at 1980 MHz and one MIG H100 at 1410: too few MIG peers, and whole GPUs are none."""
    slow_mig: Maker = lambda index, _: mig_gpu(index, sm_clock_mhz=1410)  # noqa: E731
    assert fleet_findings([node("gpu01"), node("gpu02"), node("gpu03"), node("gpu04", slow_mig)]) == ()


def test_a_mig_gpu_whose_instances_do_nothing_is_never_a_straggler() -> None:
    def idle(index: int, _: int) -> GpuSample:
        return mig_gpu(index, instance(1, activity=0.0), instance(2, activity=0.0), sm_clock_mhz=210)

    quiet: Maker = lambda index, _: idle(index, 0) if index == 1 else mig_gpu(index)  # noqa: E731
    assert fleet_findings([node("gpu01", all_mig), node("gpu02", all_mig), node("gpu03", quiet)]) == ()
