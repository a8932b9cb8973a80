"""Other frameworks' waits, as py-spy recorded them from real jobs on this CPU (recorded/README.md: each job's
script, the framework's version, the command), read back as gputui reads py-spy's output (parse_speedscope, merge)
and summarized: each leads with the kind of its wait and is named by the framework's frame (issue 40, item 2).

Where a framework could not run here, its frames are written by hand from its source and say so.
"""

from __future__ import annotations

import pytest

from gputui.model import ActivityKind
from gputui.sources.stacks.classify import kind_of, short_file, summarize
from gputui.sources.stacks.samples import StackCount, StackWindow
from tests.sources.stacks.recorded import FRAMEWORKS, recorded, stack, thread, window

GRAIN = "grain/_src/python"
# (fixture, the leading kind, the function and the file of the frame that holds most of its samples)
RECORDED: list[tuple[str, ActivityKind, str, str]] = [
    # torch.compile recompiling in the main thread: Dynamo's _compile, Inductor building C++ inside it
    ("compile", "compile", "_compile", "torch/_dynamo/convert_frame.py"),
    # a compiled training step: AOT autograd compiles each new backward graph lazily, inside .backward()
    ("compile_train", "compile", "compile_fx_backward", "torch/_inductor/compile_fx.py"),
    # a tf.data pipeline whose map cannot keep up: the iterator's next
    ("tfdata", "data", "iterator_get_next", "tensorflow/python/ops/gen_dataset_ops.py"),
    # JAX: the host waiting for a jitted step
    ("jax_sync", "gpu_sync", "block_until_ready.<locals>.try_to_block", "jax/_src/api.py"),
    # a JAX host callback runs the job's own function in the main thread: its own code, blocked (a sleep)
    ("jax_callback", "idle", "host_metric", "jax_callback.py"),
    # grain's thread prefetch: waiting for the next element
    ("grain_prefetch", "data", "PrefetchDatasetIterator.__next__", f"{GRAIN}/dataset/transformations/prefetch.py"),
    # webdataset reading a shard through a slow pipe
    ("webdataset_tar", "io", "Pipe.read", "webdataset/gopen.py"),
    # DALI's iterator waiting for the pipeline's outputs
    ("dali_pipeline", "data", "Pipeline.share_outputs", "nvidia/dali/pipeline.py"),
    # Ray Data's iter_batches waiting on its streaming executor
    ("ray_data", "data", "OpState.get_output_blocking", "ray/data/_internal/execution/streaming_executor_state.py"),
    # DeepSpeed's all_reduce (deepspeed.comm, then torch's) waiting for a slower rank
    ("deepspeed_comm", "collective", "all_reduce", "torch/distributed/distributed_c10d.py"),
    # DeepSpeed's engine saving a checkpoint
    ("deepspeed_checkpoint", "checkpoint", "DeepSpeedEngine.save_checkpoint", "deepspeed/runtime/engine.py"),
    # Megatron core's distributed checkpoint
    ("megatron_dist_checkpoint", "checkpoint", "save", "megatron/core/dist_checkpointing/serialization.py"),
]


@pytest.mark.parametrize(("name", "kind", "function", "file"), RECORDED, ids=[r[0] for r in RECORDED])
def test_each_frameworks_recorded_wait_leads_as_its_kind_named_by_its_frame(
    name: str, kind: ActivityKind, function: str, file: str
) -> None:
    activity = summarize(recorded(name, FRAMEWORKS))
    assert activity.samples >= 30  # 2 s at 20 Hz
    assert activity.leading == kind, activity.shares
    assert activity.shares.of(kind) >= 0.9, activity.shares
    frame = next(f for f in activity.top if f.kind == kind)
    assert (frame.function, frame.file) == (function, file)


def test_a_streamed_datasets_iterable_runs_the_jobs_map_in_its_thread_as_loading() -> None:
    """The datasets library's streaming IterableDataset maps each example in the loop's own thread (its JSON reading
    and the job's `tokenize`): loading, as a DataLoader's single-process fetch is, the job's own map named."""
    activity = summarize(recorded("hf_streaming", FRAMEWORKS))
    assert activity.leading == "loading" and activity.shares.loading >= 0.8, activity.shares
    files = {f.file for f in activity.top if f.kind == "loading"}
    assert "datasets/iterable_dataset.py" in files and "hf_streaming.py" in files


def test_deepspeeds_collective_passes_through_deepspeed_comm() -> None:
    """The recorded all_reduce is DeepSpeed's (deepspeed.comm under its log_wrapper), which alone reads as
    collective: without torch's frame inside it the wait is still the other ranks'."""
    main = next(t for t in recorded("deepspeed_comm", FRAMEWORKS).threads if t.is_main and t.pid == t.tid)
    frames = main.stacks[0].stack
    assert any(short_file(f.file) == "deepspeed/comm/comm.py" for f in frames)
    deepspeeds = tuple(f for f in frames if not short_file(f.file).startswith("torch/"))
    assert kind_of(StackCount(deepspeeds, 1, 0))[0] == "collective"


def test_a_compiled_function_that_runs_is_not_compiling() -> None:
    """Calling a compiled model passes through Dynamo's wrapper and runs Inductor's generated module: that is the
    job's work (here asleep in a kernel's C call, its caller's line), never `compile`."""
    running = stack(
        "main (train.py:30);train_step (train.py:17);OptimizedModule.__call__ (torch/_dynamo/eval_frame.py:511);"
        "Module._call_impl (torch/nn/modules/module.py:1789);"
        "_TorchDynamoContext.__call__.<locals>._fn (torch/_dynamo/eval_frame.py:1013);"
        "forward (train.py:10);"
        "aot_module_simplified.<locals>.forward (torch/_functorch/aot_autograd.py:1260);"
        "runtime_wrapper (torch/_functorch/_aot_autograd/runtime_wrappers.py:363);"
        "CompiledFxGraph.__call__ (torch/_inductor/output_code.py:630);"
        "call (cwozxxrpqeyoukyqxqylit4664ivlmlveho4tw7dehomhesnzcly.py:60)"
    )
    assert kind_of(StackCount(running, 10, 0))[0] == "idle"
    assert kind_of(StackCount(running, 10, 10))[0] == "cpu"


def test_megatrons_training_checkpoint_and_gradient_sync_from_source_not_recorded() -> None:
    """Megatron-LM's training loop is not in megatron-core's wheel, so these are written by hand from its source
    (megatron/training/checkpointing.py save_checkpoint; megatron/core/distributed's gradient sync), not recorded;
    the line numbers are placeholders."""
    saving = thread(
        1,
        1,
        "train (megatron/training/training.py:1);save_checkpoint_and_time (megatron/training/training.py:2);"
        "save_checkpoint (megatron/training/checkpointing.py:3);"
        "all_gather_object (torch/distributed/distributed_c10d.py:4)",
    )
    syncing = thread(
        2,
        2,
        "train_step (megatron/training/training.py:1);finalize_model_grads "
        "(megatron/core/distributed/finalize_model_grads.py:2);"
        "DistributedDataParallel.finish_grad_sync (megatron/core/distributed/distributed_data_parallel.py:3)",
    )
    assert summarize(window(1, saving)).leading == "checkpoint"
    assert summarize(window(2, syncing)).leading == "collective"


def test_a_framework_is_a_library_so_the_jobs_own_frame_names_its_work() -> None:
    """Frames of a framework's package are never the job's own: a stack no pattern matches is named by the job's
    innermost frame outside them (JAX's here), not by the framework's."""
    own = thread(
        3,
        3,
        "main (train.py:5);step (train.py:9);cache_miss (jax/_src/pjit.py:1);_python_pjit_helper (jax/_src/pjit.py:2)",
        running=10,
    )
    activity = summarize(StackWindow(source="py-spy", pid=3, taken_at=1.0, window_s=1.0, threads=(own,)))
    assert activity.leading == "cpu" and (activity.top[0].function, activity.top[0].file) == ("step", "train.py")


def test_a_stalled_stream_retrying_its_read_is_io_from_source_not_recorded() -> None:
    """A streamed dataset whose server stalls sleeps between its read's retries (datasets 5.2.0's
    utils/file_utils.py: read_with_retries, its sleep at line 845); written by hand from that source, not recorded
    (no server here stalls; the outer frame's line is a placeholder): the loop waits on I/O."""
    stalled = thread(
        4,
        4,
        "main (train.py:20);IterableDataset.__iter__ (datasets/iterable_dataset.py:2400);"
        "_add_retries_to_file_obj_read_method.<locals>.read_with_retries "
        "(datasets/utils/file_utils.py:845)",
    )
    activity = summarize(window(4, stalled))
    assert activity.leading == "io" and activity.top[0].function.endswith("read_with_retries")
