"""A real PyTorch training loop whose GPU step is simulated: the lab gputui's diagnosis is tried against.

The input pipeline is real: a map-style Dataset whose samples cost real CPU (crop, flip, normalise, convolution
and resizing of a small image, repeated until `--sample-ms` of this thread's CPU time is spent, so a sample
costs the same on any machine), read from files when `--data-dir` is given, and a real DataLoader with its
worker processes. Only the GPU is missing: between batches the main process sleeps `--gpu-step-ms`, as a process
blocked in a CUDA synchronisation does, and reports the time it spends there to `--trace`.

Run it, then point gputui at the trace; its one simulated GPU is busy exactly while this job is in its step:

    python examples/lab/train.py --trace /tmp/job.json --num-workers 2 --sample-ms 20 --seconds 600 &
    gputui --demo-job /tmp/job.json            # or: gputui diagnose --demo-job /tmp/job.json

Besides the GPU step, a step can hold what slows real jobs down, each in a function of its own so that a stack
names it: the main loop's own Python (`--main-cpu-ms`: compute_metrics), a wait on something else
(`--block-ms`: wait_for_lock, asleep), and a checkpoint every few steps (`--checkpoint-every`: torch.save of a
model's state dict). Started by torchrun (`python -m torch.distributed.run --nproc-per-node 2 train.py ...`), each
rank joins a gloo process group (torchrun's RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT), all-reduces a gradient
after each GPU step, and writes its own trace: `--trace job.json` becomes job.rank0.json, job.rank1.json...;
`--slow-rank R` keeps the extra work of --main-cpu-ms and --block-ms to rank R, so the others wait in all_reduce.
`--stop-rank R --stop-after N` makes rank R stop for good after N steps, outside the collective (in wait_forever,
blocked on an Event nobody sets), while the others wait for it in all_reduce: a job that has stopped. With `--spin`
a rank waiting in all_reduce says so in its trace (`spinning_since`), as an NCCL collective's kernel spins on the
GPU while it waits for a peer: its simulated GPU then reads busy at few SMs and little power.

Without a DataLoader (`--loader`, default `dataloader`): `--loader thread` is a home-made loader, one producer
thread (named "producer") making the same samples and putting whole batches into a queue.Queue(maxsize=2) that the
loop takes them from; `--loader pool` prefetches samples in a ThreadPoolExecutor of `--loader-threads` threads
(named "prefetch_N"), the loop waiting on each future's result(). The samples' work is torch ops, which release the
GIL, so the threads run beside the main one. --num-workers is a DataLoader's and does not apply to them.

`--compile-every K` calls a torch.compile'd model after each step with an input of a new shape every K steps:
Dynamo and Inductor recompile it in the main thread each time (Recompiles), as a job with dynamic shapes does.

The trace is one JSON object, replaced whole on every entry to and exit from a GPU step (written to a temporary
file beside it, then renamed over it, so a reader never sees half a record):

    {"format": "gputui-job-trace", "version": 1, "pid": 1234, "gpu_busy_s": 12.5, "step_started": 8123.25,
     "step_s": 0.025, "steps": 300}

pid: this process; gpu_busy_s: the GPU's seconds in the steps that have ended; step_started: time.monotonic()
when the step in progress began, null between steps; step_s: the GPU work of that step (the GPU is busy for it,
however late this process wakes: under a spent CPU quota it wakes long after); steps: steps ended;
spinning_since (with --spin, optional): time.monotonic() when this rank began to wait in all_reduce, null or absent
otherwise. The first
record is written after the first batch, once the DataLoader's workers have all started. gputui reads it in
gputui/sources/sim/job.py. This script does not import gputui: it is what a user's job looks like.

torch.set_num_threads(1) holds in the main process and in every worker, so one sample keeps one core busy.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import threading
import time
import warnings
from collections import deque
from collections.abc import Generator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

# The CPU build of torch warns on import when numpy is missing; the lab needs no numpy.
warnings.filterwarnings("ignore", message="Failed to initialize NumPy")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.utils.data import DataLoader, Dataset  # noqa: E402

SIDE = 72  # the stored image: 3 x 72 x 72 bytes
CROP = 64  # what the model is fed
MIB = 1 << 20


class Images(Dataset[tuple[torch.Tensor, int]]):
    """Samples that each cost `sample_ms` of CPU: generated, or read from the files in `data_dir`."""

    def __init__(self, length: int, sample_ms: float, files: list[Path], cold_cache: bool) -> None:
        self.length = length
        self.sample_s = sample_ms / 1000.0
        self.files = files
        self.cold_cache = cold_cache
        self.kernel = torch.randn(8, 3, 3, 3, generator=torch.Generator().manual_seed(0))

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        start = time.thread_time()
        generator = torch.Generator().manual_seed(index)
        image = self._load(index, generator)
        while True:
            sample = self._augment(image, generator)
            if time.thread_time() - start >= self.sample_s:
                return sample, index % 10

    def _load(self, index: int, generator: torch.Generator) -> torch.Tensor:
        """The raw image: random bytes, or the bytes of one file (all of it is read, as a decoder would)."""
        if not self.files:
            return torch.randint(0, 256, (3, SIDE, SIDE), dtype=torch.uint8, generator=generator)
        data = read_file(self.files[index % len(self.files)], self.cold_cache)
        return torch.frombuffer(bytearray(data[: 3 * SIDE * SIDE]), dtype=torch.uint8).view(3, SIDE, SIDE)

    def _augment(self, image: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """A random crop and flip, normalised, through a convolution and a resize there and back."""
        top, left = (int(torch.randint(0, SIDE - CROP + 1, (1,), generator=generator)) for _ in range(2))
        x = image[:, top : top + CROP, left : left + CROP].float().div(255.0)
        if torch.rand(1, generator=generator).item() < 0.5:
            x = x.flip(2)
        x = (x - 0.45) / 0.225
        features = F.conv2d(x.unsqueeze(0), self.kernel, padding=1).relu()
        x = x + 0.01 * features.mean(1, keepdim=True).squeeze(0)
        up = F.interpolate(x.unsqueeze(0), scale_factor=1.5, mode="bilinear", align_corners=False)
        return F.interpolate(up, size=(CROP, CROP), mode="bilinear", align_corners=False).squeeze(0)


def read_file(path: Path, cold_cache: bool) -> bytes:
    """The whole file; with `cold_cache`, its cached pages are dropped first so every read goes to the disk
    (POSIX_FADV_DONTNEED drops clean pages; the files were synced when made)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        if cold_cache:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        chunks = []
        while chunk := os.read(fd, 4 * MIB):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def make_data(directory: Path, count: int, file_mb: float) -> list[Path]:
    """`count` files of `file_mb` MiB of random bytes, synced and dropped from the page cache."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for n in range(count):
        path = directory / f"sample-{n:05d}.bin"
        with path.open("wb") as handle:
            handle.write(os.urandom(int(file_mb * MIB)))
            handle.flush()
            os.fsync(handle.fileno())
            os.posix_fadvise(handle.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
        paths.append(path)
    return paths


class Trace:
    """The time this process spends in its GPU step, written as the module's docstring describes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        self.busy_s = 0.0
        self.steps = 0

    def write(
        self, step_started: float | None = None, step_s: float | None = None, spinning_since: float | None = None
    ) -> None:
        record: dict[str, object] = {
            "format": "gputui-job-trace",
            "version": 1,
            "pid": os.getpid(),
            "gpu_busy_s": self.busy_s,
            "step_started": step_started,
            "step_s": step_s,
            "steps": self.steps,
        }
        if spinning_since is not None:
            record["spinning_since"] = spinning_since
        self.temporary.write_text(json.dumps(record))
        os.replace(self.temporary, self.path)

    def gpu_step(self, seconds: float) -> None:
        """Sleep as a process waiting on its GPU does; the GPU is busy for `seconds` from the start."""
        self.write(time.monotonic(), seconds)
        time.sleep(seconds)
        self.busy_s += seconds
        self.steps += 1
        self.write()


def compute_metrics(images: torch.Tensor, seconds: float) -> float:
    """The job's own Python between steps (what a metrics or logging hook costs): `seconds` of this thread's CPU
    in pure Python, so a stack sample finds it in this function, not in torch."""
    start = time.thread_time()
    total, n = float(images.numel()), 0
    while time.thread_time() - start < seconds:
        for _ in range(2000):
            n = (n * 1103515245 + 12345) % 2147483648
        total += n / 2147483648
    return total


def wait_for_lock(seconds: float) -> None:
    """A main loop blocked on something outside the job (a lock, a throttle, a remote service): asleep."""
    time.sleep(seconds)


class Checkpoints:
    """A model's state dict of about `megabytes` MiB, saved over one file with torch.save every `every` steps."""

    def __init__(self, path: Path, every: int, megabytes: int) -> None:
        self.path = path
        self.every = every
        # Linear layers of 1024 x 1024 float32 weights: 4 MiB each.
        self.model = torch.nn.Sequential(*(torch.nn.Linear(1024, 1024) for _ in range(max(1, megabytes // 4))))

    def after(self, step: int) -> None:
        if step % self.every == 0:
            torch.save(self.model.state_dict(), self.path)


class Recompiles:
    """A small torch.compile'd model called after every step, with an input of a new length every `every` steps:
    each new length is a recompile (Dynamo traces it again, Inductor generates and builds its C++ again) in the main
    thread. dynamic=False keeps Dynamo from marking the length dynamic after the second one, as a job whose shapes
    defeat it (or that sets it) does; the recompile limit is raised so it never falls back to running eagerly."""

    def __init__(self, every: int) -> None:
        import torch._dynamo  # only a job that compiles pays for importing Dynamo and Inductor
        import torch._inductor.config

        torch._dynamo.config.recompile_limit = 10**6
        torch._dynamo.config.accumulated_recompile_limit = 10**6
        torch._inductor.config.compile_threads = 1  # Inductor builds in the main thread, no pool of processes
        self.every = every
        model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.GELU(), torch.nn.Linear(64, 64))
        self.model = torch.compile(model, dynamic=False)
        self.after(0)  # the first compile (~10 s on a CPU, its imports) before the loop: the loop only recompiles

    def after(self, step: int) -> None:
        with torch.no_grad():
            self.model(torch.ones(1 + step // self.every, 64))


def reduce_gradients(gradients: torch.Tensor, past_end: bool, trace: Trace | None = None) -> bool:
    """All-reduce the step's gradients over the ranks (each waits here for the slowest); whether any rank is past
    its end, so that they all stop after the same step and none waits for a rank that has gone. With `trace`, the
    wait is written to it as a spinning collective's (--spin)."""
    gradients[0] = float(past_end)
    if trace is not None:
        trace.write(spinning_since=time.monotonic())
    dist.all_reduce(gradients)
    if trace is not None:
        trace.write()
    return bool(gradients[0] > 0)


def wait_forever() -> None:
    """A rank stopped for good outside the collective (a deadlock, a lost message, a wait on something that never
    comes): blocked on an Event nobody sets, while the other ranks wait for it in all_reduce."""
    threading.Event().wait()


def one_thread(_: int = 0) -> None:
    """One intra-op thread (and in each worker, its worker_init_fn): one sample then keeps one core busy."""
    torch.set_num_threads(1)


def batches(loader: DataLoader[tuple[torch.Tensor, int]]) -> Generator[tuple[torch.Tensor, torch.Tensor]]:
    """The loader's batches, epoch after epoch, until the caller stops asking."""
    while True:
        yield from loader


Batch = tuple[torch.Tensor, torch.Tensor]


def collate(samples: list[tuple[torch.Tensor, int]]) -> Batch:
    return torch.stack([image for image, _ in samples]), torch.tensor([label for _, label in samples])


def produce(dataset: Images, batch_size: int, ready: queue.Queue[Batch]) -> None:
    """The producer thread of `--loader thread`: batch after batch into the queue, blocked while it is full."""
    index = 0
    while True:
        ready.put(collate([dataset[index + n] for n in range(batch_size)]))
        index += batch_size


def thread_batches(dataset: Images, batch_size: int) -> Generator[Batch]:
    """`--loader thread`: batches made by one producer thread, taken from its queue (a daemon: it ends with us)."""
    ready: queue.Queue[Batch] = queue.Queue(maxsize=2)
    threading.Thread(target=produce, args=(dataset, batch_size, ready), name="producer", daemon=True).start()
    while True:
        yield ready.get()


def pool_batches(dataset: Images, batch_size: int, threads: int) -> Generator[Batch]:
    """`--loader pool`: samples prefetched by a pool of threads, two batches ahead; each batch waits on its
    samples' futures in turn."""
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="prefetch") as pool:
        pending: deque[Future[tuple[torch.Tensor, int]]] = deque()
        index = 0
        try:
            while True:
                while len(pending) < 2 * batch_size:
                    pending.append(pool.submit(dataset.__getitem__, index))
                    index += 1
                yield collate([pending.popleft().result() for _ in range(batch_size)])
        finally:
            for future in pending:
                future.cancel()


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trace", type=Path, required=True, help="where to report the time in the GPU step")
    parser.add_argument("--seconds", type=float, default=60.0, help="run this long, then exit (default 60)")
    parser.add_argument("--num-workers", type=int, default=0, help="DataLoader worker processes (default 0)")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--prefetch-factor", type=int, default=None, help="batches each worker keeps ready")
    parser.add_argument("--pin-memory", action="store_true", help="DataLoader(pin_memory=True); no-op on a CPU build")
    parser.add_argument("--sample-ms", type=float, default=10.0, help="CPU time each sample costs (default 10)")
    parser.add_argument("--gpu-step-ms", type=float, default=50.0, help="the simulated GPU step (default 50)")
    parser.add_argument("--cpus", default=None, help="run only on these CPUs, e.g. 1 or 0-3 (workers inherit it)")
    parser.add_argument("--data-dir", type=Path, default=None, help="read each sample from a file in this directory")
    parser.add_argument("--make-data", type=int, default=0, metavar="N", help="first write N files into --data-dir")
    parser.add_argument("--file-mb", type=float, default=1.0, help="size of each file --make-data writes (MiB)")
    parser.add_argument(
        "--cold-cache", action="store_true", help="drop each file from the page cache before it is read"
    )
    parser.add_argument("--main-cpu-ms", type=float, default=0.0, help="the main loop's own Python CPU time a step")
    parser.add_argument("--block-ms", type=float, default=0.0, help="the main loop blocked (asleep) this long a step")
    parser.add_argument("--checkpoint-every", type=int, default=0, metavar="K", help="save a checkpoint every K steps")
    parser.add_argument("--checkpoint-mb", type=int, default=64, help="the checkpoint's size (MiB, default 64)")
    parser.add_argument(
        "--compile-every",
        type=int,
        default=0,
        metavar="K",
        help="call a torch.compile'd model after each step, with a new input shape every K steps (a recompile)",
    )
    parser.add_argument(
        "--checkpoint-dir", type=Path, default=None, help="where the checkpoint goes (default: beside --trace)"
    )
    parser.add_argument(
        "--loader",
        choices=("dataloader", "thread", "pool"),
        default="dataloader",
        help="who makes the batches: a DataLoader (default), one producer thread and a queue, or a thread pool",
    )
    parser.add_argument("--loader-threads", type=int, default=2, help="the pool's threads with --loader pool")
    parser.add_argument(
        "--slow-rank",
        type=int,
        default=None,
        metavar="R",
        help="under torchrun: only rank R does --main-cpu-ms and --block-ms",
    )
    parser.add_argument(
        "--stop-rank",
        type=int,
        default=None,
        metavar="R",
        help="under torchrun: rank R stops for good outside the collective after --stop-after steps",
    )
    parser.add_argument("--stop-after", type=int, default=20, metavar="N", help="steps before --stop-rank stops")
    parser.add_argument(
        "--spin", action="store_true", help="write the wait in all_reduce to the trace, as a spinning NCCL kernel"
    )
    args = parser.parse_args()
    if args.make_data and args.data_dir is None:
        parser.error("--make-data needs --data-dir")
    return args


def rank_trace(path: Path, rank: int | None) -> Path:
    """Where this process reports: `path` itself, or for a rank of torch.distributed job.json -> job.rank1.json."""
    return path if rank is None else path.with_name(f"{path.stem}.rank{rank}{path.suffix}")


def join_ranks() -> int | None:
    """This process's rank once it has joined the gloo process group torchrun describes in its environment; None
    when it was not started as one of several ranks."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return None
    dist.init_process_group("gloo")  # env://: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT
    return dist.get_rank()


def cpulist(text: str) -> set[int]:
    """ "0-3,8" -> {0, 1, 2, 3, 8}."""
    cpus: set[int] = set()
    for part in text.split(","):
        first, _, last = part.partition("-")
        cpus.update(range(int(first), int(last or first) + 1))
    return cpus


def main() -> int:
    args = parse_args()
    if args.cpus is not None:
        # sched_setaffinity binds one thread: every thread that exists now is pinned (as `taskset -a` does), and
        # threads and worker processes started later inherit it.
        for task in os.listdir("/proc/self/task"):
            os.sched_setaffinity(int(task), cpulist(args.cpus))
    one_thread()
    files: list[Path] = []
    if args.data_dir is not None:
        if args.make_data:
            files = make_data(args.data_dir, args.make_data, args.file_mb)
        else:
            files = sorted(p for p in args.data_dir.iterdir() if p.is_file())
    # A long epoch: the workers of a DataLoader without persistent_workers are started anew every epoch.
    dataset = Images(10**6, args.sample_ms, files, args.cold_cache)
    loader = DataLoader(
        dataset,
        batch_size=args.batch_size,
        shuffle=True,
        num_workers=args.num_workers,
        pin_memory=args.pin_memory,
        prefetch_factor=args.prefetch_factor if args.num_workers else None,
        worker_init_fn=one_thread if args.num_workers else None,
    )
    rank = join_ranks()
    trace = Trace(rank_trace(args.trace, rank))
    checkpoints = None
    if args.checkpoint_every:
        saved = (args.checkpoint_dir or args.trace.parent) / f"checkpoint{'' if rank is None else rank}.pt"
        checkpoints = Checkpoints(saved, args.checkpoint_every, args.checkpoint_mb)
    recompiles = Recompiles(args.compile_every) if args.compile_every else None
    slow = args.slow_rank is None or args.slow_rank == rank
    gradients = torch.zeros(1 << 16)
    end = time.monotonic() + args.seconds
    if args.loader == "thread":
        stream = thread_batches(dataset, args.batch_size)
    elif args.loader == "pool":
        stream = pool_batches(dataset, args.batch_size, args.loader_threads)
    else:
        stream = batches(loader)
    try:
        for n, (images, _labels) in enumerate(stream):
            if n == 0:
                trace.write()  # the workers have started: the process tree is complete
            if rank is None and time.monotonic() >= end:
                break
            images.sum()  # the host side of the step: the batch is touched, as a copy to the GPU would
            trace.gpu_step(args.gpu_step_ms / 1000.0)
            if slow and args.main_cpu_ms:
                compute_metrics(images, args.main_cpu_ms / 1000.0)
            if slow and args.block_ms:
                wait_for_lock(args.block_ms / 1000.0)
            if rank is not None and rank == args.stop_rank and n + 1 >= args.stop_after:
                wait_forever()
            spinning = trace if args.spin else None
            if rank is not None and reduce_gradients(gradients, time.monotonic() >= end, spinning):
                break
            if checkpoints is not None:
                checkpoints.after(n + 1)
            if recompiles is not None:
                recompiles.after(n + 1)
    finally:
        stream.close()  # the loader's iterator goes, and shuts its workers down
        if rank is not None:
            dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
