"""Ray Data: the loop takes batches from Dataset.iter_batches over a map_batches step that is slow (one CPU, a
local Ray started with two): it waits for the next batch."""

import time

import ray


def slow(batch):
    time.sleep(0.1)
    return batch


def main() -> None:
    ray.init(num_cpus=2, include_dashboard=False)
    while True:
        for _ in ray.data.range(10**6).map_batches(slow, batch_size=64).iter_batches(batch_size=64):
            pass


main()
