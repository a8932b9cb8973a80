"""The interconnect rules on hand-built snapshots: an 8-GPU NVSwitch box (NV18, two NUMA nodes of 4 GPUs) and
a 4-GPU PCIe box across two sockets; each rule on, and quiet on its look-alikes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pytest

from gputui.diagnostics.findings import Severity
from gputui.diagnostics.rules.base import Check, Hit, Window
from gputui.diagnostics.rules.interconnect import numa_mismatch, nvlink_down, nvlink_errors, p2p_unavailable
from gputui.diagnostics.thresholds import Thresholds
from gputui.model import NVSWITCH, GpuSample, ProcSample, Snapshot, Topology
from tests.diagnostics.builders import SYSTEM, series
from tests.snapshots import gpu, gpu_info, host, proc

TH = Thresholds()
AFFINITY = ("0-31,64-95",) * 4 + ("32-63,96-127",) * 4


def run(check: Check, snaps: Sequence[Snapshot]) -> list[Hit]:
    return list(check(Window(snaps, TH.window_s), TH))


def evidence(hit: Hit) -> dict[str, object]:
    return {e.key: e.value for e in hit.evidence}


def topology(
    n: int, path: str = "NV18", p2p: bool | None = True, affinity: Sequence[str] = AFFINITY, **pairs: str
) -> Topology:
    """Every pair joined by `path` with P2P `p2p`; `pairs` overrides one: `g0_3="NV16"`."""
    matrix = [["X" if a == b else path for b in range(n)] for a in range(n)]
    for key, value in pairs.items():
        a, b = map(int, key[1:].split("_"))
        matrix[a][b] = matrix[b][a] = value
    return Topology(
        matrix=tuple(tuple(row) for row in matrix),
        p2p=tuple(tuple(None if a == b else p2p for b in range(n)) for a in range(n)),
        numa_node=tuple(0 if i < n / 2 else 1 for i in range(n)),
        cpu_affinity=tuple(affinity[:n]),
    )


def box(
    topo: Topology | None,
    samples: Sequence[GpuSample],
    procs: Sequence[ProcSample] | None = None,
    count: int = 10,
    links_total: int | None = 18,
    vary: Any = None,
    remotes: Any = None,
) -> list[Snapshot]:
    """`count` ticks of a machine whose GPUs are `samples` (changed per tick by `vary(i, samples)`), their
    links reaching `remotes(index)` (None: not read)."""
    system = replace(SYSTEM, gpu_count=len(samples), topology=topo)
    infos = [
        gpu_info(g.index, nvlink_links_total=links_total, nvlink_remote=remotes(g.index) if remotes else None)
        for g in samples
    ]
    hosts = host(procs or [proc(g.index + 100, cmdline=f"python3 train.py --local-rank={g.index}") for g in samples])
    return series(
        count,
        lambda i: {
            "gpus": vary(i, samples) if vary else samples,
            "infos": infos,
            "host_sample": hosts,
            "system": system,
        },
    )


def eight(**changes: Any) -> list[GpuSample]:
    """Eight busy H100 SXM, each with its rank, all 18 NVLinks up; `changes[i]` changes GPU i."""
    return [gpu(i, pids=(100 + i,), **({"nvlink_links_active": 18} | changes.get(f"g{i}", {}))) for i in range(8)]


# -- nvlink_down --------------------------------------------------------------------------------------------


def test_nvlink_down_when_one_gpu_lost_links_its_peers_kept() -> None:
    [hit] = run(nvlink_down, box(topology(8), eight(g3={"nvlink_links_active": 16})))
    assert hit.gpus == (3,) and hit.pids == (103,) and hit.value == 16
    assert hit.params == {"gpu": 3, "active": 16, "total": 18}
    assert evidence(hit)["nvlink_links"] == "16/18"
    assert evidence(hit)["board_links"] == "0-2,4-7: 18/18; 3: 16/18"


def test_nvlink_down_from_the_matrix_where_live_counts_are_missing() -> None:
    topo = topology(8, **{f"g3_{i}": "NV16" for i in range(8) if i != 3})
    [hit] = run(nvlink_down, box(topo, eight(), links_total=None))
    assert (hit.gpus, hit.variant, hit.value) == ((3,), "matrix", 16)
    assert hit.params == {"gpu": 3, "mine": "NV16", "full": "NV18"}
    assert evidence(hit)["other_pairs"] == "NV18"


@pytest.mark.parametrize(
    ("samples", "topo", "total"),
    [
        (eight(), topology(8), 18),  # all up
        ([gpu(i, nvlink_links_active=None) for i in range(4)], topology(4, "PXB"), None),  # no NVLink
        (eight(**{f"g{i}": {"nvlink_links_active": 12} for i in range(8)}), topology(8, "NV12"), 18),  # wired so
        ([gpu(0, nvlink_links_active=16)], topology(1), 18),  # no peer to hold it against
        # A hybrid cube mesh: pairs of NV1 and NV2 by design, never "lower than the others".
        ([gpu(i) for i in range(4)], topology(4, "NV2", g0_1="NV1", g2_3="NV1"), None),
    ],
    ids=["all-up", "no-nvlink", "all-short-alike", "single-gpu", "cube-mesh"],
)
def test_nvlink_down_leaves_look_alikes_alone(samples: list[GpuSample], topo: Topology, total: int | None) -> None:
    assert run(nvlink_down, box(topo, samples, links_total=total)) == []


def test_nvlink_down_quiet_on_an_nvswitch_board_with_every_link_up() -> None:
    assert run(nvlink_down, box(topology(8), eight(), remotes=switch)) == []


def test_nvlink_down_quiet_on_bridged_pairs_all_short_alike() -> None:
    """H100 NVL pairs: NVML lists 18 links, the bridges wire 12 of them on every GPU."""
    four = [gpu(i, pids=(100 + i,), nvlink_links_active=12) for i in range(4)]
    topo = topology(4, "PHB", g0_1="NV12", g2_3="NV12")
    assert run(nvlink_down, box(topo, four, remotes=bridged(12, 18))) == []


def switch(index: int) -> tuple[str, ...]:
    """An HGX board: all 18 links of each GPU reach an NVSwitch."""
    return (NVSWITCH,) * 18


def switch_down(down: int) -> Any:
    """An HGX board whose GPUs read no remote ("") on `down` links that are down."""
    return lambda index: (NVSWITCH,) * (18 - down) + ("",) * down


def bridged(wired: int, total: int) -> Any:
    """GPUs bridged in pairs (0-1, 2-3, ...): `wired` links to the partner's bus id, the rest of `total` to
    nothing ("")."""
    return lambda index: (f"00000000:{index ^ 1:02X}:00.0",) * wired + ("",) * (total - wired)


def test_nvlink_down_on_an_nvswitch_board_where_every_gpu_is_short_alike_is_the_fabric() -> None:
    short = eight(**{f"g{i}": {"nvlink_links_active": 16} for i in range(8)})
    hits = run(nvlink_down, box(topology(8, "NV16"), short, remotes=switch_down(2)))
    assert [hit.gpus for hit in hits] == [(i,) for i in range(8)]
    assert {(hit.variant, hit.value) for hit in hits} == {("fabric", 16)}
    assert hits[0].params == {"gpu": 0, "active": 16, "total": 18}
    # Each GPU's figure under its own number, the same words on every GPU: a row of the eight says them once.
    assert {evidence(hit)["board_links"] for hit in hits} == {"0-7: 16/18"}


def test_nvlink_down_on_an_nvswitch_board_one_gpu_short_is_held_against_its_peers() -> None:
    [hit] = run(nvlink_down, box(topology(8), eight(g3={"nvlink_links_active": 16}), remotes=switch))
    assert (hit.gpus, hit.variant) == ((3,), "")


def test_nvlink_down_on_one_gpu_of_an_nvswitch_board_with_no_peer_in_view() -> None:
    [hit] = run(nvlink_down, box(topology(1), [gpu(5, nvlink_links_active=17)], remotes=switch))
    assert (hit.gpus, hit.variant, hit.value) == ((5,), "switch", 17)
    assert evidence(hit)["board_links"] is None


def test_nvlink_down_on_bridged_pairs_with_one_gpu_short_while_its_peers_have_all_theirs() -> None:
    """A100 PCIe pairs, three bridges each: 12 links of 12, one GPU with a bridge off."""
    four = [gpu(i, pids=(100 + i,), nvlink_links_active=8 if i == 2 else 12) for i in range(4)]
    topo = topology(4, "PHB", g0_1="NV12", g2_3="NV8")
    [hit] = run(nvlink_down, box(topo, four, links_total=12, remotes=bridged(12, 12)))
    assert (hit.gpus, hit.variant, hit.value) == ((2,), "", 8)


# -- nvlink_errors ------------------------------------------------------------------------------------------


def counters(replay: int, crc: int) -> dict[str, int]:
    return {"nvlink_replay_errors": replay, "nvlink_recovery_errors": 0, "nvlink_crc_errors": crc}


def test_nvlink_errors_when_counters_rise_during_the_window() -> None:
    snaps = box(topology(8), eight(), vary=lambda i, s: eight(g5=counters(replay=3 + 2 * i, crc=40 + i)))
    [hit] = run(nvlink_errors, snaps)
    assert hit.gpus == (5,) and hit.value == 27
    assert evidence(hit) == {"nvlink_replay_rise": 18, "nvlink_recovery_rise": 0, "nvlink_crc_rise": 9}


@pytest.mark.parametrize(
    "vary",
    [
        lambda i, s: eight(g5=counters(replay=3, crc=40)),  # many past errors, none new
        lambda i, s: eight(g5=counters(replay=0 if i > 4 else 30, crc=0)),  # reset: went back
        lambda i, s: [gpu(j) for j in range(8)],  # no NVLink counters
    ],
    ids=["flat", "reset", "not-read"],
)
def test_nvlink_errors_quiet_on_flat_reset_or_unread_counters(vary: Any) -> None:
    assert run(nvlink_errors, box(topology(8), eight(), vary=vary)) == []


# -- numa_mismatch ------------------------------------------------------------------------------------------


def ranks(**changes: Any) -> list[ProcSample]:
    """A rank per GPU, each on a CPU near its GPU; `changes[i]` changes rank i."""
    near = {i: 8 * i if i < 4 else 32 + 8 * (i - 4) for i in range(8)}
    return [
        proc(100 + i, cmdline=f"train.py --local-rank={i}", **({"last_cpu": near[i]} | changes.get(f"r{i}", {})))
        for i in range(8)
    ]


def test_numa_mismatch_when_a_rank_runs_on_the_other_socket() -> None:
    [hit] = run(numa_mismatch, box(topology(8), eight(), ranks(r0={"last_cpu": 40, "cpus_allowed": (32, 40)})))
    assert hit.gpus == (0,) and hit.pids == (100,) and hit.value == 100.0
    assert hit.params == {"gpu": 0, "node": 0}  # the pid is in the evidence: one title for every rank alike
    assert evidence(hit) == {
        "gpu_cpus": "0-31,64-95",
        "last_cpu": 40,
        "allowed_near": "0/2",
        "far_share": 100.0,
        "gpu_util": 97.0,
    }
    assert (hit.variant, hit.severity) == ("", None)  # pinned there: a warning even while its GPU is busy


def _waiting(samples: list[GpuSample], util: float = 60.0) -> list[GpuSample]:
    return [replace(g, utilization_gpu_pct=util) if g.index == 0 else g for g in samples]


def test_numa_mismatch_for_an_unpinned_rank_far_while_its_gpu_waits() -> None:
    roams = ranks(r0={"last_cpu": 40, "cpus_allowed": tuple(range(128))})
    [hit] = run(numa_mismatch, box(topology(8), _waiting(eight()), roams))
    assert (hit.variant, hit.severity, hit.gpus) == ("far", None, (0,))


def test_numa_mismatch_for_an_unpinned_rank_that_drifts_or_keeps_its_gpu_busy_is_info() -> None:
    """The scheduler moved it (no one pinned it): the advice at info level, never a verdict cause."""
    roams = ranks(r0={"last_cpu": 40, "cpus_allowed": tuple(range(128))})
    [busy] = run(numa_mismatch, box(topology(8), eight(), roams))
    assert (busy.variant, busy.severity) == ("drift", Severity.INFO)
    snaps = box(topology(8), _waiting(eight()), ranks())
    snaps[-4:] = box(topology(8), _waiting(eight()), roams, count=4)
    [drift] = run(numa_mismatch, snaps)
    assert (drift.variant, drift.severity, drift.value) == ("drift", Severity.INFO, 40.0)


def test_numa_mismatch_when_pinned_away_even_before_it_ran() -> None:
    [hit] = run(numa_mismatch, box(topology(8), eight(), ranks(r6={"last_cpu": None, "cpus_allowed": (0, 1)})))
    assert hit.gpus == (6,) and hit.params["node"] == 1


@pytest.mark.parametrize(
    "procs",
    [
        ranks(),  # every rank near its GPU
        ranks(r0={"last_cpu": 3, "cpus_allowed": tuple(range(128))}),  # free to roam, but stays near
        ranks(r0={"last_cpu": None, "cpus_allowed": None}),  # another user's process: unreadable
    ],
    ids=["near", "unpinned-near", "unknown"],
)
def test_numa_mismatch_leaves_near_or_unknown_placement_alone(procs: list[ProcSample]) -> None:
    assert run(numa_mismatch, box(topology(8), eight(), procs)) == []


def test_numa_mismatch_is_judged_over_the_window() -> None:
    """The scheduler moving a rank over for a tick or two (a brief migration) is no finding."""
    snaps = box(topology(8), eight(), ranks())
    snaps[-2:] = box(topology(8), eight(), ranks(r0={"last_cpu": 40}), count=2)
    assert run(numa_mismatch, snaps) == []


@pytest.mark.parametrize(("numa_nodes", "fires"), [(1, False), (2, True), (None, True)])
def test_numa_mismatch_needs_another_numa_node(numa_nodes: int | None, fires: bool) -> None:
    """A driver's affinity mask may name some of a one-node host's CPUs: a rank pinned to the others runs on no
    other socket, for there is none. Where the count was not read (an older recording), the mask is judged."""
    topo = replace(topology(8), numa_nodes=numa_nodes)
    pinned = ranks(r0={"last_cpu": 40, "cpus_allowed": (32, 40)})
    assert bool(run(numa_mismatch, box(topo, eight(), pinned))) is fires


def test_numa_mismatch_needs_the_topology() -> None:
    assert run(numa_mismatch, box(None, eight(), ranks(r0={"last_cpu": 40}))) == []


# -- p2p_unavailable ----------------------------------------------------------------------------------------


def pcie_box(p2p: bool | None, across: str = "SYS") -> Topology:
    """Four consumer GPUs, two per socket: PXB on a socket, `across` between them, P2P `p2p` across."""
    topo = topology(4, "PXB", p2p=True, affinity=("0-15",) * 2 + ("16-31",) * 2)
    matrix = [list(row) for row in topo.matrix]
    table = [list(row) for row in topo.p2p]
    for a, b in ((0, 2), (0, 3), (1, 2), (1, 3)):
        matrix[a][b] = matrix[b][a] = across
        table[a][b] = table[b][a] = p2p
    return replace(topo, matrix=tuple(map(tuple, matrix)), p2p=tuple(map(tuple, table)))


def four() -> list[GpuSample]:
    return [gpu(i, pids=(100 + i,), nvlink_links_active=None) for i in range(4)]


def test_p2p_unavailable_when_one_job_spans_gpus_without_p2p() -> None:
    [hit] = run(p2p_unavailable, box(pcie_box(p2p=False), four(), links_total=None))
    assert (hit.gpus, hit.pids, hit.severity, hit.variant) == ((0, 1, 2, 3), (100, 101, 102, 103), None, "")
    assert hit.params == {"gpus": "0-3", "pairs": 4}
    assert evidence(hit)["no_p2p_pairs"] == "0-2, 0-3, 1-2, 1-3"


def test_p2p_unavailable_is_only_info_when_p2p_works_across_sockets() -> None:
    [hit] = run(p2p_unavailable, box(pcie_box(p2p=True), four(), links_total=None))
    assert (hit.severity, hit.variant, hit.value) == (Severity.INFO, "sys", 4)
    assert evidence(hit)["pair_paths"] == "0-2: SYS, 0-3: SYS, 1-2: SYS, 1-3: SYS"


@pytest.mark.parametrize(
    ("topo", "procs"),
    [
        (topology(8), None),  # NVSwitch, P2P everywhere
        (pcie_box(p2p=True, across="NODE"), None),  # P2P, one socket
        (pcie_box(p2p=None), None),  # P2P status not read
        # Four users' jobs, one GPU each: no job spans a pair.
        (pcie_box(p2p=False), [proc(100 + i, user=f"u{i}", cmdline="python3 train.py") for i in range(4)]),
    ],
    ids=["nvswitch", "one-socket", "unknown", "separate-jobs"],
)
def test_p2p_unavailable_leaves_look_alikes_alone(topo: Topology, procs: list[ProcSample] | None) -> None:
    samples = eight() if len(topo.matrix) == 8 else four()
    assert run(p2p_unavailable, box(topo, samples, procs)) == []


def test_a_topology_of_other_gpus_than_these_is_not_read() -> None:
    """A recording's topology with fewer GPUs than its samples (one fell off the bus since): no guess."""
    assert run(p2p_unavailable, box(pcie_box(p2p=False), [*four(), gpu(4, pids=(104,))], links_total=None)) == []
