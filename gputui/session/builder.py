"""One session of one machine, opened and closed in one place.

`open_session` opens, in this order, the source (gputui/session/source_choice.py), the recording (`--record`), the
job stacks' sampler and the alerter, makes the diagnostics engine and the sampler that runs each reading through
them, and yields the Session. At its end, and when opening one of them fails, it closes what it opened, the last
first: the sampling loops (no poll runs after), the alerter (what is queued goes out, for at most
`alert_flush_s`), the stacks' thread, the recording (the findings still open, the gzip trailer), the source. A loop
still inside a poll then (a driver call that hangs) closes the source when that poll returns, never beneath it.

The front ends (the monitor, `diagnose`, `export`, `snapshot`, `replay`) each say what they want in a
SessionOptions; nothing here is made again per reading.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from gputui.alerts.alerter import Alerter
from gputui.config import Config
from gputui.diagnostics.engine import DiagnosticsEngine
from gputui.diagnostics.tick import Tick
from gputui.model import SystemInfo
from gputui.record.writer import RecordingWriter
from gputui.session.diagnose import tolerant
from gputui.session.loop import Pace, SamplingLoop
from gputui.session.recording import Recorder, record_ticks
from gputui.session.replay_sampler import ReplaySampler
from gputui.session.sampling import Sampler, Sink
from gputui.session.source_choice import ReplayChoice, SourceChoice, WithTorchCuda, open_source
from gputui.session.stacks import JobStacks, stacks_for
from gputui.sources.base import Source
from gputui.sources.playback import ReplaySource
from gputui.store.retention import DEFAULT_RETENTION, Retention
from gputui.store.writer import StoreWriter

# Where the alerter's words go until a front end attaches its own.
ALERTS_LOG = logging.getLogger("gputui.alerts")


@dataclass(frozen=True, slots=True)
class RecordTarget:
    """`--record FILE`: the file, whether an existing one is overwritten, whether its group may read it, and the size
    it stops at."""

    path: Path
    force: bool = False
    max_mb: float | None = None
    group_readable: bool = False


@dataclass(frozen=True, slots=True)
class StoreTarget:
    """A history store to record into (`gputui record`, `export` keeping history): its directory, how much it
    keeps, and whether the machine's other users may read it (then without the job stacks)."""

    directory: Path
    retention: Retention = DEFAULT_RETENTION
    shared: bool = False


@dataclass(frozen=True, slots=True)
class SessionOptions:
    """What a front end asks of its session beyond the config file's settings."""

    source: SourceChoice | ReplayChoice | Source  # a Source: one made by the caller (a test), opened here
    interval_s: float = 1.0
    # a writer: one made by the caller, closed here
    record: RecordTarget | StoreTarget | RecordingWriter | StoreWriter | None = None
    diagnose: bool = True  # run the diagnostics on each reading (`snapshot` only reads)
    stacks: bool = False  # read the job stacks, where the machine's processes are this one's
    alerts: bool = False  # the config's [alerts], where it names a target or the bell
    alert_flush_s: float = 1.0  # how long the end waits for alerts still queued
    lang: str = "en"  # the findings' language
    tolerate_rule_errors: bool = False  # a rule that raises costs its findings, not the reading (the exporter)
    torch_cuda: bool = False  # the driver's readings carry the local torch's CUDA version (for cuda_mismatch)


class AlertVoice:
    """Where the alerter's words and bell go: a log line (and no bell) until a front end attaches its own, which
    the alerts' threads call and which therefore must be safe from any thread and never block."""

    def __init__(self) -> None:
        self._say: Callable[[str], object] = ALERTS_LOG.warning
        self._bell: Callable[[], object] | None = None

    def attach(self, say: Callable[[str], object], bell: Callable[[], object]) -> None:
        self._say, self._bell = say, bell

    def say(self, text: str) -> None:
        self._say(text)

    def ring(self) -> None:
        if self._bell is not None:
            self._bell()


class SourceEnd:
    """Closes the source once: at the session's end once every sampling loop on it has ended, or, where one is still
    inside a poll then, by that loop when the poll returns."""

    def __init__(self, source: Source) -> None:
        self._source = source
        self._lock = threading.Lock()
        self._closed = False
        self.loops: list[SamplingLoop[Tick]] = []

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._source.close()

    def stop_loops(self) -> None:
        for loop in self.loops:
            loop.stop()

    def close_unless_polling(self) -> None:
        if all(loop.ended for loop in self.loops):
            self.close()


@dataclass(frozen=True, slots=True)
class Session:
    """One machine, opened: its source and what it reports, the sampler that reads it through the diagnostics
    (and hands each tick to the recording and the alerter), the parts the front ends use by name. Made by
    open_session (or `session_on`, for parts a test opened), which closes it."""

    config: Config
    source: Source
    system: SystemInfo
    interval_s: float
    engine: DiagnosticsEngine
    sampler: Sampler | ReplaySampler
    end: SourceEnd  # the source's closing
    recorder: Recorder | None = None
    stacks: JobStacks | None = None
    alerter: Alerter | None = None
    pace: Pace | None = None  # the time the source runs on where it is not real time (diagnose --demo)
    voice: AlertVoice = field(default_factory=AlertVoice)

    @property
    def replay(self) -> ReplaySource | None:
        return self.source if isinstance(self.source, ReplaySource) else None

    def alerts_through(self, say: Callable[[str], object], bell: Callable[[], object]) -> None:
        """The alerter's reports (a failing target) and its bell go to the front end from now on."""
        self.voice.attach(say, bell)

    def sampling_loop(
        self,
        deliver: Callable[[Tick], object],
        failed: Callable[[Exception], object] | None = None,
        *,
        pace: Pace | None = None,
        hangup: Callable[[], object] | None = None,
    ) -> SamplingLoop[Tick]:
        """The loop that samples this session on a thread of its own (see SamplingLoop); the session's end stops
        it, and the source closes only once no poll of it can run."""
        loop = SamplingLoop(
            self.sampler.take, self.interval_s, deliver, failed, pace=pace, hangup=hangup, closing=self.end.close
        )
        self.end.loops.append(loop)
        return loop


def session_on(
    source: Source,
    system: SystemInfo,
    config: Config,
    *,
    interval_s: float = 1.0,
    diagnose: bool = True,
    lang: str = "en",
    tolerate_rule_errors: bool = False,
    recorder: Recorder | None = None,
    stacks: JobStacks | None = None,
    alerter: Alerter | None = None,
    voice: AlertVoice | None = None,
    pace: Pace | None = None,
    end: SourceEnd | None = None,
) -> Session:
    """The session of parts already open, with the diagnostics engine and the sampler made for them: what
    open_session yields once it has opened them (the keywords are SessionOptions'); a test hands its own, and
    closes them."""
    engine = DiagnosticsEngine(config.diagnostics, lang, config.cost.price)
    sampler: Sampler | ReplaySampler
    if isinstance(source, ReplaySource):  # played tick by tick; a seek starts an engine of its own
        sampler = ReplaySampler(source, engine)
    else:
        judge = tolerant(engine.update, "this reading") if tolerate_rule_errors else engine.update
        sinks: Sequence[Sink] = (
            *(() if recorder is None else (record_ticks(recorder),)),
            *(() if alerter is None else (alerter.observe,)),
        )
        sampler = Sampler(source, judge if diagnose else None, sinks=sinks, stacks=stacks)
    return Session(
        config=config,
        source=source,
        system=system,
        interval_s=interval_s,
        engine=engine,
        sampler=sampler,
        end=end if end is not None else SourceEnd(source),
        recorder=recorder,
        stacks=stacks,
        alerter=alerter,
        pace=pace,
        voice=voice if voice is not None else AlertVoice(),
    )


def _recorder(
    record: RecordTarget | StoreTarget | RecordingWriter | StoreWriter | None, interval_s: float
) -> Recorder | None:
    if isinstance(record, StoreTarget):
        return StoreWriter(record.directory, interval_s=interval_s, retention=record.retention, shared=record.shared)
    if not isinstance(record, RecordTarget):
        return record
    return RecordingWriter(
        record.path,
        interval_s=interval_s,
        force=record.force,
        group_readable=record.group_readable,
        max_mb=record.max_mb,
    )


@contextmanager
def open_session(options: SessionOptions, config: Config) -> Iterator[Session]:
    """The session `options` and `config` ask for, opened; closed at the end of the `with`, and as far as it got
    where opening one part fails (the error is raised as it came: SourceUnavailable, a ValueError for a choice that
    cannot be, RecordingError, StoreError)."""
    with ExitStack() as opened:
        source, system, pace = open_source(options.source)
        if options.torch_cuda and system.is_live:
            source = WithTorchCuda(source)
        end = SourceEnd(source)
        opened.callback(end.close_unless_polling)
        recorder = _recorder(options.record, options.interval_s)
        if recorder is not None:
            opened.callback(recorder.close)
        stacks = stacks_for(system, config.stacks, config.diagnostics.thresholds) if options.stacks else None
        if stacks is not None:
            opened.callback(stacks.close)
        voice = AlertVoice()
        alerter = None
        if options.alerts and config.alerts.enabled:
            alerter = Alerter(config.alerts, voice.say, bell=voice.ring)
            opened.callback(alerter.close, options.alert_flush_s)
        session = session_on(
            source,
            system,
            config,
            interval_s=options.interval_s,
            diagnose=options.diagnose,
            lang=options.lang,
            tolerate_rule_errors=options.tolerate_rule_errors,
            recorder=recorder,
            stacks=stacks,
            alerter=alerter,
            voice=voice,
            pace=pace,
            end=end,
        )
        opened.callback(end.stop_loops)
        yield session
