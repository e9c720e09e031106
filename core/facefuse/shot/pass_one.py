"""Pass 1 of a render: the analysis of its whole range, from the cache where it has it, else
analysed here under the cache's lock (chunks of one shot started together wait for the first
one) and cached when complete.

The analysis is handed out as an early_plan.AnalysisFeed: complete before pass 2 starts, or,
when frames must be analysed and the selector's decisions are local (a horizon), growing on a
thread of its own that holds the lock while pass 2 runs. Either way the frames are analysed by
the one loop of `PassOne`, a frame at a time, each handed to the feed as soon as it is done.

One frame (`FrameAnalysis`): the detector gets the frame's small picture where it has one
(io.video.frame.DecodedFrame.small: shrunk by swscale straight from the decoded planes; never
for colour-managed shots, which are detected on the whole frame in display colour), and each
recogniser crop is cut from its face's region alone (frame.region of the crop's footprint,
converted at full resolution), which saves converting the rest and never makes a full-size BGR
frame (25 MB at 4K). The crops are those a warp of the full conversion gives
(geometry.warp_crop with origin_xy: bit for bit with OpenCV 4). All faces of a frame are
embedded in one run.

With several detector sessions (Settings.detector_sessions, runtime.sessions.SessionReplicas)
the frames of a short window are detected side by side on worker threads (detected_ahead),
each frame on one session, and handed on in frame order: the detections are those one session
gives, frame by frame.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack, closing
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from ..cache.locking import FileLock, LockWaitCancelled
from ..config import Settings
from ..geometry import (
    DisplayConversion,
    frame_to_crop_matrix,
    invert_affine,
    scale_face,
    transform_points,
    warp_crop,
)
from ..io.video import DecodeFailure, Frame
from ..pipeline import Pipeline
from ..timing import RenderTimings, StageClock
from ..types import Face, Roi
from .analysis import AnalysisCache, AnalysisKey, ShotAnalysis, analyse_frame, missing_frames
from .early_plan import AnalysisFeed
from .frames import FramePlan
from .held_frames import HeldFrames
from .inputs import ShotInput
from .request import CancelCheck, PhaseCallback, PhaseProgress
from .streaming import prefetch

log = logging.getLogger(__name__)

ANALYSIS_LOCK_STALE_S = 120.0
CROP_MARGIN_PX = 4  # around a crop's footprint: bilinear sampling reads one pixel beyond it


class FrameAnalysis:
    """Detect and embed the faces of one frame at a time with one pipeline (one thread; only
    `detected` may run on other threads beside it).

    colour: the shot's conversion to display space (None: display-referred already; then the
    detector gets the frame's small picture where it has one). clock: gets "detect", "embed"
    and the "colour" of the face regions.
    """

    def __init__(self, pipeline: Pipeline, colour: DisplayConversion | None,
                 clock: StageClock) -> None:
        self.pipeline, self.colour, self.clock = pipeline, colour, clock
        self.side = max(pipeline.models.detector().input_size) if colour is None else None

    def picture(self, frame: Frame) -> np.ndarray:
        """What detection sees of `frame` (and what its cut signature is taken from): its small
        picture, else the whole frame."""
        small = frame.small(self.side) if self.side is not None else None
        return small.pixels if small is not None else frame.to_ndarray()

    def detected(self, frame: Frame) -> tuple[Face, ...]:
        """The faces detection finds in `frame`, in frame pixels, without embeddings; safe to
        call from several threads at once (the detector runs on replicas, runtime.sessions)."""
        small = frame.small(self.side) if self.side is not None else None
        if small is None:
            return self.pipeline.detect(frame.to_ndarray(), self.colour)
        found = self.pipeline.detect(small.pixels)
        back = (1.0 / small.scale_xy[0], 1.0 / small.scale_xy[1])
        return tuple(scale_face(face, back) for face in found)

    def faces(self, frame: Frame, found: tuple[Face, ...] | None = None) -> tuple[Face, ...]:
        """The faces of a frame with their embeddings, in frame pixels, best first; found:
        detected(frame) where it ran already (elsewhere), else it runs here."""
        if found is None:
            with self.clock.measure("detect"):
                found = self.detected(frame)
        small = frame.small(self.side) if self.side is not None else None
        if small is None:
            with self.clock.measure("embed"):
                return self.pipeline.embed_faces(frame.to_ndarray(), found, self.colour)
        if not found:
            return ()
        spec = self.pipeline.models.load("recogniser").family.crop_spec()
        crops = []
        for face in found:
            with self.clock.measure("colour"):
                # None: the crop lies wholly outside the frame; it then sees black, as it
                # would in a frame black outside the faces
                region = frame.region(self.crop_box(face))
                pixels, origin = ((region.pixels, region.part.origin_xy) if region is not None
                                  else (np.zeros((1, 1, 3), np.uint8), (0, 0)))
            with self.clock.measure("embed"):
                crops.append(warp_crop(pixels, face.kps5, *spec, origin_xy=origin))
        with self.clock.measure("embed"):
            return self.pipeline.embed_crops(found, crops)

    def crop_box(self, face: Face) -> Roi:
        """The frame pixels the recogniser's crop of `face` reads (its corners mapped back,
        plus a margin)."""
        template, size_px = self.pipeline.models.load("recogniser").family.crop_spec()
        crop_to_frame = invert_affine(frame_to_crop_matrix(face.kps5, template, size_px))
        corners = np.array([[0, 0], [size_px, 0], [0, size_px], [size_px, size_px]], np.float64)
        points = transform_points(corners, crop_to_frame)
        low, high = points.min(axis=0), points.max(axis=0)
        return Roi(math.floor(low[0]) - CROP_MARGIN_PX, math.floor(low[1]) - CROP_MARGIN_PX,
                   math.ceil(high[0]) + CROP_MARGIN_PX + 1,
                   math.ceil(high[1]) + CROP_MARGIN_PX + 1)


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
    may hold for pass 2 (`held`, shot.held_frames; 0 for an analysis no pass 2 follows).
    After start(): `cached` frames came from the cache;
    `error` is what the pass-1 thread raised, for the render's thread to raise once join()ed;
    `key` is the analysis's cache key (it names the shot: plan.shot_id_of).
    """

    def __init__(self, shot: ShotInput, frames: FramePlan, settings: Settings,
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
        # The rendered frames pass 1 decodes, held on for a pass 2 (shot.held_frames).
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
            self.held.close()  # beside pass 2, each pass decodes its own (shot.held_frames)

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


Read = tuple[int, Frame | DecodeFailure, Mapping[str, float]]
Detected = tuple[tuple[Face, ...], float]  # the faces of a frame, and the ms detecting them


def detected_ahead(frames: Iterable[Read], analysis: FrameAnalysis, sessions: int
                   ) -> Generator[tuple[int, Frame | DecodeFailure, Mapping[str, float],
                                        Detected | None], None, None]:
    """The frames pass 1 reads, in order, each with its detections when `sessions` > 1: then
    the frames of a window of `sessions` frames are detected side by side on as many worker
    threads, one detector session each (FrameAnalysis.detected; at most one frame more than
    that is held beyond the reader's). With one session nothing is detected here (None), and
    FrameAnalysis.faces detects each frame on the calling thread."""
    if sessions <= 1:
        for number, frame, ms in frames:
            yield number, frame, ms, None
        return

    def detect(frame: Frame) -> Detected:
        start = time.perf_counter()
        faces = analysis.detected(frame)
        return faces, (time.perf_counter() - start) * 1000.0

    window: deque[tuple[int, Frame | DecodeFailure, Mapping[str, float],
                        Future[Detected] | None]] = deque()
    items = iter(frames)
    with ThreadPoolExecutor(sessions, thread_name_prefix="facefuse-detect") as pool:
        try:
            while True:
                # one frame more than the sessions: they stay busy while this one is embedded
                while len(window) <= sessions and (item := next(items, None)) is not None:
                    number, frame, ms = item
                    job = None if isinstance(frame, DecodeFailure) else pool.submit(detect, frame)
                    window.append((number, frame, ms, job))
                if not window:
                    return
                number, frame, ms, job = window.popleft()
                yield number, frame, ms, job.result() if job is not None else None
        finally:
            for *_, job in window:
                if job is not None:
                    job.cancel()


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


def analysis_key(pipeline: Pipeline, content_sha256: str, colour_name: str | None) -> AnalysisKey:
    """The analysis cache key of a shot whose content is `content_sha256`, decoded with the
    conversion named `colour_name`, with `pipeline`'s detector, recogniser and detection options
    (its digest names the shot: plan.shot_id_of)."""
    settings = pipeline.settings
    return AnalysisKey(content_sha256, pipeline.models.identity("detector"),
                       pipeline.models.identity("recogniser"), settings.detector_size_px,
                       settings.detector_score, colour_name)
