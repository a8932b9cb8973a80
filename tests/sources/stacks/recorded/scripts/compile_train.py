"""torch.compile recompiling a training step: a compiled model's forward and backward (AOT autograd compiles the
backward graph too) for an input of a new length every step (dynamic=False, the recompile limit raised)."""

import torch
import torch._dynamo

torch.set_num_threads(1)
torch._dynamo.config.recompile_limit = 10**6
torch._inductor.config.compile_threads = 1
model = torch.compile(
    torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.GELU(), torch.nn.Linear(64, 64)), dynamic=False
)


def train_step(length: int) -> None:
    model(torch.ones(length, 64)).sum().backward()


def main() -> None:
    length = 1
    while True:
        train_step(length)
        length += 1


main()
