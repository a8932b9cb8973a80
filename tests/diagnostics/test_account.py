"""What the waiting cost, against a scripted session whose answer is known: two GPUs, 60 s GPU-bound, 120 s
input-bound, 30 s idle with a process on each, 30 s idle with none, at one tick a second. A verdict speaks for
the time since the reading before the one it was judged on: that time is billed to it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from gputui.cli import main
from gputui.diagnostics.account import (
    COUNTER,
    INTEGRATED,
    Account,
    Accountant,
    Price,
    account_lines,
    account_to_dict,
    gpu_classes,
    tally_line,
)
from gputui.diagnostics.verdict import Verdict
from gputui.model import Snapshot
from tests.snapshots import gpu, host, proc, snapshot

PRICE = Price(2.40, "USD")


@pytest.fixture(autouse=True)
def no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))


# GPU 0's energy counter (mJ) runs at 300 W and goes back to 0 (the driver reloaded) just before t = 100.
COUNTER_W = 300
RESET_AT = 100


def verdict(cls: str, gpus: tuple[int, ...] = (0, 1), groups: tuple[Verdict, ...] = ()) -> Verdict:
    return Verdict(cls=cls, label=cls, gpus=gpus, summary="", line="", groups=groups)


def phase(t: int) -> str:
    """The verdict class of the tick at t (counting the second before it)."""
    if t <= 60:
        return "gpu_bound"
    if t <= 180:
        return "input_bound"
    return "idle"


def energy_mj(t: int) -> int:
    since = t - RESET_AT + 1 if t >= RESET_AT else t + 5000
    return since * COUNTER_W * 1000


def tick(t: int) -> tuple[Snapshot, Verdict]:
    held = t <= 210
    gpus = (
        gpu(0, pids=(100,) if held else (), energy_mj=energy_mj(t), power_w=999.0),
        gpu(1, pids=(200,) if held else (), energy_mj=None, power_w=250.0),
    )
    procs = (proc(100), proc(200, job_id="4242")) if held else ()
    return snapshot(float(t), gpus, host_sample=host(procs)), verdict(phase(t))


def session(times: Iterator[int] | range = range(241)) -> Account:
    accountant = Accountant(max_gap_s=3.0)
    for t in times:
        accountant.add(*tick(t))
    return accountant.account()


def test_each_gpu_has_its_seconds_in_each_class_to_the_second() -> None:
    account = session()
    assert account.window_s == 240
    expected = {"input_bound": 120.0, "idle_allocated": 30.0, "gpu_bound": 60.0, "idle_free": 30.0}
    assert [dict(g.seconds) for g in account.gpus] == [expected, expected]
    assert [(t.cls, t.gpu_seconds, t.wall_s, t.gpus) for t in account.totals] == [
        ("input_bound", 240.0, 120.0, (0, 1)),
        ("idle_allocated", 60.0, 30.0, (0, 1)),
        ("gpu_bound", 120.0, 60.0, (0, 1)),
        ("idle_free", 60.0, 30.0, (0, 1)),
    ]


def test_energy_comes_from_the_counter_across_a_reset_else_from_the_power_integrated() -> None:
    gpu0, gpu1 = session().gpus
    assert (gpu0.energy_j, gpu0.energy_source) == (240 * COUNTER_W, COUNTER)
    assert (gpu1.energy_j, gpu1.energy_source) == (240 * 250.0, INTEGRATED)


def test_without_counter_or_power_energy_is_not_known() -> None:
    accountant = Accountant(max_gap_s=3.0)
    for t in range(3):
        accountant.add(snapshot(float(t), (gpu(0, energy_mj=None, power_w=None),)), verdict("gpu_bound", (0,)))
    (only,) = accountant.account().gpus
    assert (only.energy_j, only.energy_source) == (None, None)


def test_each_job_gets_the_seconds_of_the_gpus_it_held() -> None:
    jobs = {j.owner: j for j in session().jobs}
    assert set(jobs) == {"pid 100 (alice) python3", "slurm job 4242"}
    alice, slurm = jobs["pid 100 (alice) python3"], jobs["slurm job 4242"]
    assert (alice.gpus, dict(alice.seconds)) == (
        (0,),
        {"input_bound": 120.0, "idle_allocated": 30.0, "gpu_bound": 60.0},
    )
    assert slurm.gpus == (1,)
    assert slurm.energy_j == 210 * 250.0


def test_a_pod_owns_its_processes() -> None:
    snap = snapshot(0.0, (gpu(0, pids=(100,)),), host_sample=host((proc(100, pod="train-0", namespace="ml"),)))
    accountant = Accountant(max_gap_s=3.0)
    accountant.add(snap, verdict("gpu_bound", (0,)))
    accountant.add(
        snapshot(1.0, (gpu(0, pids=(100,)),), host_sample=host((proc(100, pod="train-0", namespace="ml"),))),
        verdict("gpu_bound", (0,)),
    )
    assert [j.owner for j in accountant.account().jobs] == ["pod ml/train-0"]


def test_a_gap_between_ticks_is_billed_at_most_max_gap() -> None:
    account = session(iter([0, 1, 2, 3602, 3603]))
    assert account.window_s == 1 + 1 + 3 + 1


def test_an_idle_gpu_left_out_of_a_mixed_verdict_counts_as_idle_and_unknown_as_unknown() -> None:
    snap = snapshot(0.0, (gpu(0), gpu(1, pids=()), gpu(2, utilization_gpu_pct=None)))
    mixed = verdict("mixed", (0,), groups=(verdict("input_bound", (0,)),))
    assert gpu_classes(snap, mixed) == {0: "input_bound", 1: "idle_free", 2: "unknown"}
    assert gpu_classes(snap, verdict("unknown", ())) == {0: "unknown", 1: "unknown", 2: "unknown"}


def test_the_price_gives_each_class_its_cost_and_no_price_gives_no_cost() -> None:
    account = session()
    priced = account_to_dict(account, PRICE)
    assert priced["cost"] == {"input_bound": 0.16, "idle_allocated": 0.04, "gpu_bound": 0.08, "idle_free": 0.04}
    assert (priced["price_per_gpu_hour"], priced["currency"]) == (2.40, "USD")
    unpriced = account_to_dict(account, None)
    assert not {"cost", "price_per_gpu_hour", "currency"} & set(unpriced)
    assert unpriced["gpus"][0] == {
        "gpu": 0,
        "seconds": {"input_bound": 120.0, "idle_allocated": 30.0, "gpu_bound": 60.0, "idle_free": 30.0},
        "energy_j": 72000.0,
        "energy_source": "counter",
    }


def test_the_lines_name_each_cause_with_its_gpu_hours_and_cost() -> None:
    lines = account_lines(session(), PRICE)
    assert lines[0] == "Where the GPU time went (4m00s on 2 GPUs):"
    assert lines[1] == "Input-bound all 2 GPUs 2m00s each: 0.0667 GPU-hours, 0.16 USD at 2.40 USD"
    assert lines[2] == "Idle (allocated) all 2 GPUs 30s each: 0.0167 GPU-hours, 0.04 USD at 2.40 USD"
    assert account_lines(session(), None)[1] == "Input-bound all 2 GPUs 2m00s each: 0.0667 GPU-hours"
    assert account_lines(session(), None, "zh")[1] == "输入瓶颈 全部 2 块 GPU 各 2m00s：0.0667 GPU 小时"


@pytest.mark.parametrize(("currency", "shown"), [("USD", "0.16 USD"), ("$", "$0.16")])
def test_the_tally_writes_a_code_after_and_a_sign_before(currency: str, shown: str) -> None:
    line = tally_line(session(), Price(2.40, currency))
    assert line.startswith(f"Cost: Input-bound {shown}, Idle (allocated)")


def test_one_gpu_is_named_in_the_singular() -> None:
    accountant = Accountant(max_gap_s=3.0)
    for t in range(61):
        accountant.add(snapshot(float(t), (gpu(0),)), verdict("gpu_bound", (0,)))
    assert account_lines(accountant.account(), None)[1] == "GPU-bound GPU 0 1m00s: 0.0167 GPU-hours"


# The thermal demo's first 10 s, as `diagnose` shows it: not known yet for 5 s, GPU-bound on all four for 1 s,
# then GPU 1 throttled beside the other three GPU-bound.
THERMAL = (
    *((t, verdict("unknown", ())) for t in range(5)),
    (5, verdict("gpu_bound", (0, 1, 2, 3))),
    *(
        (t, verdict("mixed", (0, 1, 2, 3), (verdict("throttled", (1,)), verdict("gpu_bound", (0, 2, 3)))))
        for t in range(6, 11)
    ),
)


def thermal() -> Account:
    accountant = Accountant(max_gap_s=3.0)
    for t, shown in THERMAL:
        accountant.add(snapshot(float(t), tuple(gpu(i) for i in range(4))), shown)
    return accountant.account()


def test_each_tick_bills_the_verdict_judged_on_it_for_the_second_before() -> None:
    """Not known yet for the readings up to 4 s, GPU-bound for the one at 5, throttled on GPU 1 from 6 to the end
    (10); each GPU's seconds add up to the window."""
    account = thermal()
    assert account.window_s == 10
    assert dict(account.gpus[1].seconds) == {"throttled": 5.0, "gpu_bound": 1.0, "unknown": 4.0}
    assert dict(account.gpus[0].seconds) == {"gpu_bound": 6.0, "unknown": 4.0}
    assert all(sum(g.seconds.values()) == account.window_s for g in account.gpus)


def test_the_lines_say_which_gpus_had_a_class_and_how_long_each() -> None:
    """Not 'GPU-bound 6s on 4 GPUs', which reads as if all four were GPU-bound for 6 s while GPU 1 was throttled."""
    assert account_lines(thermal(), None) == [
        "Where the GPU time went (10s on 4 GPUs):",
        "Throttled GPU 1 5s: 0.00139 GPU-hours",
        "GPU-bound GPUs 0,2-3 6s each, GPU 1 1s: 0.00528 GPU-hours",
        "Not known yet all 4 GPUs 4s each: 0.00444 GPU-hours",
    ]
    assert account_lines(thermal(), None, "zh")[2] == "GPU 算力瓶颈 GPU 0,2-3 各 6s，GPU 1 1s：0.00528 GPU 小时"


def test_diagnose_json_bills_each_gpu_what_the_verdict_said_of_it(capsys: pytest.CaptureFixture[str]) -> None:
    """`diagnose --demo thermal --seconds 10 --json`: the verdict judged every tick counted says GPU 1 is throttled
    and the others GPU-bound, so the account gives GPU 1 its whole window throttled (not a second of GPU-bound,
    nor of not known yet) and each GPU's seconds add up to the window."""
    main(["diagnose", "--demo", "thermal", "--seconds", "10", "--json"])
    doc = json.loads(capsys.readouterr().out)
    account, groups = doc["account"], doc["verdict"]["groups"]
    assert {g["class"]: g["gpus"] for g in groups} == {"throttled": [1], "gpu_bound": [0, 2, 3]}
    seconds = {g["gpu"]: g["seconds"] for g in account["gpus"]}
    window = account["window_s"]
    assert window == 10
    assert seconds == {
        0: {"gpu_bound": window},
        1: {"throttled": window},
        2: {"gpu_bound": window},
        3: {"gpu_bound": window},
    }
