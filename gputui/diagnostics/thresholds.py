"""Every diagnostic threshold, its default and what it means, in one place; gputui/config.py reads the
`[diagnostics.thresholds]` table that overrides them.

Apart from the diagnostics' settings (settings.py) because the rules need these numbers and the settings need the
rule ids: with both in one module, each side imported the other.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gputui.config_values import number, setting

NUMBER = number()


def threshold(default: float, doc: str) -> float:
    """A threshold's field: its default, its one-line description for the reference, and its check (a number, not
    negative)."""
    value: float = field(default=default, metadata=setting(doc, NUMBER))
    return value


@dataclass(frozen=True, slots=True)
class Thresholds:
    """The numbers the rules compare against. Units are in the names; shares are fractions of the window."""

    window_s: float = threshold(10.0, "Seconds of history each rule looks at.")
    busy_util_pct: float = threshold(
        50.0, "Utilization (%) at or above which a GPU is busy; PCIe downshift and power caps are judged only then."
    )
    # ours: warn within 5 C of NVML_TEMPERATURE_THRESHOLD_SLOWDOWN (nvml.h)
    thermal_margin_c: float = threshold(5.0, "Warn when a GPU is this many °C from its slowdown temperature.")
    power_cap_lowered_pct: float = threshold(
        2.0, "An enforced power limit this % below the default is a cap set by an admin or out of band."
    )
    clocks_low_ratio: float = threshold(
        0.75, "A busy GPU with no throttle reason whose SM clock is below this share of its maximum."
    )
    vram_pressure_pct: float = threshold(95.0, "GPU memory used (%) that counts as pressure.")
    vram_rise_mib: float = threshold(32.0, "Growth of GPU memory (MiB) over the window that counts as rising.")
    vram_ceiling_pct: float = threshold(
        97.0, "GPU memory used (%) that, never left over the window, is the allocator at its ceiling..."
    )
    vram_churn_mib: float = threshold(256.0, "...while the memory used swings by more than this many MiB.")
    # of the link's theoretical bandwidth (rules/base.py, PCIe spec rates)
    pcie_saturated_pct: float = threshold(80.0, "PCIe traffic (% of the link's bandwidth) that saturates the link.")
    sustained_share: float = threshold(0.6, "The share of the window that is most of it.")
    # A GPU held by a process and busy less than half the window waits on something (rules/starvation.py).
    starved_util_pct: float = threshold(
        50.0, "Mean utilization (%) under which a GPU held by a process waits (the starvation rules, job_waits)."
    )
    # Which CPU-side cause a waiting GPU has (rules/starvation.py). A process "wants" a CPU while it runs or waits
    # on a run queue (/proc/PID/schedstat): one that wants it this share of the time its GPU waits, and at
    # least main_busy_cpu_pct of a core, is what the GPU waits for (a real num_workers=0 loop reads 70-90%).
    main_loading_share: float = threshold(
        0.6, "A main process that wants a CPU this share of the time its GPU waits is what the GPU waits for..."
    )
    main_busy_cpu_pct: float = threshold(40.0, "...if it also uses at least this % of a core.")
    workers_busy_pct: float = threshold(
        80.0, "Mean CPU (%) per data-loader worker (100 = one core) at which the workers cannot keep up."
    )
    spare_cpu_cores: float = threshold(
        0.5, "Idle cores, of those the job may use, that more data-loader workers could take."
    )
    # The jobs' processes want this many times the CPUs they may use (CPU used + run-queue wait): a little over is
    # the main process's turns beside busy workers; more is workers that queue for a CPU (workers_oversubscribed).
    cpu_demand_ratio: float = threshold(
        1.25, "The jobs' processes want this many times the CPUs they may use: workers queue for a CPU."
    )
    starved_proc_cpu_pct: float = threshold(
        85.0, "Where the workers' CPU is unknown: a main process at this CPU (%) is CPU-bound outright."
    )
    host_cpu_saturated_pct: float = threshold(90.0, "Host CPU (%) at which the CPUs are saturated.")
    # Other processes take the CPUs the jobs want (cpu_contention): the CPUs saturated, and others use this share of
    # what is busy while the jobs' processes wait on a run queue (runnable, no CPU free) this many cores' worth; where
    # those waits are not read, others must use half of what is busy. On a 2-CPU host, two CPU-bound neighbours and a
    # job's two workers share the cores evenly: others near half, which a half-way test read as now yes, now no.
    contention_others_share: float = threshold(
        0.25, "Other processes using this share of the busy CPUs while the jobs wait is CPU contention..."
    )
    contention_wait_cores: float = threshold(
        0.5, "...with the jobs' processes waiting on a run queue this many cores' worth."
    )
    iowait_pct: float = threshold(20.0, "CPU time waiting on I/O (%) that starves the GPUs.")
    disk_busy_pct: float = threshold(90.0, "Disk busy time (%) that saturates a disk.")
    net_saturated_pct: float = threshold(80.0, "Network traffic (% of the link speed) that saturates it.")
    imbalance_points: float = threshold(
        30.0, "Utilization points between the busiest and idlest GPU of a job that make it imbalanced."
    )
    numa_drift_share: float = threshold(
        0.3, "A rank seen on the far socket this share of the window gets the NUMA advice."
    )
    swap_mib_s: float = threshold(1.0, "Swapping (MiB/s) that slows the job.")
    idle_allocation_s: float = threshold(180.0, "Seconds a held GPU must idle before it counts as idle allocation.")
    xid_hold_s: float = threshold(300.0, "Seconds an XID finding stays open after the last event.")
    # Containers and cgroups (kernel: Documentation/scheduler/sched-bwc.rst, admin-guide/cgroup-v2.rst).
    cpu_throttled_pct: float = threshold(
        20.0, "Share (%) of CFS periods in which the cgroup's CPU quota ran out: a warning."
    )
    cpu_throttled_critical_pct: float = threshold(50.0, "The same share (%) that is critical.")
    # kernel accounting/psi.rst: runnable tasks waited for a CPU this share
    psi_cpu_some_pct: float = threshold(
        20.0, "Pressure stall (%): runnable tasks waited for a CPU this share of the time."
    )
    psi_io_full_pct: float = threshold(10.0, "Pressure stall (%): every task waited on I/O this share of the time.")
    memory_limit_pct: float = threshold(90.0, "Memory used (% of the cgroup's limit) that nears the limit.")
    # Docker's /dev/shm is 64 MiB unless --shm-size or --ipc=host
    shm_small_gib: float = threshold(1.0, "A /dev/shm smaller than this many GiB is small for data-loader workers.")
    shm_used_pct: float = threshold(80.0, "/dev/shm used (%) that nears its size.")
    oom_hold_s: float = threshold(300.0, "Seconds an OOM-kill finding stays open after the kill.")
    # GPM efficiency (DCGM User Guide, profiling metrics: SM activity < 0.5 "likely indicates ineffective GPU use").
    efficiency_busy_util_pct: float = threshold(80.0, "Utilization (%) over the window that claims a busy GPU...")
    sm_active_low_pct: float = threshold(50.0, "...while its SMs are active less than this % (GPM).")
    tensor_idle_pct: float = threshold(5.0, "Tensor activity (%) below which the tensor cores sit idle...")
    tensor_idle_fp32_pct: float = threshold(30.0, "...while the SMs do plain FP32 at least this % of the time.")
    memory_bound_dram_pct: float = threshold(80.0, "DRAM bandwidth (% of the peak) at which a kernel is memory-bound.")
    # The verdict (diagnostics/verdict.py): a GPU under idle_util_pct does nothing; one at verdict_busy_util_pct or
    # more with nothing found is GPU-bound, below it the idle gaps are the job's own.
    idle_util_pct: float = threshold(5.0, "Utilization (%) under which a GPU does nothing (the verdict).")
    verdict_busy_util_pct: float = threshold(
        80.0, "Utilization (%) from which a GPU with nothing found is GPU-bound (the verdict)."
    )
    # A GPU idle (or busy) for all of its last few seconds is judged by that rather than by the window's mean: a job
    # that ends is idle, not "underused" while the mean falls through the band between.
    verdict_settle_s: float = threshold(
        3.0, "Seconds of idle (or busy) that settle the verdict over the window's mean."
    )
    # The fleet (diagnostics/fleet_rules.py). A straggler runs this far below the median of the busy GPUs of its model
    # across the fleet, for most of the window: healthy boards of one model under one load differ by a few % of
    # boost clock (silicon, cooling) and a few points of utilization, so these margins sit well above that spread.
    straggler_clock_pct: float = threshold(
        10.0, "A GPU whose SM clock runs this % below its busy peers' median is a straggler."
    )
    straggler_util_points: float = threshold(
        20.0, "Utilization points below the busy peers' median that make a straggler."
    )
    # SM activity (GPM, DCGM's PROF_SM_ACTIVE) this % below it
    straggler_activity_pct: float = threshold(
        25.0, "SM activity (GPM) this % below the busy peers' median that makes a straggler."
    )
    # Busy GPUs of one model needed for a median: with two, either could be "the slow one"; with three, one is.
    straggler_min_peers: float = threshold(3.0, "Busy GPUs of one model needed for a median.")
    # Readings of a node needed before anything is "most of the window": fewer are a moment, not a pattern.
    fleet_min_samples: float = threshold(3.0, "Readings of a node needed before anything is most of the window.")
    # A job's stack samples (sources/stacks): trusted this long after their window ended, which outlasts the
    # session's wait between windows of one waiting job ([stacks] cooldown_s, 300 s: a window costs py-spy ~0.17 s
    # of CPU); a kind of wait leading the main thread's samples with this share names what the job waits on
    # (job_waits, starvation_cpu).
    activity_fresh_s: float = threshold(330.0, "Seconds a job's stack samples are trusted after their window ended.")
    activity_lead_share: float = threshold(
        0.4, "The share of the main thread's samples with which a kind of wait names what the job waits on."
    )
    # A job that has stopped (rules/hang.py). NCCL's watchdog ends a stuck collective after 10 min (600 s) and its
    # heartbeat monitor after 480 s: said at 4 min, the finding comes before either kills the job (and the state a
    # py-spy dump would show), yet far above any pause of a healthy job in one frame (an evaluation keeps its GPU
    # busy; a checkpoint write is work, not a held frame). A waiting NCCL kernel reads ~100% busy at a few % of SM
    # activity and little above idle power (an H100 idles near 10% of its limit, trains at 60-100%).
    stopped_after_s: float = threshold(
        240.0,
        "Seconds a job's ranks stay in one place (their stacks) while their GPUs idle or spin before it has stopped; "
        "under NCCL's heartbeat (480 s) and watchdog (600 s), so it is said before they end the job.",
    )
    stall_sm_active_pct: float = threshold(
        10.0, "A busy GPU whose SMs are active at most this % (GPM) may be spinning: a kernel waiting on a peer..."
    )
    stall_power_pct: float = threshold(35.0, "...as one drawing at most this % of its power limit.")
    # A kind that does not lead but was measured holding a real part of the GPU's waiting (job_waits): a checkpoint
    # every few steps that takes 26% of the main thread while its GPU is idle 48% of the time is a cause, not noise.
    # It names the wait where it holds this share of the main thread's samples and at least this fraction of the
    # GPU's idle share (1 - the mean utilization): the time it holds could account for that much of the waiting.
    measured_wait_share: float = threshold(
        0.15,
        "The share of the main thread's samples in a checkpoint, compile, file reads or its own Python that,"
        " not leading, names what the job waits on...",
    )
    measured_wait_of_idle: float = threshold(
        0.33, "...if it is also at least this fraction of the GPU's idle share (1 - its mean utilization)."
    )
    # Lines only the screen draws (gputui/ui/marks.py), kept here so that the config overrides them beside the rules'
    # and every number a colour is judged by is in one place. No rule judges these readings.
    power_near_limit_pct: float = threshold(
        90.0, "Power draw (% of the enforced limit) the screen marks yellow: the cap is close (no rule judges it)."
    )
    host_memory_pct: float = threshold(
        90.0, "Host memory used (%) the screen marks red (no rule judges it; host_swap speaks once it pages)."
    )
