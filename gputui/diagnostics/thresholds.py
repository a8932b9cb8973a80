"""Every diagnostic threshold and its default, in one place; `config.py` reads the file that overrides them.

Apart from the config reader because the rules need these numbers and the reader needs the rule ids: with
both in one module, each side imported the other.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Thresholds:
    """The numbers the rules compare against. Units are in the names; shares are fractions of the window."""

    window_s: float = 10.0  # the rules look at this much history
    busy_util_pct: float = 50.0  # at or above: the GPU is busy (PCIe downshift, power cap are judged only then)
    thermal_margin_c: float = 5.0  # ours: warn within 5 C of NVML_TEMPERATURE_THRESHOLD_SLOWDOWN (nvml.h)
    power_cap_lowered_pct: float = 2.0  # enforced limit this far below the default: an admin or out-of-band cap
    clocks_low_ratio: float = 0.75  # busy, no reason, SM clock below this share of max
    vram_pressure_pct: float = 95.0
    vram_rise_mib: float = 32.0  # growth over the window that counts as "rising"
    vram_ceiling_pct: float = 97.0  # used memory never below this over the window ...
    vram_churn_mib: float = 256.0  # ... while it swings by more than this: the allocator at the ceiling
    pcie_saturated_pct: float = 80.0  # of the link's theoretical bandwidth (rules/base.py, PCIe spec rates)
    sustained_share: float = 0.6  # "most of the window"
    starved_util_pct: float = 50.0  # DCGM User Guide, profiling metrics: SM activity < 0.5 "likely ineffective"
    # Which CPU-side cause a waiting GPU has (rules/starvation.py). A process "wants" a CPU while it runs or waits
    # on a run queue (/proc/PID/schedstat): one that wants it this share of the time its GPU waits, and at
    # least main_busy_cpu_pct of a core, is what the GPU waits for (a real num_workers=0 loop reads 70-90%).
    main_loading_share: float = 0.6
    main_busy_cpu_pct: float = 40.0
    workers_busy_pct: float = 80.0  # mean CPU per data-loader worker (100 = one core): the workers cannot keep up
    spare_cpu_cores: float = 0.5  # idle cores, of those the job may use, that more workers could take
    # The jobs' processes want this many times the CPUs they may use (CPU used + run-queue wait): a little over is
    # the main process's turns beside busy workers; more is workers that queue for a CPU (workers_oversubscribed).
    cpu_demand_ratio: float = 1.25
    starved_proc_cpu_pct: float = 85.0  # where the workers' own CPU is unknown: a main process CPU-bound outright
    host_cpu_saturated_pct: float = 90.0
    # Other processes take the CPUs the jobs want (cpu_contention): the CPUs saturated, and others use this share of
    # what is busy while the jobs' processes wait on a run queue (runnable, no CPU free) this many cores' worth; where
    # those waits are not read, others must use half of what is busy. On a 2-CPU host, two CPU-bound neighbours and a
    # job's two workers share the cores evenly: others near half, which a half-way test read as now yes, now no.
    contention_others_share: float = 0.25
    contention_wait_cores: float = 0.5
    iowait_pct: float = 20.0
    disk_busy_pct: float = 90.0
    net_saturated_pct: float = 80.0
    imbalance_points: float = 30.0
    numa_drift_share: float = 0.3  # a rank seen on the far socket this share of the window: worth the advice (info)
    swap_mib_s: float = 1.0
    idle_allocation_s: float = 180.0  # "for minutes"
    xid_hold_s: float = 300.0  # an XID finding stays open this long after the last event
    # Containers and cgroups (kernel: Documentation/scheduler/sched-bwc.rst, admin-guide/cgroup-v2.rst).
    cpu_throttled_pct: float = 20.0  # share of CFS periods in which the quota ran out
    cpu_throttled_critical_pct: float = 50.0
    psi_cpu_some_pct: float = 20.0  # kernel accounting/psi.rst: runnable tasks waited for a CPU this share
    psi_io_full_pct: float = 10.0  # every task waited on I/O this share of the time
    memory_limit_pct: float = 90.0  # of the cgroup's memory limit
    shm_small_gib: float = 1.0  # Docker's /dev/shm is 64 MiB unless --shm-size or --ipc=host
    shm_used_pct: float = 80.0
    oom_hold_s: float = 300.0  # an OOM kill, like an XID, is an event: its finding stays open this long
    # GPM efficiency (DCGM User Guide, profiling metrics: SM activity < 0.5 "likely indicates ineffective GPU use").
    efficiency_busy_util_pct: float = 80.0  # utilization this high over the window claims a busy GPU
    sm_active_low_pct: float = 50.0  # ... while its SMs are busy less than this
    tensor_idle_pct: float = 5.0  # tensor activity below this while the SMs are busy ...
    tensor_idle_fp32_pct: float = 30.0  # ... doing plain FP32 at least this much
    memory_bound_dram_pct: float = 80.0  # DRAM bandwidth against the peak
    # The verdict (diagnostics/verdict.py): a GPU under idle_util_pct does nothing; one at verdict_busy_util_pct or
    # more with nothing found is GPU-bound, below it the idle gaps are the job's own.
    idle_util_pct: float = 5.0
    verdict_busy_util_pct: float = 80.0
    # A GPU idle (or busy) for all of its last few seconds is judged by that rather than by the window's mean: a job
    # that ends is idle, not "underused" while the mean falls through the band between.
    verdict_settle_s: float = 3.0
    # The fleet (diagnostics/fleet_rules.py). A straggler runs this far below the median of the busy GPUs of its model
    # across the fleet, for most of the window: healthy boards of one model under one load differ by a few % of
    # boost clock (silicon, cooling) and a few points of utilization, so these margins sit well above that spread.
    straggler_clock_pct: float = 10.0  # SM clock this % below the busy peers' median
    straggler_util_points: float = 20.0  # utilization this many points below it
    straggler_activity_pct: float = 25.0  # SM activity (GPM, DCGM's PROF_SM_ACTIVE) this % below it
    # Busy GPUs of one model needed for a median: with two, either could be "the slow one"; with three, one is.
    straggler_min_peers: float = 3.0
    # Readings of a node needed before anything is "most of the window": fewer are a moment, not a pattern.
    fleet_min_samples: float = 3.0
    # A job's stack samples (sources/stacks): trusted this long after their window ended, which outlasts the
    # session's wait between windows of one waiting job ([stacks] cooldown_s, 300 s: a window costs py-spy ~0.17 s
    # of CPU); a kind of wait leading the main thread's samples with this share names what the job waits on
    # (job_waits, starvation_cpu).
    activity_fresh_s: float = 330.0
    activity_lead_share: float = 0.4
    # Lines only the screen draws (gputui/ui/marks.py), kept here so that the config overrides them beside the rules'
    # and every number a colour is judged by is in one place. No rule judges these readings.
    power_near_limit_pct: float = 90.0  # power draw this share of the enforced limit: yellow, the cap is close
    host_memory_pct: float = 90.0  # the host's memory this full: red (host_swap speaks once it pages)
