"""Names of the simulated scenarios, each a real situation from the field (see simulated.py)."""

from __future__ import annotations

SCENARIOS: tuple[str, ...] = (
    "healthy",
    "idle",
    "thermal",
    "powercap",
    "hwslowdown",
    "pcie",
    "vram",
    "starved-cpu",
    "starved-io",
    "contention",
    "imbalance",
    "mismatch",
    "tour",
)

# One line each, for `--help`, the README and the SIMULATED banner.
SCENARIO_DESCRIPTIONS: dict[str, str] = {
    "healthy": "busy training job, cool GPUs at full clocks, one process per GPU: nothing to fix",
    "idle": "no jobs: P8, PCIe downshifted to Gen1 (normal at idle)",
    "thermal": "one GPU heats past its slowdown threshold; SW/HW thermal slowdown; SM clock falls",
    "powercap": "power limit lowered to 400 W (default 700 W); SW power cap; clocks reduced",
    "hwslowdown": "HW slowdown and HW power brake asserted (power supply or external signal)",
    "pcie": "one busy GPU's link trained at Gen3 x8 on a Gen5 x16 part",
    "vram": "GPU memory ~98% full and still growing",
    "starved-cpu": "training process at ~100% of one core, no data-loader workers; GPU utilization 10-35%",
    "starved-io": "data read from a saturated disk: high iowait, disk ~100% busy, GPU utilization low",
    "contention": "a second user's process shares the first GPU with the training job",
    "imbalance": "one process drives all GPUs (nn.DataParallel): the first GPU far busier than the rest",
    "mismatch": "driver supports CUDA 12.2, the job's torch was built for CUDA 12.8",
    "tour": "cycles through all the scenarios above, 30 s each",
}
