"""Issue 40 item 1: a main thread blocked in a hand-off (a queue's get, a future's result...) is counted as what the
job's other threads and processes did meanwhile: recorded py-spy stacks of real jobs (a producer thread, a thread
pool), and stacks written by hand for the cases that must keep their answers."""

from __future__ import annotations

import pytest

from gputui.sources.stacks.classify import OTHERS_BUSY, summarize
from gputui.sources.stacks.samples import StackCount, ThreadStacks
from tests.sources.stacks.recorded import recorded, stack, thread, window


def test_a_producer_thread_that_decodes_makes_the_main_threads_queue_get_a_wait_for_data() -> None:
    activity = summarize(recorded("producer"))
    assert activity.leading == "data"
    assert activity.shares.data > 0.9
    waited = activity.waited_on
    assert waited is not None
    assert waited.kind == "data"
    assert waited.who.startswith("thread producer (tid ")
    assert waited.frame is not None
    assert (waited.frame.function, waited.frame.file.rsplit("/", 1)[-1]) == ("decode", "producer.py")
    assert waited.running > OTHERS_BUSY  # how sure: the producer's running share, stated
    assert waited.share == pytest.approx(activity.shares.data)
    # The main thread's own line that waits names the top frame: its loop, not threading.py.
    assert (activity.top[0].kind, activity.top[0].function) == ("data", "main")


def test_a_thread_pool_that_prefetches_is_named_as_a_pool() -> None:
    activity = summarize(recorded("pool"))
    waited = activity.waited_on
    assert activity.leading == "data"
    assert waited is not None
    assert waited.who == "2 threads ThreadPoolExecutor-0_*"
    assert waited.frame is not None and waited.frame.function == "fetch"


def test_a_data_loader_wait_is_the_tables_and_follows_no_thread() -> None:
    """dl2: the table says `data` first; workers of case b stay pooled as workers, not as whom it waited on."""
    activity = summarize(recorded("dl2"))
    assert activity.leading == "data"
    assert activity.waited_on is None


QUEUE_GET = "<module> (train.py:50);main (train.py:40);Queue.get (queue.py:171);Condition.wait (threading.py:327)"
PRODUCER = "Thread._bootstrap (threading.py:1002);Thread.run (threading.py:982);produce (loader.py:20)"
DECODE = f"{PRODUCER};decode (loader.py:31)"


def _main(frames: str = QUEUE_GET, samples: int = 40, running: int = 0) -> ThreadStacks:
    return thread(100, 100, frames, samples=samples, running=running, name="MainThread")


def test_a_thread_only_sampled_asleep_never_takes_the_blame() -> None:
    """A watchdog, tqdm's monitor, a pin-memory thread: asleep in their own waits the whole window."""
    watchdog = thread(100, 101, f"{PRODUCER};Event.wait (threading.py:622)", samples=40, name="watchdog")
    monitor = thread(100, 102, f"{PRODUCER};time_sleep (tqdm/_monitor.py:60)", samples=40, name="tqdm")
    pin = f"{PRODUCER};_pin_memory_loop (torch/utils/data/_utils/pin_memory.py:59);Queue.get (queue.py:180)"
    pinning = thread(100, 103, pin, samples=40, name="pt_data_pin")
    activity = summarize(window(100, _main(), watchdog, monitor, pinning))
    assert activity.waited_on is None
    assert activity.leading == "idle"
    assert (activity.top[0].kind, activity.top[0].function) == ("idle", "main")  # blocked, named by the frame


def test_a_producer_running_less_than_the_threshold_is_not_waited_on() -> None:
    running = round(40 * OTHERS_BUSY) - 2
    producer = thread(100, 101, DECODE, samples=40, running=running, name="producer")
    assert summarize(window(100, _main(), producer)).waited_on is None
    busy = thread(100, 101, DECODE, samples=40, running=running + 4, name="producer")
    assert summarize(window(100, _main(), busy)).waited_on is not None


def test_others_reading_files_or_the_network_make_it_an_io_wait() -> None:
    reads = f"{PRODUCER};fetch (loader.py:25);SocketIO.readinto (socket.py:706)"
    fetcher = thread(100, 101, reads, samples=40, running=1, name="fetcher")
    activity = summarize(window(100, _main(), fetcher))
    assert activity.leading == "io"
    assert activity.waited_on is not None
    assert (activity.waited_on.kind, activity.waited_on.who) == ("io", "thread fetcher (tid 101)")


def test_a_checkpoint_writer_thread_makes_it_a_checkpoint_wait() -> None:
    writes = f"{PRODUCER};save (torch/serialization.py:944);_save (torch/serialization.py:1180)"
    writer = thread(100, 101, writes, samples=40, running=30, name="AsyncCheckpointExecutor_0")
    activity = summarize(window(100, _main(), writer))
    assert activity.leading == "checkpoint"
    assert activity.waited_on is not None and activity.waited_on.kind == "checkpoint"


def test_child_processes_running_the_jobs_code_are_named_as_processes() -> None:
    recv = "<module> (train.py:50);main (train.py:40);Connection.recv (multiprocessing/connection.py:250)"
    work = "<module> (worker.py:5);work (worker.py:12)"
    children = [thread(pid, pid, work, samples=40, running=38, name="MainThread") for pid in (201, 202, 203)]
    activity = summarize(window(100, _main(recv), *children))
    assert activity.waited_on is not None
    assert (activity.waited_on.kind, activity.waited_on.who) == ("data", "3 processes")


def test_a_main_thread_asleep_in_its_own_function_is_no_hand_off() -> None:
    """The lab's case h: time.sleep (C, no frame) inside wait_for_lock, while DataLoader workers run."""
    asleep = thread(100, 100, "<module> (train.py:50);wait_for_lock (train.py:12)", samples=40, name="MainThread")
    workers = [thread(pid, pid, "<module> (w.py:1);work (w.py:3)", samples=40, running=40) for pid in (201, 202)]
    activity = summarize(window(100, asleep, *workers))
    assert activity.waited_on is None
    assert (activity.leading, activity.top[0].function) == ("idle", "wait_for_lock")


def test_a_synchronous_upload_in_a_socket_read_stays_blocked_in_its_function() -> None:
    upload = "<module> (trainer.py:90);log_metrics (trainer.py:40);SocketIO.readinto (socket.py:706)"
    activity = summarize(window(100, _main(upload)))
    assert activity.waited_on is None
    assert (activity.leading, activity.top[0].function) == ("idle", "log_metrics")


def test_a_stack_counting_both_parts_keeps_the_running_ones_as_the_jobs() -> None:
    """A hand-off stack's running samples (a torn sample, a spin) stay `cpu`; only its waits are attributed."""
    main = ThreadStacks(pid=100, tid=100, name="MainThread", stacks=(StackCount(stack(QUEUE_GET), 40, 4),))
    producer = thread(100, 101, DECODE, samples=40, running=40, name="producer")
    activity = summarize(window(100, main, producer))
    assert activity.shares.cpu == pytest.approx(0.1)
    assert activity.shares.data == pytest.approx(0.9)
