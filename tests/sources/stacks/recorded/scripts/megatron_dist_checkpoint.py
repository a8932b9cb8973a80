"""Megatron core's distributed checkpoint: one rank over gloo saving a 64 MiB sharded state dict with
megatron.core.dist_checkpointing.save in a loop (a fresh folder each time, as each save wants)."""

import os
import tempfile

import torch
import torch.distributed as dist
from megatron.core import dist_checkpointing
from megatron.core.dist_checkpointing import ShardedTensor


def main() -> None:
    os.environ.update(RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT="29519")
    dist.init_process_group("gloo")
    weights = {f"layer{n}": torch.randn(1024, 1024) for n in range(16)}
    state = {key: ShardedTensor.from_rank_offsets(key, value, replica_id=0) for key, value in weights.items()}
    while True:
        dist_checkpointing.save(state, tempfile.mkdtemp())


main()
