"""DeepSpeed collectives: two ranks over gloo (deepspeed.comm), rank 1 slower by 0.2 s a step, so rank 0 (the
process recorded) waits in deepspeed.comm.all_reduce."""

import os
import time

import torch
import torch.multiprocessing as mp


def rank(n: int) -> None:
    import deepspeed
    import deepspeed.comm as ds_comm

    os.environ.update(RANK=str(n), LOCAL_RANK=str(n), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT="29517")
    deepspeed.init_distributed(dist_backend="gloo")
    tensor = torch.ones(1024)
    while True:
        if n == 1:
            time.sleep(0.2)
        ds_comm.all_reduce(tensor)


if __name__ == "__main__":
    os.environ["DS_ACCELERATOR"] = "cpu"
    other = mp.get_context("spawn").Process(target=rank, args=(1,), daemon=True)
    other.start()
    rank(0)
