"""grain: a MapDataset whose map is slow (a decode that sleeps, as one that waits on storage does), iterated with
grain's thread prefetch: the loop waits for the next element."""

import time

import grain


def decode(n):
    time.sleep(0.02)
    return n


def main() -> None:
    dataset = (
        grain.MapDataset.range(10**9)
        .map(decode)
        .to_iter_dataset(grain.ReadOptions(num_threads=2, prefetch_buffer_size=4))
    )
    for _ in dataset:
        pass


main()
