"""DeepSpeed checkpoints: a tiny model under deepspeed.initialize (one rank, gloo, the CPU accelerator) whose loop
saves a checkpoint of a 64 MiB model every step with engine.save_checkpoint."""

import os
import tempfile

os.environ.update(
    DS_ACCELERATOR="cpu", RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT="29518"
)
import deepspeed  # noqa: E402
import torch  # noqa: E402


def main() -> None:
    deepspeed.init_distributed(dist_backend="gloo")
    model = torch.nn.Sequential(*(torch.nn.Linear(1024, 1024) for _ in range(16)))
    config = {"train_batch_size": 1, "optimizer": {"type": "SGD", "params": {"lr": 0.01}}}
    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
    folder = tempfile.mkdtemp()
    while True:
        engine.save_checkpoint(folder, tag="step")


main()
