"""The frame-pattern table and the window's summary: recorded py-spy output of real CPU-PyTorch jobs lands on the
kind the job was doing, and stacks written by hand for HF Trainer, Lightning and accelerate on theirs."""

from __future__ import annotations

import math
import time

import pytest

from gputui.agent import gputui_stacks_agent as agent
from gputui.model import ACTIVITY_KINDS, ActivityKind
from gputui.sources.stacks.classify import is_own, kind_of, short_file, summarize
from gputui.sources.stacks.samples import Frame, StackCount, ThreadStacks
from tests.sources.stacks.recorded import JOBS, recorded, stack, thread, window


@pytest.mark.parametrize(
    ("job", "leading", "function", "file"),
    [
        ("dl0", "loading", "Squares.__getitem__", "dl.py"),
        ("dl2", "data", "_MultiProcessingDataLoaderIter._try_get_data", "torch/utils/data/dataloader.py"),
        ("sleeper", "idle", "gpu_step", "sleeper.py"),
        ("spinner", "cpu", "step", "spinner.py"),
        ("saver", "checkpoint", "save", "torch/serialization.py"),
        ("rank0", "collective", "all_reduce", "torch/distributed/distributed_c10d.py"),
    ],
)
def test_a_recorded_job_leads_with_what_it_was_doing(job: str, leading: ActivityKind, function: str, file: str) -> None:
    activity = summarize(recorded(job))
    assert activity.error is None
    assert activity.samples > 30  # 2 s at 20 Hz
    assert activity.leading == leading
    assert activity.shares.of(leading) > 0.9
    assert (activity.top[0].kind, activity.top[0].function, activity.top[0].file) == (leading, function, file)


@pytest.mark.parametrize("job", JOBS)
def test_shares_sum_to_one_and_top_frames_come_most_first(job: str) -> None:
    activity = summarize(recorded(job), top_n=3)
    assert math.isclose(sum(activity.shares.of(kind) for kind in ACTIVITY_KINDS), 1.0)
    assert len(activity.top) <= 3
    assert [frame.share for frame in activity.top] == sorted((frame.share for frame in activity.top), reverse=True)


def test_the_data_loader_workers_are_pooled_beside_the_main_thread() -> None:
    """dl2's workers run the dataset (loading) while its main thread waits for them (data); the feeder and
    resource-sharer threads of the processes are neither."""
    activity = summarize(recorded("dl2"))
    assert activity.workers is not None
    assert activity.workers.leading == "loading"
    assert activity.worker_samples > activity.samples  # two workers over the same window


def test_workers_reading_files_are_io_while_the_main_thread_waits_for_data() -> None:
    activity = summarize(recorded("dlio"))
    assert activity.leading == "data"
    assert activity.workers is not None
    assert activity.workers.leading == "io"


def test_a_job_without_workers_has_none() -> None:
    activity = summarize(recorded("spinner"))
    assert (activity.workers, activity.worker_samples) == (None, 0)


# What each stack is doing, written as py-spy writes it (outermost frame first).
TRAINER = "<module> (train.py:40);Trainer.train (transformers/trainer.py:2245)"
LOOP = f"{TRAINER};Trainer._inner_training_loop (transformers/trainer.py:2514)"
WAIT_FOR_BATCH = (
    "_BaseDataLoaderIter.__next__ (torch/utils/data/dataloader.py:733);"
    "_MultiProcessingDataLoaderIter._next_data (torch/utils/data/dataloader.py:1480);"
    "_MultiProcessingDataLoaderIter._get_data (torch/utils/data/dataloader.py:1436);"
    "_MultiProcessingDataLoaderIter._try_get_data (torch/utils/data/dataloader.py:1284);"
    "Queue.get (queue.py:180);Condition.wait (threading.py:359)"
)
LIGHTNING = (
    "<module> (fit.py:12);Trainer.fit (lightning/pytorch/trainer/trainer.py:561);"
    "_FitLoop.run (lightning/pytorch/loops/fit_loop.py:217);"
    "_TrainingEpochLoop.advance (lightning/pytorch/loops/training_epoch_loop.py:250)"
)
HAND_WRITTEN: list[tuple[str, ActivityKind, str]] = [
    # HF Trainer
    (
        f"{LOOP};Trainer.get_batch_samples (transformers/trainer.py:5088);"
        f"DataLoaderShard.__iter__ (accelerate/data_loader.py:552);{WAIT_FOR_BATCH}",
        "data",
        "_MultiProcessingDataLoaderIter._try_get_data",
    ),
    (
        f"{LOOP};Trainer._maybe_log_save_evaluate (transformers/trainer.py:3050);"
        "Trainer._save_checkpoint (transformers/trainer.py:3150);Trainer.save_model (transformers/trainer.py:3800);"
        "Trainer._save (transformers/trainer.py:3950);save_file (safetensors/torch.py:286)",
        "checkpoint",
        "Trainer._save_checkpoint",
    ),
    (
        f"{LOOP};Trainer.evaluate (transformers/trainer.py:4100);"
        "Trainer._nested_gather (transformers/trainer.py:4400);"
        "distributed_concat (transformers/trainer_pt_utils.py:222);"
        "all_gather (torch/distributed/distributed_c10d.py:3700)",
        "collective",
        "all_gather",
    ),
    # Lightning
    (
        f"{LIGHTNING};_PrefetchDataFetcher.__next__ (lightning/pytorch/loops/fetchers.py:133);"
        "_CombinedLoader.__next__ (lightning/pytorch/utilities/combined_loader.py:341)",
        "data",
        "_PrefetchDataFetcher.__next__",
    ),
    (
        f"{LIGHTNING};ModelCheckpoint.on_train_batch_end (lightning/pytorch/callbacks/model_checkpoint.py:300);"
        "Trainer.save_checkpoint (lightning/pytorch/trainer/trainer.py:1365);"
        "save (torch/serialization.py:943);_save (torch/serialization.py:1160)",
        "checkpoint",
        "ModelCheckpoint.on_train_batch_end",
    ),
    (
        f"{LIGHTNING};DDPStrategy.barrier (lightning/pytorch/strategies/ddp.py:300);"
        "_exception_logger.<locals>.wrapper (torch/distributed/c10d_logger.py:83)",
        "collective",
        "DDPStrategy.barrier",
    ),
    # accelerate
    (
        "train (train.py:30);Accelerator.wait_for_everyone (accelerate/accelerator.py:2700);"
        "wait_for_everyone (accelerate/utils/other.py:120);PartialState.wait_for_everyone (accelerate/state.py:400);"
        "_exception_logger.<locals>.wrapper (torch/distributed/c10d_logger.py:83);"
        "barrier (torch/distributed/distributed_c10d.py:4100)",
        "collective",
        "barrier",
    ),
    (
        "train (train.py:30);DataLoaderShard.__iter__ (accelerate/data_loader.py:566);"
        "send_to_device (accelerate/utils/operations.py:150)",
        "data",
        "DataLoaderShard.__iter__",
    ),
    (
        "train (train.py:55);Accelerator.save_state (accelerate/accelerator.py:3000);"
        "save_accelerator_state (accelerate/checkpointing.py:100);save (accelerate/utils/other.py:190)",
        "checkpoint",
        "Accelerator.save_state",
    ),
    # torch.distributed.checkpoint gathers from every rank: still a checkpoint.
    (
        "train (train.py:70);save (torch/distributed/checkpoint/state_dict_saver.py:150);"
        "all_gather_object (torch/distributed/distributed_c10d.py:3000)",
        "checkpoint",
        "save",
    ),
    # Waiting for the GPU where Python sees it.
    ("train (train.py:50);synchronize (torch/cuda/__init__.py:985)", "gpu_sync", "synchronize"),
    ("train (train.py:50);Event.synchronize (torch/cuda/streams.py:225)", "gpu_sync", "Event.synchronize"),
    ("train (train.py:50);synchronize (torch/accelerator/__init__.py:200)", "gpu_sync", "synchronize"),
    # Recording an event launches it and goes on: not a wait.
    ("train (train.py:50);Event.record (torch/cuda/streams.py:190)", "idle", "train"),
    # DDP: its own collectives, and not the model it runs inside its forward.
    (
        "train (train.py:50);Module._wrapped_call_impl (torch/nn/modules/module.py:1751);"
        "DistributedDataParallel.forward (torch/nn/parallel/distributed.py:1633);"
        "DistributedDataParallel._pre_forward (torch/nn/parallel/distributed.py:1530);"
        "DistributedDataParallel._sync_buffers (torch/nn/parallel/distributed.py:2250)",
        "collective",
        "DistributedDataParallel._sync_buffers",
    ),
    # File reads in the main thread.
    ("train (train.py:20);load_shard (train.py:9);Path.read_bytes (pathlib.py:1050)", "io", "Path.read_bytes"),
    ("train (train.py:20);load (numpy/lib/_npyio_impl.py:455)", "io", "load"),
]


@pytest.mark.parametrize(("frames", "kind", "function"), HAND_WRITTEN)
def test_a_hand_written_stack_reads_as_its_kind(frames: str, kind: ActivityKind, function: str) -> None:
    named_kind, frame = kind_of(StackCount(stack(frames), samples=10, running=0))
    assert named_kind == kind
    assert frame is not None
    assert frame.function == function


def test_a_model_running_inside_ddps_forward_is_its_own_work_not_a_collective() -> None:
    """DDP and FSDP call the model from their forward: while the model computes, the thread does not wait."""
    frames = (
        "train (train.py:50);Module._wrapped_call_impl (torch/nn/modules/module.py:1751);"
        "DistributedDataParallel.forward (torch/nn/parallel/distributed.py:1633);"
        "DistributedDataParallel._run_ddp_forward (torch/nn/parallel/distributed.py:1459);"
        "Module._call_impl (torch/nn/modules/module.py:1762);Sequential.forward (torch/nn/modules/container.py:240);"
        "Module._call_impl (torch/nn/modules/module.py:1762);Linear.forward (torch/nn/modules/linear.py:125)"
    )
    kind, frame = kind_of(StackCount(stack(frames), samples=10, running=10))
    assert kind == "cpu"
    assert frame == Frame("train", "train.py", 50)


def test_item_in_the_jobs_own_line_reads_as_that_line() -> None:
    """`.item()` is a C call: py-spy sees the line that calls it, not the wait for the GPU inside."""
    count = StackCount(stack("<module> (train.py:60);train (train.py:44)"), samples=10, running=2)
    assert kind_of(count) == ("idle", Frame("train", "train.py", 44))


def test_a_stack_no_pattern_matches_splits_into_its_running_and_waiting_samples() -> None:
    activity = summarize(window(7, thread(7, 7, "<module> (t.py:9);step (t.py:3)", samples=10, running=6)))
    assert (activity.shares.cpu, activity.shares.idle) == (0.6, 0.4)
    assert {(frame.kind, frame.function, frame.share) for frame in activity.top} == {
        ("cpu", "step", 0.6),
        ("idle", "step", 0.4),
    }


def test_cpu_is_named_by_the_jobs_innermost_own_frame_not_the_library_under_it() -> None:
    frames = "<module> (train.py:99);augment (train.py:31);rotate (torchvision/transforms/functional.py:1100)"
    assert kind_of(StackCount(stack(frames), samples=4, running=4)) == ("cpu", Frame("augment", "train.py", 31))


def test_a_worker_reading_files_is_io_and_one_running_the_dataset_is_loading() -> None:
    worker = (
        "_worker_loop (torch/utils/data/_utils/worker.py:374);"
        "_MapDatasetFetcher.fetch (torch/utils/data/_utils/fetch.py:54);Images.__getitem__ (train.py:20)"
    )
    activity = summarize(
        window(
            10,
            thread(10, 10, f"main (train.py:80);{WAIT_FOR_BATCH}", samples=20),
            thread(11, 11, f"{worker};open (PIL/Image.py:3500)", samples=15),
            thread(12, 12, worker, samples=5, running=5),
        )
    )
    assert activity.leading == "data"
    assert activity.workers is not None
    assert (activity.workers.io, activity.workers.loading, activity.worker_samples) == (0.75, 0.25, 20)


def test_the_pin_memory_thread_is_pooled_with_the_workers_and_other_threads_are_not() -> None:
    pin = "Thread._bootstrap (threading.py:1002);_pin_memory_loop (torch/utils/data/_utils/pin_memory.py:55)"
    activity = summarize(
        window(
            20,
            thread(20, 20, f"main (train.py:80);{WAIT_FOR_BATCH}", samples=20),
            thread(
                20,
                21,
                f"{pin};do_one_step (torch/utils/data/_utils/pin_memory.py:30)",
                name="Thread-2 (_pin_memory_loop)",
            ),
            thread(20, 22, "Thread._bootstrap (threading.py:1002);log_forever (train.py:5)", name="logger"),
            thread(23, 23, "<module> (<string>:1);main (multiprocessing/resource_tracker.py:227)"),
        )
    )
    assert activity.workers is not None
    assert (activity.workers.data, activity.worker_samples) == (1.0, 10)
    unnamed = summarize(window(20, thread(20, 20, "main (train.py:80)"), thread(20, 21, pin)))
    assert unnamed.worker_samples == 10


def test_a_window_without_the_main_thread_says_so() -> None:
    empty = summarize(window(30))
    assert (empty.samples, empty.leading, empty.error) == (
        0,
        None,
        "no_samples: no sample of process 30's main thread was read in 4 s",
    )
    launcher = summarize(window(30, thread(31, 31, "main (w.py:1)")))
    assert launcher.error is not None
    assert launcher.error.startswith("no_samples: process 30 ran no Python of its own, only its child processes did")


def test_paths_from_inside_the_job_read_as_py_spys_and_match_the_same_patterns() -> None:
    """The in-process sampler gives absolute paths; py-spy gives the package part."""
    library = "/opt/conda/lib/python3.10/site-packages/torch/distributed/distributed_c10d.py"
    assert short_file(library) == "torch/distributed/distributed_c10d.py"
    assert short_file("/usr/lib/python3.11/threading.py") == "threading.py"
    assert short_file("/home/me/project/train.py") == "/home/me/project/train.py"
    count = StackCount((Frame("all_reduce", library, 2500), Frame("main", "/home/me/project/train.py", 9)), 5, 0)
    assert kind_of(count)[0] == "collective"


@pytest.mark.parametrize(
    ("file", "own"),
    [
        ("train.py", True),
        ("/home/me/project/model.py", True),
        ("<string>", True),
        ("threading.py", False),
        ("multiprocessing/queues.py", False),
        ("torch/nn/modules/module.py", False),
        ("/usr/lib/python3/dist-packages/numpy/core/fromnumeric.py", False),
        ("<frozen importlib._bootstrap>", False),
    ],
)
def test_own_frames_are_those_outside_libraries_and_the_standard_library(file: str, own: bool) -> None:
    assert is_own(Frame("f", file, 1)) is own


# Names of the worst kind for a pattern that tries `.*/site-packages/` from every place in them: many slashes, and
# folders that begin like the ones it looks for without being them.
WORST_PARTS = ("/", "/lib/python3", "/site-package", "/lib/python3.x/")


def _classify_seconds(length: int, runs: int = 5) -> float:
    """The best of `runs` times to summarize a window of one stack whose every frame has names `length` long, of
    the worst kind; new names each run, so that nothing remembered from a run before helps."""
    best = float("inf")
    for run in range(runs):
        stack = tuple(
            Frame(f"{run}{part}" + part * (length // len(part)), f"{run}{part}" + part * (length // len(part)), 1)
            for part in WORST_PARTS
        )
        started = time.perf_counter()
        summarize(window(1, ThreadStacks(1, 1, "MainThread", (StackCount(stack, 10, 5),))))
        best = min(best, time.perf_counter() - started)
    return best


def test_names_of_the_longest_a_record_may_hold_are_classified_in_time_linear_in_their_length() -> None:
    """The issue's pattern took time that grows with the square of a name's length (0.36 s for a 12 kB name):
    four names of the most a record may hold took ~1.5 s here, and 16 times as long for 4 times the length. Now
    ~1 ms, and about 4 times as long: both bounds below are ~50 and 2.5 times what linear code takes, so that
    only time growing faster than linearly fails them on a busy machine."""
    assert _classify_seconds(agent.MAX_NAME) < 0.05
    assert _classify_seconds(agent.MAX_NAME) / _classify_seconds(agent.MAX_NAME // 4) < 10
