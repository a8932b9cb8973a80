"""torch.compile recompiling in the main thread: a compiled model called with an input of a new length every call
(dynamic=False, the recompile limit raised so it never falls back to eager), as a job with dynamic shapes does."""

import torch
import torch._dynamo

torch.set_num_threads(1)
torch._dynamo.config.recompile_limit = 10**6
torch._inductor.config.compile_threads = 1
model = torch.compile(
    torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.GELU(), torch.nn.Linear(64, 64)), dynamic=False
)


def train_step(length: int) -> torch.Tensor:
    with torch.no_grad():
        return model(torch.ones(length, 64))


def main() -> None:
    length = 1
    while True:
        train_step(length)
        length += 1


main()
