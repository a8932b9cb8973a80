"""What a stack was doing, by a table of frame patterns: the one place that knows PyTorch's (and HF Trainer's,
Lightning's, accelerate's, DeepSpeed's, Megatron's) functions and other frameworks' waits (tf.data, JAX, grain,
webdataset, DALI, Ray Data, datasets streaming), those checked against stacks recorded from their real jobs
(tests/sources/stacks/recorded). `summarize` sums a StackWindow into the model's JobActivity.

A stack is read innermost frame first, and the first frame that a pattern matches decides its kind, so a file read
inside a dataset's `__getitem__` is `io` and the dataset's own code around it `loading`. Past a frame of the job's
own code (or of its model), only `loading` still matches: a wait that encloses the job's own work is not what the
thread does (DDP's forward runs the model inside it). Checkpoint patterns are the exception: a checkpoint is read
from anywhere in the stack (and named by its outermost frame), since the collectives, copies and writes it makes are
all "writing a checkpoint"; and so are torch.compile's (COMPILE_PATTERNS), whose tracing runs the job's model
inside it. A stack no pattern matches is the job's own work: `cpu` for the samples in which the thread ran, `idle`
for those in which it slept or blocked.

What no pattern can see: `Tensor.item()`, `.cpu()` and `.tolist()` are C calls with no Python frame of their own,
so a job waiting for the GPU in one of them shows only its own line calling it. Where the main thread ran on such a
line of its own code, the line is read from disk (source_line.py) and the samples count as `gpu_sync`, named by
the line's text; the waits that pass through Python (torch.cuda.synchronize, a Stream's or an Event's) read
`gpu_sync` by the table.

A wait no table names is followed across threads (_others, in summarize): where the main thread is blocked in a
hand-off (a queue's get, a condition, an event, a future's result, a join, a pipe's recv: HANDOFF_PATTERNS, standard
library frames only), the job's other threads and child processes over the same window say what it waited for: those
that ran the job's code for at least OTHERS_BUSY of their samples make it a wait for `data`; those in file or network
reads, `io`; those in a kind a table names, that kind. None busy: it stays `idle`, a blocked main thread.

The names are the job's user's to choose (a stack record, py-spy's reading of any process): every test on them is
a string operation or an anchored pattern that cannot backtrack past a run of digits, in time linear in the name,
and what the patterns say of a frame is worked out once per distinct frame (_facts), not once per stack it is in.
"""

from __future__ import annotations

import functools
import re
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from gputui.foreign_text import clean
from gputui.model import ACTIVITY_KINDS, ActivityFrame, ActivityKind, ActivityShares, JobActivity, WaitedOn
from gputui.sources.stacks.samples import Frame, Stack, StackCount, StackWindow, ThreadStacks
from gputui.sources.stacks.source_line import SourceLines


@dataclass(frozen=True, slots=True)
class Pattern:
    """Frames of one kind: those in a file whose path ends with `path` (a folder where it ends with "/": any file
    under it), and, where `functions` is not empty, in one of those functions. A function matches by its name or
    its qualified name's tail ("_next_data" matches "_MultiProcessingDataLoaderIter._next_data"), so the table reads
    the same on Python 3.10, where py-spy sees bare names, and on 3.11+, where it sees qualified ones."""

    kind: ActivityKind
    path: str
    functions: frozenset[str] = frozenset()

    def matches(self, frame: Frame, file: str) -> bool:
        """`file`: the frame's file with "/" before it and "\\" as "/" (see _slashed), read once per frame."""
        in_path = f"/{self.path}" in file if self.path.endswith("/") else file.endswith(f"/{self.path}")
        return in_path and (not self.functions or any(_named(frame.function, name) for name in self.functions))


def _named(function: str, name: str) -> bool:
    return function == name or function.endswith(f".{name}")


def _pattern(kind: ActivityKind, path: str, *functions: str) -> Pattern:
    return Pattern(kind, path, frozenset(functions))


# Checked over the whole stack before anything else (see the module's docstring).
CHECKPOINT_PATTERNS: tuple[Pattern, ...] = (
    _pattern("checkpoint", "torch/serialization.py"),  # torch.save, torch.load and their helpers
    _pattern("checkpoint", "torch/distributed/checkpoint/"),
    _pattern("checkpoint", "safetensors/torch.py", "save_file", "save", "load_file"),
    _pattern(
        "checkpoint",
        "transformers/trainer.py",
        "_save_checkpoint",
        "save_model",
        "_save",
        "_save_optimizer_and_scheduler",
    ),
    _pattern("checkpoint", "lightning/pytorch/trainer/trainer.py", "save_checkpoint"),
    _pattern("checkpoint", "pytorch_lightning/trainer/trainer.py", "save_checkpoint"),
    _pattern("checkpoint", "lightning/pytorch/callbacks/model_checkpoint.py"),
    _pattern("checkpoint", "pytorch_lightning/callbacks/model_checkpoint.py"),
    _pattern("checkpoint", "lightning/fabric/fabric.py", "save"),
    _pattern("checkpoint", "accelerate/accelerator.py", "save_state", "save_model", "save"),
    _pattern("checkpoint", "accelerate/checkpointing.py"),
    _pattern(
        "checkpoint", "deepspeed/runtime/engine.py", "save_checkpoint", "_save_checkpoint", "_save_zero_checkpoint"
    ),
    _pattern("checkpoint", "deepspeed/runtime/engine.py", "load_checkpoint", "_load_checkpoint"),
    _pattern("checkpoint", "deepspeed/runtime/checkpoint_engine/"),
    _pattern("checkpoint", "megatron/training/checkpointing.py"),
    _pattern("checkpoint", "megatron/training/async_utils.py", "schedule_async_save"),
    _pattern("checkpoint", "megatron/core/dist_checkpointing/"),
)

# torch.compile's own work, checked over the whole stack as checkpoints are (and after them): Dynamo tracing the
# frame and Inductor generating and building its code run the job's model, torch's modules and the generated code's
# import inside them, all of it compiling. Named by the outermost frame, as a checkpoint is. Only the compiler's
# functions: a compiled function that runs also passes through torch/_dynamo/eval_frame.py (its wrapper), AOT
# autograd's runtime wrappers and Inductor's generated module, and none of that is compiling.
COMPILE_PATTERNS: tuple[Pattern, ...] = (
    _pattern(
        "compile",
        "torch/_dynamo/convert_frame.py",
        "_compile",
        "compile_inner",
        "_compile_inner",
        "compile_frame",
        "transform",
        "trace_frame",
    ),
    _pattern(
        "compile",
        "torch/_dynamo/output_graph.py",
        "compile_and_call_fx_graph",
        "call_user_compiler",
        "_call_user_compiler",
    ),
    _pattern(
        "compile",
        "torch/_inductor/compile_fx.py",
        "compile_fx",
        "_compile_fx_main",
        "compile_fx_forward",
        "compile_fx_backward",
        "compile_fx_inner",
        "_compile_fx_inner",
        "fx_codegen_and_compile",
    ),
)

# The collectives' names, where a framework's own module holds other functions too (DeepSpeed's deepspeed.comm).
_COLLECTIVES = (
    "all_reduce",
    "inference_all_reduce",
    "all_reduce_coalesced",
    "all_gather",
    "all_gather_into_tensor",
    "all_gather_coalesced",
    "allgather_fn",
    "reduce_scatter",
    "reduce_scatter_tensor",
    "reduce_scatter_fn",
    "reduce",
    "broadcast",
    "barrier",
    "monitored_barrier",
    "all_to_all_single",
    "all_to_all",
    "gather",
    "scatter",
    "send",
    "recv",
)

# Checked frame by frame, innermost first; on one frame the first pattern that matches wins.
PATTERNS: tuple[Pattern, ...] = (
    # The dataset running in the main process (num_workers=0): the single-process iterator fetches it itself.
    _pattern("loading", "torch/utils/data/_utils/fetch.py"),
    _pattern("loading", "torch/utils/data/dataloader.py", "_SingleProcessDataLoaderIter._next_data"),
    # Waiting for the workers' next batch: the iterator's queue (or the pin-memory thread's), and that thread.
    _pattern("data", "torch/utils/data/dataloader.py", "_next_data", "_get_data", "_try_get_data", "__next__"),
    _pattern("data", "torch/utils/data/_utils/pin_memory.py"),
    _pattern("data", "accelerate/data_loader.py"),
    _pattern("data", "lightning/pytorch/loops/fetchers.py"),
    _pattern("data", "pytorch_lightning/loops/fetchers.py"),
    _pattern("data", "transformers/trainer.py", "get_batch_samples"),
    # Other frameworks' input pipelines: the main thread waiting for their next batch (tf.data's iterator, grain's
    # loader and prefetch, DALI's iterator and pipeline outputs, Ray Data's batches), or running them itself where
    # they run the job's own map functions in its thread (webdataset's pipeline, a datasets IterableDataset): those
    # enclose the job's code, as the DataLoader's single-process fetch does.
    _pattern("data", "tensorflow/python/data/ops/iterator_ops.py", "__next__", "_next_internal", "get_next"),
    _pattern("data", "tensorflow/python/ops/gen_dataset_ops.py", "iterator_get_next"),
    _pattern("data", "grain/_src/python/data_loader.py", "__next__"),
    _pattern("data", "grain/_src/python/dataset/transformations/prefetch.py", "__next__"),
    _pattern("data", "grain/_src/python/dataset/transformations/process_prefetch.py", "__next__"),
    _pattern("data", "nvidia/dali/plugin/pytorch/", "__next__", "_get_outputs"),
    _pattern("data", "nvidia/dali/plugin/base_iterator.py", "_get_outputs"),
    _pattern("data", "nvidia/dali/pipeline.py", "share_outputs", "outputs", "_outputs"),
    _pattern("data", "ray/data/_internal/block_batching/"),
    _pattern("data", "ray/data/iterator.py", "iter_batches", "iter_torch_batches", "_iter_batches", "_create_iterator"),
    _pattern("data", "ray/data/_internal/execution/streaming_executor.py", "get_next"),
    _pattern("data", "ray/data/_internal/execution/streaming_executor_state.py", "get_output_blocking"),
    _pattern("loading", "webdataset/pipeline.py", "__iter__", "iterator", "iterator1"),
    _pattern("loading", "datasets/iterable_dataset.py", "__iter__", "_iter_pytorch"),
    # Files and streams they read: webdataset's shards (gopen, its tar reading), a streamed dataset's reads and
    # their retries (read_with_retries sleeps 5-60 s between 20 tries on a stalled stream).
    _pattern("io", "webdataset/gopen.py"),
    _pattern("io", "webdataset/tariterators.py", "url_opener", "tar_file_iterator", "tar_file_expander"),
    _pattern(
        "io", "datasets/utils/file_utils.py", "read_with_retries", "xopen", "_add_retries_to_file_obj_read_method"
    ),
    # Waiting for the GPU where the wait passes through Python.
    _pattern("gpu_sync", "torch/cuda/__init__.py", "synchronize"),
    _pattern("gpu_sync", "torch/accelerator/__init__.py", "synchronize"),
    _pattern("gpu_sync", "torch/cuda/streams.py", "synchronize"),  # Stream.synchronize, Event.synchronize
    # JAX: jax.block_until_ready (ArrayImpl.block_until_ready itself is C++: its caller's line only), and
    # device_get or any conversion to a host value (float(x), np.asarray(x)) waiting for the array in _value.
    _pattern("gpu_sync", "jax/_src/api.py", "block_until_ready", "try_to_block", "device_get", "_device_get"),
    _pattern("gpu_sync", "jax/_src/array.py", "_value", "__array__"),
    # Waiting on the other ranks.
    _pattern("collective", "torch/distributed/distributed_c10d.py"),
    _pattern("collective", "torch/distributed/_functional_collectives.py"),
    _pattern("collective", "torch/nn/parallel/distributed.py"),  # DDP: its reducer, its buffers' broadcast
    _pattern("collective", "torch/distributed/fsdp/"),
    _pattern("collective", "torch/distributed/_composable/fsdp/"),
    _pattern("collective", "torch/distributed/algorithms/"),
    _pattern("collective", "accelerate/utils/operations.py", "gather", "gather_object", "reduce", "broadcast"),
    _pattern("collective", "accelerate/accelerator.py", "wait_for_everyone", "gather", "gather_for_metrics"),
    _pattern("collective", "accelerate/state.py", "wait_for_everyone"),
    _pattern("collective", "lightning/fabric/utilities/distributed.py"),
    _pattern("collective", "lightning/pytorch/strategies/ddp.py", "barrier", "reduce", "broadcast"),
    _pattern("collective", "transformers/trainer_pt_utils.py", "distributed_concat"),
    # DeepSpeed's collectives (deepspeed.comm, each under its log_wrapper) and its torch backend's; not the rest of
    # deepspeed/comm/, where init_distributed builds its shared-memory op (a compile, not a wait on other ranks).
    _pattern("collective", "deepspeed/comm/comm.py", *_COLLECTIVES, "log_wrapper"),
    _pattern("collective", "deepspeed/comm/torch.py", *_COLLECTIVES),
    _pattern("collective", "megatron/core/distributed/"),
    _pattern("collective", "megatron/core/parallel_state.py"),
    # File reads, where a Python frame shows them (a bare open() or read() is C: its caller's line only).
    _pattern("io", "pathlib.py", "read_bytes", "read_text", "open"),
    _pattern("io", "shutil.py", "copyfileobj", "copyfile", "copy", "copy2"),
    _pattern("io", "gzip.py", "read"),
    _pattern("io", "zipfile.py", "read", "open"),
    _pattern("io", "tarfile.py", "extractfile", "read"),
    _pattern("io", "numpy/lib/npyio.py", "load", "loadtxt"),
    _pattern("io", "numpy/lib/_npyio_impl.py", "load", "loadtxt"),
    _pattern("io", "numpy/lib/format.py", "read_array"),
    _pattern("io", "PIL/Image.py", "open"),
    _pattern("io", "PIL/ImageFile.py", "load"),
    _pattern("io", "torchvision/io/"),
    _pattern("io", "torchvision/datasets/folder.py", "pil_loader", "default_loader"),
    _pattern("io", "h5py/_hl/dataset.py", "__getitem__", "read_direct"),
    _pattern("io", "pyarrow/parquet/"),
    _pattern("io", "fsspec/"),
)

# Where a thread hands off to another and blocks until it delivers (Python 3.11+ qualified names match by their
# tail, as in PATTERNS). Only the standard library's: a library's own waits are the tables' to name.
HANDOFF_PATTERNS: tuple[Pattern, ...] = (
    _pattern("idle", "queue.py", "get"),
    _pattern("idle", "threading.py", "wait", "acquire", "join", "_wait_for_tstate_lock"),
    _pattern("idle", "concurrent/futures/_base.py", "result", "wait", "as_completed", "_result_or_cancel"),
    _pattern("idle", "multiprocessing/queues.py", "get"),
    _pattern("idle", "multiprocessing/connection.py", "recv", "recv_bytes", "_recv_bytes", "_recv", "poll", "_poll"),
    _pattern("idle", "multiprocessing/connection.py", "wait"),
    _pattern("idle", "multiprocessing/pool.py", "get", "next", "wait", "__next__"),
    _pattern("idle", "selectors.py", "select"),
)
# Blocking reads of the standard library, where a thread waits on a file, a pipe or the network (an `io` wait of the
# thread that is waited for; the main thread's own are no hand-off).
READ_PATTERNS: tuple[Pattern, ...] = (
    _pattern("io", "socket.py", "readinto", "recv", "recv_into", "makefile", "create_connection"),
    _pattern("io", "ssl.py", "read", "recv", "recv_into", "do_handshake"),
    _pattern("io", "http/client.py"),
    _pattern("io", "urllib/request.py"),
    _pattern("io", "subprocess.py", "communicate", "wait", "_communicate"),
)
# The share of their samples the job's other threads (the busiest one, or a pool of them summed) must spend at
# work (running, or reading) for the main thread's hand-off waits to be theirs. Less, and they are not who it waits
# for: a pin-memory thread, a watchdog, tqdm's monitor are sampled asleep and never take the blame.
OTHERS_BUSY = 0.5
# A pool: threads named alike but for a number at the end ("ThreadPoolExecutor-0_3").
_NUMBERED = re.compile(r"[0-9]+$")

# Where torch runs the job's model: every module is called through these. A wait further out is not what the thread
# does while the model computes inside it: DDP's and FSDP's forward wrap the model (their collectives are frames of
# their own, inside).
MODEL_CALLS: tuple[Pattern, ...] = (_pattern("cpu", "torch/nn/modules/module.py", "_call_impl", "_wrapped_call_impl"),)
# The kinds a pattern may give past the job's own code (or its model) running inside it: the dataset the loader runs.
ENCLOSING_KINDS = frozenset({"loading"})

# Packages whose frames are never "the job's own": the frame a `cpu` or `idle` stack is named by is the job's
# innermost one outside them (and the standard library's).
LIBRARIES = frozenset(
    {
        "torch",
        "torchvision",
        "torchaudio",
        "transformers",
        "lightning",
        "pytorch_lightning",
        "lightning_fabric",
        "accelerate",
        "deepspeed",
        "datasets",
        "numpy",
        "PIL",
        "safetensors",
        "h5py",
        "pyarrow",
        "pandas",
        "fsspec",
        "tqdm",
        "triton",
        "tensorflow",
        "keras",
        "tf_keras",
        "jax",
        "jaxlib",
        "flax",
        "optax",
        "grain",
        "webdataset",
        "nvidia",  # nvidia.dali
        "ray",
        "megatron",
        "huggingface_hub",
    }
)

# Child processes of a job that are no data-loader worker: multiprocessing's helpers (a spawn context's resource
# tracker, the forkserver). Their main threads wait all day and would dilute the workers' shares.
_HELPER_FILES = ("/multiprocessing/resource_tracker.py", "/multiprocessing/forkserver.py")
_PIN_MEMORY_FILES = ("/torch/utils/data/_utils/pin_memory.py",)

# A path from the in-process sampler is absolute; py-spy's is already short. Both are cut to the package part:
# after the last of these folders, then after the last standard library's folder (/lib/python3.11/) left.
_PACKAGE_DIRS = ("/site-packages/", "/dist-packages/")
_STDLIB_DIR = "/lib/python"
_VERSION_DIR = re.compile(r"[0-9]+\.[0-9]+/")  # only ever matched at one place: after _STDLIB_DIR
# Distinct files and frames remembered: a window holds a few hundred.
_CACHED = 512

# The kinds whose samples run (or wait in) the job's own code: named by its innermost own frame.
_OWN_CODE_KINDS = frozenset({"cpu", "idle", "loading"})


@functools.lru_cache(maxsize=_CACHED)
def short_file(file: str) -> str:
    """The file as py-spy prints it: the part after site-packages (or the standard library's folder)."""
    path = file.replace("\\", "/")
    ends = [at + len(folder) for folder in _PACKAGE_DIRS if (at := path.rfind(folder)) >= 0]
    if ends:
        path = path[max(ends) :]
    return path[_after_stdlib_dir(path) :]


def _after_stdlib_dir(path: str) -> int:
    """Where the path goes on after its last /lib/pythonX.Y/ (0 where it has none), from the end backwards."""
    end = len(path)
    while (at := path.rfind(_STDLIB_DIR, 0, end)) >= 0:
        version = _VERSION_DIR.match(path, at + len(_STDLIB_DIR))
        if version is not None:
            return version.end()
        end = at + len(_STDLIB_DIR) - 1  # an occurrence overlapping this one ends before its last character
    return 0


def _slashed(file: str) -> str:
    return "/" + short_file(file)


def _package(frame: Frame) -> str:
    """The top-level package or module a frame's file is in ("torch", "queue", "train" for a script)."""
    return short_file(frame.file).split("/", 1)[0].removesuffix(".py")


def is_own(frame: Frame) -> bool:
    """Whether a frame is the job's own code: not in a library's package nor in the standard library."""
    top = _package(frame)
    return not (top in LIBRARIES or top in sys.stdlib_module_names or top.startswith("<frozen"))


@dataclass(frozen=True, slots=True)
class _Facts:
    """What the patterns say of one frame, wherever it is in a stack."""

    checkpoint: ActivityKind | None  # the kind a checkpoint pattern gives it
    kind: ActivityKind | None  # the first pattern's that matches it
    enclosing: ActivityKind | None  # the first of those whose kind may enclose the job's own code
    computing: bool  # the job's own code or its model: past it only `enclosing` kinds match
    own: bool  # the job's own code (is_own)
    stdlib: bool  # the standard library's
    handoff: bool  # a hand-off's wait (HANDOFF_PATTERNS)
    reads: bool  # a blocking read of the standard library's (READ_PATTERNS)


@functools.lru_cache(maxsize=_CACHED)
def _facts(frame: Frame) -> _Facts:
    file = _slashed(frame.file)
    matching = [pattern.kind for pattern in PATTERNS if pattern.matches(frame, file)]
    own = is_own(frame)
    return _Facts(
        checkpoint=next((p.kind for p in CHECKPOINT_PATTERNS + COMPILE_PATTERNS if p.matches(frame, file)), None),
        kind=next(iter(matching), None),
        enclosing=next((kind for kind in matching if kind in ENCLOSING_KINDS), None),
        computing=own or any(call.matches(frame, file) for call in MODEL_CALLS),
        own=own,
        stdlib=_package(frame) in sys.stdlib_module_names,
        handoff=any(pattern.matches(frame, file) for pattern in HANDOFF_PATTERNS),
        reads=any(pattern.matches(frame, file) for pattern in READ_PATTERNS),
    )


def _matched(stack: Stack) -> tuple[ActivityKind, int] | None:
    """The kind the patterns give a stack and the index of the frame that matched; None where none does."""
    facts = [_facts(frame) for frame in stack]
    # A checkpoint is named by its outermost frame: where the job went into it (torch.save, _save_checkpoint).
    for index in reversed(range(len(stack))):
        checkpoint = facts[index].checkpoint
        if checkpoint is not None:
            return checkpoint, index
    computing = False
    for index, fact in enumerate(facts):
        kind = fact.enclosing if computing else fact.kind
        if kind is not None:
            return kind, index
        computing = computing or fact.computing
    return None


def _naming(stack: Stack, kind: ActivityKind, matched: int | None) -> Frame | None:
    """The frame a kind is shown by: the job's innermost own frame for the kinds that run its code (inside the
    matched frame, for `loading`: the dataset's `__getitem__`), else the matched one; the innermost at worst."""
    if kind in _OWN_CODE_KINDS:
        own = next((frame for frame in stack[:matched] if is_own(frame)), None)
        if own is not None:
            return own
    if matched is not None:
        return stack[matched]
    return stack[0] if stack else None


def kind_of(count: StackCount) -> tuple[ActivityKind, Frame | None]:
    """The kind of one stack and the frame that names it. A stack no pattern matches is `cpu` when the thread ran
    in most of its samples, else `idle` (summarize splits it by its samples instead)."""
    matched = _matched(count.stack)
    if matched is None:
        kind: ActivityKind = "cpu" if count.running * 2 > count.samples else "idle"
        return kind, _naming(count.stack, kind, None)
    kind, index = matched
    return kind, _naming(count.stack, kind, index)


def _split(count: StackCount) -> Iterable[tuple[ActivityKind, Frame | None, int]]:
    """The samples of one stack by kind: a matched stack whole, the others as their running and waiting parts."""
    matched = _matched(count.stack)
    if matched is not None:
        kind, index = matched
        yield kind, _naming(count.stack, kind, index), count.samples
        return
    parts: tuple[tuple[ActivityKind, int], ...] = (("cpu", count.running), ("idle", count.samples - count.running))
    for part, samples in parts:
        if samples > 0:
            yield part, _naming(count.stack, part, None), samples


def _shares(by_kind: Counter[ActivityKind], total: int) -> ActivityShares:
    return ActivityShares(**{kind: by_kind[kind] / total for kind in ACTIVITY_KINDS})


def _is_worker(thread: ThreadStacks, pid: int) -> bool:
    """A data-loader worker (a child process's main thread, bar multiprocessing's helpers) or the pin-memory
    thread (torch names it "Thread-N (_pin_memory_loop)"; where the name was not read, its frames say it)."""
    if thread.pid == pid:
        return not thread.is_main and ("pin_memory" in thread.name or _runs_in(thread, _PIN_MEMORY_FILES))
    return thread.is_main and not _runs_in(thread, _HELPER_FILES)


def _runs_in(thread: ThreadStacks, files: tuple[str, ...]) -> bool:
    return any(_slashed(frame.file).endswith(files) for count in thread.stacks for frame in count.stack)


def _why_no_sample(window: StackWindow) -> str:
    if any(thread.pid != window.pid for thread in window.threads):
        return f"process {window.pid} ran no Python of its own, only its child processes did (a launcher, a shell?)"
    return f"no sample of process {window.pid}'s main thread was read in {window.window_s:g} s"


def _handoff(stack: Stack) -> bool:
    """The stack blocks in a hand-off: its innermost frames, before any of the job's own, are the standard
    library's, and one of them is a hand-off's."""
    for frame in stack:
        facts = _facts(frame)
        if facts.own:
            return False
        if facts.handoff:
            return True
        if not facts.stdlib:
            return False
    return False


def _reads(stack: Stack) -> bool:
    return any(_facts(frame).reads for frame in stack)


@dataclass(frozen=True, slots=True)
class _Others:
    """A group of the job's other threads (one thread, a pool, the child processes) and what their samples did."""

    who: str
    threads: int  # how many: the busy share of a pool is its work in threads' worth, summed over them
    samples: int
    running: int
    busy: Counter[ActivityKind]  # their samples at work, by kind
    frames: Counter[tuple[ActivityKind, str, str, int | None]]  # the frames those samples are named by

    @property
    def worth(self) -> float:
        """Their samples at work, as a share of one thread's: 0.97 for one busy thread, 2.4 for a busy pool."""
        return sum(self.busy.values()) * self.threads / self.samples if self.samples else 0.0


def _work(count: StackCount) -> Iterable[tuple[ActivityKind, Frame | None, int]]:
    """The samples of another thread's stack that count as work: running the job's code (as `data`: it makes what
    the main thread waits for), in a kind a table names, or asleep in a read."""
    matched = _matched(count.stack)
    if matched is not None:
        kind, index = matched
        frame = _naming(count.stack, kind, index)
        if kind in ("data", "idle") and not count.running:
            return  # asleep in a queue of its own: a pin-memory thread, a loader's helper
        if kind == "loading":
            kind = "data"
        samples = count.samples if kind in ("io", "checkpoint", "collective") else count.running
        yield kind, frame, samples
        return
    if count.running:
        yield "data", _naming(count.stack, "cpu", None), count.running
    if count.samples > count.running and _reads(count.stack):
        yield "io", _naming(count.stack, "cpu", None), count.samples - count.running


def _groups(window: StackWindow) -> list[tuple[str, list[ThreadStacks]]]:
    """The job's other threads as those that may be waited on: each thread of its process (threads named alike
    but for a number pooled), and its child processes together (bar multiprocessing's helpers)."""
    pools: dict[str, list[ThreadStacks]] = {}
    children: list[ThreadStacks] = []
    for thread in window.threads:
        if thread.pid != window.pid:
            if not (thread.is_main and _runs_in(thread, _HELPER_FILES)):
                children.append(thread)
        elif not thread.is_main:
            pools.setdefault(_NUMBERED.sub("", thread.name) if thread.name else str(thread.tid), []).append(thread)
    groups: list[tuple[str, list[ThreadStacks]]] = []
    for prefix, threads in pools.items():
        if len(threads) == 1:
            only = threads[0]
            groups.append((f"thread {clean(only.name) or '?'} (tid {only.tid})", threads))
        else:
            groups.append((f"{len(threads)} threads {clean(prefix)}*", threads))
    if children:
        processes = len({thread.pid for thread in children})
        groups.append((f"{processes} process{'' if processes == 1 else 'es'}", children))
    return groups


def _others(window: StackWindow) -> _Others | None:
    """The busiest group of the job's other threads, where it is busy enough (OTHERS_BUSY) to be waited on."""
    best: _Others | None = None
    for who, threads in _groups(window):
        busy: Counter[ActivityKind] = Counter()
        frames: Counter[tuple[ActivityKind, str, str, int | None]] = Counter()
        for thread in threads:
            for count in thread.stacks:
                for kind, frame, samples in _work(count):
                    busy[kind] += samples
                    if frame is not None:
                        frames[(kind, frame.function, short_file(frame.file), frame.line)] += samples
        group = _Others(
            who=who,
            threads=len(threads),
            samples=sum(count.samples for thread in threads for count in thread.stacks),
            running=sum(count.running for thread in threads for count in thread.stacks),
            busy=busy,
            frames=frames,
        )
        if group.worth >= OTHERS_BUSY and (best is None or group.worth > best.worth):
            best = group
    return best


def _waited_on(others: _Others, handoff: int, samples: int) -> WaitedOn:
    kind = max(ACTIVITY_KINDS, key=lambda k: others.busy[k])
    named = [(key, held) for key, held in others.frames.most_common() if key[0] == kind][:1]
    frame = None
    if named:
        (_, function, file, line), held = named[0]
        frame = ActivityFrame(kind=kind, function=function, file=file, line=line, share=held / others.samples)
    return WaitedOn(
        kind=kind,
        who=others.who,
        frame=frame,
        share=handoff / samples,
        running=others.running / others.samples,
    )


def _main_parts(
    count: StackCount, pid: int, lines: SourceLines
) -> Iterable[tuple[ActivityKind, Frame | None, int, str | None]]:
    """The main thread's samples of one stack by kind, as _split has them, but the running samples on a line of
    its own code that synchronizes with the GPU in C++ (`loss.item()`) as `gpu_sync`, with that line's text."""
    for kind, frame, samples in _split(count):
        if kind == "cpu" and count.stack and is_own(count.stack[0]):
            innermost = count.stack[0]
            text = lines.gpu_sync_line(pid, innermost.file, innermost.line)
            if text is not None:
                yield "gpu_sync", innermost, samples, text
                continue
        yield kind, frame, samples, None


def summarize(window: StackWindow, top_n: int = 5, lines: SourceLines | None = None) -> JobActivity:
    """The job's activity over one window: the main thread's samples as shares of each kind and the frames that
    held most of them; its workers' samples pooled beside them. The main thread's hand-off waits are counted as
    what the job's other threads did meanwhile, where they were busy (see the module's docstring). `lines`: where
    the job's source lines are read from (a fresh SourceLines, read once per window, by default)."""
    lines = SourceLines() if lines is None else lines
    main_kinds: Counter[ActivityKind] = Counter()
    named: Counter[tuple[ActivityKind, str, str, int | None, str | None]] = Counter()
    worker_kinds: Counter[ActivityKind] = Counter()
    handoff: list[tuple[Frame | None, int]] = []
    for thread in window.threads:
        is_main = thread.is_main and thread.pid == window.pid
        if not is_main and not _is_worker(thread, window.pid):
            continue
        for count in thread.stacks:
            if not is_main:
                for kind, _frame, samples in _split(count):
                    worker_kinds[kind] += samples
                continue
            for kind, frame, samples, text in _main_parts(count, window.pid, lines):
                if kind == "idle" and _handoff(count.stack):
                    handoff.append((frame, samples))
                    continue
                main_kinds[kind] += samples
                if frame is not None:
                    named[(kind, frame.function, short_file(frame.file), frame.line, text)] += samples
    waited = sum(samples for _, samples in handoff)
    samples = sum(main_kinds.values()) + waited
    worker_samples = sum(worker_kinds.values())
    if not samples:
        return JobActivity(
            source=window.source,
            taken_at=window.taken_at,
            window_s=window.window_s,
            samples=0,
            rank=window.rank,
            error=f"no_samples: {_why_no_sample(window)}",
        )
    others = _others(window) if waited else None
    waited_on = _waited_on(others, waited, samples) if others is not None else None
    handoff_kind: ActivityKind = waited_on.kind if waited_on is not None else "idle"
    for frame, held in handoff:
        main_kinds[handoff_kind] += held
        if frame is not None:
            named[(handoff_kind, frame.function, short_file(frame.file), frame.line, None)] += held
    top = tuple(
        ActivityFrame(kind=kind, function=function, file=file, line=line, share=held / samples, source_line=text)
        for (kind, function, file, line, text), held in named.most_common(top_n)
    )
    return JobActivity(
        source=window.source,
        taken_at=window.taken_at,
        window_s=window.window_s,
        samples=samples,
        shares=_shares(main_kinds, samples),
        top=top,
        workers=_shares(worker_kinds, worker_samples) if worker_samples else None,
        worker_samples=worker_samples,
        rank=window.rank,
        waited_on=waited_on,
    )
