"""Pass 1 of a render: the analysis of its whole range, from the cache where it has it, else
analysed here under the cache's lock (chunks of one shot started together wait for the first
one) and cached when complete.

The analysis is handed out as an early_targets.AnalysisFeed: complete before pass 2 starts, or,
when frames must be analysed and the selector's decisions are local (a horizon), growing on a
thread of its own that holds the lock while pass 2 runs. Either way the frames are analysed by
the one loop of `PassOne`, a frame at a time, each handed to the feed as soon as it is done.

One frame is analysed by frame_analysis.FrameAnalysis (detected ahead on several sessions
by frame_analysis.detected_ahead).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from contextlib import ExitStack, closing
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from ...cache.locking import FileLock, LockWaitCancelled
from ...config import Settings
from ...geometry import DisplayConversion
from ...io.video import DecodeFailure, Frame
from ...pipeline import Pipeline
from ...timing import RenderTimings, StageClock
from ...types import Face
from ..contract.frames import FrameSelection
from ..contract.inputs import ShotInput
from ..contract.request import CancelCheck, PhaseCallback, PhaseProgress
from ..plan.analysis import (
    AnalysisCache,
    AnalysisKey,
    ShotAnalysis,
    analyse_frame,
    analysis_key,
    missing_frames,
)
from .early_targets import AnalysisFeed
from .frame_analysis import FrameAnalysis, detected_ahead
from .held_frames import HeldFrames
from .streaming import prefetch

log = logging.getLogger(__name__)

ANALYSIS_LOCK_STALE_S = 120.0


@dataclass(frozen=True, slots=True)
class _CacheEntry:
    """Where a shot's analysis is cached, and the lock that guards it."""

    cache: AnalysisCache
    key: AnalysisKey
    lock: FileLock


class PassOne:
    """The analysis of one render's range (see the module docstring).

    colour / colour_name: the shot's conversion to display space and its name (None: display
    referred). timings gets every analysed frame's stage times; phase the "analysis" progress
    (from the pass-1 thread when one runs). hold_bytes: what the rendered frames it decodes
    may hold for pass 2 (`held`, shot.run.held_frames; 0 for an analysis no pass 2 follows).
    After start(): `cached` frames came from the cache;
    `error` is what the pass-1 thread raised, for the render's thread to raise once join()ed;
    `key` is the analysis's cache key (it names the shot: plan.shot_id_of).
    """

    def __init__(self, shot: ShotInput, frames: FrameSelection, settings: Settings,
                 colour: tuple[DisplayConversion | None, str | None], timings: RenderTimings,
                 phase: PhaseCallback, hold_bytes: int = 0) -> None:
        self.shot, self.frames, self.settings = shot, frames, settings
        self.colour, self.colour_name = colour
        self.timings, self.phase = timings, phase
        self.cached = 0
        self.key: AnalysisKey | None = None  # the analysis cache key, once started
        self.error: BaseException | None = None
        self._thread: threading.Thread | None = None
        # Stage times of rendered frames analysed in this run, until pass 2 takes them.
        self._ms: dict[int, Mapping[str, float]] = {}
        self._ms_lock = threading.Lock()  # written by pass 1, taken by pass 2's writer
        # The rendered frames pass 1 decodes, held on for a pass 2 (shot.run.held_frames).
        self.held = HeldFrames(frames.rendered, hold_bytes)

    @property
    def alongside(self) -> bool:
        """Whether the analysis runs on its own thread beside pass 2."""
        return self._thread is not None

    def take_ms(self, number: int) -> Mapping[str, float] | None:
        """The analysis stage times of frame `number` if it was analysed in this run (once)."""
        with self._ms_lock:
            return self._ms.pop(number, None)

    def start(self, pipeline: Pipeline, content_sha256: str, cancelled: CancelCheck,
              horizon: int | None, halt: threading.Event) -> AnalysisFeed:
        """The analysis of the analysed range: complete, or (when frames must be analysed and
        `horizon` is given) growing on the pass-1 thread, which stops when cancelled() or
        `halt` is set and releases the lock when it ends."""
        entry = self._cache_entry(pipeline, content_sha256, cancelled)
        self.key = entry.key
        wanted = self.frames.analysed
        held = ExitStack()
        try:
            held.enter_context(entry.lock)
        except LockWaitCancelled:
            return AnalysisFeed.complete(wanted, ShotAnalysis())
        with held:
            cached = entry.cache.load(entry.key)
            missing = missing_frames(wanted, cached.faces)
            self.cached = len(wanted) - len(missing)
            self.phase(PhaseProgress("analysis", self.cached, len(wanted)))
            if not missing:
                return AnalysisFeed.complete(wanted, cached)
            if horizon is None:
                new = self._analyse(pipeline, missing, cancelled, entry.lock)
                analysis = _saved(entry, cached, new)
                return AnalysisFeed.complete(wanted, analysis)
            feed = AnalysisFeed(wanted, cached)
            self.held.close()  # beside pass 2, each pass decodes its own (shot.run.held_frames)

            def stopped() -> bool:
                return cancelled() or halt.is_set()

            def work() -> None:
                new = self._analyse(pipeline, missing, stopped, entry.lock, feed)
                feed.finish()  # complete unless stopped early (then waiters are told)
                _saved(entry, cached, new)

            self._start_thread(pipeline, work, feed, held.pop_all())
            return feed

    def join(self) -> None:
        """Wait for the pass-1 thread, if one runs."""
        if self._thread is not None:
            self._thread.join()

    def _start_thread(self, pipeline: Pipeline, work: Callable[[], None], feed: AnalysisFeed,
                      held: ExitStack) -> None:
        """Run work() on the pass-1 thread, which releases `held` (the lock) when it ends.
        Pass 1's models load here first, so their errors are raised on the calling thread and
        no session is created by two threads."""
        try:
            pipeline.models.detector()
            pipeline.models.embedder()
        except BaseException:
            held.close()
            raise

        def body() -> None:
            with held:
                try:
                    work()
                except BaseException as exc:  # noqa: BLE001 - raised by the render's thread
                    self.error = exc
                    feed.finish(exc)

        self._thread = threading.Thread(target=body, name="facefuse-analysis", daemon=True)
        self._thread.start()

    def _cache_entry(self, pipeline: Pipeline, content_sha256: str,
                     cancelled: CancelCheck) -> _CacheEntry:
        key = analysis_key(pipeline, content_sha256, self.colour_name)
        cache = AnalysisCache(pipeline.cache.analysis)
        try:
            cache.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # a read-only cache only costs time: the lock says so
            log.warning("cannot create the analysis cache %s (%s); going on without it",
                        cache.directory, exc.strerror or exc)
        lock = FileLock(cache.path(key).with_suffix(".lock"), ANALYSIS_LOCK_STALE_S,
                        cancelled=cancelled, what=f"the analysis of {self.shot.label}")
        return _CacheEntry(cache, key, lock)

    def _analyse(self, pipeline: Pipeline, missing: Sequence[int], cancelled: CancelCheck,
                 lock: FileLock, feed: AnalysisFeed | None = None) -> ShotAnalysis:
        """Detections and signatures of `missing` (ascending), each frame handed to `feed`
        (when given) as soon as it is analysed; stops between frames when cancelled()."""
        log.info("analysing %d frames (detection, tracking)", len(missing))
        total = len(self.frames.analysed)
        done = [total - len(missing)]  # a cell the callback below counts in
        clock = StageClock()  # detect and embed (decode and colour come with each frame)
        analysis = FrameAnalysis(pipeline, self.colour, clock)
        rendered = set(self.frames.rendered)
        read_ms: dict[int, Mapping[str, float]] = {}
        # the frame whose picture analyse_frame is handed, and its faces where detected ahead
        current: list[Any] = [None, None]
        found: dict[int, tuple[Face, ...]] = {}
        signatures: dict[int, Any] = {}
        failures: dict[int, str] = {}  # the frames that did not decode, and why
        sessions = pipeline.models.replicas("detector")

        def frames() -> Generator[tuple[int, Any], None, None]:
            # Decoding runs ahead on a worker thread, overlapping detection (and with several
            # detector sessions, the detection of a window of frames runs ahead too).
            with (closing(prefetch(self._frames(analysis, missing))) as read,
                  closing(detected_ahead(read, analysis, sessions)) as ahead):
                for number, frame, ms, faces in ahead:
                    read_ms[number], current[:] = ms, (frame, faces)
                    if faces is not None:
                        clock.add("detect", faces[1])
                    yield number, (frame if isinstance(frame, DecodeFailure)
                                   else analysis.picture(frame))

        def analyse(_frame: np.ndarray) -> tuple[Face, ...]:
            lock.refresh()
            frame, ahead = current
            return analysis.faces(frame, ahead[0] if ahead is not None else None)

        def analysed(number: int) -> None:
            done[0] += 1
            ms = _sum_ms(read_ms.pop(number, {}), clock.take())
            self.timings.frame("analysis", ms)
            if number in rendered:
                with self._ms_lock:
                    self._ms[number] = ms
            self.phase(PhaseProgress("analysis", done[0], total))

        with closing(frames()) as source:  # a cancel stops the reader at once
            for number, frame in source:
                if cancelled():
                    break
                # the cut signatures come from the picture detection sees (small or full, in
                # display colour: colour is only set for full frames of colour-managed shots)
                part = (ShotAnalysis(failures={number: frame.reason})
                        if isinstance(frame, DecodeFailure)
                        else analyse_frame(number, frame, analyse, self.colour))
                found.update(part.faces)
                signatures.update(part.signatures)
                failures.update(part.failures)
                analysed(number)
                if not isinstance(current[0], DecodeFailure):
                    self.held.offer(number, current[0])  # before pass 2 may ask for it
                if feed is not None:
                    feed.add(part, (number,))
        return ShotAnalysis(found, signatures, failures)

    def _frames(self, analysis: FrameAnalysis, numbers: Sequence[int]
                ) -> Iterator[tuple[int, Frame | DecodeFailure, Mapping[str, float]]]:
        """The frames pass 1 analyses, each with the picture detection sees made here (on the
        prefetch thread, ahead of detection: its small picture where the frame has one, see
        FrameAnalysis.picture), and their decode and colour times."""
        clock = StageClock()
        for number, frame in self.shot.read(numbers, clock):
            if not isinstance(frame, DecodeFailure):
                with clock.measure("colour"):
                    analysis.picture(frame)
            yield number, frame, clock.take()


def _saved(entry: _CacheEntry, cached: ShotAnalysis, new: ShotAnalysis) -> ShotAnalysis:
    """The cached analysis with the frames this run analysed, saved when there are any: a
    cancelled or stopped render keeps what it analysed, so its resume analyses only the rest
    (missing_frames)."""
    analysis = cached.merged(new)
    if new.faces:
        entry.cache.save(entry.key, analysis)
    return analysis


def _sum_ms(*parts: Mapping[str, float]) -> Mapping[str, float]:
    """Stage times added up over several clocks' snapshots."""
    total: dict[str, float] = {}
    for part in parts:
        for stage, ms in part.items():
            total[stage] = round(total.get(stage, 0.0) + ms, 3)
    return MappingProxyType(total)
